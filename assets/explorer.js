// What the page does in the browser that no Gradio component does:
//  - the page's one way in and out: every change (a key, a click, a widget, a tab, the tour, Back,
//    the page's work) is one POST to the page's route (ui/route.py), answered with values by
//    element id (`receive`): an output this script writes has a setter (`output`), any other is
//    handed to its gradio widget by one event that runs in the browser alone (`handOver`). A
//    training's answers stream as server-sent events (`events`, which assets/classroom.js uses too);
//  - the main plane is the page's own: #embed-plot is a gr.HTML this script draws with Plotly
//    (plotly.js served by the app, loaded once), as it draws every chart of the page (`chart`). A
//    keystroke is sent at once, at most two calls on their way, the latest text winning, and at
//    most one Plotly redraw per animation frame, so the textbox never waits for the plot; what
//    else the answer brings is written after the frame that paints the plot. A figure older than
//    the one shown (its layout.meta.revision) is never drawn;
//  - the main plot arrives compact (core/drawing/figures.py embedding_spec(compact=True)): what each
//    token's point shares across the groups is sent once, in layout.meta.columns; `expand`
//    puts it back into each group's trace, and the token table is drawn from the same columns;
//  - the vocabulary background: thousands of faint points sent once per basis and merged
//    into every redraw of the main plot, so a keystroke never sends them again;
//  - presenter mode's large type across the whole page, and the projector theme's dark page;
//  - PNG export at three times the screen's resolution.
// A class (following the lecturer's page) is assets/classroom.js; the plots by keyboard and screen
// reader, assets/plotkeys.js, and the drawn points as a table, assets/plottable.js (each told where
// the plane is and of each figure drawn: `keys`, `table`).
(() => {
  const BACKGROUND = "vocabulary";
  // the groups drawn one point per token (a segment's point is shared by all of its tokens)
  const GROUPS = new Set(["token", "position", "sum", "output"]);
  let background = null; // the background trace, or null when it is off

  // the compact figure's shared columns -> whole traces; core/drawing/wire.py `expand` is its twin, and
  // core/drawing/wire.py's docstring describes the columns (both checked against tests/fixtures/wire.json)
  // (a typed array's spec decoded as plotly decodes it: assets/move.js `decoded`), as a plain list
  const untyped = (value) => {
    const found = window.embeddingMove.decoded(value);
    return ArrayBuffer.isView(found) ? Array.from(found) : found;
  };
  const MAX_NAMED = 5; // core/drawing/wire.py MAX_NAMED: tokens a hover names at one spot at most
  function pileNames(names, positions, piles) {
    if (!piles || !piles.length) return names;
    const out = names.slice();
    for (const indices of piles) {
      let listed = indices.slice(0, MAX_NAMED).map((i) => `${names[i]} (${positions[i]})`).join(", ");
      if (indices.length > MAX_NAMED) listed += `, and ${indices.length - MAX_NAMED} more`;
      for (const i of indices) out[i] = listed;
    }
    return out;
  }
  function expand(data, layout) {
    const columns = layout && layout.meta && layout.meta.columns;
    if (!columns) return data;
    const order = untyped(columns.order);
    const pick = (values) => order.map((i) => values[i]);
    const ids = pick(untyped(columns.id));
    const positions = pick(untyped(columns.position));
    const segments = pick(untyped(columns.segment));
    const tokens = pick(columns.tokens);
    const symbols = pick(columns.symbol);
    return data.map((trace) => {
      const group = trace.meta && trace.meta.columns;
      if (!group) return trace;
      const norms = pick(untyped(columns.norm[group]));
      const { meta, ...rest } = trace;
      return {
        ...rest,
        hovertext: pileNames(tokens, positions, (columns.piles || {})[group]),
        customdata: ids.map((id, i) => [id, positions[i], segments[i], norms[i]]),
        marker: { ...trace.marker, symbol: symbols },
      };
    });
  }
  // the token table, one row per token in sentence order; tokens come escaped (as hover text).
  // Only the cells that changed are written: a keystroke changes a word's rows, or shifts the
  // positions after it, and rewriting all rows (up to 512 × 9 cells) made the browser style and
  // lay out every cell anew, 40 ms of a 128-token keystroke (bench/browser_roundtrip.py)
  const written = new WeakMap(); // a table cell -> the text last written in it
  function drawTable(layout) {
    const columns = layout && layout.meta && layout.meta.columns;
    const body = document.querySelector("#token-table tbody");
    if (!columns || !body) return;
    const ids = untyped(columns.id);
    const positions = untyped(columns.position);
    const segments = untyped(columns.segment);
    const norms = Object.values(columns.norm).map(untyped);
    const rows = body.rows;
    columns.tokens.forEach((token, i) => {
      const cells = [token, ids[i], positions[i], segments[i], ...norms.map((n) => n[i].toFixed(3))];
      let row = rows[i];
      if (!row || row.cells.length !== cells.length) {
        const fresh = document.createElement("tr");
        fresh.innerHTML = cells.map(() => "<td></td>").join("");
        if (row) row.replaceWith(fresh); else body.appendChild(fresh);
        row = fresh;
      }
      cells.forEach((value, c) => {
        const cell = row.cells[c];
        const text = String(value);
        if (written.get(cell) === text) return;
        written.set(cell, text);
        if (c === 0) cell.innerHTML = text; else cell.textContent = text;
      });
    });
    while (rows.length > columns.tokens.length) body.deleteRow(rows.length - 1);
  }

  // plotly.js: the app's own copy (ui/assets.py), loaded once
  const plotlyReady = new Promise((resolve) => {
    if (window.Plotly || !window.EMBEDDING_EXPLORER_PLOTLY) { resolve(window.Plotly); return; }
    const script = document.createElement("script");
    script.src = new URL(window.EMBEDDING_EXPLORER_PLOTLY, document.baseURI).href;
    script.onload = () => resolve(window.Plotly);
    script.onerror = () => resolve(null);
    document.head.appendChild(script);
  });
  let plotly = null;
  plotlyReady.then((value) => { plotly = value; });

  let host = null; // the div Plotly draws the main plane in (inside #embed-plot)
  let handOver = null; // fires #embed-plot's hand-over event: gradio sets what a direct answer brought it
  let forGradio = {}; // those values, by element id, until the hand-over takes them
  let key = null; // the page's key for its calls, issued with its first address
  const KEPT = "embedding-explorer-key"; // sessionStorage: this browser tab's key, let go when it reloads
  // an output this script writes, by element id -> its setter (`output`). The background's is the
  // script's own: it is drawn in the plane, while its carrier sits in the View tab, maybe never opened
  const setters = { "background-data": (json) => window.embeddingExplorer.setBackground(json) };
  const pending = {}; // a value for an output whose setter is not there yet (its tab not opened)
  const mainPlot = () => (host && host.data ? host : null);
  // a plot drawn while its box was hidden (the plane behind the LayerNorm tab, a chart in a tab not
  // open) or before the box grew (presenter mode, a phone's plot leaving the tour) keeps the size it
  // was drawn at: plotly sizes itself on a window resize only. Every plot's box is watched, and a
  // plot whose box, shown, is not the size it was drawn at is drawn again at the box's size, the
  // plane through `plot` (a training's held axes keep their scale and place: `heldLayout`)
  const boxes = new ResizeObserver((entries) => {
    for (const { target, contentRect } of entries) {
      const full = target._fullLayout;
      if (!plotly || !full || !contentRect.width || !contentRect.height) continue;
      if (Math.abs(full.width - contentRect.width) > 1 || Math.abs(full.height - contentRect.height) > 1) {
        if (target === host) plot(true); else plotly.Plots.resize(target);
      }
    }
  });
  const keys = () => window.embeddingExplorerKeys; // assets/plotkeys.js
  const table = () => window.embeddingPlotTable; // assets/plottable.js: the drawn points as a table
  // presenter mode keeps its control column where the row opens on the page (assets/style.css), and
  // draws the chart under the plot at layer K at the column's foot: that place, and the column's
  // left edge and width, measured again whenever the page's size changes (the sentences' row may grow)
  const columnPlace = new ResizeObserver(() => {
    const row = document.getElementById("main-row");
    const column = document.getElementById("control-column");
    if (!row) return;
    const box = column ? column.getBoundingClientRect() : null;
    const place = { "--column-top": `${Math.max(0, Math.round(row.getBoundingClientRect().top + scrollY))}px`,
      ...(box && box.width ? { "--column-left": `${Math.round(box.left)}px`, "--column-width": `${Math.round(box.width)}px` }
        : {}) };
    for (const [name, value] of Object.entries(place)) {
      if (document.body.style.getPropertyValue(name) !== value) document.body.style.setProperty(name, value);
    }
  });

  // the background goes first, so it is drawn behind the tokens (it is SVG: core/drawing/figures.py
  // background_trace); a stale copy is replaced
  const withBackground = (data) => {
    const rest = (data || []).filter((trace) => trace.name !== BACKGROUND);
    return background ? [background, ...rest] : rest;
  };

  // groups hidden by a click on their legend entry stay hidden through the redraws typing sends
  const hidden = new Set();
  function rememberHidden() {
    if (!host || !host.data) return;
    hidden.clear();
    host.data.forEach((trace) => { if (trace.visible === "legendonly") hidden.add(trace.name); });
  }
  const withHidden = (data) => data.map((trace) => (hidden.has(trace.name) ? { ...trace, visible: "legendonly" } : trace));

  // a student's own words in a class's round (assets/classroom.js `mark`), ringed where the class trace
  // draws them: the trace is the class's, shared by every page; the rings are this page's
  let own = [];
  function withOwn(data) {
    const words = data.find((trace) => trace.name === "class");
    const points = words && own.length ? (words.customdata || []).flatMap((word, i) => (own.includes(word) ? [i] : [])) : [];
    if (!points.length) return data;
    const at = (values) => { const all = untyped(values); return points.map((i) => all[i]); };
    const sizes = at(words.marker.size);
    return [...data, { type: words.type, name: "your words", x: at(words.x), y: at(words.y),
      ...(words.z ? { z: at(words.z) } : {}), xaxis: words.xaxis, yaxis: words.yaxis, mode: "markers",
      hoverinfo: "skip", marker: { symbol: "circle-open", size: sizes.map((size) => size + 12),
        color: (host && host.__ink && host.__ink.ring) || "#1a1a1a",  // the theme's ring (figures.py meta.ink)
        line: { width: 3 } } }];
  }

  // how the room reads the page: presenter mode's type, and the projector theme, which implies it and
  // darkens the page with gradio's own dark theme (body.dark); back in the light theme, the page is as
  // gradio opened it (dark on a system that asks for dark)
  const room = { presenter: false, projector: false, dark: null };
  function dressRoom() {
    const body = document.body;
    if (room.dark === null) room.dark = body.classList.contains("dark");
    body.classList.toggle("presenter", room.presenter || room.projector);  // the plots' boxes grow with it (`boxes`)
    body.classList.toggle("projector", room.projector);
    body.classList.toggle("dark", room.projector || room.dark);
    if (room.presenter || room.projector) columnPlace.observe(body); else columnPlace.disconnect();
  }

  const select = (position) => send({ token: position });
  function onClick(event) {
    const point = event.points && event.points[0];
    if (!point || !GROUPS.has(point.data.legendgroup) || !point.customdata) return;
    select(point.customdata[1]); // the token's position in the sequence
  }

  // the figure's labels for assets/labels.js, their texts whole (a compact figure's token
  // groups read theirs from its columns)
  function labelsOf(meta) {
    const labels = meta && meta.labels;
    const columns = meta && meta.columns;
    if (!labels || !columns) return labels || null;
    return window.embeddingLabels.texts(labels, columns.tokens, untyped(columns.position), untyped(columns.order),
      columns.piles);
  }

  // a training's figures keep the scale and place the plot had when its first one came
  // (layout.meta.hold names the view, meta.holdFrom marks a training's figures): each axis keeps
  // its pixels per unit and the value at each pixel, so the frozen points stay on the pixels they
  // were drawn on while the others move, and after it, even when the legend gains a row. A
  // figure of another view lets go; a zoom or a double-click is the person's own (plotly keeps it)
  const AXES = ["xaxis", "yaxis", "xaxis2", "yaxis2"];
  let holding = null; // {key, axes: {xaxis: {offset, length, range}, …}}
  function held(meta, layout) {
    const key = meta && meta.hold;
    const gd = mainPlot();
    if (!key || (holding && holding.key !== key && !meta.holdFrom)) holding = null;
    if (key && meta.holdFrom && (!holding || holding.key !== key) && gd && gd._fullLayout) {
      const axes = {};
      for (const name of AXES) {
        const axis = gd._fullLayout[name];
        if (axis) axes[name] = { offset: axis._offset, length: axis._length, range: axis.range.slice() };
      }
      holding = { key, axes };
    }
    return layout;
  }
  // `layout` with each held axis's range for the plot's place now (`full`, as last drawn)
  function heldRanges(layout, full) {
    const out = { ...layout };
    for (const [name, kept] of Object.entries(holding.axes)) {
      const now = full && full[name];
      if (!out[name] || !now) continue;
      const per = (kept.range[1] - kept.range[0]) / kept.length; // units per pixel
      const shift = (now._offset - kept.offset) * per; // the plot's edge moved by this many units
      const range = name.startsWith("x") ? [kept.range[0] + shift, kept.range[0] + shift + now._length * per]
        : [kept.range[1] - shift - now._length * per, kept.range[1] - shift]; // y: the offset is the top
      out[name] = { ...out[name], range, autorange: false };
    }
    return out;
  }
  // where the axes of a held figure will be: its legend may differ from the one drawn (a training
  // adds "before training" and the categories) and take more rows, and the plot's box may have
  // changed size since (on a phone, the tour's plot is shorter than another tab's). Then the
  // figure is first laid out in an unseen plot of that size (`ruler`), so the plot is drawn once,
  // already in place
  let ruler = null;
  const legendOf = (data) => data.filter((t) => t.showlegend !== false).map((t) => t.name).join("\u0001");
  async function heldLayout(data, layout, config) {
    if (!holding || !host._fullLayout) return layout;
    const box = getComputedStyle(host);
    const width = Math.round(parseFloat(box.width)), height = Math.round(parseFloat(box.height));
    const drawn = host._fullLayout;
    if (legendOf(data) === legendOf(host.data || []) && width === drawn.width && height === drawn.height) {
      return heldRanges(layout, drawn);
    }
    if (!ruler) {
      ruler = document.createElement("div");
      ruler.setAttribute("aria-hidden", "true");
      ruler.style.cssText = "position: fixed; left: -20000px; top: 0; visibility: hidden; pointer-events: none";
      document.body.appendChild(ruler);
    }
    ruler.style.width = `${width}px`;
    ruler.style.height = `${height}px`;
    await plotly.react(ruler, data, { ...layout, width, height }, { ...config, responsive: false });
    return heldRanges(layout, ruler._fullLayout);
  }

  // drawing: the newest figure given, at most once per animation frame (`frame`: this frame's
  // drawing is done, later figures wait for the next)
  let drawnRevision = -1;
  let nextFigure = null;
  let frame = 0;
  let shown = null; // the last figure drawn, expanded, without the background
  function draw(json) {
    if (!json) return;
    let figure;
    try { figure = JSON.parse(json); } catch (error) { return; }
    const revision = (figure.layout && figure.layout.meta && figure.layout.meta.revision) || 0;
    if (revision <= drawnRevision) return;
    drawnRevision = revision;
    nextFigure = figure;
    // the first figure of a frame is drawn at once; one that comes while a frame already has its
    // drawing waits for the next frame, where only the newest of those is drawn
    if (frame) return;
    frame = requestAnimationFrame(() => {
      frame = 0;
      if (nextFigure) redraw();
    });
    redraw();
  }
  async function redraw() {
    const figure = nextFigure;
    nextFigure = null;
    const Plotly = await plotlyReady;
    if (!figure || !host || !Plotly) return;
    const { meta, ...rest } = figure.layout || {};
    const revision = (meta && meta.revision) || 0;
    // a constant uirevision keeps what the user did to the plot (zoom, a 3-D camera) across redraws
    shown = { data: expand(figure.data, figure.layout), layout: held(meta, { ...rest, uirevision: "embedding" }),
      config: { responsive: true, displaylogo: false, ...(figure.config || {}) }, labels: labelsOf(meta), meta,
      revision };
    await plot();
    // the table after the plot (`afterPlot`): plotly measures its labels as it draws, and each
    // measurement would lay out the page again with a changed table of up to 512 rows in it
    waiting.table = figure.layout;
    afterPlot();
  }
  // the background: the JSON of one trace, or "" to remove the layer
  function setBackground(json) {
    background = json ? JSON.parse(json) : null;
    plot();
    return [];
  }
  // the plane is drawn by moving its points when only they changed (assets/move.js), else whole by
  // plotly; once moves pause, plotly draws the last figure whole (its hover and autorange its own)
  const SETTLE_MS = 300;
  let settling = 0;
  let listening = false;
  async function plot(whole = false) {
    const Plotly = await plotlyReady;
    if (!shown || !host || !Plotly) return;
    clearTimeout(settling);
    // the labels are placed (assets/labels.js) once the figure they belong to is drawn
    const labels = window.embeddingLabels;
    labels.use(host, shown.labels);
    host.__ink = (shown.meta && shown.meta.ink) || null;  // the theme's colours for the labels' layer
    host.dataset.plotted = shown.revision; // the revision being drawn, and (below) the one drawn whole
    const data = withHidden(withBackground(withOwn(shown.data)));
    const mover = window.embeddingMove;
    const moved = !whole && !holding && mover.move(host, data, shown.layout);
    if (moved === true) {
      labels.draw(host);
      host.dataset.moved = "points"; // drawn by moving its points, to be drawn whole
      settling = setTimeout(() => plot(true), SETTLE_MS);
    } else {
      // a point moved past the axes while typing: drawn whole with room for the next keys' moves,
      // and drawn whole again, plainly, once they pause
      let layout = await heldLayout(data, shown.layout, shown.config);
      if (moved === mover.PAST) {
        layout = mover.headroom(host, data, layout);
        host.dataset.moved = "room"; // drawn whole with room to move, to be drawn plainly
        settling = setTimeout(() => plot(true), SETTLE_MS);
      } else {
        delete host.dataset.moved;
      }
      mover.roomy(host, layout !== shown.layout && moved === mover.PAST);
      mover.drawn(host, data, shown.layout); // the figure's own layout: the next keystroke's is compared with it
      await Plotly.react(host, data, layout, shown.config);
      if (!host.__labelsListening) labels.show(host, shown.labels);
    }
    host.dataset.drawn = shown.revision;
    keys().drawn(shown.meta);
    table().drawn(shown.meta);
    if (!listening && host.on) {
      host.on("plotly_restyle", rememberHidden);
      host.on("plotly_click", onClick);
      listening = true;
    }
  }

  // the page's route. A change the person makes (a key, a click, a tab) goes at once while one call
  // is on its way: if that call still waits for its turn, the server merges the change into it
  // and answers {merged: true}, and the waiting call's answer shows both (ui/route.py). At most
  // two calls are on their way (one computing, one waiting); what is made meanwhile is merged
  // into the next. A tour step, an example pair or Back goes alone, after the calls before it
  // each the server's to compute, alone: a view it makes, or work (a refit, the link, an export, the token list)
  const ALONE = ["move", "go", "example", "back", "flip", "listing", "reset", "refit", "link", "export", "picker"];
  const plain = (change) => !ALONE.some((name) => name in change);
  let calls = 0;
  let alone = false;  // the call on its way is a tour step or an example pair
  let queued = null;
  function send(change) {
    // presses of Next and Previous made while one is in flight add up: none is lost; a step chosen
    // in the picker replaces them, and those pressed after it count from it; two presses of Flip cancel
    const before = queued || {};
    const next = { ...before, ...change };
    if ("move" in change && "move" in before) next.move = before.move + change.move;
    if ("flip" in change && "flip" in before) next.flip = before.flip !== change.flip;
    if ("go" in change) delete next.move;
    else if ("move" in change && "go" in before) {
      next.go = Math.min(Math.max(before.go + change.move, 1), window.EMBEDDING_EXPLORER_STEPS);
      delete next.move;
    }
    queued = next;
    flush();
  }
  async function flush() {
    if (!queued || !key || calls >= 2 || (calls && (alone || !plain(queued)))) return;
    const change = queued;
    queued = null;
    calls += 1;
    alone = !plain(change);
    let answer;
    try {
      const response = await fetch(new URL("explorer/live", document.baseURI), {
        method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify({ key, change }),
      });
      answer = await response.json();
    } catch (error) {
      answer = { error: "The server could not be reached: check the connection, then type again." };
    }
    calls -= 1;
    if (!calls) alone = false;
    // a newer change is on its way (or about to be): its answer draws the plot, this one's would
    // only hold the next key back (a redraw the person never sees for long)
    receive(answer, calls > 0 || queued !== null);
    flush();
  }
  // server-sent events from a POST (the page's route's streams: a training's curve, a class's
  // stream, assets/classroom.js): `heard(message)` for each event's JSON data, until the stream ends
  // or `signal` aborts it. Returns the response (its status and type say whether it streamed).
  // Each message is written before the next is heard (`painted`): on a busy page several arrive in
  // one read, and the newest value of each output would win unseen (a training's steps 20 and 40)
  async function events(path, body, heard, signal) {
    const response = await fetch(new URL(path, document.baseURI), {
      method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify(body), signal,
    });
    if (!response.ok || !(response.headers.get("Content-Type") || "").includes("event-stream")) return response;
    const reader = response.body.getReader();
    const decoder = new TextDecoder();
    let text = "";
    for (;;) {
      const { done, value } = await reader.read();
      text += decoder.decode(value || new Uint8Array(), { stream: !done }).replace(/\r\n?/g, "\n");
      const blocks = text.split("\n\n");
      text = done ? "" : blocks.pop();
      for (const block of blocks) {
        const data = block.split("\n").filter((line) => line.startsWith("data:")).map((line) => line.slice(5).trim());
        if (!data.length) continue;
        heard(JSON.parse(data.join("\n")));
        await painted();
      }
      if (done) break;
    }
    return response;
  }
  // once what the answers so far wrote is on the page (`writeWaiting`, after the frame that paints
  // their plot): at once when nothing waits
  const painted = () => (waiting.frame || waiting.timer
    ? new Promise((done) => waiting.written.push(done)) : Promise.resolve());
  // work answered as it goes (a training's curve): each event applied as it comes. A press while its
  // work runs is let go; the work stops when the page goes (the server sees it leave)
  const streaming = new Set();
  async function stream(name, value) {
    if (!key || streaming.has(name)) return;
    streaming.add(name);
    try {
      const response = await events("explorer/live", { key, change: { [name]: value } }, (message) => receive(message));
      if (!(response.headers.get("Content-Type") || "").includes("event-stream")) receive(await response.json());
    } catch (error) {
      receive({ error: "The server could not be reached: check the connection, then try again." });
    } finally {
      streaming.delete(name);
    }
  }
  // an uploaded table: the file is the body of one POST to the page's route for uploads (ui/files.py)
  async function upload(file, input) {
    if (!key) return;
    let answer;
    try {
      const response = await fetch(new URL("explorer/upload", document.baseURI), {
        method: "POST", body: file,
        headers: { "X-Explorer-Key": key, "X-File-Name": encodeURIComponent(file.name) },
      });
      answer = await response.json();
    } catch (error) {
      answer = { error: "The file could not be sent: check the connection, then try again." };
    }
    if (input) input.value = ""; // emptied, so a refused file does not look loaded
    receive(answer);
  }
  const escapeHtml = (text) => String(text).replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
  // a direct answer (a keystroke's, a click's, a class's lesson: assets/classroom.js): values by
  // element id, applied here and only here. An output this script writes (it has a setter) is
  // set; any other is handed to its gradio component by the hand-over event (one that runs in the
  // browser alone); a value not yet taken is replaced by a newer one.
  // `overtaken`: a newer change's answer is coming: this one's plot is held, not drawn, and drawn
  // only if no newer plot comes (the newer call refused, say)
  let heldPlot = null;
  function receive(answer, overtaken = false) {
    const values = (answer && !answer.error && answer.values) || {};
    if ("embed-plot" in values) heldPlot = values["embed-plot"];
    const drawing = !overtaken && heldPlot !== null;
    if (drawing) {
      const plot = heldPlot;
      heldPlot = null;
      setOutput("embed-plot", plot);
    }
    if (!answer || answer.skipped || answer.merged) return;
    if (answer.error) {
      waiting.values.notice = `<p>⚠️ ${escapeHtml(answer.error)}</p>`;
      writeWaiting();
      return;
    }
    Object.assign(waiting.values, values);
    delete waiting.values["embed-plot"];
    if (drawing) afterPlot(); else if (!overtaken) writeWaiting();
  }
  // what an answer writes besides the plot, and the token table, wait for the frame that paints
  // the plot: the plot is what a keystroke is for, and the text, bars and address written first
  // made plotly's measurements lay the page out again around them. An overtaken answer's values
  // wait with its held plot. The newest value of each output wins; an answer without a plot, or an
  // error, writes what waits at once. (A page whose frames stop, hidden, writes it a moment later
  // all the same.)
  const waiting = { values: {}, table: null, frame: 0, timer: 0, written: [] };
  function afterPlot() {
    if (waiting.frame || waiting.timer) return; // a write is on its way already
    waiting.timer = setTimeout(writeWaiting, 250);
    waiting.frame = requestAnimationFrame(() => {
      waiting.frame = 0;
      clearTimeout(waiting.timer);
      waiting.timer = setTimeout(writeWaiting, 0); // the first task after that frame's paint
    });
  }
  function writeWaiting() {
    cancelAnimationFrame(waiting.frame);
    clearTimeout(waiting.timer);
    const { values, table, written } = waiting;
    Object.assign(waiting, { values: {}, table: null, frame: 0, timer: 0, written: [] });
    if (table) drawTable(table);
    let handed = false;
    for (const [id, value] of Object.entries(values)) {
      if (id === "controls" && value && value.selected) markPanel(value.selected);
      if (id in setters || WRITTEN.has(id)) {
        setOutput(id, value);
      } else {
        forGradio[id] = value;
        handed = true;
      }
    }
    if (handed && handOver) handOver();
    written.forEach((done) => done());
    document.dispatchEvent(new CustomEvent("explorer:written")); // the tour's picker follows (assets/tour.js)
  }
  // the hand-over event's script (ui/page.py `hand_over`): its outputs' element ids, in the order
  // gradio lists them, and their values; gradio leaves an output whose value is undefined as it is
  function takeForGradio(ids) {
    const values = ids.map((id) => forGradio[id]);
    forGradio = {};
    return values;
  }
  // an output the page writes: set by its setter (its component's script installed it: `output`);
  // one whose tab has not opened yet keeps its newest value until it does. The plot is only drawn,
  // and the background merged into it whichever tab is open (its element is in the View tab)
  function setOutput(id, value) {
    if (id === "embed-plot") {
      draw(value);
      return;
    }
    if (id === "background-data") {
      setBackground(value);
      return;
    }
    if (setters[id]) setters[id](value); else pending[id] = value;
  }
  // the outputs this script writes (ui/page.py Page.written), whether or not their setters are there yet
  const WRITTEN = new Set(["embed-info", "variance-bars", "notice", "address", "export-links", "background-data",
    "tour-text", "positions-plot", "layernorm-plot", "similarity-plot", "listing-plot", "loss-plot", "context-plot"]);
  // a chart of the page (ui/assets.py chart): drawn from its figure's JSON in a div of its own; "" removes
  // it. A chart without that div is not shown (assets/style.css): nothing drawn is no empty box nor Tab stop
  async function chart(element, json) {
    const Plotly = await plotlyReady;
    let host = element.querySelector(".chart-host");
    if (!json) {
      if (host && Plotly && host.data) Plotly.purge(host);
      if (host) host.remove();
      return;
    }
    if (!host) {
      host = document.createElement("div");
      host.className = "chart-host";
      element.appendChild(host);
      boxes.observe(host);
    }
    let figure;
    try { figure = JSON.parse(json); } catch (error) { return; }
    if (Plotly) await Plotly.react(host, figure.data, { ...figure.layout, autosize: true },
      { responsive: true, displaylogo: false, ...(figure.config || {}) });
    // a chart drawn in the presenter's control column (a training's loss curve, as it grows) is
    // kept in its view, beside the plot: the column scrolls on its own there (assets/style.css).
    // Once the text written with it is laid out
    if (document.body.classList.contains("presenter") && element.closest("#control-column")) {
      requestAnimationFrame(() => element.scrollIntoView({ block: "nearest" }));
    }
  }

  // a keystroke in a sentence box goes straight to the server (a value gradio sets, from a
  // tour step or a link, fires no input event: it was computed on the server already)
  const SENTENCES = { "sentence-a": "sentence_a", "sentence-b": "sentence_b" };
  document.addEventListener("input", (event) => {
    const target = event.target;
    const box = target && target.closest && target.closest("#sentence-a, #sentence-b");
    if (!box || !target.matches("textarea, input")) return;
    send({ [SENTENCES[box.id]]: target.value });
  }, true);

  // a phone's plot gets larger labels fitted to its width (the page said which screen it has when
  // it opened: ui/tourpanel.py SCREEN_JS); turned to landscape or back, the plot is fitted anew
  matchMedia("(max-width: 600px)").addEventListener("change", (event) => send({ narrow: event.matches }));

  // whether the Tour tab is open, on #main-row as a class (`on-tour`): the stylesheet lays a phone's
  // tour out by it, and assets/classroom.js scrolls by it. The row is built with it when the page
  // opens on the tour (ui/page.py); a tab's select and an answer's tab change it
  function markPanel(name) {
    const row = document.getElementById("main-row");
    if (row) row.classList.toggle("on-tour", name === "tour");
  }

  // the page's opening, its first call on its route: its address's query, its screen, and the key
  // this browser tab had before a reload (its tab is let go at once). The answer is the view, the
  // new key among it (#address); sent once the plot can be drawn
  let opened = false;
  async function open() {
    opened = true;
    const sent = { query: location.search.replace(/^[?]/, ""), narrow: matchMedia("(max-width: 600px)").matches,
      previous: sessionStorage.getItem(KEPT) || undefined };
    let answer;
    try {
      const response = await fetch(new URL("explorer/live", document.baseURI), {
        method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify({ open: sent }),
      });
      answer = await response.json();
    } catch (error) {
      answer = { error: "The server could not be reached: check the connection, then reload the page." };
    }
    receive(answer);
  }

  window.embeddingExplorer = {
    // #embed-plot's script: the div to draw in, and how to fire its hand-over event
    attach(element, fireHandOver) {
      if (host) boxes.unobserve(host);
      host = element;
      boxes.observe(host);
      handOver = fireHandOver;
      keys().attach(element);
      table().attach(element);
      if (!opened) open();
      if (shown) plot();
      flush();
      if (Object.keys(forGradio).length) handOver();
    },
    handOver: takeForGradio,
    draw,
    setKey(value) {
      key = value;
      sessionStorage.setItem(KEPT, value);
      flush();
      if (window.embeddingExplorerClass) window.embeddingExplorerClass.setKey(value);
    },
    receive,
    // a tab's select (ui/ondemand.py `content`): {panel: key} for a control tab, {shown: key} for
    // a main one (the view's fields). Sent once the page has its key; gradio's selects of the tabs
    // the page is built with come before it, and change nothing
    tabOpened(change) {
      if (change.panel) markPanel(change.panel);
      if (key) send(change);
    },
    // a token selected from the keyboard (assets/plotkeys.js), as a click on its point selects it
    select,
    // a change on the page (ui/page.py `wire`: a widget's view field; an action, a work): sent once
    // the page has its key
    set(change) {
      send(change);
      return [];
    },
    // Train pressed (ui/trainpanel.py): {steps, corpus}, its curve streamed as it goes
    train(change) {
      // a phone's plot is above the Train button, off the screen: the points that move are put
      // on it, and kept there once the training's last figure is written (the curve and the
      // summary are below, a scroll away)
      const toPlot = () => {
        if (matchMedia("(max-width: 600px)").matches) document.getElementById("embed-plot").scrollIntoView({ block: "start" });
      };
      toPlot();
      stream("train", change).then(painted).then(toPlot);
      return [];
    },
    upload,
    events,
    painted,
    chart,
    // an output this script writes (ui/assets.py written_by_page, chart): its setter, given a value
    // that came before it was there
    output(id, setter) {
      setters[id] = setter;
      if (id in pending) {
        const value = pending[id];
        delete pending[id];
        setter(value);
      }
    },
    setBackground,
    presenter(on) {
      room.presenter = Boolean(on);
      dressRoom();
      return [];
    },
    // the view's theme (ui/viewpanel.py): "projector" is gradio's dark page at presenter mode's size
    // (the plots are drawn dark on the server, core/drawing/palette.py)
    theme(theme) {
      room.projector = theme === "projector";
      dressRoom();
      return [];
    },
    // the plot as it is on screen, at three times its pixels: the layout's own width and
    // height, not plotly's 700 × 450 default, so what was framed is what is saved; plotly draws
    // its own layers only, so the labels go in as its notes, where the page placed them
    downloadPNG() {
      const gd = mainPlot();
      if (!gd || !plotly) return [];
      const full = gd._fullLayout || {};
      const box = gd.getBoundingClientRect();
      const width = Math.round(full.width || box.width) || undefined;
      const height = Math.round(full.height || box.height) || undefined;
      const layout = { ...gd.layout, annotations: [...(gd.layout.annotations || []),
        ...window.embeddingLabels.annotations(gd)] };
      plotly.downloadImage({ data: gd.data, layout, config: gd._context },
        { format: "png", scale: 3, width, height, filename: "embedding" });
      return [];
    },
    // the plot the page shows (the plane, or the main tab's chart that hides it) as plotly's SVG, at
    // the size it has on screen (where the page placed its labels: they go in as its notes, as in
    // downloadPNG), its WebGL traces drawn as SVG ones so that every marker is a vector: a slide's
    // plot (assets/slide.js), which scales it to its place
    async plotSVG() {
      const Plotly = await plotlyReady;
      const seen = (gd) => Boolean(gd && gd.data && gd.getClientRects().length);
      const main = mainPlot();
      const gd = seen(main) ? main
        : [...document.querySelectorAll("#main-column .chart .js-plotly-plot")].find(seen) || main;
      if (!gd || !Plotly) return null;
      const full = gd._fullLayout || {}, box = gd.getBoundingClientRect();
      const width = Math.round(full.width || box.width), height = Math.round(full.height || box.height);
      const annotations = [...(gd.layout.annotations || []),
        ...(gd === main ? window.embeddingLabels.annotations(gd) : [])];
      const data = gd.data.map((trace) => (trace.type === "scattergl" ? { ...trace, type: "scatter" } : trace));
      const svg = await Plotly.toImage({ data, layout: { ...gd.layout, annotations, width, height },
        config: gd._context }, { format: "svg", width, height, imageDataOnly: true });
      return { svg, width, height };
    },
    hasBackground: () => background !== null,
    // a student's own words in a class's round, ringed on the class trace
    mark(words) {
      const changed = JSON.stringify(words) !== JSON.stringify(own);
      own = words.slice();
      if (changed) plot();
    },
    // the wire format's readers, for tests/test_wire_format.py: expand(data, layout) -> traces,
    // drawTable(layout) fills #token-table's body, labelsOf(layout.meta) -> the labels, texts whole
    expand,
    drawTable,
    labelsOf,
  };
})();
