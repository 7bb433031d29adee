// The main plane's written labels, placed where the drawn plot has room for them.
// The figure says which points want a label and which come first (layout.meta.labels,
// core/drawing/labels.py); this script knows what the server could only guess: the axes as drawn, every
// marker's box on screen, and each label's width in the font it is written in. In that order,
// each label goes beside its point (above, under, right, left, or shifted along one of them), or
// a little away from it with a thin leader line, where its whole box is clear of every marker
// (its own included), every label already written, the plot's notes and the plot's edge. A
// label that must be written (the words a tour step names, the selected token) looks as far as
// the plot reaches; the others give up after a short leader and are left to the hover. The
// labels are an SVG layer of the page's own over the plot (plotly's text traces measured and
// styled every label on every redraw), redrawn after each plot, zoom or legend click.
// assets/explorer.js hands it each figure's labels; a standalone export calls it the same way.
(() => {
  const SVG = "http://www.w3.org/2000/svg";
  const FONT = "Arial, 'Liberation Sans', Helvetica, sans-serif"; // core/drawing/figures.py FONT_FAMILY
  const GAP = 2; // pixels between a label's box and its point's marker
  const PAD = 1; // pixels kept between two labels, and between a label and a marker not its own
  const CELL = 24; // the grid that finds what is near a box, in pixels
  const LEADER_STEPS = 2; // how far (in label heights) a label that need not be written may stray
  const SPELLED = 2; // core/drawing/labels.py SPELLED
  // how far plotly's symbols reach, in marker sizes (measured in Chromium: a size-20 diamond is 26 px)
  const EXTENT = { circle: 1, square: 1, diamond: 1.3, cross: 1.2, x: 1.14, "triangle-up": 1.16,
    "triangle-down": 1.16, star: 1.34, arrow: 2 }; // an arrow turns with its line, and its tip is its point
  const CODES = ["circle", "square", "diamond", "cross", "x", "triangle-up", "triangle-down"];
  const extentOf = (symbol) => {
    const name = typeof symbol === "number" ? (symbol % 100 === 17 ? "star" : CODES[symbol % 100])
      : String(symbol || "circle").replace(/-(open|dot)/g, "");
    return EXTENT[name] || 1.35;
  };
  // drawn, but not what a label must keep clear of: the faint vocabulary, the category halos
  const UNDERLAY = (trace) => trace.name === "vocabulary" || trace.legendgroup === "category";

  const unescape = (text) => String(text).replace(/&lt;/g, "<").replace(/&gt;/g, ">").replace(/&amp;/g, "&");
  // a token as a label names it: punctuation or symbols alone quoted, “.” (". ×2" read "×2" from
  // the back of a room); core/drawing/labels.py legible's twin
  const PUNCTUATION = /^[\p{P}\p{S}]+$/u;
  const legible = (name) => (PUNCTUATION.test(unescape(name)) ? `“${name}”` : name);
  // one label for the tokens that share a point: core/drawing/labels.py pile_label's twin
  function pileLabel(names) {
    const counts = new Map();
    for (const name of names) counts.set(name, (counts.get(name) || 0) + 1);
    const parts = [...counts].map(([name, count]) => (count > 1 ? `${legible(name)} ×${count}` : legible(name)));
    if (parts.length <= SPELLED + 1) return parts.join(", ");
    const spelled = [...counts.values()].slice(0, SPELLED).reduce((a, b) => a + b, 0);
    return `${parts.slice(0, SPELLED).join(", ")} +${names.length - spelled}`;
  }
  // a compact figure's labels with the texts it leaves out, read from its token columns (the
  // escaped tokens, positions, drawing order and piles, decoded): core/drawing/labels.py `filled`'s twin
  function texts(labels, tokens, positions, order, piles) {
    const out = { ...labels.texts };
    for (const group of labels.order) {
      if (out[group]) continue;
      const names = order.map((i) => (group === "position" ? String(positions[i]) : tokens[i]));
      const written = names.map(legible);
      for (const pile of (piles || {})[group] || []) {
        written[pile[0]] = pileLabel(pile.map((j) => names[j]));
        for (const j of pile.slice(1)) written[j] = "";
      }
      out[group] = written;
    }
    return { ...labels, texts: out };
  }

  // what is drawn, as boxes in the figure's pixels (left, top, right, bottom), found by a grid
  class Boxes {
    constructor() { this.cells = new Map(); }
    // whether the segment a-b passes through a box other than `own`
    crossed(a, b, own) {
      const box = [Math.min(a[0], b[0]), Math.min(a[1], b[1]), Math.max(a[0], b[0]), Math.max(a[1], b[1])];
      for (const key of this.keys(box)) {
        for (const other of this.cells.get(key) || []) {
          if (other !== own && crosses(a, b, other)) return true;
        }
      }
      return false;
    }
    *keys(box, pad = 0) {
      for (let x = Math.floor((box[0] - pad) / CELL); x <= Math.floor((box[2] + pad) / CELL); x += 1) {
        for (let y = Math.floor((box[1] - pad) / CELL); y <= Math.floor((box[3] + pad) / CELL); y += 1) {
          yield x * 65536 + y;
        }
      }
    }
    add(box) {
      for (const key of this.keys(box)) {
        const cell = this.cells.get(key);
        if (cell) cell.push(box); else this.cells.set(key, [box]);
      }
    }
    hits(box, pad) {
      for (const key of this.keys(box, pad)) {
        for (const other of this.cells.get(key) || []) {
          if (box[0] < other[2] + pad && other[0] < box[2] + pad && box[1] < other[3] + pad && other[1] < box[3] + pad) {
            return true;
          }
        }
      }
      return false;
    }
  }

  let context = null; // a canvas's 2-D context: measures text as the page's fonts write it
  const measured = new Map();
  function measure(text, size) {
    const key = `${size}\u0001${text}`;
    let found = measured.get(key);
    if (!found) {
      context = context || document.createElement("canvas").getContext("2d");
      context.font = `${size}px ${FONT}`;
      const m = context.measureText(text);
      found = { width: m.width, ascent: m.fontBoundingBoxAscent, descent: m.fontBoundingBoxDescent };
      if (measured.size > 20000) measured.clear();
      measured.set(key, found);
    }
    return found;
  }

  const axisOf = (layout, id, letter) => layout[`${letter}axis${(id || letter).slice(1)}`];
  const values = (array) => (Array.isArray(array) || ArrayBuffer.isView(array) ? array : null); // one per point

  // every marker drawn (as a box) and, by trace and point, where each point is and how far its
  // marker reaches; the plot areas of the traces' axes; and at each spot how far the markers
  // drawn on it reach (a point, the ring round it, a star on it: a label goes beside them all)
  const spot = (p) => `${Math.round(p[0] * 2)},${Math.round(p[1] * 2)}`;
  function scan(gd) {
    const layout = gd._fullLayout;
    const markers = new Boxes();
    const stacks = new Map();
    const points = new Map(); // trace name -> {at(i) -> [x, y] | null, reach(i), area, index}
    let outside = 0; // drawn points past their axes (a training's held axes keep the scale they had)
    for (const trace of gd._fullData) {
      if (trace.visible !== true || !/^scatter(gl)?$/.test(trace.type) || !trace.x) continue;
      const xa = axisOf(layout, trace.xaxis, "x"), ya = axisOf(layout, trace.yaxis, "y");
      if (!xa || !ya) continue;
      const marker = trace.marker || {};
      const sizes = values(marker.size), symbols = values(marker.symbol);
      const line = (marker.line && Number(marker.line.width)) || 0;
      const reach = (i) => {
        const size = sizes ? Number(sizes[i]) || 0 : Number(marker.size) || 0;
        return size ? (size / 2) * extentOf(symbols ? symbols[i] : marker.symbol) + line / 2 : 0;
      };
      const at = (i) => {
        const x = trace.x[i], y = trace.y[i];
        if (x === null || y === null || x === undefined || y === undefined || Number.isNaN(+x) || Number.isNaN(+y)) {
          return null;
        }
        return [xa._offset + xa.l2p(+x), ya._offset + ya.l2p(+y)];
      };
      const area = [xa._offset, ya._offset, xa._offset + xa._length, ya._offset + ya._length];
      if (!points.has(trace.name)) points.set(trace.name, { at, reach, area, trace });
      if (UNDERLAY(trace) || !(trace.mode || "").includes("markers")) continue;
      for (let i = 0; i < trace.x.length; i += 1) {
        const r = reach(i), p = r > 0 && at(i);
        if (!p) continue;
        if (p[0] < area[0] - 0.5 || p[0] > area[2] + 0.5 || p[1] < area[1] - 0.5 || p[1] > area[3] + 0.5) outside += 1;
        markers.add([p[0] - r, p[1] - r, p[0] + r, p[1] + r]);
        stacks.set(spot(p), Math.max(r, stacks.get(spot(p)) || 0));
      }
    }
    return { markers, points, stacks, outside };
  }

  // the plot's notes (its annotations, placed on the paper) in the figure's pixels, as plotly
  // sized them when it drew them: a label keeps clear of them too
  function notes(gd) {
    const layout = gd._fullLayout, size = layout._size;
    return (layout.annotations || []).filter((note) => note.visible !== false && note._xsize)
      .map((note) => {
        const x = note.xref === "paper" ? size.l + note.x * size.w : axisOf(layout, note.xref, "x")._offset
          + axisOf(layout, note.xref, "x").l2p(note.x);
        const y = note.yref === "paper" ? size.t + (1 - note.y) * size.h : axisOf(layout, note.yref, "y")._offset
          + axisOf(layout, note.yref, "y").l2p(note.y);
        const cx = x + note._xshift, cy = y + note._yshift;
        return [cx - note._xsize / 2, cy - note._ysize / 2, cx + note._xsize / 2, cy + note._ysize / 2];
      });
  }

  // where a label of width w and height h may go around a point p whose marker reaches r, in
  // the order tried: beside it (touching the marker's box), then further out with a leader
  function* spots(p, r, w, h, far) {
    const [x, y] = p, off = r + GAP;
    yield [x - w / 2, y - off - h]; // above
    yield [x - w / 2, y + off]; // under
    yield [x + off, y - h / 2]; // right
    yield [x - off - w, y - h / 2]; // left
    yield [x - r, y - off - h]; // above, shifted right
    yield [x + r - w, y - off - h]; // above, shifted left
    yield [x - r, y + off]; // under, shifted right
    yield [x + r - w, y + off]; // under, shifted left
    for (let step = 1; step <= far; step += 1) {
      const d = off + step * h;
      for (let k = 0; k < 16; k += 1) {
        // up first, then alternately right and left of it, round to down
        const turn = (Math.ceil(k / 2) * (k % 2 ? 1 : -1) * Math.PI) / 8;
        const ux = Math.sin(turn), uy = -Math.cos(turn);
        const along = (Math.abs(ux) * w) / 2 + (Math.abs(uy) * h) / 2; // the box's half-size along u
        yield [x + ux * (d + along) - w / 2, y + uy * (d + along) - h / 2];
      }
    }
  }

  // whether the segment a-b passes through the box (Liang–Barsky)
  function crosses(a, b, box) {
    let t0 = 0, t1 = 1;
    const dx = b[0] - a[0], dy = b[1] - a[1];
    for (const [p, q] of [[-dx, a[0] - box[0]], [dx, box[2] - a[0]], [-dy, a[1] - box[1]], [dy, box[3] - a[1]]]) {
      if (p === 0) { if (q < 0) return false; continue; }
      const t = q / p;
      if (p < 0) { if (t > t1) return false; if (t > t0) t0 = t; } else { if (t < t0) return false; if (t < t1) t1 = t; }
    }
    return true;
  }
  // the leader from the marker's edge to the label's box, or null when the label touches it
  function leaderOf(p, r, box) {
    const cx = (box[0] + box[2]) / 2, cy = (box[1] + box[3]) / 2;
    const dx = cx - p[0], dy = cy - p[1], length = Math.hypot(dx, dy);
    if (!length) return null;
    // where the line from the point to the box's centre enters the box
    const sx = dx ? ((dx > 0 ? box[0] : box[2]) - p[0]) / dx : -Infinity;
    const sy = dy ? ((dy > 0 ? box[1] : box[3]) - p[1]) / dy : -Infinity;
    const s = Math.max(sx, sy);
    // from just outside the marker's box (the leader must not be taken for a line through it)
    const out = (r + 1.5) / Math.max(Math.abs(dx), Math.abs(dy));
    const start = [p[0] + dx * out, p[1] + dy * out];
    const end = [p[0] + dx * s, p[1] + dy * s];
    return Math.hypot(end[0] - start[0], end[1] - start[1]) > GAP + 2 ? [start, end] : null;
  }

  // each wanted label's place, in the order they get room: [{trace, point, text, colour, box,
  // baseline, leader}], and how many points wanted one
  function place(gd, labels) {
    const { markers, points, stacks, outside } = scan(gd);
    const written = new Boxes();
    const leaders = [];
    for (const box of notes(gd)) written.add(box);
    const size = labels.size;
    const queue = [];
    for (const pass of [true, false]) {
      for (const name of labels.order) {
        const found = points.get(name), texts = labels.texts[name] || [];
        if (!found) continue; // hidden from the legend, or not drawn
        const must = new Set((labels.must || {})[name] || []);
        texts.forEach((text, point) => { // sent escaped, as hover text: written as what it says
          if (text && must.has(point) === pass) queue.push({ name, point, text: unescape(text), must: pass, found });
        });
      }
    }
    // the first place around p for a w × h label, and its leader (null: beside the point)
    const fit = (p, r, w, h, far, area, over) => {
      for (const [left, top] of spots(p, r, w, h, far)) {
        const box = [left, top, left + w, top + h];
        if (box[0] < area[0] + 1 || box[1] < area[1] + 1 || box[2] > area[2] - 1 || box[3] > area[3] - 1) continue;
        if (markers.hits(box, PAD) || written.hits(box, PAD)) continue;
        if (leaders.some(([a, b]) => crosses(a, b, box))) continue;
        const leader = leaderOf(p, r, box);
        if (leader && (written.crossed(leader[0], leader[1], null)
            || (!over && markers.crossed(leader[0], leader[1], null)))) continue;
        return { box, leader };
      }
      return null;
    };
    const placed = [];
    const spelled = new Map(); // text -> the points it is written for: a word and its star at one spot get one
    for (const { name, point, text, must, found } of queue) {
      const p = found.at(point);
      const area = found.area;
      if (!p || p[0] < area[0] || p[0] > area[2] || p[1] < area[1] || p[1] > area[3]) continue;
      if ((spelled.get(text) || []).some((q) => Math.abs(q[0] - p[0]) < 1 && Math.abs(q[1] - p[1]) < 1)) continue;
      const r = Math.max(found.reach(point), stacks.get(spot(p)) || 0);
      const m = measure(text, size);
      const w = m.width, h = m.ascent + m.descent;
      const far = must ? Math.ceil(Math.max(area[2] - area[0], area[3] - area[1]) / h) : LEADER_STEPS;
      // a leader keeps off the markers it would pass; a label that must be written, and finds no
      // such place in a crowd, may have its leader pass over a marker (never over a label)
      let chosen = null;
      for (const over of must ? [false, true] : [false]) {
        chosen = fit(p, r, w, h, far, area, over);
        if (chosen) break;
      }
      if (!chosen) continue;
      const { box, leader } = chosen;
      written.add(box);
      spelled.set(text, [...(spelled.get(text) || []), p]);
      if (leader) leaders.push(leader);
      placed.push({ trace: name, point, text, colour: labels.colours[name], box, baseline: box[1] + m.ascent,
        leader, at: p, reach: r, must });
    }
    return { placed, wanted: queue.length, outside };
  }

  // the layer: an SVG of the page's own between plotly's plot and its notes, legend and hover
  function layerOf(gd) {
    let layer = gd.querySelector(".svg-container > svg.label-layer");
    if (layer) return layer;
    const container = gd.querySelector(".svg-container");
    if (!container) return null;
    layer = document.createElementNS(SVG, "svg");
    layer.setAttribute("class", "label-layer");
    layer.setAttribute("style", "position: absolute; top: 0; left: 0; pointer-events: none; overflow: visible");
    layer.innerHTML = '<g class="leaders" stroke-width="1" stroke-opacity="0.7"></g>'
      + `<g class="labels" font-family="${FONT.replace(/"/g, "'")}" stroke="#fff" stroke-width="3" `
      + 'stroke-linejoin="round" paint-order="stroke"></g><text class="labelled-count" fill="#666"></text>';
    const above = container.querySelectorAll(":scope > svg.main-svg")[1];
    container.insertBefore(layer, above || null);
    return layer;
  }
  // the group's children made `count` long (made or removed at its end)
  function pool(group, count, tag) {
    while (group.childElementCount > count) group.lastChild.remove();
    while (group.childElementCount < count) group.appendChild(document.createElementNS(SVG, tag));
    return group.children;
  }
  function set(node, name, value) {
    const text = String(value);
    if (node.getAttribute(name) !== text) node.setAttribute(name, text);
  }

  function draw(gd) {
    const labels = gd.__labels;
    const layer = gd._fullLayout && layerOf(gd);
    if (!layer) return;
    const { placed, wanted, outside } = labels ? place(gd, labels) : { placed: [], wanted: 0, outside: scan(gd).outside };
    gd.__placed = placed;
    // the labels' halo is the plot's ground, their count in the theme's grey (the figure's meta.ink, which
    // the page's script hands over as gd.__ink: the projector theme's; the light theme's are white and grey)
    const ink = gd.__ink || { halo: "#fff", count: "#666" };
    set(layer.querySelector(".labels"), "stroke", ink.halo);
    set(layer.querySelector(".labelled-count"), "fill", ink.count);
    set(layer, "width", gd._fullLayout.width);
    set(layer, "height", gd._fullLayout.height);
    layer.style.visibility = "";
    const nodes = pool(layer.querySelector(".labels"), placed.length, "text");
    placed.forEach((label, i) => {
      const node = nodes[i];
      set(node, "x", label.box[0].toFixed(1));
      set(node, "y", label.baseline.toFixed(1));
      set(node, "fill", label.colour);
      set(node, "font-size", labels.size);
      set(node, "data-trace", label.trace);
      set(node, "data-point", label.point);
      if (node.textContent !== label.text) node.textContent = label.text;
    });
    const drawn = placed.filter((label) => label.leader);
    const lines = pool(layer.querySelector(".leaders"), drawn.length, "line");
    drawn.forEach((label, i) => {
      const [a, b] = label.leader;
      set(lines[i], "x1", a[0].toFixed(1));
      set(lines[i], "y1", a[1].toFixed(1));
      set(lines[i], "x2", b[0].toFixed(1));
      set(lines[i], "y2", b[1].toFixed(1));
      set(lines[i], "stroke", label.colour);
    });
    // how many of the points that want a label have one (the hover names the rest), and how many
    // points lie past the axes, in the figure's bottom-left corner: under the x axis's title, in a
    // row the figure's bottom margin keeps for it (core/drawing/figures.py bottom_margin)
    const count = layer.querySelector(".labelled-count");
    count.textContent = [placed.length < wanted ? `${placed.length} of ${wanted} labelled` : "",
      outside ? `${outside} point${outside > 1 ? "s" : ""} past the axes (double-click shows all)` : ""]
      .filter(Boolean).join(" · ");
    set(count, "x", 4);
    set(count, "y", (gd._fullLayout.height - 4).toFixed(1));
    set(count, "font-size", Math.max(10, (labels ? labels.size : 10) - 1));
    set(count, "font-family", FONT.replace(/"/g, "'"));
  }

  // the placed labels as plotly annotations: what a static image of the plot writes (plotly
  // draws only its own layers into an image)
  function annotations(gd) {
    const layout = gd._fullLayout;
    const labels = gd.__labels;
    if (!labels || !gd.__placed) return [];
    return gd.__placed.map((label) => {
      const trace = gd._fullData.find((t) => t.name === label.trace);
      const xa = axisOf(layout, trace.xaxis, "x"), ya = axisOf(layout, trace.yaxis, "y");
      const cx = (label.box[0] + label.box[2]) / 2 - label.at[0], cy = (label.box[1] + label.box[3]) / 2 - label.at[1];
      const base = { x: trace.x[label.point], y: trace.y[label.point], xref: xa._id, yref: ya._id, text: label.text
        .replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;"),
      font: { size: labels.size, color: label.colour, family: FONT }, borderpad: 0 };
      return label.leader
        ? { ...base, showarrow: true, ax: cx, ay: cy, arrowhead: 0, arrowwidth: 1, arrowcolor: label.colour,
          standoff: label.reach + 1 }
        : { ...base, showarrow: false, xshift: cx, yshift: -cy };
    });
  }

  // the labels of `gd`'s next figure (layout.meta.labels, its texts whole), drawn when plotly
  // has drawn it (and after each zoom or legend click)
  function use(gd, labels) {
    gd.__labels = labels || null;
    if (!gd.__labelsListening && gd.on) {
      gd.on("plotly_afterplot", () => draw(gd));
      // while a zoom or pan is dragged, plotly moves the plot without redrawing: the labels wait
      gd.on("plotly_relayouting", () => {
        const layer = gd.querySelector(".svg-container > svg.label-layer");
        if (layer) layer.style.visibility = "hidden";
      });
      gd.__labelsListening = true;
    }
  }
  // the labels of the figure plotly has drawn in `gd`, drawn now and after each redraw
  function show(gd, labels) {
    use(gd, labels);
    draw(gd);
  }

  window.embeddingLabels = { use, show, draw, texts, pileLabel, legible, annotations };
})();
