// The plots by keyboard and screen reader, which plotly's charts are not by themselves:
//  - the main plane (#embed-plot) is one Tab stop. ← → move a ring from token to token along the
//    sentence, ↑ ↓ across the groups of the same token (token, position, segment, sum, output: the
//    order they are added in) and on, at encoder layer K, along its path (after layer 1 … after layer
//    K), Home and End to the first and last token; a polite live region says what the ring is on
//    ("king, position 2, segment A, sum; nearest in the plot: queen, prince").
//    Enter selects the token as a click on its point does; Escape puts the ring away; `s` goes to the
//    plane's structure, a tree of its groups and tokens (assets/plottree.js, which reads the plane with
//    what `window.embeddingExplorerKeys` shares);
//  - the plane's text alternative (its description): which groups, how many tokens, the variance
//    the plane keeps, where the groups lie, where the words the tour's step names lie to each
//    other, a class's words, a selected token's neighbours (at layer K the pair's tokens nearest it
//    there) and whom it attends to at layer K. Written once drawing
//    pauses, so typing pays a timer per figure and nothing more;
//  - the other charts (the side views', the loss curve) are Tab stops too: the arrows move
//    plotly's own hover label from point to point (cell to cell in a heatmap), and the live region
//    reads what it says, which no table on the page lists.
// assets/explorer.js tells this script where it draws and each figure it drew (`attach`, `drawn`)
// and selects a token for it (`window.embeddingExplorer.select`).
(() => {
  const GROUPS = ["token", "position", "segment", "sum", "output"]; // the plot's traces, in the order they add up
  const NEAREST = { token: "nearest by token vector", output: "nearest by output vector" }; // core/drawing/figures.py NEIGHBOURS
  // at layer K the selected token's nearest tokens of the pair there (core/drawing/figures.py LAYER_NEAR), in the
  // group "layer K" (core/plane/scene.py HiddenStates.name)
  const LAYER_NEAR = /^nearest after layer (\d+)$/;
  const nearestName = (group) => NEAREST[group] || (/^layer \d+$/.test(group) ? `nearest after ${group}` : null);
  const RING = "selected token"; // core/drawing/figures.py SELECTED: the selected token's ring
  const LAYER = /^layer (\d+)$/; // core/plane/scene.py HiddenStates.name: the tokens after layer K
  const PATH = "path: "; // core/drawing/figures.py LAYER_PATH: each token's path to layer K, one polyline a token
  const ATTENTION = /^attention · layer \d+$/; // core/drawing/figures.py ATTENTION: a line a token attended to
  // each line's hover (`_attention_traces`): "king attends to queen: 0.31 (layer 3, mean of 12 heads)"
  const ATTENDS = /^(.*) attends to (.*): ([\d.]+) \((layer \d+), (.*)\)$/;
  const MARKERS = ["[CLS]", "[SEP]"]; // tokens that are not words: never named as one
  // a class's words, a trace for each group they are placed in (core/drawing/figures.py CLASS_TRACES)
  const CLASS = { token: "class", sum: "class · sum", output: "class · output" };
  const CLASS_NAMED = 6; // the class's words the description names, the most given first; the rest are counted
  const DESCRIBE_AFTER_MS = 500; // the description waits for drawing to pause this long
  // the keys that move, as [along a sentence or series, across the groups or series]
  const MOVES = { ArrowLeft: [-1, 0], ArrowRight: [1, 0], ArrowUp: [0, -1], ArrowDown: [0, 1], Home: [-Infinity, 0],
    End: [Infinity, 0] };
  // the charts beside the plane, by the tab that holds them: each is a Tab stop once its tab opens
  const CHARTS = {
    "tab-positions": { "positions-plot": "Position vectors, joined in order" },
    "tab-layernorm": { "layernorm-plot": "LayerNorm: each token's mean and standard deviation" },
    "tab-similarity": { "similarity-plot": "Cosine similarity of the output vectors" },
    "tab-listing": { "listing-plot": "The listing's outputs" },
    "tab-train": { "loss-plot": "Training loss per step" },
  };

  const decoder = document.createElement("textarea");
  const plain = (escaped) => { // hover texts and token names come escaped (they are drawn as markup)
    decoder.innerHTML = escaped;
    return decoder.value;
  };
  const segmentName = (row) => (row >= 0 && row < 26 ? String.fromCharCode(65 + row) : String(row)); // core/plane/scene.py
  const listed = (words) => (words.length < 2 ? words.join("") : `${words.slice(0, -1).join(", ")} and ${words.at(-1)}`);
  const Plotly = () => window.Plotly;

  let host = null; // the plane's div (plotly's graph div)
  let ring = null; // the ring drawn over the plane where the keys are
  let announcer = null; // the live region
  let description = null; // the plane's text alternative
  let meta = null; // the last figure's layout.meta (its token columns)
  let plane = null; // what the keys move over, read from the drawn figure (`read`), until the next figure
  let at = null; // where the keys are: {position, group}, or null
  let selecting = null; // the position Enter selected, until a figure shows it selected
  let describing = 0; // the timer of the next description

  function say(text) {
    if (announcer) announcer.textContent = text;
  }

  // ------------------------------------------------------------------ reading the drawn plane

  // the plane's tokens and, for every drawn group, where each token's point is among its trace's
  function read() {
    if (plane || !host || !host._fullData) return plane;
    const traces = {};
    for (const trace of host._fullData) {
      if (GROUPS.includes(trace.name) && trace.visible === true && !traces[trace.name]) traces[trace.name] = trace;
    }
    const groups = GROUPS.filter((group) => traces[group]);
    const names = meta && meta.columns && meta.columns.tokens; // escaped, in the sentence's order
    const tokens = [];
    const points = {};
    for (const group of groups) {
      const trace = traces[group];
      points[group] = new Map();
      if (group === "segment") continue;
      for (let i = 0; i < trace.customdata.length; i += 1) {
        const [, position, segment] = trace.customdata[i];
        points[group].set(position, i);
        if (!tokens[position]) {
          tokens[position] = { position, segment, name: names ? plain(names[position]) : nameIn(trace.hovertext[i], position) };
        }
      }
    }
    if (traces.segment) { // one point per segment row: every token of the segment shares it
      traces.segment.customdata.forEach((row, i) => points.segment.set(row[0], i));
    }
    const path = pathOf(tokens, names);
    // where the keys stop, ↓ after ↓: the groups, then (at layer K) each layer a token's path passes
    const stops = [...groups, ...(path ? Array.from({ length: path.depth }, (_, k) => `layer ${k + 1}`) : [])];
    plane = { traces, groups, tokens: tokens.filter(Boolean), points, path, stops };
    return plane;
  }

  // at layer K, the "layer K" group and its tokens' paths, drawn in the group's order, each K + 1 vertices
  // (hidden state 0, after layer 1, …, after layer K) ended by a gap: {group, trace, depth, layers, starts, index},
  // starts and index by position (a path's first vertex, the group's point); null without them. Adds
  // the group's tokens to `tokens` (the five groups may all be hidden)
  function pathOf(tokens, names) {
    const group = host._fullData.find((t) => LAYER.test(t.name) && t.visible === true && t.customdata);
    const trace = group && host._fullData.find((t) => t.name.startsWith(PATH) && t.visible === true
      && t.legendgroup === group.name);
    if (!trace) return null;
    const depth = Number(LAYER.exec(group.name)[1]);
    const said = plain(String((trace.hovertext || [])[1] || "")).match(/after layer \d+ of (\d+)/);
    const starts = new Map();
    const index = new Map();
    let start = 0;
    for (let i = 0; i < group.customdata.length; i += 1) {
      const [, position, segment] = group.customdata[i];
      if (start + depth >= trace.x.length) return null; // not one path a token: not a path to walk
      starts.set(position, start);
      index.set(position, i);
      if (!tokens[position]) {
        tokens[position] = { position, segment, name: names ? plain(names[position]) : nameIn(group.hovertext[i], position) };
      }
      start += depth + 2; // its vertices and the gap after them
    }
    return { group, trace, depth, layers: said ? Number(said[1]) : depth, starts, index };
  }

  // the layer a stop's name walks a path at ("layer 3": 3), or null for the groups
  const layerOf = (stop) => {
    const found = LAYER.exec(stop || "");
    return found ? Number(found[1]) : null;
  };

  // a token's name from a hover text, which names every token at its spot: "the (1), the (5)"
  function nameIn(hover, position) {
    const text = plain(String(hover));
    const mine = text.split(", ").find((part) => part.endsWith(` (${position})`));
    return mine ? mine.slice(0, -` (${position})`.length) : text;
  }

  // the point of the token at `position` in `group`: [its trace, its index], or null. At layer K, "layer k"
  // is its path's vertex after layer k (k = 0: hidden state 0), the last the "layer K" group's point
  function pointOf(position, group) {
    const layer = layerOf(group);
    if (layer !== null) return vertexOf(position, layer);
    const trace = plane.traces[group];
    const token = plane.tokens.find((t) => t.position === position);
    if (!trace || !token) return null;
    const index = plane.points[group].get(group === "segment" ? token.segment : position);
    return index === undefined ? null : [trace, index];
  }

  // the vertex of the token at `position`'s path after layer k (0: hidden state 0): [trace, index], or null
  function vertexOf(position, k) {
    const { path } = plane;
    if (!path || !(k >= 0 && k <= path.depth) || !path.starts.has(position)) return null;
    return k === path.depth ? [path.group, path.index.get(position)] : [path.trace, path.starts.get(position) + k];
  }

  const coordinates = (trace, i) => (trace.z ? [trace.x[i], trace.y[i], trace.z[i]] : [trace.x[i], trace.y[i]]);
  const distance = (a, b) => Math.hypot(...a.map((value, k) => value - b[k]));

  // where a point is drawn, in pixels from the plane's top left corner (a 3-D scene's through its camera)
  function pixel(trace, i) {
    const layout = host._fullLayout;
    if (trace.type === "scatter3d") {
      const scene = layout[trace.scene]._scene;
      const camera = scene.glplot.cameraParams;
      let p = [trace.x[i] * scene.dataScale[0], trace.y[i] * scene.dataScale[1], trace.z[i] * scene.dataScale[2], 1];
      for (const m of [camera.model, camera.view, camera.projection]) {
        p = [0, 1, 2, 3].map((j) => p[0] * m[j] + p[1] * m[4 + j] + p[2] * m[8 + j] + p[3] * m[12 + j]);
      }
      const box = scene.container.getBoundingClientRect();
      const origin = host.getBoundingClientRect();
      return [box.left - origin.left + (0.5 + 0.5 * p[0] / p[3]) * box.width,
        box.top - origin.top + (0.5 - 0.5 * p[1] / p[3]) * box.height];
    }
    const xaxis = layout[trace.xaxis.replace("x", "xaxis")];
    const yaxis = layout[trace.yaxis.replace("y", "yaxis")];
    return [xaxis._offset + xaxis.l2p(trace.x[i]), yaxis._offset + yaxis.l2p(trace.y[i])];
  }

  // where the point of `position` in `group` is drawn and its axes' ranges (a 3-D scene's: its pixels on the
  // plane), for the plane heard (assets/sound.js): {position, group, x, y, xRange, yRange}, or null
  function placed(position, group) {
    const found = pointOf(position, group);
    if (!found) return null;
    const [trace, index] = found;
    if (trace.type === "scatter3d") {
      const [x, y] = pixel(trace, index);
      return { position, group, x, y, xRange: [0, host.clientWidth], yRange: [host.clientHeight, 0] };
    }
    const xaxis = host._fullLayout[trace.xaxis.replace("x", "xaxis")];
    const yaxis = host._fullLayout[trace.yaxis.replace("y", "yaxis")];
    return { position, group, x: trace.x[index], y: trace.y[index], xRange: xaxis.range.map(Number),
      yRange: yaxis.range.map(Number) };
  }

  // the selected token's position, read from its rings (the figure's own), or null. A repeated word's
  // tokens share their token point: the output points tell them apart, else the address does
  function selectedPosition() {
    const rings = host._fullData.filter((trace) => trace.name === RING)
      .flatMap((trace) => Array.from(trace.x, (_, i) => coordinates(trace, i)));
    if (!rings.length) return null;
    for (const group of ["output", "token"]) {
      const trace = plane.traces[group];
      if (!trace) continue;
      const found = [];
      for (let i = 0; i < trace.x.length; i += 1) {
        const point = coordinates(trace, i);
        if (rings.some((ring) => distance(point, ring) < 1e-6)) found.push(trace.customdata[i][1]);
      }
      const addressed = Number(new URLSearchParams(location.search).get("token"));
      if (found.length) return found.includes(addressed) ? addressed : found[0];
    }
    return null;
  }

  // the selected token's vocabulary neighbours in `group` ("nearest by token vector"), by name; at layer K
  // (`group` "layer K") its nearest tokens there, each with its cosine ("river (2) 0.65")
  function neighbours(group) {
    const name = nearestName(group);
    const trace = name && host._fullData.find((t) => t.name === name);
    if (!trace) return [];
    return Array.from(trace.hovertext || [], (word, i) => (LAYER_NEAR.test(name) && trace.customdata
      ? `${plain(word)} ${Number(trace.customdata[i]).toFixed(2)}` : plain(word)));
  }

  // every list of the selected token's neighbours drawn: [[its trace's name, its names], …]; at layer K the
  // name says what the cosines are of ("nearest after layer 3, by the cosine of layer-3 vectors")
  function nearestLists() {
    const layer = host._fullData.find((t) => LAYER_NEAR.test(t.name));
    const groups = [...Object.keys(NEAREST), ...(layer ? [`layer ${layer.name.match(LAYER_NEAR)[1]}`] : [])];
    return groups.map((group) => [group, neighbours(group)]).filter(([, names]) => names.length)
      .map(([group, names]) => [NEAREST[group] || `${nearestName(group)}, by the cosine of ${group.replace(" ", "-")}`
        + " vectors", names]);
  }

  // whom the selected token attends to most at layer K, as its lines' hovers say it, in a sentence ("" for none)
  function attention() {
    const said = host._fullData.filter((t) => ATTENTION.test(t.name) && t.hovertext)
      .map((t) => plain(t.hovertext[0]).match(ATTENDS)).filter(Boolean);
    if (!said.length) return "";
    const [, query, , , layer, heads] = said[0];
    return `At ${layer} ${query} attends most to ${listed(said.map((m) => `${m[2]} ${m[3]}`))} (${heads}),`
      + " drawn as lines from it.";
  }

  // at layer K, a token selected: where its path took it on the plot, and how its cosine with its
  // word's other places changed (the chart under the plot, core/drawing/charts.py context_spec). The
  // selected token is the one its attention lines start from (with k = 0 no ring is drawn)
  function moved() {
    const line = host._fullData.find((t) => ATTENTION.test(t.name));
    if (!plane.path || !line) return "";
    const { group, trace } = plane.path; // the paths as `read` found them (`pathOf`)
    const index = Array.from(group.x).findIndex((_, i) => distance(coordinates(group, i), coordinates(line, 0)) < 1e-6);
    if (index < 0) return "";
    const position = group.customdata[index][1];
    const token = plane.tokens.find((t) => t.position === position);
    const start = vertexOf(position, 0);
    if (!token || !start) return "";
    const [xaxis, yaxis] = axesOf(trace);
    const [before, after] = [region(xaxis, yaxis, ...coordinates(...start)),
      region(xaxis, yaxis, ...coordinates(group, index))];
    let text = before === after
      ? `${token.name} (position ${position}) stayed in the ${after} of the plot from hidden state 0 to ${group.name}`
      : `${token.name} (position ${position}) moved from the ${before} of the plot at hidden state 0 to the ${after}`
        + ` after ${group.name}`;
    const chart = document.querySelector("#context-plot .js-plotly-plot");
    const depth = Number(group.name.split(" ")[1]);
    const others = (chart && chart._fullData ? chart._fullData : []).map((t) => {
      const other = /\((\d+)\)$/.exec(String(t.name || ""));
      return other && t.y && t.y.length > depth ? `with ${token.name} at position ${other[1]} went from `
        + `${Number(t.y[0]).toFixed(2)} to ${Number(t.y[depth]).toFixed(2)}` : null;
    }).filter(Boolean);
    if (others.length) text += `; its cosine ${listed(others)} (the chart under the plot)`;
    return `${text}.`;
  }

  // --------------------------------------------------------------------- the keys on the plane

  // what the live region says of the point the keys are on
  function spoken(position, group) {
    const token = plane.tokens.find((t) => t.position === position);
    if (layerOf(group) !== null) return spokenOnPath(token, layerOf(group));
    const [trace, index] = pointOf(position, group);
    let text = `${token.name}, position ${position}, segment ${segmentName(token.segment)}, ${group}`;
    if (group === "segment") {
      const shared = trace.customdata[index][1];
      return `${text}: one point for the ${shared} tokens of segment ${segmentName(token.segment)}`;
    }
    const selected = selectedPosition() === position;
    if (selected) text += ", selected";
    const vocabulary = selected ? neighbours(group) : [];
    if (vocabulary.length) return `${text}; ${NEAREST[group]}: ${vocabulary.slice(0, 3).join(", ")}`;
    const names = nearby(position, group);
    return names.length ? `${text}; nearest in the plot: ${names.join(", ")}` : text;
  }

  // a token's stop on its path: where it is after layer k, how far it has come from where the path starts
  // (its output point, or, for a sentence read on its own, its own hidden state 0) on the plot, and as the
  // groups' phrases end ("bank, after layer 3 of 6, position 3, segment A, 0.41 from its output point; …")
  function spokenOnPath(token, k) {
    const { position } = token;
    let text = `${token.name}, after layer ${k} of ${plane.path.layers}, position ${position}, `
      + `segment ${segmentName(token.segment)}, ${travelled(position, k)}`;
    if (selectedPosition() === position) text += ", selected";
    const names = nearby(position, `layer ${k}`);
    return names.length ? `${text}; nearest in the plot: ${names.join(", ")}` : text;
  }

  // how far on the plot the token at `position` is after layer k from where its path starts: "0.41 from its output
  // point" ("… from its hidden state 0" where the path does not start there)
  function travelled(position, k) {
    const start = coordinates(...vertexOf(position, 0));
    const output = pointOf(position, "output");
    const from = output && distance(coordinates(...output), start) < 1e-6 ? "its output point" : "its hidden state 0";
    return `${distance(coordinates(...vertexOf(position, k)), start).toFixed(2)} from ${from}`;
  }

  // the names of the two other tokens drawn nearest the token at `position` in `group` (the same spot first),
  // its point [trace, index] found already or not. A path's vertices are looked up by their tokens
  function nearby(position, group, [trace, index] = pointOf(position, group)) {
    const { x, y, z } = trace;
    const layer = layerOf(group);
    // each other token's [position, its index in x, y, z]: a path's vertex after the same layer, or a group's point
    const others = layer !== null && plane.path
      ? [...plane.path.starts.keys()].map((other) => [other, vertexOf(other, layer)])
        .filter(([, found]) => found && found[0] === trace).map(([other, found]) => [other, found[1]])
      : Array.from(trace.customdata, (row, i) => [row[1], i]);
    const near = []; // the two nearest, [distance², position], nearest first: a scan (the tree asks for every token)
    for (const [other, i] of others) {
      if (other === position) continue;
      const apart = (x[i] - x[index]) ** 2 + (y[i] - y[index]) ** 2 + (z ? (z[i] - z[index]) ** 2 : 0);
      if (near.length < 2 || apart < near[1][0]) {
        near.splice(near.length && apart < near[0][0] ? 0 : near.length < 2 ? near.length : 1, 0, [apart, other]);
        near.length = Math.min(near.length, 2);
      }
    }
    // a word the sentence has twice is named with its position
    const twice = (name) => plane.tokens.filter((t) => t.name === name).length > 1;
    return [...new Set(near.map(([, other]) => {
      const { name } = plane.tokens.find((t) => t.position === other);
      return twice(name) ? `${name} (${other})` : name;
    }))];
  }

  function show(speak) {
    const found = at && pointOf(at.position, at.group);
    if (!found) {
      ring.hidden = true;
      return;
    }
    const [trace, index] = found;
    ringOn(trace, index);
    if (!speak) return;
    say(spoken(at.position, at.group) + (ring.hidden ? " (outside the zoomed view)" : ""));
    document.dispatchEvent(new CustomEvent("embedding-explorer:reached", { detail: placed(at.position, at.group) }));
  }

  // the ring, and plotly's hover label, on the point `index` of `trace`; false when it is zoomed out of view
  function ringOn(trace, index) {
    const [x, y] = pixel(trace, index);
    const width = host.clientWidth;
    const height = host.clientHeight;
    ring.hidden = !(x >= 0 && y >= 0 && x <= width && y <= height); // zoomed out of view: no ring
    const sizes = trace.marker && trace.marker.size; // one size, or one a point (a path's dots: a typed array)
    const size = Math.max(24, 2 * (Number(typeof sizes === "number" ? sizes : sizes && sizes[index]) || 0) + 12);
    Object.assign(ring.style, { left: `${host.offsetLeft + x - size / 2}px`, top: `${host.offsetTop + y - size / 2}px`,
      width: `${size}px`, height: `${size}px` });
    if (trace.type !== "scatter3d" && Plotly()) hover(host, trace, index);
    return !ring.hidden;
  }

  // plotly's hover label on a point, as the mouse would show it (on the point's own subplot). A
  // heatmap's cell, [row, column], is hovered at its place: plotly.js looks a point number up as one
  // index into the trace's points, which a grid's cell is not
  function hover(gd, trace, point) {
    const subplot = `${trace.xaxis || "x"}${trace.yaxis || "y"}`;
    if (Array.isArray(point)) {
      const at = (values, i) => (values && typeof values[i] === "number" ? values[i] : i);
      Plotly().Fx.hover(gd, [{ curveNumber: trace.index, xval: at(trace.x, point[1]), yval: at(trace.y, point[0]) }],
        subplot);
      return;
    }
    Plotly().Fx.hover(gd, [{ curveNumber: trace.index, pointNumber: point }], subplot);
  }

  function leave() {
    at = null;
    ring.hidden = true;
    if (Plotly() && host._fullLayout) Plotly().Fx.unhover(host);
  }

  function onKey(event) {
    if (event.target !== host || event.altKey || event.ctrlKey || event.metaKey) return;
    if (event.key === "s" && window.embeddingExplorerTree) { // the plane's structure (assets/plottree.js)
      event.preventDefault();
      window.embeddingExplorerTree.focus();
      return;
    }
    if (!read()) return;
    // T: the drawn points as a table (assets/plottable.js), the focus on it
    if ((event.key === "t" || event.key === "T") && window.embeddingPlotTable) {
      event.preventDefault();
      window.embeddingPlotTable.show(true);
      return;
    }
    const { tokens, stops } = plane;
    if (!tokens.length || !stops.length) return;
    if (event.key === "Escape") {
      if (!at) return;
      leave();
      say("The ring is put away; Tab moves on, an arrow key brings it back.");
      event.preventDefault();
      return;
    }
    if (event.key === "Enter") {
      if (!at) return;
      selecting = at.position;
      window.embeddingExplorer.select(at.position);
      event.preventDefault();
      return;
    }
    if (!(event.key in MOVES)) return;
    event.preventDefault();
    const group = at && stops.includes(at.group) ? at.group : stops[0];
    const index = tokens.findIndex((t) => t.position === (at ? at.position : selectedPosition() ?? tokens[0].position));
    if (!at) { // the first key shows where the ring starts: the selected token, or the first
      at = { position: tokens[Math.max(index, 0)].position, group };
    } else {
      const [along, across] = MOVES[event.key];
      const next = Math.min(tokens.length - 1, Math.max(0, index + along));
      const nextGroup = stops[Math.min(stops.length - 1, Math.max(0, stops.indexOf(group) + across))];
      at = { position: tokens[Math.max(next, 0)].position, group: nextGroup };
    }
    show(true);
  }

  // -------------------------------------------------------------- the plane's text alternative

  // where a point lies in its panel, by thirds: "top left", "centre", "bottom centre", …
  function region(xaxis, yaxis, x, y) {
    const third = (axis, value) => {
      const [low, high] = axis.range.map(Number);
      const share = (value - low) / (high - low || 1);
      return share < 1 / 3 ? 0 : share > 2 / 3 ? 2 : 1;
    };
    const across = third(xaxis, x);
    const up = third(yaxis, y);
    if (across === 1 && up === 1) return "centre";
    return `${["bottom", "middle", "top"][up]} ${["left", "centre", "right"][across]}`;
  }

  // where the point `b` of the word `name` lies from `a` of `anchor`, and how near, against the panel's span
  function relation(name, b, anchor, a, span) {
    const [dx, dy] = [b[0] - a[0], b[1] - a[1]];
    const apart = Math.hypot(dx, dy) / (span || 1);
    if (apart < 0.02) return `${name} lies on the same spot as ${anchor}`;
    const sides = [];
    if (Math.abs(dy) > 0.4 * Math.abs(dx)) sides.push(dy > 0 ? "above" : "below");
    if (Math.abs(dx) > 0.4 * Math.abs(dy)) sides.push(dx > 0 ? "to the right of" : "to the left of");
    const near = apart < 0.15 ? ", close to it" : apart > 0.5 ? ", far from it" : "";
    return `${name} lies ${sides.join(" and ")} ${anchor}${near}`;
  }

  // the words the tour's step names (in italics or code: core/view/tour.py TourStep.named) that are tokens
  function namedWords() {
    const text = document.querySelector("#tour-text");
    if (!text || !/^\s*Step \d+ of/.test(text.textContent)) return [];
    const words = new Set([...text.querySelectorAll("em, code")].flatMap((e) => e.textContent.split(/\s+/)));
    return plane.tokens.filter((t) => words.has(t.name) && !MARKERS.includes(t.name))
      .filter((t, i, all) => all.findIndex((u) => u.name === t.name) === i); // each word once: its first token
  }

  // the class's words in the description: each with its count and the sentence's word drawn nearest it
  // (a token with a letter or a digit: "drawn nearest ." says nothing to a listener), in the first group
  // they are placed in ("queen (2 answers, drawn nearest king)")
  function classWords() {
    for (const [group, name] of Object.entries(CLASS)) {
      const trace = host._fullData.find((t) => t.name === name);
      if (!trace || !trace.x || !trace.x.length) continue;
      const words = Array.from(trace.hovertext || [], (text) => plain(String(text)).split("<br>")[0]);
      const named = words.slice(0, CLASS_NAMED).map((word, i) => {
        const [, text, count] = word.match(/^(.*) ×(\d+)$/) || [null, word, ""];
        const here = coordinates(trace, i);
        let nearest = null;
        for (const token of plane.tokens) {
          const found = MARKERS.includes(token.name) || !/[\p{L}\p{N}]/u.test(token.name) ? null
            : pointOf(token.position, group);
          if (!found || found[0].xaxis !== trace.xaxis) continue;
          const apart = distance(here, coordinates(...found));
          if (!nearest || apart < nearest[0]) nearest = [apart, token.name];
        }
        const given = count ? `${count} ${count === "1" ? "answer" : "answers"}` : "";
        return `${text} (${[given, nearest && `drawn nearest ${nearest[1]}`].filter(Boolean).join(", ")})`;
      });
      const more = words.length - named.length;
      return `The class's words, in the ${group} group, the most given first: `
        + `${listed([...named, ...(more > 0 ? [`${more} more`] : [])])}.`;
    }
    return "";
  }

  // the plane's axis titles, and the share of the variance they keep together (null if they do not say)
  function variance() {
    const layout = host._fullLayout;
    const three = plane.groups.some((group) => plane.traces[group].type === "scatter3d");
    const axes = three ? ["xaxis", "yaxis", "zaxis"].map((name) => layout.scene[name]) : [layout.xaxis, layout.yaxis];
    const titles = axes.map((axis) => (axis && axis.title && axis.title.text) || "");
    const shares = titles.map((title) => Number((title.match(/([\d.]+)%/) || [])[1]));
    const kept = shares.every((share) => share >= 0) ? shares.reduce((sum, share) => sum + share, 0) : null;
    return { three, titles, kept };
  }

  // a point's panel axes (the outputs may have a panel of their own)
  const axesOf = (trace) => [host._fullLayout[trace.xaxis.replace("x", "xaxis")],
    host._fullLayout[trace.yaxis.replace("y", "yaxis")]];

  function describe() {
    describing = 0;
    plane = null;
    if (!host || !host._fullLayout || !read() || !description) return;
    const layout = host._fullLayout;
    const { traces, groups, tokens } = plane;
    const sentences = [];
    if (!groups.length) {
      description.textContent = "The embedding plane shows no group: tick one in the View tab, or in the plot's legend.";
      return;
    }
    const { three, titles, kept } = variance();
    let plane2d = three ? "A rotatable 3-D view of the embedding vectors" : "The embedding plane";
    if (kept !== null) {
      plane2d += `, a PCA projection keeping ${kept.toFixed(1)}% of the variance (${titles.join(", ")})`;
    } else if (titles[0]) {
      plane2d += ` (${titles.join(", ")})`;
    }
    sentences.push(`${plane2d}.`);
    sentences.push(`${tokens.length} tokens, in ${groups.length === 1 ? "one group" : `${groups.length} groups`}: `
      + `${listed(groups.map((group) => (group === "segment" ? `segment (one point for each segment, shared by its tokens)`
        : group)))}.`);
    if (layout.xaxis2) sentences.push("The outputs have a panel of their own, on the right, at their own scale.");
    if (!three) { // where each group's centre lies in its panel
      const where = groups.map((group) => {
        const trace = traces[group];
        const mean = (values) => values.reduce((sum, value) => sum + value, 0) / values.length;
        const [xaxis, yaxis] = axesOf(trace);
        return `${group} at the ${region(xaxis, yaxis, mean(Array.from(trace.x)), mean(Array.from(trace.y)))}`;
      });
      sentences.push(`Where each group lies: ${where.join("; ")}.`);
      const named = namedWords();
      const group = ["token", "sum", "output", "position"].find((g) => traces[g]);
      if (named.length && group) {
        const trace = traces[group];
        const xaxis = layout[trace.xaxis.replace("x", "xaxis")];
        const span = Math.abs(xaxis.range[1] - xaxis.range[0]);
        const at0 = pointOf(named[0].position, group);
        const first = coordinates(...at0);
        const lies = named.slice(1, 5).map((token) => {
          const found = pointOf(token.position, group);
          return relation(token.name, coordinates(...found), named[0].name, first, span);
        });
        sentences.push(`This step names ${listed(named.map((token) => token.name))}`
          + (lies.length ? `; in the ${group} group ${lies.join("; ")}.` : "."));
      }
    }
    const answers = classWords();
    if (answers) sentences.push(answers);
    const selected = selectedPosition();
    if (selected !== null) {
      const token = tokens.find((t) => t.position === selected);
      sentences.push(`Selected: ${token.name} (position ${selected})`
        + nearestLists().map(([name, names]) => `; ${name}: ${names.slice(0, 5).join(", ")}`).join("") + ".");
    }
    const attends = attention(); // with or without neighbours (k = 0 draws no ring)
    if (attends) sentences.push(attends);
    const went = three ? "" : moved();
    if (went) sentences.push(went);
    // the plot's own notes, its key's shapes in words (core/drawing/figures.py SYMBOL_NOTE); a line that starts in
    // lower case goes on from the one before (a long note is wrapped), any other starts a note of its own
    const notes = (layout.annotations || []).map((note) => plain(String(note.text || "")).split("<br>")
      .map((line) => line.replace("◆", "diamonds:").replace(/\s*○/, "; open circles:").replace(/\s+/g, " ").trim())
      .reduce((text, line) => (!text ? line : /^[a-z]/.test(line) ? `${text} ${line}` : `${text}; ${line}`), ""));
    if (notes.length) sentences.push(`Notes on the plot: ${notes.join("; ")}.`);
    const text = sentences.join(" ");
    if (description.textContent !== text) description.textContent = text;
  }

  // ------------------------------------------------------------------------- the other charts

  const chartAt = new WeakMap(); // a chart's block -> where its keys are: {curve, point}
  const HOVER_MS = 100; // longer than plotly's least time between two hovers
  let chartReading = 0; // the timer that reads a chart's hover label

  // the chart's traces the keys move over: those that show points and a hover
  function movable(gd) {
    return (gd._fullData || []).filter((trace) => trace.visible === true && trace.hoverinfo !== "skip"
      && ((trace.type === "heatmap" && trace.z) || (trace.x && trace.x.length)));
  }

  function chartSummary(gd) {
    const traces = movable(gd);
    const parts = traces.map((trace) => (trace.type === "heatmap"
      ? `a ${trace.z.length} by ${trace.z[0].length} grid of cells`
      : `${trace.name || "a series"}, ${trace.x.length} points`));
    return parts.length ? `${parts.join("; ")}. Arrow keys move from point to point.` : "Nothing is drawn yet.";
  }

  function onChartKey(event) {
    const block = event.target;
    const gd = block.querySelector(".js-plotly-plot");
    if (!gd || !gd._fullData || !Plotly() || event.altKey || event.ctrlKey || event.metaKey) return;
    const traces = movable(gd);
    if (event.key === "Escape") {
      chartAt.delete(block);
      Plotly().Fx.unhover(gd);
      return;
    }
    if (!(event.key in MOVES) || !traces.length) return;
    event.preventDefault();
    const [along, across] = MOVES[event.key];
    let { curve, point } = chartAt.get(block) || { curve: 0, point: null };
    curve = Math.min(curve, traces.length - 1);
    const trace = traces[curve];
    if (trace.type === "heatmap") { // cells: ← → along a row, ↑ ↓ as drawn (from the top row)
      const rows = trace.z.length;
      const columns = trace.z[0].length;
      const yaxis = gd._fullLayout[trace.yaxis.replace("y", "yaxis")];
      const down = yaxis.range[0] > yaxis.range[1] ? 1 : -1; // a reversed axis draws row 0 at the top
      const within = (value, count) => Math.min(count - 1, Math.max(0, value));
      // the first key shows where the keys start: the top left cell
      point = point ? [within(point[0] + down * across, rows), within(point[1] + along, columns)]
        : [down > 0 ? 0 : rows - 1, 0];
    } else if (point === null) { // the first key shows where the keys start: the first point
      point = 0;
    } else if (across) {
      curve = Math.min(traces.length - 1, Math.max(0, curve + across));
      point = Math.min(point, traces[curve].x.length - 1);
    } else {
      point = Math.min(traces[curve].x.length - 1, Math.max(0, point + along));
    }
    chartAt.set(block, { curve, point });
    hover(gd, traces[curve], point);
    // plotly draws a hover at most every few tens of milliseconds (the latest asked for last): the
    // label is read once the keys pause that long, and said while its chart has the focus
    clearTimeout(chartReading);
    chartReading = setTimeout(() => { if (block === document.activeElement) say(hoverText(gd)); }, HOVER_MS);
  }

  // what a chart's hover label says, line by line, with the series it belongs to
  function hoverText(gd) {
    return [...gd.querySelectorAll(".hoverlayer .hovertext")].map((label) => {
      const lines = [...label.querySelectorAll("text.nums tspan.line")].map((line) => line.textContent);
      const name = label.querySelector("text.name");
      return [...(lines.length ? lines : [label.querySelector("text.nums")?.textContent || ""]),
        name && name.textContent ? `(${name.textContent})` : ""].filter(Boolean).join(", ");
    }).join("; ");
  }

  // a chart's block, once it is in the page: a Tab stop named for what it shows
  function reachable(block, name) {
    if (block.hasAttribute("data-keys")) return;
    block.setAttribute("data-keys", "");
    block.tabIndex = 0;
    block.setAttribute("role", "application");
    block.setAttribute("aria-roledescription", "chart");
    block.setAttribute("aria-label", `${name}. Arrow keys move from point to point; the chart's hover says what each is.`);
    block.addEventListener("keydown", (event) => { if (event.target === block) onChartKey(event); });
    block.addEventListener("focus", () => {
      const gd = block.querySelector(".js-plotly-plot");
      say(`${name}: ${gd && gd._fullData ? chartSummary(gd) : "nothing is drawn yet."}`);
    });
    block.addEventListener("blur", () => {
      const gd = block.querySelector(".js-plotly-plot");
      if (gd && gd._fullLayout && Plotly()) Plotly().Fx.unhover(gd);
    });
  }

  // a tab's panel is added to the page when the tab first opens, and its charts when they are
  // drawn: each panel is watched until its charts are found, then no more
  function watchCharts() {
    for (const tabs of document.querySelectorAll("#views, #controls")) {
      const look = () => {
        for (const [panelId, charts] of Object.entries(CHARTS)) {
          const panel = tabs.querySelector(`:scope > #${panelId}`);
          if (!panel || panel.hasAttribute("data-charts-watched")) continue;
          panel.setAttribute("data-charts-watched", "");
          const find = () => {
            const missing = Object.entries(charts).filter(([id, name]) => {
              const block = panel.querySelector(`#${id}`);
              if (block) reachable(block, name);
              return !block;
            });
            return missing.length === 0;
          };
          if (find()) continue;
          const watcher = new MutationObserver(() => { if (find()) watcher.disconnect(); });
          watcher.observe(panel, { childList: true, subtree: true });
        }
      };
      new MutationObserver(look).observe(tabs, { childList: true });
      look();
    }
  }

  window.embeddingExplorerKeys = {
    // the plane's div (assets/explorer.js `attach`): a Tab stop with a name, a description and a live region
    attach(element) {
      if (host === element) return;
      host = element;
      host.tabIndex = 0;
      host.setAttribute("role", "application");
      host.setAttribute("aria-roledescription", "plot");
      host.setAttribute("aria-label", "The embedding plane. Arrow keys move a ring from token to token (left and "
        + "right along the sentence, up and down across the groups and, with an encoder layer shown, on along the "
        + "token's path through the layers), Enter selects its token, Escape puts it away. "
        + "S goes to the plane's structure, a tree of its groups and tokens (Tab reaches it after the plot's tools); "
        + "T shows the points as a table.");
      host.setAttribute("aria-describedby", "plot-description");
      const frame = host.parentElement;
      frame.classList.add("plane-frame");
      description = Object.assign(document.createElement("p"), { id: "plot-description", className: "offscreen" });
      announcer = Object.assign(document.createElement("p"), { id: "plot-announcer", className: "offscreen" });
      announcer.setAttribute("role", "status");
      announcer.setAttribute("aria-live", "polite");
      ring = Object.assign(document.createElement("div"), { className: "plane-ring", hidden: true });
      ring.setAttribute("aria-hidden", "true");
      frame.append(ring, description, announcer);
      host.addEventListener("keydown", onKey);
      host.addEventListener("focus", () => { if (at && read()) show(false); });
      host.addEventListener("blur", () => { ring.hidden = true; });
      host.addEventListener("pointerdown", () => { if (at) leave(); }); // the mouse takes over
      watchCharts();
      if (window.embeddingExplorerTree) window.embeddingExplorerTree.attach(host, frame); // assets/plottree.js
    },
    // a figure drawn (assets/explorer.js `plot`): the ring follows its token, a selection made by
    // Enter is said once it shows, and the description is written once drawing pauses
    drawn(figureMeta) {
      if (figureMeta !== undefined) meta = figureMeta;
      plane = null;
      if (at && document.activeElement === host && read()) show(false);
      if (selecting !== null && read() && selectedPosition() === selecting) {
        const token = plane.tokens.find((t) => t.position === selecting);
        say(`${token.name} selected; its neighbours are listed under the plot`
          + nearestLists().map(([name, names]) => `; ${name}: ${names.slice(0, 3).join(", ")}`).join(""));
        selecting = null;
      }
      clearTimeout(describing);
      describing = setTimeout(describe, DESCRIBE_AFTER_MS);
      if (window.embeddingExplorerTree) window.embeddingExplorerTree.drawn();
    },
    describe, // for tests: the description now, not after the pause
    // where the keys are ({position, group}, or null), and the drawn points of a group's tokens in sentence
    // order, each `placed`: the plane heard (assets/sound.js) plays them, tests read them
    at: () => (at ? { ...at } : null),
    placed: (group) => (read() ? plane.tokens.map((t) => placed(t.position, group)).filter(Boolean) : []),
    // what the plane's structure (assets/plottree.js) reads the drawn plane with, and shows its points with
    GROUPS, NEAREST, CLASS, MARKERS, DESCRIBE_AFTER_MS, nearestName,
    read() { return host && read(); },
    pointOf, vertexOf, travelled, coordinates, distance, region, nearby, selectedPosition, neighbours, variance, axesOf,
    plain, segmentName, listed, ringOn, say,
    ringOff() {
      if (ring) ring.hidden = true;
      if (Plotly() && host && host._fullLayout) Plotly().Fx.unhover(host);
    },
  };
})();
