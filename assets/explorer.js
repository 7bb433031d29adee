// What the page does in the browser that no Gradio component does:
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
    const box = document.querySelector("#picked-token textarea, #picked-token input");
    if (!box) return;
    // the token's position in the sequence, made unique so a second click on it still counts
    box.value = `${point.customdata[1]}@${Date.now()}`;
    box.dispatchEvent(new Event("input", { bubbles: true }));
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
      const kept = { ...(layout || {}), uirevision: "embedding" };
      return react.call(this, gd, withHidden(withBackground(data)), kept, config).then((div) => {
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
