// The Tour panel's buttons, step picker and slide buttons (ui/tourpanel.py): what a press does, and
// the picker and the slide buttons kept to the step the page shows. Their one source is the step's
// text as the server writes it into #tour-text ("Step N of 8: …", core/drawing/captions.py
// tour_text): Next, Previous, the picker, a link, Back and Forward and a class's lesson all reach the
// page as that text, so none of them has to tell the picker, and the picker never shows a step the
// text does not. Off the tour the picker shows its neutral first entry and the slide buttons hide.
// A jump the server refused leaves the text as it was: the next answer written puts the picker back
// (`explorer:written`, assets/explorer.js).
(() => {
  let step = null; // the step #tour-text shows, or null off the tour
  let text = ""; // its HTML, as the server wrote it (assets/slide.js reads the title and text from it)

  // A step reached is said to a screen reader: its title and text, in a polite live region
  // (#tour-said), whatever moved the tour (Next and Previous leave the focus on the button, a
  // lecturer's lesson moves a follower's page on its own), at the page's pace for news
  // (assets/announce.js): steps passed through faster are not read out one by one. The region is
  // made with the buttons, before anything is said in it.
  let region = null;
  let said = null; // the step last said
  function announce() {
    if (!step) said = null; // off the tour: coming back to the same step is news again
    if (!step || step === said || !region) return;
    said = step;
    const html = new DOMParser().parseFromString(text, "text/html").body;
    // each part a sentence: the title is bold, not punctuated, and would run into the text that follows
    window.embeddingSay.later(region, [...html.children].map((part) => part.textContent.trim()).filter(Boolean)
      .map((part) => (/[.!?:;…]$/.test(part) ? part : `${part}.`)).join(" "));
  }

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
      announce();
    },
    // the tour's buttons (ui/tourpanel.py TOUR_BUTTONS): Next and Previous move the tour over the
    // page's route (`move`), a step chosen in the picker goes to it (`go`). On a phone the step's
    // buttons and text sit above its plot (assets/style.css): a step starts with them at the top of
    // the screen, so its text and its plot are seen together. In presenter mode the control column
    // scrolls on its own (to the class's controls): a step starts with its text at the column's top
    attach(element) {
      region = window.embeddingSay.region("tour-said");
      const toStep = () => {
        if (matchMedia("(max-width: 600px)").matches) element.querySelector(".tour-buttons").scrollIntoView({ block: "start" });
        else document.getElementById("control-column").scrollTop = 0;
      };
      element.addEventListener("click", (event) => {
        const button = event.target.closest && event.target.closest("#tour-previous, #tour-next");
        if (!button) return;
        window.embeddingExplorer.set({ move: button.id === "tour-next" ? 1 : -1 });
        toStep();
      });
      const picker = element.querySelector("#tour-step");
      picker.addEventListener("change", () => {
        const chosen = Number(picker.value);
        if (Number.isInteger(chosen) && chosen >= 1) window.embeddingExplorer.set({ go: chosen });
        toStep();
      });
      sync();
    },
    // the slide buttons (ui/tourpanel.py TOUR_SLIDE): the step as a slide (assets/slide.js)
    attachSlide(element) {
      element.addEventListener("click", (event) => {
        const button = event.target.closest && event.target.closest("#slide-png, #slide-svg");
        if (button) window.embeddingSlide.download(button.id === "slide-png" ? "png" : "svg");
      });
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
