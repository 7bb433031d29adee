// The main plane redrawn by moving what changed, when only points moved.
// A keystroke changes the plane's points (a refit turns the plane a little, a new token adds a
// point) and the axes' titles, nothing else: the same traces, legend, notes and axes. Plotly
// redraws a figure whole (its defaults, every axis, the legend and every point's style again:
// 51-63 ms at 128 tokens on this 2-core machine, where moving 514 drawn points takes 2 ms), so a
// figure that differs from the one drawn only in its points (x, y, hover texts, custom data,
// symbols and sizes per point) and the axes' titles is drawn here by moving plotly's own nodes on
// the axes as drawn: each point's node placed anew, a node for a new point cloned from one plotly
// drew with the same shape, the nodes of points gone removed, and a straight line's path per run
// of points written anew. What reads the drawn plot (the labels, assets/plotkeys.js, the table)
// reads the moved figure: its traces (`gd._fullData`) hold the new points. The checks come first:
// a figure is moved entirely or not at all. One that would need more (a new trace, a changed legend
// or note, a 3-D scene, a shape never drawn) is not moved (`move` returns false), nor one whose
// points would lie past the axes (PAST: assets/explorer.js `plot` draws it whole with `headroom`);
// and once the moves pause, `plot` draws the last figure whole, so its hover, autorange and click
// are plotly's own again.
(() => {
  const MOVED = new Set(["x", "y", "hovertext", "customdata", "text"]); // a marker trace's per-point keys
  const MOVED_MARKER = new Set(["symbol", "size"]); // its marker's, when they are per point
  const DTYPES = { f4: Float32Array, f8: Float64Array, i1: Int8Array, u1: Uint8Array, i2: Int16Array,
    u2: Uint16Array, i4: Int32Array, u4: Uint32Array };
  // a typed array as plotly decodes it: a 2-D one (its shape "rows,columns") as a list of its rows
  const decoded = (value) => {
    if (!value || typeof value !== "object" || !("bdata" in value)) return value;
    const bytes = Uint8Array.from(atob(value.bdata), (c) => c.charCodeAt(0));
    const flat = new DTYPES[value.dtype](bytes.buffer);
    const [rows, columns] = String(value.shape || "").split(",").map(Number);
    if (!columns) return flat;
    return Array.from({ length: rows }, (_, i) => flat.subarray(i * columns, (i + 1) * columns));
  };
  const perPoint = (value) => Array.isArray(value) || ArrayBuffer.isView(value)
    || (value && typeof value === "object" && "bdata" in value);
  // a trace that may move: 2-D markers, or straight lines through its points with or without
  // markers (a path per run of points, broken where a point is null), no text or fill drawn, every
  // point styled alike but for its symbol and size; not the vocabulary's background (sent once)
  const MODES = new Set(["markers", "lines", "lines+markers"]);
  const movable = (trace) => (trace.type || "scatter") === "scatter" && MODES.has(trace.mode)
    && trace.name !== "vocabulary" && !perPoint(trace.opacity) && !trace.fill && !trace.connectgaps
    && (!trace.line || !trace.line.shape || trace.line.shape === "linear")
    && Object.entries(trace.marker || {}).every(([name, value]) => MOVED_MARKER.has(name) || !perPoint(value)
      && !(value && typeof value === "object" && Object.values(value).some(perPoint)));

  // what must stay the same for a trace to be moved: all of it but its points
  function traceKey(trace) {
    if (!movable(trace)) return JSON.stringify(trace);
    const kept = {};
    for (const [name, value] of Object.entries(trace)) if (!MOVED.has(name)) kept[name] = value;
    if (trace.marker) {
      kept.marker = {};
      for (const [name, value] of Object.entries(trace.marker)) {
        kept.marker[name] = MOVED_MARKER.has(name) && perPoint(value) ? "per point" : value;
      }
    }
    return JSON.stringify(kept);
  }
  // what must stay the same for a layout: all of it but the axes' titles' texts
  function layoutKey(layout) {
    const kept = {};
    for (const [name, value] of Object.entries(layout)) {
      kept[name] = /^[xy]axis\d*$/.test(name) && value && value.title
        ? { ...value, title: { ...value.title, text: "" } } : value;
    }
    return JSON.stringify(kept);
  }

  // what plotly drew whole last: each trace as given and its key, the layout's key
  function drawn(gd, data, layout) {
    gd.__drawnWhole = { data: data.slice(), keys: data.map(traceKey), layout: layoutKey(layout) };
  }

  // the drawn nodes of each trace, by trace index: its points' group and its lines' (a trace hidden by its
  // legend entry has none)
  function drawnNodes(gd) {
    const nodes = new Map();
    for (const group of gd.querySelectorAll(".scatterlayer .trace")) {
      const cd = group.__data__ && group.__data__[0];
      if (cd && cd.trace) {
        nodes.set(cd.trace.index, { points: group.querySelector(".points"), lines: group.querySelector(".lines") });
      }
    }
    return nodes;
  }
  const pixels = (value) => Math.round(value * 100) / 100; // as plotly writes a point's place
  const valueAt = (value, i) => (perPoint(value) ? value[i] : value);
  // a node of each shape a trace's points have been drawn with (plotly's symbol, `mx` when symbols
  // are per point, and radius, `mrc`), kept while the trace is styled alike (its key): a point of a
  // shape plotly never drew in it is drawn whole once, and moved from then on
  const SHAPES = 256;
  function shapesOf(gd, key, group) {
    const kept = gd.__shapes || (gd.__shapes = new Map());
    let shapes = kept.get(key);
    if (!shapes) {
      if (kept.size >= SHAPES) kept.clear();
      shapes = new Map();
      kept.set(key, shapes);
    }
    for (const node of group.children) {
      const d = node.__data__;
      const shape = d && `${d.mx}|${d.mrc}`;
      if (shape && !shapes.has(shape)) shapes.set(shape, node.cloneNode(false)).get(shape).__data__ = { ...d };
    }
    return shapes;
  }

  // `gd` made to show `data` and `layout` by moving points: true; or, with nothing changed, PAST when a
  // point would lie past the axes as drawn, false when anything else stops it
  const PAST = "past";
  function move(gd, data, layout) {
    const whole = gd.__drawnWhole;
    const full = gd._fullLayout;
    if (!whole || !full || !gd._fullData || data.length !== whole.data.length || full._has("gl3d")
      || layoutKey(layout) !== whole.layout) return false;
    const nodes = drawnNodes(gd);
    const plans = [];
    for (let t = 0; t < data.length; t += 1) {
      const trace = data[t];
      if (trace === whole.data[t]) continue;
      if (traceKey(trace) !== whole.keys[t]) return false;
      const plan = planned(gd, trace, gd._fullData[t], nodes.get(t), whole.keys[t]);
      if (!plan) return false;
      if (plan.past) return PAST;
      plans.push({ t, trace, ...plan });
    }
    for (const plan of plans) place(gd, plan);
    for (const name of Object.keys(layout)) {
      if (!/^[xy]axis\d*$/.test(name) || !layout[name] || !layout[name].title) continue;
      const text = layout[name].title.text || "";
      const title = gd.querySelector(`.g-${name.replace("axis", "")}title text`);
      if (title && title.textContent !== text) title.textContent = text;
      for (const given of [full, gd.layout]) if (given[name] && given[name].title) given[name].title.text = text;
    }
    return true;
  }

  // where a trace's points go on the axes as drawn ({x, y, fullTrace, drawn, at, shapes, runs}), or null
  // when they cannot be moved there: a point past the axes, a shape not drawn yet, a run of one point
  function planned(gd, trace, fullTrace, drawn, key) {
    const full = gd._fullLayout;
    const x = decoded(trace.x), y = decoded(trace.y);
    if (!fullTrace || !x || !y || x.length !== y.length) return null;
    const plan = { x, y, fullTrace, drawn, at: [], shapes: [], runs: [] };
    if (!drawn) return plan; // hidden: its traces change, nothing is drawn
    const xa = full[fullTrace.xaxis.replace("x", "xaxis")], ya = full[fullTrace.yaxis.replace("y", "yaxis")];
    const marked = trace.mode.includes("markers"), lined = trace.mode.includes("lines");
    const templates = marked && drawn.points ? shapesOf(gd, key, drawn.points) : null;
    const marker = trace.marker || {};
    const sizes = decoded(marker.size), symbols = decoded(marker.symbol);
    let run = [];
    for (let i = 0; i <= x.length; i += 1) {
      const gap = i === x.length || x[i] === null || y[i] === null || Number.isNaN(x[i]) || Number.isNaN(y[i]);
      if (gap) { // a line is drawn through each run of points between gaps
        if (lined && run.length === 1) return null;
        if (run.length) plan.runs.push(run);
        run = [];
        continue;
      }
      const px = xa.c2p(x[i]), py = ya.c2p(y[i]);
      if (!Number.isFinite(px) || !Number.isFinite(py)) return null;
      if (px < 0 || px > xa._length || py < 0 || py > ya._length) return { past: true };
      const at = [pixels(px), pixels(py)];
      run.push(at);
      if (!marked) continue;
      // plotly keeps a point's symbol (mx) when symbols are per point, and its radius (mrc)
      const shape = templates && templates.get(`${perPoint(symbols) ? symbols[i] : undefined}|${valueAt(sizes, i) / 2}`);
      if (!shape) return null;
      plan.at.push({ i, at });
      plan.shapes.push(shape);
    }
    if (lined && (!drawn.lines || !drawn.lines.querySelector("path.js-line"))) return null;
    if (!lined) plan.runs = [];
    return plan;
  }

  // one trace's points put where its plan says, in its traces and its drawn nodes
  function place(gd, { t, trace, x, y, fullTrace, drawn, at, shapes, runs }) {
    const given = { ...trace, x, y };
    gd.data[t] = given;
    Object.assign(fullTrace, { x, y, _length: x.length });
    for (const name of ["hovertext", "customdata", "text"]) if (name in trace) fullTrace[name] = decoded(trace[name]);
    if (trace.marker && fullTrace.marker) {
      for (const name of MOVED_MARKER) if (perPoint(trace.marker[name])) fullTrace.marker[name] = decoded(trace.marker[name]);
    }
    if (!drawn) return;
    if (drawn.points) {
      const group = drawn.points;
      const old = [...group.children];
      at.forEach(({ i, at: [px, py] }, n) => {
        let node = old[n];
        const shape = shapes[n];
        if (!node || node.__data__.mx !== shape.__data__.mx || node.__data__.mrc !== shape.__data__.mrc) {
          const fresh = shape.cloneNode(false);
          fresh.__data__ = { ...shape.__data__ };
          if (node) node.replaceWith(fresh); else group.appendChild(fresh);
          node = fresh;
        }
        Object.assign(node.__data__, { i, x: x[i], y: y[i] });
        node.setAttribute("transform", `translate(${px},${py})`);
      });
      for (let n = at.length; n < old.length; n += 1) old[n].remove();
    }
    if (runs.length) { // a path per run, made from the first one plotly drew
      const old = [...drawn.lines.querySelectorAll("path.js-line")];
      runs.forEach((run, n) => {
        let line = old[n];
        if (!line) line = drawn.lines.appendChild(old[0].cloneNode(false));
        line.setAttribute("d", `M${run.map(([px, py]) => `${px},${py}`).join("L")}`);
      });
      for (let n = runs.length; n < old.length; n += 1) old[n].remove();
    }
  }

  // `layout` with room for the next keystrokes' points: each axis's range over the points of `data`
  // widened by HEADROOM of its span on each side (plotly's own autorange leaves about 5%), for a figure
  // drawn whole because a point moved past the axes. A zoom of the person's own is kept (plotly's
  // uirevision); the figure drawn whole once typing pauses has plotly's autorange again
  const HEADROOM = 0.15;
  function headroom(gd, data, layout) {
    const full = gd._fullLayout;
    const zoomed = Object.keys(full || {}).some((name) => /^[xy]axis\d*$/.test(name) && full[name].autorange === false);
    if (!full || (zoomed && !gd.__headroom)) return layout;
    const extents = {};
    for (const trace of data) {
      if (trace.visible === false || trace.visible === "legendonly" || !trace.x || !trace.y) continue;
      for (const [letter, values] of [["x", decoded(trace.x)], ["y", decoded(trace.y)]]) {
        const name = `${letter}axis${(trace[`${letter}axis`] || letter).slice(1)}`;
        const extent = extents[name] || (extents[name] = [Infinity, -Infinity]);
        for (const value of values) {
          if (value === null || !Number.isFinite(+value)) continue;
          if (+value < extent[0]) extent[0] = +value;
          if (+value > extent[1]) extent[1] = +value;
        }
      }
    }
    const out = { ...layout };
    for (const [name, [low, high]] of Object.entries(extents)) {
      if (!out[name] || !(high > low)) continue;
      const room = (high - low) * HEADROOM;
      out[name] = { ...out[name], range: [low - room, high + room], autorange: false };
    }
    return out;
  }
  // a figure drawn whole: with headroom or not (a later one without it lets a person's zoom be theirs again)
  const roomy = (gd, given) => { gd.__headroom = given; };

  window.embeddingMove = { move, drawn, headroom, roomy, decoded, PAST };
})();
