// The plane's structure, a tree to walk at the level of detail one wants (WAI-ARIA's tree pattern,
// which every screen reader knows): the plane (its tokens, groups and kept variance), each group
// (where it lies, how spread, the group nearest it), each token of a group in sentence order (its
// place, the tokens drawn nearest it, its cosines where the figure carries them), and what is drawn
// around a token (its neighbour stars, a class's words, a search's matches; at layer K, its path's
// vertices, hidden state 0 to after layer K). A sighted person reads
// these off the plot; the tree says them in words, and the plot's ring shows the item focused.
// It is the Tab stop after the plane and its tool bar (`s` on the plane comes here too); → opens and enters, ← closes
// and goes up, ↓ ↑ Home End move among the items shown, Enter selects a token, Escape goes back to
// the plane. Only the items of open branches are built, and the tree is built again after a figure
// only while it has the focus (or had it a moment ago), else once drawing pauses: typing pays a
// timer per figure. The focused item keeps its place (its group and position) across figures.
// assets/plotkeys.js reads the drawn plane for it and draws the ring (`window.embeddingExplorerKeys`).
(() => {
  const SEARCH = "search"; // core/plane/search.py SEARCH: the search's crosses, over the token panel
  const LAYER = /^layer \d+$/; // core/plane/scene.py HiddenStates.name: the layers view's group
  const RECENT_MS = 2000; // a tree left this long ago still follows each figure at once
  const SPREAD = [[0.15, "tightly grouped"], [0.5, "loosely grouped"], [Infinity, "widely spread"]];
  const keys = () => window.embeddingExplorerKeys; // assets/plotkeys.js

  let host = null; // the plane's div
  let tree = null; // the role=tree list
  let root = null; // the model last built: {key, text, point, position, children}
  const items = new Map(); // key -> its treeitem element
  const open = new Set(["plane"]); // the keys of the open items
  let focusedKey = "plane"; // the item with tabindex=0
  let focusedPath = []; // its place: the index at each level below the plane
  let building = 0; // the timer of the next build
  let left = 0; // when the tree last lost the focus
  let selecting = null; // the position Enter selected, until a figure shows it selected
  let serial = 0; // for the rows' ids

  const number = (value) => (value < 0 ? `−${Math.abs(value).toFixed(2)}` : value.toFixed(2));
  const capital = (text) => text.charAt(0).toUpperCase() + text.slice(1);
  const mean = (values) => values.reduce((sum, value) => sum + value, 0) / (values.length || 1);
  const has = (name) => /[\p{L}\p{N}]/u.test(name); // "drawn nearest ." says nothing to a listener

  // ------------------------------------------------------------------------------ the model

  // the groups drawn: the plane's own (plotkeys' GROUPS), then the layers view's "layer K"
  function groupsOf(plane) {
    const groups = plane.groups.map((name) => ({ name, trace: plane.traces[name] }));
    const layer = host._fullData.find((t) => LAYER.test(t.name) && t.visible === true && t.customdata && t.x);
    if (layer) groups.push({ name: layer.name, trace: layer });
    return groups;
  }

  // the point of the token at `position` in a group: [trace, index], or null
  function pointIn(group, position) {
    if (!LAYER.test(group.name)) return keys().pointOf(position, group.name);
    const index = Array.from(group.trace.customdata, (row) => row[1]).indexOf(position);
    return index < 0 ? null : [group.trace, index];
  }

  const where = (trace, i) => {
    const [x, y, z] = keys().coordinates(trace, i);
    return `at x ${number(x)}, y ${number(y)}${z === undefined ? "" : `, z ${number(z)}`}`;
  };

  function build() {
    const k = keys();
    const plane = k.read();
    if (!plane || !host._fullLayout) {
      return { key: "plane", text: "Embedding plane: nothing is drawn yet", point: null, children: null };
    }
    const groups = groupsOf(plane);
    const { three, kept } = groups.length ? k.variance() : { three: false, kept: null };
    const names = groups.map((group) => group.name);
    const counted = groups.length === 1 ? "one group" : `${groups.length} groups`;
    let text = `Embedding plane: ${plane.tokens.length} tokens in ${counted}`;
    if (groups.length) text += ` (${names.join(", ")})`;
    if (kept !== null) {
      text += `; a ${three ? "3-D PCA view" : "PCA plane"} keeping ${kept.toFixed(1)}% of the variance`;
    }
    if (!groups.length) text += "; tick a group in the View tab, or in the plot's legend";
    const centres = groups.map(({ trace }) => [0, 1, 2].slice(0, trace.z ? 3 : 2)
      .map((axis) => mean(Array.from({ length: trace.x.length }, (_, i) => k.coordinates(trace, i)[axis]))));
    const children = groups.map((group, g) => {
      const key = `g:${group.name}`;
      return { key, text: summary(group, g, groups, centres, three), point: null,
        children: open.has(key) ? tokensOf(group, plane) : [] };
    });
    return { key: "plane", text, point: null, children };
  }

  // a group's one sentence: its points, where it lies, how spread, the group whose centre is nearest
  function summary(group, g, groups, centres, three) {
    const k = keys();
    const { trace, name } = group;
    const count = trace.x.length;
    const parts = [`${capital(name)} vectors: ${count} ${count === 1 ? "point" : "points"}`
      + (name === "segment" ? (count === 1 ? ", shared by every token" : ", one for each segment, shared by its tokens")
        : "")];
    if (!three) {
      const [xaxis, yaxis] = k.axesOf(trace);
      const panel = host._fullLayout.xaxis2 && trace.xaxis === "x2" ? " of its own panel" : "";
      parts.push(`in the ${k.region(xaxis, yaxis, centres[g][0], centres[g][1])}${panel}`);
      const span = (axis, values) => (Math.max(...values) - Math.min(...values))
        / Math.abs(axis.range[1] - axis.range[0] || 1);
      const share = count > 1 ? Math.max(span(xaxis, Array.from(trace.x)), span(yaxis, Array.from(trace.y))) : 0;
      const [, spread] = SPREAD.find(([most]) => share < most);
      if (count > 1) parts.push(`${spread}, over ${Math.round(100 * share)}% of the plot`);
    }
    let nearest = null;
    groups.forEach((other, o) => {
      if (o === g) return;
      const apart = k.distance(centres[g], centres[o]);
      if (!nearest || apart < nearest[0]) nearest = [apart, other.name];
    });
    if (nearest) parts.push(`nearest group: ${nearest[1]}`);
    return parts.join(", ").replace(/, nearest group/, "; nearest group");
  }

  // a group's tokens in sentence order (the segment group: its points, one for each segment)
  function tokensOf(group, plane) {
    const k = keys();
    if (group.name === "segment") {
      const { trace } = group;
      return Array.from(trace.customdata, (row, i) => ({
        key: `t:segment:${row[0]}`, point: [trace, i], children: null,
        text: `segment ${k.segmentName(row[0])}: one point shared by ${row[1]} tokens, ${where(trace, i)}`,
      }));
    }
    const selected = k.selectedPosition();
    const around = aroundTokens(group, plane);
    return plane.tokens.flatMap((token) => {
      const point = pointIn(group, token.position);
      if (!point) return [];
      const key = `t:${group.name}:${token.position}`;
      let text = `${token.name}, position ${token.position}, segment ${k.segmentName(token.segment)}, `
        + where(...point);
      if (selected === token.position) text += ", selected";
      const near = k.nearby(token.position, group.name, point);
      if (near.length) text += `; nearest in the plot: ${near.join(", ")}`;
      const stars = selected === token.position ? starsOf(group.name) : [];
      const cosines = stars.slice(0, 3).map((star) => `${star.word} ${star.cosine}`);
      if (stars.length) text += `; by cosine: ${cosines.join(", ")}`;
      const children = [...stars.map((star) => ({ key: `${key}:star:${star.index}`, point: star.point,
        text: `${star.word}, cosine ${star.cosine}, ${k.nearestName(group.name)}`, children: null })),
      ...(around.get(token.position) || []).map((item) => ({ ...item, key: `${key}:${item.key}` })),
      ...(LAYER.test(group.name) ? pathOf(token, key, plane) : [])];
      return [{ key, text, point, position: token.position,
        children: children.length ? (open.has(key) ? children : []) : null }];
    });
  }

  // a token's path through the encoder's layers, the layer group's token's children: each vertex drawn, from
  // hidden state 0 to after layer K (the token's own point), where it is and how far it has come
  function pathOf(token, key, plane) {
    const k = keys();
    if (!plane.path) return [];
    return Array.from({ length: plane.path.depth + 1 }, (_, layer) => {
      const point = k.vertexOf(token.position, layer);
      const step = layer === 0 ? "hidden state 0" : `after layer ${layer} of ${plane.path.layers}`;
      return { key: `${key}:path:${layer}`, point, children: null,
        text: `${token.name}, ${step}, ${where(...point)}${layer ? `, ${k.travelled(token.position, layer)}` : ""}` };
    });
  }

  // the selected token's vocabulary neighbours in a group, the stars: {word, cosine, index, point}; in the
  // group "layer K", its nearest tokens of the pair after layer K (their cosines are of layer-K vectors)
  function starsOf(group) {
    const k = keys();
    const name = k.nearestName(group);
    const trace = name && host._fullData.find((t) => t.name === name && t.visible === true);
    if (!trace || !trace.customdata) return [];
    return Array.from(trace.hovertext || [], (word, i) => ({
      word: k.plain(String(word)), cosine: Number(trace.customdata[i]).toFixed(2), index: i, point: [trace, i] }));
  }

  // what is drawn around a group's tokens, by the token drawn nearest: a class's words placed in the
  // group, and (in the token group) a search's matches. position -> [{key, text, point, children}]
  function aroundTokens(group, plane) {
    const k = keys();
    const found = new Map();
    const layers = [[k.CLASS[group.name], "class"], ...(group.name === "token" ? [[SEARCH, "search"]] : [])];
    for (const [name, kind] of layers) {
      const trace = name && host._fullData.find((t) => t.name === name && t.visible === true);
      if (!trace || !trace.x || !trace.x.length) continue;
      for (let i = 0; i < trace.x.length; i += 1) {
        const here = k.coordinates(trace, i);
        let nearest = null;
        for (const token of plane.tokens) {
          const point = !k.MARKERS.includes(token.name) && has(token.name) ? pointIn(group, token.position) : null;
          if (!point || point[0].xaxis !== trace.xaxis) continue;
          const apart = k.distance(here, k.coordinates(...point));
          if (!nearest || apart < nearest[0]) nearest = [apart, token.position];
        }
        if (!nearest) continue;
        const said = k.plain(String((trace.hovertext || [])[i] || "")).split("<br>")[0];
        let text;
        if (kind === "class") {
          const [, word, count] = said.match(/^(.*) ×(\d+)$/) || [null, said, ""];
          text = `${word}, the class's word${count ? ` (${count} ${count === "1" ? "answer" : "answers"})` : ""}`;
        } else {
          const [word, note] = said.split(" · ");
          text = note === "found" ? `${word}, found by the search`
            : `${word}, ${(note || "").replace(": cosine", ", cosine")}, shown by the search`;
        }
        if (!found.has(nearest[1])) found.set(nearest[1], []);
        found.get(nearest[1]).push({ key: `${kind}:${i}`, text, point: [trace, i], children: null });
      }
    }
    return found;
  }

  // ------------------------------------------------------------------------------ the DOM

  function itemFor(node) {
    let li = items.get(node.key);
    if (!li) {
      li = document.createElement("li");
      li.setAttribute("role", "treeitem");
      li.dataset.key = node.key;
      li.tabIndex = -1;
      serial += 1;
      const row = Object.assign(document.createElement("span"), { className: "tree-row", id: `plot-tree-${serial}` });
      li.setAttribute("aria-labelledby", row.id);
      li.append(row);
      items.set(node.key, li);
    }
    return li;
  }

  const set = (element, name, value) => {
    if (element.getAttribute(name) !== value) element.setAttribute(name, value);
  };

  // the nodes into `list` (the tree or a group), the elements of the same keys kept: the focused one
  // is never taken out of the page (that would lose the focus)
  function render(nodes, list, level, seen) {
    nodes.forEach((node, i) => {
      const li = itemFor(node);
      seen.add(node.key);
      node.element = li;
      set(li, "aria-level", String(level));
      set(li, "aria-setsize", String(nodes.length));
      set(li, "aria-posinset", String(i + 1));
      const row = li.firstChild;
      if (row.textContent !== node.text) row.textContent = node.text;
      let group = li.querySelector(":scope > [role=group]");
      if (node.children === null) {
        li.removeAttribute("aria-expanded");
      } else {
        set(li, "aria-expanded", String(open.has(node.key)));
      }
      if (node.children && node.children.length && open.has(node.key)) {
        if (!group) {
          group = document.createElement("ul");
          group.setAttribute("role", "group");
          li.append(group);
        }
        render(node.children, group, level + 1, seen);
      } else if (group) {
        group.remove();
      }
      if (list.children[i] !== li) list.insertBefore(li, list.children[i] || null);
    });
    while (list.children.length > nodes.length) list.lastChild.remove();
  }

  // the node of `key`, and its place (the index at each level below the plane)
  function find(key, node = root, path = []) {
    if (node.key === key) return [node, path];
    for (const [i, child] of (node.children || []).entries()) {
      const found = find(key, child, [...path, i]);
      if (found) return found;
    }
    return null;
  }

  function rebuild() {
    clearTimeout(building);
    building = 0;
    if (!tree || !host) return;
    const focused = tree.contains(document.activeElement);
    root = build();
    const seen = new Set();
    render([root], tree, 1, seen);
    for (const [key, li] of items) if (!seen.has(key)) { items.delete(key); li.remove(); }
    let here = find(focusedKey);
    if (!here) { // its item is gone: the one at its place, or the nearest above it
      let node = root;
      const path = [];
      for (const i of focusedPath) {
        if (!node.children || !node.children.length) break;
        const j = Math.min(i, node.children.length - 1);
        node = node.children[j];
        path.push(j);
      }
      here = [node, path];
    }
    roving(here[0], here[1]);
    if (focused && document.activeElement !== here[0].element) here[0].element.focus();
    if (focused) follow(here[0]);
    if (selecting !== null && keys().selectedPosition() === selecting) {
      const token = keys().read().tokens.find((t) => t.position === selecting);
      if (token) { // at layer K its neighbours are the pair's tokens there, under it in the group "layer K"
        const layer = groupsOf(keys().read()).find((group) => LAYER.test(group.name));
        const stars = layer ? starsOf(layer.name) : [];
        keys().say(`${token.name} selected; its neighbours by cosine are the items under it in the `
          + (stars.length ? `${layer.name} group` : "token and output groups"));
      }
      selecting = null;
    }
  }

  function roving(node, path) {
    for (const li of tree.querySelectorAll("[role=treeitem][tabindex='0']")) if (li !== node.element) li.tabIndex = -1;
    node.element.tabIndex = 0;
    focusedKey = node.key;
    focusedPath = path;
  }

  // the ring on the focused item's point (none for the plane and the groups)
  function follow(node) {
    if (node.point && keys().read()) keys().ringOn(...node.point); else keys().ringOff();
  }

  // ------------------------------------------------------------------------------ the keys

  const shown = () => [...tree.querySelectorAll("[role=treeitem]")]; // only open branches are built

  function focusNode(node) {
    const [, path] = find(node.key);
    roving(node, path);
    node.element.focus();
  }

  function toggle(node, opening) {
    if (opening) open.add(node.key); else open.delete(node.key);
    rebuild();
  }

  function onKey(event) {
    const li = event.target.closest && event.target.closest("[role=treeitem]");
    if (!li || event.altKey || event.ctrlKey || event.metaKey) return;
    const found = find(li.dataset.key);
    if (!found) return;
    const [node, path] = found;
    const list = shown();
    const at = list.indexOf(li);
    const move = (element) => { if (element) focusNode(find(element.dataset.key)[0]); };
    switch (event.key) {
      case "ArrowDown": move(list[at + 1]); break;
      case "ArrowUp": move(list[at - 1]); break;
      case "Home": move(list[0]); break;
      case "End": move(list.at(-1)); break;
      case "ArrowRight":
        if (node.children === null) break;
        if (!open.has(node.key)) toggle(node, true);
        else if (node.children.length) focusNode(node.children[0]);
        break;
      case "ArrowLeft":
        if (node.children !== null && open.has(node.key)) toggle(node, false);
        else if (path.length) move(li.parentElement.closest("[role=treeitem]"));
        break;
      case "Enter":
        if (node.position === undefined) return;
        selecting = node.position;
        window.embeddingExplorer.select(node.position);
        break;
      case "Escape":
        host.focus();
        break;
      default:
        return;
    }
    event.preventDefault();
  }

  window.embeddingExplorerTree = {
    // the tree, under the plane (assets/plotkeys.js `attach`)
    attach(plot, frame) {
      host = plot;
      tree = document.createElement("ul");
      tree.id = "plot-tree";
      tree.className = "plane-tree";
      tree.setAttribute("role", "tree");
      tree.setAttribute("aria-label", "The plane's structure");
      frame.append(tree);
      rebuild();
      tree.addEventListener("keydown", onKey);
      tree.addEventListener("click", (event) => { // a click on an item's line opens or closes it
        const li = event.target.closest(".tree-row") && event.target.closest("[role=treeitem]");
        const found = li && find(li.dataset.key);
        if (found && found[0].children !== null) toggle(found[0], !open.has(found[0].key));
      });
      tree.addEventListener("focusin", (event) => {
        const li = event.target.closest("[role=treeitem]");
        if (!li) return;
        // coming in: the tree as the plot is now (a figure drawn, or a group hidden from the legend, meanwhile)
        if (!tree.contains(event.relatedTarget)) rebuild();
        const found = find(li.dataset.key);
        if (!found) return;
        roving(...found);
        follow(found[0]);
        li.scrollIntoView({ block: "nearest" });
      });
      tree.addEventListener("focusout", (event) => {
        if (tree.contains(event.relatedTarget)) return;
        left = Date.now();
        keys().ringOff();
      });
    },
    // a figure drawn: followed at once while the tree is in use, else once drawing pauses
    drawn() {
      if (!tree) return;
      clearTimeout(building);
      if (tree.contains(document.activeElement) || Date.now() - left < RECENT_MS) rebuild();
      else building = setTimeout(rebuild, keys().DESCRIBE_AFTER_MS);
    },
    // the focused item, from the plane's `s`
    focus() {
      if (!tree) return;
      (tree.querySelector("[role=treeitem][tabindex='0']") || tree.querySelector("[role=treeitem]")).focus();
    },
    rebuild, // for tests: the tree now, not after the pause
  };
})();
