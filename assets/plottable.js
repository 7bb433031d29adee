// The plane's drawn points as a real table, for who cannot see the plot: table#plot-table under
// the plot, shown by its "Table" switch beside it or by `t` on the plane (assets/plotkeys.js), which
// moves the focus to it. A row per point drawn of the five groups (and an encoder layer's): the
// token, its position and segment, the group, its coordinates as drawn (rounded to a thousandth of
// its group's spread) and the two points drawn nearest it on its own panel, "word (group)". Read
// off the drawn figure, as the keys read it, so it lists what the plot shows, a group hidden from
// the legend left out. Written only while shown, and once drawing pauses, so typing pays a timer
// per figure and nothing more. core/drawing/plottable.py writes the same table into the exported
// HTML: its rules are these.
// assets/explorer.js tells this script where the plane is and of each figure it drew (`attach`, `drawn`).
(() => {
  const GROUPS = ["token", "position", "segment", "sum", "output"]; // the plot's traces, in the order they add up
  const LAYER = /^layer \d+$/; // an encoder layer's group (core/plane/scene.py Hidden.name)
  const HEADERS = ["token", "position", "segment", "group", "x", "y"];
  const NEAREST = "nearest in the plot";
  const BUILD_AFTER_MS = 500; // the table waits for drawing to pause this long (as the description does)
  const REGION = "The plane's points as a table";

  const decoder = document.createElement("textarea");
  const plain = (escaped) => { // token names come escaped (they are drawn as markup)
    decoder.innerHTML = escaped;
    return decoder.value;
  };
  const escapeHtml = (text) => String(text).replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
  const segmentName = (row) => (row >= 0 && row < 26 ? String.fromCharCode(65 + row) : String(row)); // core/plane/scene.py
  const isGroup = (name) => GROUPS.includes(name) || LAYER.test(name);

  let host = null; // the plane's div (plotly's graph div)
  let button = null; // the switch
  let region = null; // the table's scrolling frame, hidden while the switch is off
  let table = null;
  let said = null; // the caption's text, in a box of its own that stays in view while the table scrolls sideways
  let meta = null; // the last figure's layout.meta (its token columns)
  let stale = true; // a figure was drawn since the table was written
  let building = 0; // the timer of the next writing

  // digits after the point that keep a coordinate within a thousandth of a spread this wide
  function decimals(extent) {
    if (!extent || !Number.isFinite(extent)) return 3;
    return Math.min(6, Math.max(0, Math.ceil(3 - Math.log10(extent))));
  }
  function rounded(value, digits) {
    const text = Number(value).toFixed(digits);
    return /^-0(\.0*)?$/.test(text) ? text.slice(1) : text;
  }

  // a token's name from a hover text, which names every token at its spot: "the (1), the (5)"
  function nameIn(hover, position) {
    const text = plain(String(hover));
    const mine = text.split(", ").find((part) => part.endsWith(` (${position})`));
    return mine ? mine.slice(0, -` (${position})`.length) : text;
  }

  // the drawn points, group by group in the plot's order, tokens in the sentence's
  function rows() {
    const names = meta && meta.columns && meta.columns.tokens; // escaped, in the sentence's order
    const found = [];
    const seen = new Set();
    for (const trace of host._fullData || []) {
      if (!isGroup(trace.name) || seen.has(trace.name) || trace.visible !== true || !trace.x) continue;
      seen.add(trace.name);
      const three = trace.type === "scatter3d";
      const panel = three ? "scene" : `${trace.xaxis}${trace.yaxis}`;
      const points = [];
      for (let i = 0; i < trace.x.length; i += 1) {
        const xyz = three ? [trace.x[i], trace.y[i], trace.z[i]] : [trace.x[i], trace.y[i]];
        const data = trace.customdata[i];
        let point;
        if (trace.name === "segment") { // one point per segment row, shared by its tokens
          point = { token: `segment ${segmentName(data[0])}`, position: -1, shared: data[1], segment: segmentName(data[0]) };
        } else {
          const position = data[1];
          const name = names && position < names.length ? plain(names[position]) : nameIn(trace.hovertext[i], position);
          point = { token: name, position, shared: 1, segment: segmentName(data[2]) };
        }
        points.push({ ...point, group: trace.name, xyz: xyz.map(Number), panel });
      }
      points.sort((a, b) => a.position - b.position || (a.segment < b.segment ? -1 : a.segment > b.segment ? 1 : 0));
      const digits = decimals(spread(points)); // a group of one point (a segment's): its panel's spread, below
      points.forEach((point) => { point.digits = digits; point.alone = points.length < 2; });
      found.push(...points);
    }
    for (const row of found) {
      if (row.alone) row.digits = decimals(spread(found.filter((other) => other.panel === row.panel)));
    }
    nearest(found);
    return found;
  }

  function spread(points) {
    const finite = points.filter((point) => point.xyz.every(Number.isFinite));
    if (finite.length < 2) return 0;
    return Math.max(...finite[0].xyz.map((_, k) => {
      const values = finite.map((point) => point.xyz[k]);
      return Math.max(...values) - Math.min(...values);
    }));
  }

  // each row's `nearest`: the names of the other rows drawn nearest it on its own panel ("word (group)",
  // a word the sentence has twice with its position: "the at position 6 (token)")
  function nearest(found) {
    const positions = new Map();
    for (const row of found) {
      if (!positions.has(row.token)) positions.set(row.token, new Set());
      positions.get(row.token).add(row.position);
    }
    for (const row of found) {
      row.name = `${row.token}${positions.get(row.token).size > 1 ? ` at position ${row.position}` : ""} (${row.group})`;
    }
    const panels = new Map();
    for (const row of found) {
      if (!panels.has(row.panel)) panels.set(row.panel, []);
      panels.get(row.panel).push(row);
    }
    // every pair of a panel's points compared (a 512-token sentence's 2,049 points: 4 million pairs), over
    // flat coordinates: the nearest two kept as they come, a tie keeping the earlier row
    for (const members of panels.values()) {
      const dims = members[0].xyz.length;
      const flat = new Float64Array(members.length * dims);
      members.forEach((row, i) => flat.set(row.xyz, i * dims));
      for (let i = 0; i < members.length; i += 1) {
        let first = -1, second = -1, near1 = Infinity, near2 = Infinity;
        for (let j = 0; j < members.length; j += 1) {
          if (i === j) continue;
          let apart = 0;
          for (let k = 0; k < dims; k += 1) {
            const d = flat[i * dims + k] - flat[j * dims + k];
            apart += d * d;
          }
          if (!(apart < near2)) continue; // not nearer than the second (nor a point not drawn: NaN)
          if (apart < near1) {
            [second, near2, first, near1] = [first, near1, j, apart];
          } else {
            [second, near2] = [j, apart];
          }
        }
        members[i].nearest = [first, second].filter((j) => j >= 0).map((j) => members[j].name);
      }
    }
  }

  // what the table lists: its tokens and groups, and the plane's share of the variance
  function caption(found) {
    const layout = host._fullLayout || {};
    const three = found.some((row) => row.panel === "scene");
    const axes = three ? ["xaxis", "yaxis", "zaxis"].map((name) => (layout.scene || {})[name]) : [layout.xaxis, layout.yaxis];
    const titles = axes.map((axis) => plain(String((axis && axis.title && axis.title.text) || "")));
    const shares = titles.map((title) => (title.match(/([\d.]+)%/) || [])[1]);
    const tokens = new Set(found.filter((row) => row.position >= 0).map((row) => row.position)).size;
    const groups = new Set(found.map((row) => row.group)).size;
    let text = `The plane's points: ${tokens} tokens in ${groups} group${groups === 1 ? "" : "s"}`;
    if (found.length && shares.every((share) => share !== undefined)) {
      const kept = shares.reduce((sum, share) => sum + Number(share), 0);
      text += `, a PCA ${three ? "space" : "plane"} keeping ${kept.toFixed(1)}% of the variance`;
    } else if (found.length && titles[0]) {
      text += `, on the axes ${titles.join(" and ")}`;
    }
    return text;
  }

  // the table written from the figure drawn now
  function build() {
    clearTimeout(building);
    if (!host || !table) return;
    stale = false;
    const found = rows();
    const three = found.some((row) => row.panel === "scene");
    const headers = [...HEADERS, ...(three ? ["z"] : []), NEAREST];
    const head = headers.map((name) => `<th scope="col">${name}</th>`).join("");
    if (table.tHead.innerHTML !== `<tr>${head}</tr>`) table.tHead.innerHTML = `<tr>${head}</tr>`;
    said.textContent = caption(found);
    table.tBodies[0].innerHTML = found.map((row) => {
      const cells = [row.position >= 0 ? String(row.position) : `shared by ${row.shared}`, row.segment, row.group,
        ...row.xyz.map((value) => rounded(value, row.digits)), row.nearest.join(", ")];
      return `<tr><th scope="row">${escapeHtml(row.token)}</th>${cells.map((cell) => `<td>${escapeHtml(cell)}</td>`).join("")}</tr>`;
    }).join("");
  }

  function show(focus) {
    if (!region) return;
    region.hidden = false;
    button.setAttribute("aria-pressed", "true");
    if (stale) build();
    if (focus) table.focus();
  }

  function hide() {
    if (!region) return;
    clearTimeout(building);
    region.hidden = true;
    button.setAttribute("aria-pressed", "false");
  }

  window.embeddingPlotTable = {
    // the plane's div (assets/explorer.js `attach`): the switch and the table's frame go right after it
    attach(element) {
      if (host === element) return;
      host = element;
      button = Object.assign(document.createElement("button"), { type: "button", className: "plane-table-switch",
        textContent: "Table" });
      button.setAttribute("aria-pressed", "false");
      button.setAttribute("aria-controls", "plot-table-region");
      button.addEventListener("click", () => (region.hidden ? show(false) : hide()));
      const tools = Object.assign(document.createElement("div"), { className: "plane-tools" });
      tools.append(button);
      region = Object.assign(document.createElement("div"), { id: "plot-table-region", className: "plot-table-region",
        tabIndex: 0, hidden: true });
      region.setAttribute("role", "region");
      region.setAttribute("aria-label", REGION);
      table = Object.assign(document.createElement("table"), { id: "plot-table", className: "plot-table", tabIndex: -1 });
      said = Object.assign(document.createElement("span"), { className: "plot-table-said" });
      table.append(document.createElement("caption"), document.createElement("thead"), document.createElement("tbody"));
      table.caption.append(said);
      region.append(table);
      // Escape in the table goes back to the plane, where `t` brought it from
      region.addEventListener("keydown", (event) => {
        if (event.key === "Escape" && host) { event.preventDefault(); host.focus(); }
      });
      host.after(tools, region);
    },
    // a figure drawn (assets/explorer.js `plot`), or a group hidden or shown from the legend: a shown
    // table is written again once drawing pauses
    drawn(figureMeta) {
      if (figureMeta !== undefined) meta = figureMeta;
      if (host && host.on && !host.__tableListening) { // a group hidden or shown from the legend: drawn anew
        host.on("plotly_restyle", () => window.embeddingPlotTable.drawn());
        host.__tableListening = true;
      }
      stale = true;
      if (!region || region.hidden) return;
      clearTimeout(building);
      building = setTimeout(build, BUILD_AFTER_MS);
    },
    show, // `t` on the plane (assets/plotkeys.js): the table shown, and the focus on it
    hide,
    build, // for tests: the table now, not after the pause
  };
})();
