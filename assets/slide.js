// A tour step as a slide (the Tour panel's "PNG · SVG" buttons, ui/tourpanel.py): the step's
// title, its text and its plot on one 16:9 picture, 1920 × 1080, saved as SVG or PNG. The SVG opens
// offline, in a viewer with no network: fonts are named by family only, the plot is plotly's own SVG
// of it as framed on screen, scaled to its place (WebGL traces drawn as SVG ones: assets/explorer.js
// plotSVG), and nothing in it points outside the file. The title and text are the step's as
// #tour-text shows them (its HTML, kept by assets/tour.js); the text is wrapped here, each line
// measured in a canvas in the font it is written in, italics and code kept. The PNG is that SVG
// drawn into a canvas.
(() => {
  const WIDTH = 1920, HEIGHT = 1080, MARGIN = 64, GAP = 48, COLUMN = 600; // px of the slide
  const TOP = 220; // the text column and the plot start under the title
  const SANS = "Helvetica, Arial, sans-serif", MONO = "Menlo, Consolas, 'DejaVu Sans Mono', monospace";
  // the slide's ground and type: the light theme's, or the projector theme's dark ones, so the plot
  // (drawn in the page's theme) sits on its own ground
  const LOOKS = { light: { ground: "#ffffff", ink: "#1f2937", subdued: "#4b5563" },
    projector: { ground: "#111111", ink: "#f2f5fa", subdued: "#c8c8c8" } };
  let look = LOOKS.light;
  const FACES = { plain: [SANS, "normal", "normal"], italic: [SANS, "italic", "normal"],
    bold: [SANS, "normal", "bold"], code: [MONO, "normal", "normal"] };

  const escapeXml = (text) => text.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;")
    .replace(/"/g, "&quot;");
  const context = document.createElement("canvas").getContext("2d");
  const cssFont = (face, size) => `${FACES[face][1]} ${FACES[face][2]} ${size}px ${FACES[face][0]}`;
  function measure(text, face, size) {
    context.font = cssFont(face, size);
    return context.measureText(text).width;
  }

  // the step's text (#tour-text's HTML): its heading "Step N of 8: title" and its paragraphs, each a
  // list of runs {text, face}
  function read(html) {
    const body = new DOMParser().parseFromString(html, "text/html").body;
    const blocks = [...body.children];
    const heading = blocks.length ? blocks.shift().textContent.trim() : "";
    const found = /^(Step \d+ of \d+):\s*(.*)$/.exec(heading);
    const paragraphs = blocks.map((block) => {
      const runs = [];
      const walk = (node, face) => {
        if (node.nodeType === Node.TEXT_NODE) {
          runs.push({ text: node.textContent.replace(/\s+/g, " "), face });
          return;
        }
        const tag = node.nodeName.toLowerCase();
        const inner = tag === "em" ? "italic" : tag === "strong" ? "bold" : tag === "code" ? "code" : face;
        node.childNodes.forEach((child) => walk(child, inner));
      };
      walk(block, "plain");
      return runs;
    });
    return { number: found ? found[1] : "", title: found ? found[2] : heading, paragraphs };
  }

  // the paragraphs wrapped to `width` at type `size`: lines of placed pieces {text, face, x}. A word
  // is what lies between spaces, whatever its runs ("`dog`," is one), so a line never breaks inside it
  function wrap(paragraphs, size, width) {
    const lines = [];
    for (const runs of paragraphs) {
      const words = [[]];
      for (const run of runs) {
        run.text.split(/( )/).forEach((part) => {
          if (part === " ") {
            if (words[words.length - 1].length) words.push([]);
          } else if (part) {
            words[words.length - 1].push({ text: part, face: run.face });
          }
        });
      }
      let line = [], x = 0;
      const space = measure(" ", "plain", size);
      for (const word of words.filter((pieces) => pieces.length)) {
        const wide = word.reduce((sum, piece) => sum + measure(piece.text, piece.face, size), 0);
        if (line.length && x + space + wide > width) {
          lines.push(line);
          line = [];
          x = 0;
        } else if (line.length) {
          x += space;
        }
        for (const piece of word) {
          line.push({ ...piece, x });
          x += measure(piece.text, piece.face, size);
        }
      }
      if (line.length) lines.push(line);
      lines.push(null); // a paragraph's end: half a line of space
    }
    if (lines[lines.length - 1] === null) lines.pop();
    return lines;
  }

  function textLines(lines, size, left, top) {
    const height = size * 1.4;
    let y = top + size;
    return lines.map((line) => {
      if (line === null) {
        y += height / 2;
        return "";
      }
      const spans = line.map((piece) => {
        const [family, style, weight] = FACES[piece.face];
        return `<tspan x="${(left + piece.x).toFixed(1)}" font-family="${escapeXml(family)}"`
          + `${style !== "normal" ? ` font-style="${style}"` : ""}${weight !== "normal" ? ` font-weight="${weight}"` : ""}`
          + `>${escapeXml(piece.text)}</tspan>`;
      }).join("");
      const out = `<text y="${y.toFixed(1)}" font-size="${size}" fill="${look.ink}" xml:space="preserve">${spans}</text>`;
      y += height;
      return out;
    }).join("\n");
  }

  // the slide's SVG, and the file name it is saved under (without its extension)
  async function compose() {
    const step = read(window.embeddingTour.html);
    look = document.body.classList.contains("projector") ? LOOKS.projector : LOOKS.light;
    // the plot as framed on screen, scaled to fit its place (its type grows with it)
    const plotWidth = WIDTH - MARGIN * 2 - COLUMN - GAP, plotHeight = HEIGHT - TOP - MARGIN / 2;
    const plotted = await window.embeddingExplorer.plotSVG();
    let plot = "";
    if (plotted) {
      const root = new DOMParser().parseFromString(plotted.svg, "image/svg+xml").documentElement;
      root.setAttribute("viewBox", `0 0 ${plotted.width} ${plotted.height}`);
      root.setAttribute("preserveAspectRatio", "xMidYMin meet");
      root.setAttribute("x", String(MARGIN + COLUMN + GAP));
      root.setAttribute("y", String(TOP));
      root.setAttribute("width", String(plotWidth));
      root.setAttribute("height", String(plotHeight));
      plot = new XMLSerializer().serializeToString(root);
    }
    // the text column's type: as large as fits under the title (the longest step's text fits at 26 px)
    let size = 30, lines = wrap(step.paragraphs, size, COLUMN);
    const fits = (n, s) => n.reduce((sum, line) => sum + (line === null ? 0.7 : 1.4) * s, 0) <= HEIGHT - TOP - MARGIN;
    while (size > 16 && !fits(lines, size)) {
      size -= 2;
      lines = wrap(step.paragraphs, size, COLUMN);
    }
    let titleSize = 60;
    while (titleSize > 28 && measure(step.title, "bold", titleSize) > WIDTH - 2 * MARGIN) titleSize -= 4;
    const svg = `<svg xmlns="http://www.w3.org/2000/svg" width="${WIDTH}" height="${HEIGHT}" `
      + `viewBox="0 0 ${WIDTH} ${HEIGHT}">\n`
      + `<title>${escapeXml([step.number, step.title].filter(Boolean).join(": "))}</title>\n`
      + `<rect width="${WIDTH}" height="${HEIGHT}" fill="${look.ground}"/>\n`
      + `<text x="${MARGIN}" y="${MARGIN + 28}" font-family="${escapeXml(SANS)}" font-size="28" fill="${look.subdued}">`
      + `${escapeXml(step.number)}</text>\n`
      + `<text x="${MARGIN}" y="${MARGIN + 28 + 16 + titleSize}" font-family="${escapeXml(SANS)}" `
      + `font-size="${titleSize}" font-weight="bold" fill="${look.ink}">${escapeXml(step.title)}</text>\n`
      + `<g class="slide-text">\n${textLines(lines, size, MARGIN, TOP)}\n</g>\n${plot}\n</svg>\n`;
    const slug = step.title.toLowerCase().replace(/[^a-z0-9]+/g, "-").replace(/^-|-$/g, "") || "tour";
    const number = (/\d+/.exec(step.number) || [""])[0];
    return { svg, name: `step-${number}-${slug}` };
  }

  function save(blob, name) {
    const url = URL.createObjectURL(blob);
    const link = document.createElement("a");
    link.href = url;
    link.download = name;
    document.body.appendChild(link);
    link.click();
    link.remove();
    setTimeout(() => URL.revokeObjectURL(url), 60_000);
  }

  // the slide's PNG: its SVG drawn into a canvas of the slide's size
  function png(svg) {
    return new Promise((resolve, reject) => {
      const image = new Image();
      image.onload = () => {
        const canvas = document.createElement("canvas");
        canvas.width = WIDTH;
        canvas.height = HEIGHT;
        canvas.getContext("2d").drawImage(image, 0, 0, WIDTH, HEIGHT);
        canvas.toBlob((blob) => (blob ? resolve(blob) : reject(new Error("the slide could not be drawn"))), "image/png");
      };
      image.onerror = () => reject(new Error("the slide's SVG could not be read"));
      image.src = `data:image/svg+xml;charset=utf-8,${encodeURIComponent(svg)}`;
    });
  }

  let busy = false;
  window.embeddingSlide = {
    compose,
    // format "svg" or "png": the slide of the step shown, downloaded
    async download(format) {
      if (busy || !window.embeddingTour.step) return;
      busy = true;
      try {
        const { svg, name } = await compose();
        if (format === "png") save(await png(svg), `${name}.png`);
        else save(new Blob([svg], { type: "image/svg+xml" }), `${name}.svg`);
      } finally {
        busy = false;
      }
    },
  };
})();
