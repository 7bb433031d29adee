// What the page says to a screen reader on its own — news a person did not ask for with a key: a
// tour step a lecturer moved to, a training's progress, a class's line, a round's counts. Each is
// said in a polite live region of its own, and all of them share one pace: at most one sentence a
// second across the page, each region's latest. A training's forty steps, a class of a hundred
// joining, a student typing while the lecturer moves on are heard as the news of the moment, never
// as a queue that reads each step long after it passed. What answers a person's own key (the ring
// moved by an arrow, a word sent) is said at once by its own script, and starts the pace again.
(() => {
  const EVERY_MS = 1000; // the pace: one sentence a second at most
  let saidAt = -Infinity; // when the page last said something
  const waiting = new Map(); // region → the latest text it waits to say
  let timer = null;

  function next() {
    timer = null;
    const [region, text] = waiting.entries().next().value || [];
    if (!region) return;
    waiting.delete(region);
    region.textContent = text;
    saidAt = performance.now();
    if (waiting.size) timer = setTimeout(next, EVERY_MS);
  }

  window.embeddingSay = {
    // a polite live region, off the screen: made before anything is said in it, as a screen reader
    // must see a live region before its text changes
    region(id, parent = document.body) {
      let region = document.getElementById(id);
      if (!region) {
        region = Object.assign(document.createElement("p"), { id, className: "offscreen" });
        region.setAttribute("role", "status");
        region.setAttribute("aria-live", "polite");
        parent.append(region);
      }
      return region;
    },
    // news: said in its turn, the region's latest text replacing what it waited to say
    later(region, text) {
      if (!region) return;
      waiting.delete(region); // the latest goes to the back of the line
      waiting.set(region, text);
      if (!timer) timer = setTimeout(next, Math.max(0, saidAt + EVERY_MS - performance.now()));
    },
    // the answer to a person's own key: at once, and the news waits its second after it
    now(region, text) {
      if (!region) return;
      waiting.delete(region);
      region.textContent = text;
      saidAt = performance.now();
      clearTimeout(timer);
      timer = waiting.size ? setTimeout(next, EVERY_MS) : null;
    },
    EVERY_MS,
  };
})();
