// The Tour panel's step picker and slide buttons (ui/tourpanel.py), kept to the step the page
// shows. Their one source is the step's text as the server writes it into #tour-text ("Step N of 7:
// …", core/drawing/captions.py tour_text): Next, Previous, the picker, a link, Back and Forward and
// a class's lesson all reach the page as that text, so none of them has to tell the picker, and the
// picker never shows a step the text does not. Off the tour the picker shows its neutral first
// entry and the slide buttons hide. A jump the server refused leaves the text as it was: the next
// answer written puts the picker back (`explorer:written`, assets/explorer.js).
(() => {
  let step = null; // the step #tour-text shows, or null off the tour
  let text = ""; // its HTML, as the server wrote it (assets/slide.js reads the title and text from it)

  function sync() {
    const picker = document.getElementById("tour-step");
    const wanted = step ? String(step) : "";
    if (picker && picker.value !== wanted) picker.value = wanted;
    const slide = document.getElementById("tour-slide-buttons");
    if (slide) slide.hidden = !step;
  }
  document.addEventListener("explorer:written", sync);

  window.embeddingTour = {
    // #tour-text's setter (ui/tourpanel.py): the step's text, as HTML
    text(html) {
      text = typeof html === "string" ? html : "";
      const found = /Step (\d+) of \d+/.exec(text);
      step = found ? Number(found[1]) : null;
      sync();
    },
    // the tour's buttons (ui/tourpanel.py TOUR_BUTTONS): a step chosen in the picker is shown over
    // the page's route (`go`), as Next shows the next one
    attach(element) {
      const picker = element.querySelector("#tour-step");
      if (picker) {
        picker.addEventListener("change", () => {
          const chosen = Number(picker.value);
          if (Number.isInteger(chosen) && chosen >= 1) window.embeddingExplorer.set({ go: chosen });
        });
      }
      sync();
    },
    // the slide buttons (ui/tourpanel.py TOUR_SLIDE)
    attachSlide() {
      sync();
    },
    get html() {
      return text;
    },
    get step() {
      return step;
    },
  };
})();
