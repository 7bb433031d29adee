// What the page does in the browser that no Gradio component does:
//  - the main plot arrives compact (core/figures.py embedding_spec(compact=True)): what each
//    token's point shares across the groups is sent once, in layout.meta.columns; `expand`
//    puts it back into each group's trace, and the token table is drawn from the same columns;
//  - the vocabulary background: thousands of faint points sent once per basis and merged
//    into every redraw of the main plot, so a keystroke never sends them again;
//  - a click on a point selects its token for the nearest-neighbour panel;
//  - presenter mode's large type across the whole page;
//  - PNG export at three times the screen's resolution.
(() => {
  const MAIN = "#embed-plot";
  const BACKGROUND = "vocabulary";
  // the groups drawn one point per token (a segment's point is shared by all of its tokens)
  const GROUPS = new Set(["token", "position", "sum", "output"]);
  let background = null; // the background trace, or null when it is off

  // the compact figure's shared columns -> whole traces; core/figures.py `expand` is its twin
  const DTYPES = { f4: Float32Array, f8: Float64Array, i1: Int8Array, u1: Uint8Array, i2: Int16Array,
    u2: Uint16Array, i4: Int32Array, u4: Uint32Array };
  const untyped = (value) => {
    if (!value || typeof value !== "object" || !("bdata" in value)) return value;
    const bytes = Uint8Array.from(atob(value.bdata), (c) => c.charCodeAt(0));
    return Array.from(new DTYPES[value.dtype](bytes.buffer));
  };
  const MAX_NAMED = 5; // core/figures.py MAX_NAMED: tokens a hover names at one spot at most
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
  // the token table, one row per token in sentence order; tokens come escaped (as hover text)
  function drawTable(layout) {
    const columns = layout && layout.meta && layout.meta.columns;
    const body = document.querySelector("#token-table tbody");
    if (!columns || !body) return;
    const ids = untyped(columns.id);
    const positions = untyped(columns.position);
    const segments = untyped(columns.segment);
    const norms = Object.values(columns.norm).map(untyped);
    body.innerHTML = columns.tokens.map((token, i) => `<tr><td>${token}</td><td>${ids[i]}</td>`
      + `<td>${positions[i]}</td><td>${segments[i]}</td>`
      + norms.map((n) => `<td>${n[i].toFixed(3)}</td>`).join("") + "</tr>").join("");
  }

  const mainPlot = () => document.querySelector(`${MAIN} .js-plotly-plot`);
  const isMain = (gd) => gd instanceof Element && gd.closest(MAIN) !== null;

  // the background goes first, so it is drawn behind the tokens; a stale copy is replaced.
  // Plotly draws every WebGL trace above every SVG one: a background of up to 5,000 words
  // comes as SVG (core/figures.py background_trace), a larger one as WebGL, and then the
  // plain point traces go to WebGL too, so the tokens stay on top of it
  const withBackground = (data) => {
    const rest = (data || []).filter((trace) => trace.name !== BACKGROUND);
    if (!background) return rest;
    if (background.type !== "scattergl") return [background, ...rest];
    return [background, ...rest.map((trace) =>
      trace.type === "scatter" && !String(trace.mode || "").includes("lines") ? { ...trace, type: "scattergl" } : trace)];
  };

  // groups hidden by a click on their legend entry stay hidden through the redraws typing
  // sends (gradio may redraw from scratch, which would forget them)
  const hidden = new Set();
  function rememberHidden() {
    const gd = mainPlot();
    if (!gd || !gd.data) return;
    hidden.clear();
    gd.data.forEach((trace) => { if (trace.visible === "legendonly") hidden.add(trace.name); });
  }
  const withHidden = (data) => data.map((trace) => (hidden.has(trace.name) ? { ...trace, visible: "legendonly" } : trace));

  function onClick(event) {
    const point = event.points && event.points[0];
    if (!point || !GROUPS.has(point.data.legendgroup) || !point.customdata) return;
    // the token's position in the sequence; ui/plane.py's #picked-token sends it to the server
    if (window.embeddingExplorerPick) window.embeddingExplorerPick(point.customdata[1]);
  }

  // Gradio redraws its plots with Plotly.react; wrapping it (once Plotly exists) lets the
  // background ride along with each redraw of the main plot
  function patch(Plotly) {
    if (!Plotly || Plotly.embeddingExplorer) return;
    const react = Plotly.react;
    Plotly.react = function (gd, data, layout, config) {
      if (!isMain(gd)) return react.call(this, gd, data, layout, config);
      // a constant uirevision keeps what the user did to the plot — groups hidden from the
      // legend, zoom, a 3-D camera — across the redraws that typing sends
      const { meta, ...rest } = layout || {};
      const kept = { ...rest, uirevision: "embedding" };
      drawTable(layout);
      return react.call(this, gd, withHidden(withBackground(expand(data, layout))), kept, config).then((div) => {
        div.removeListener?.("plotly_restyle", rememberHidden);
        div.on?.("plotly_restyle", rememberHidden);
        div.removeListener?.("plotly_click", onClick);
        div.on?.("plotly_click", onClick);
        return div;
      });
    };
    Plotly.embeddingExplorer = true;
  }
  let plotly = window.Plotly;
  patch(plotly);
  Object.defineProperty(window, "Plotly", {
    configurable: true,
    get: () => plotly,
    set: (value) => {
      plotly = value;
      patch(value);
    },
  });

  window.embeddingExplorer = {
    // called with the JSON of one scattergl trace, or "" to remove the layer
    setBackground(json) {
      background = json ? JSON.parse(json) : null;
      const gd = mainPlot();
      if (gd && plotly) plotly.react(gd, gd.data, gd.layout);
      return [];
    },
    presenter(on) {
      document.body.classList.toggle("presenter", Boolean(on));
      // the plot's box grows with the class; plotly sizes itself only on a window resize
      requestAnimationFrame(() => {
        const gd = mainPlot();
        if (gd && plotly && plotly.Plots) plotly.Plots.resize(gd);
      });
      return [];
    },
    // the plot as it is on screen, at three times its pixels: the layout's own width and
    // height, not plotly's 700 × 450 default, so what was framed is what is saved
    downloadPNG() {
      const gd = mainPlot();
      if (!gd || !plotly) return [];
      const full = gd._fullLayout || {};
      const box = gd.getBoundingClientRect();
      const width = Math.round(full.width || box.width) || undefined;
      const height = Math.round(full.height || box.height) || undefined;
      plotly.downloadImage(gd, { format: "png", scale: 3, width, height, filename: "embedding" });
      return [];
    },
    hasBackground: () => background !== null,
  };
})();
