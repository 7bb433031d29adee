// A class (core/serving/classroom.py, ui/classroutes.py): the lecturer's page leads, students' pages follow.
//  - "Start a class" (the Tour panel's class box) makes this page the lecturer's: it shows the
//    student link (?class=ID) and, once, the lecturer link (?class=ID#lead=SECRET) for another
//    screen. The secret lives in this tab's sessionStorage (so F5 keeps leading) and never in
//    the address bar: a page opened from the lecturer link moves it there and drops the #lead.
//  - a page whose address names a class follows it: it reads the class's stream (one POST, an
//    event per change) and, while following, asks to be shown each new lesson; a change
//    of the student's own stops following (the server sees it) and the banner offers
//    "Follow the lecturer again".
//  - the lecturer's page hears how many pages are connected and how many follow.
//  - a class whose store is away says so on every page ("reconnecting"); calls answered so are
//    made again, the stream stays open (or is opened again), and the lecturer's secret is kept:
//    only a class that is gone or a secret that is wrong (404, 403) lets it go.
//  - a round of answers (ui/classroutes.py): the lecturer's box asks with a prompt, closes, clears,
//    hides or approves each word and downloads them; a student's banner shows the prompt with a
//    box to send a word. Each stream line carries the round (`poll`); when the words it draws
//    change, a page that shows them asks its plot again ({poll: version} on the page's route), and
//    a student's own words are ringed on its plot (assets/explorer.js `mark`). Every word and
//    prompt is written as text, never as markup.
// The address keeps `class=ID` beside the view's query (ui/tourpanel.py ADDRESS_JS asks `param`).
(() => {
  const LEAD = "embedding-explorer-lead:"; // sessionStorage: class id -> the lecturer's secret
  // localStorage: class id -> this browser's seat in it, shared by its tabs and kept through reloads: a
  // student is one seat (one share of the class's turns, one round's words), however many pages it opens
  const SEAT = "embedding-explorer-seat:";
  const seatOf = (id) => { try { return localStorage.getItem(SEAT + id); } catch (error) { return null; } };
  const ID = /^[A-Za-z0-9_-]{16}$/;
  const RETRY_MS = 2000; // a dropped stream, or a call answered "reconnecting", is made again after this
  const url = (path) => new URL(`explorer/class/${path}`, document.baseURI);
  const escapeHtml = (text) => String(text).replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

  let classId = new URLSearchParams(location.search).get("class");
  if (classId && !ID.test(classId)) classId = null;
  const fragment = new URLSearchParams(location.hash.slice(1));
  if (classId && fragment.get("lead")) {
    sessionStorage.setItem(LEAD + classId, fragment.get("lead"));
    history.replaceState(history.state, "", location.pathname + location.search);
  }
  const secret = () => (classId ? sessionStorage.getItem(LEAD + classId) : null);

  let key = null;
  let box = null; // the class box in the Tour panel
  let state = null; // the stream's last message
  let problem = ""; // the last refusal, said in the box
  let reconnecting = ""; // the class's store is away: said on the page until it is back
  let justStarted = null; // {student, lecturer}: the links, the lecturer's shown once
  let streaming = null; // the AbortController of the open stream
  let following = false; // a follow call in flight
  let poll = null; // the round, as this page hears it (Round.message), from the stream or a poll call
  let own = []; // the words this page sent in the round
  let pollSaid = ""; // the last refusal of a poll call, said under its box
  let drawnAsked = "[]"; // the round's drawn words this page last asked its plot for (a new page shows none)
  const PER_STUDENT = 3; // words a student sends a round (core/serving/poll.py WORDS_PER_STUDENT)
  // a student's page asks its plot again within this many ms of hearing new words, at random: a class's
  // hundred pages hear them at once, and the lecturer's page (which asks at once) is not kept waiting
  const SPREAD_MS = 700;

  // a call's answer, with its HTTP status (0: no answer came)
  async function post(path, body) {
    try {
      const response = await fetch(url(path), {
        method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify({ key, ...body }),
      });
      return { ...(await response.json()), status: response.status };
    } catch (error) {
      return { error: "The server could not be reached: check the connection.", status: 0 };
    }
  }

  // a refusal that stays one (no such class, a wrong secret, a full class), not one to try again
  const final = (answer) => answer.status >= 400 && answer.status < 500;

  function said(answer) {
    reconnecting = answer.reconnecting ? answer.error : "";
    if (!answer.reconnecting) problem = answer.error;
  }

  function shown(answer) {
    if (answer && !answer.error && window.embeddingExplorer) window.embeddingExplorer.receive(answer);
  }
  // a phone that follows puts each new step on screen as its own Next would: the step's buttons at
  // the top, its text and its plot under them. The plot goes to the top instead when the lecturer
  // leaves the Tour tab (Train: the phone's plot is then above the panel, and the points move) or
  // a round is open (the banner takes the screen's last lines, where the plot would be). Once
  // gradio has shown the lesson: its tour text names the step
  let scrolledTo = null;
  const phone = () => matchMedia("(max-width: 600px)").matches;
  const plotToTop = () => document.getElementById("embed-plot").scrollIntoView({ block: "start" });
  async function showStep(step) {
    if (!step || !phone()) return;
    await window.embeddingExplorer.painted();  // the lesson's tab and text are on the page
    const tour = Boolean(document.querySelector("#main-row.on-tour"));  // the Tour tab is open (assets/explorer.js)
    const place = `${step} ${tour}`;
    if (place === scrolledTo) return;
    scrolledTo = place;
    const text = document.querySelector("#tour-text");
    const ready = () => text && text.innerText.includes(`Step ${step} of`);
    const go = () => {
      if (!tour || document.getElementById("poll-student")) plotToTop();
      else document.querySelector("#tour-buttons .tour-buttons").scrollIntoView({ block: "start" });
    };
    if (ready()) { go(); return; }
    const watcher = new MutationObserver(() => {
      if (ready()) { watcher.disconnect(); go(); }
    });
    if (text) watcher.observe(text, { subtree: true, childList: true, characterData: true });
  }

  async function connect() {
    if (!key || !classId || streaming) return;
    if (secret() && !(state && state.role === "lecturer")) {
      const answer = await post("lead", { class: classId, secret: secret() });
      if (answer.error && !final(answer)) { // the store is away, or the server: the secret is kept
        said(answer);
        render();
        setTimeout(connect, RETRY_MS);
        return;
      }
      if (answer.error) {
        problem = answer.error;
        sessionStorage.removeItem(LEAD + classId);
      } else {
        shown(answer);
      }
    }
    listen();
  }

  async function listen() {
    const controller = new AbortController();
    streaming = controller;
    let retry = true;
    try {
      // the class's events, read as the page's route's streams are (assets/explorer.js `events`)
      const response = await window.embeddingExplorer.events(`explorer/class/stream`,
        { key, class: classId, seat: seatOf(classId) || undefined }, heard, controller.signal);
      if (!response.ok || !(response.headers.get("Content-Type") || "").includes("event-stream")) {
        const answer = await response.json().catch(() => ({}));
        said({ ...answer, error: answer.error || `The class could not be joined (${response.status}).` });
        retry = !final({ status: response.status });
        render();
      }
    } catch (error) {
      // a dropped connection (a proxy, a laptop's sleep): opened again below
    }
    if (streaming === controller) streaming = null;
    if (retry && classId && !(state && state.ended) && !controller.signal.aborted) setTimeout(connect, RETRY_MS);
  }

  function heard(message) {
    if (message.seat && message.seat !== seatOf(message.class)) {
      try { localStorage.setItem(SEAT + message.class, message.seat); } catch (error) { /* private mode: a seat a tab */ }
    }
    state = message;
    problem = "";
    reconnecting = message.reconnecting || "";
    if (message.poll) polled(message.poll, message.own);
    if (message.role === "student" && message.following && message.version > message.shown && !message.ended) {
      follow();
    }
    render();
  }

  // one follow call at a time; a lesson heard while one is answered is asked for after it
  async function follow() {
    if (following) return;
    following = true;
    const answer = await post("follow", {});
    following = false;
    if (answer.error) said(answer); // reconnecting: the stream's next message asks again
    shown(answer);
    render();
    if (!answer.error && state) showStep(state.step);
    const newer = state && state.role === "student" && state.following && !state.ended
      && state.version > (answer.version || state.shown);
    if (!answer.error && newer) follow();
  }

  async function start() {
    const answer = await post("start", {});
    if (answer.error) { // said once in the box: no stream will say it is over
      problem = answer.error;
      render();
      return;
    }
    if (streaming) streaming.abort();
    streaming = null;
    classId = answer.class;
    poll = null; // a new class: no round yet, whatever the class before had
    drawnAsked = "[]";
    pollSaid = "";
    sessionStorage.setItem(LEAD + classId, answer.secret);
    const base = `${location.origin}${location.pathname}?class=${classId}`;
    justStarted = { student: base, lecturer: `${base}#lead=${answer.secret}` };
    state = { role: "lecturer", class: classId, step: answer.step, connected: 0, following: 0, ended: "" };
    history.replaceState(history.state, "", withClass(location.search.replace(/^[?]/, "")));
    render();
    listen();
  }

  async function end() {
    const answer = await post("end", { secret: secret() });
    if (answer.error) {
      said(answer); // reconnecting: the class runs on, and End can be pressed again
    } else {
      state = { ...state, ended: answer.ended };
      if (streaming) streaming.abort();
    }
    render();
  }

  // the address with the class kept beside the view's query
  function withClass(query) {
    const rest = new URLSearchParams(query);
    rest.delete("class");
    const parts = [rest.toString(), classId ? `class=${classId}` : ""].filter(Boolean);
    return location.pathname + (parts.length ? `?${parts.join("&")}` : "");
  }

  const step = (message) => (message && message.step ? `step ${message.step}` : "a view off the tour");

  let boxWritten = null;
  function render() {
    if (box) {
      const html = boxHtml();
      if (html !== boxWritten) box.innerHTML = html; // rewritten only when it changed: a focused button stays
      boxWritten = html;
      lecturerPoll();
    }
    banner();
  }

  // --- a round of answers -------------------------------------------------------------------------
  // the round heard (a stream line, or a poll call's answer): the plot is asked again when the words it
  // draws changed, by a page that draws them (the lecturer's, a following student's)
  function polled(message, words) {
    if (!message || (poll && message.version < poll.version)) return;
    poll = message;
    if (Array.isArray(words)) {
      own = words;
      if (window.embeddingExplorer) window.embeddingExplorer.mark(own);
    }
    const drawn = JSON.stringify(message.drawn || []);
    const shows = state && (state.role === "lecturer" || state.following);
    if (shows && drawn !== drawnAsked && window.embeddingExplorer) {
      drawnAsked = drawn;
      const ask = () => window.embeddingExplorer.set({ poll: message.version });
      if (state.role === "lecturer") ask(); else setTimeout(ask, Math.random() * SPREAD_MS);
    }
  }

  async function pollCall(path, body) {
    const answer = await post(`poll/${path}`, { secret: secret() || undefined, ...body });
    pollSaid = answer.error || "";
    if (answer.reconnecting) reconnecting = answer.error;
    if (!answer.error) polled(answer.poll, answer.own);
    render();
    return answer;
  }

  const text = (element, value) => { if (element && element.textContent !== value) element.textContent = value; };
  let pollHost = null; // the lecturer's poll box, beside the class box
  let prompts = []; // the ready prompts (core/serving/poll.py PROMPTS), from the box's data-prompts

  function lecturerPoll() {
    if (!pollHost) return;
    if (!state || state.ended || state.role !== "lecturer") {
      pollHost.innerHTML = "";
      return;
    }
    if (!pollHost.firstChild) {
      pollHost.innerHTML = '<section class="poll" aria-labelledby="poll-title">'
        + '<h3 id="poll-title" class="poll-title">Ask the class for a word</h3>'
        + '<label class="poll-label" for="poll-prompt">Prompt</label>'
        + '<input id="poll-prompt" class="poll-input" type="text" maxlength="120" autocomplete="off" '
        + 'placeholder="e.g. Type a word you would put next to king.">'
        + '<label class="poll-label" for="poll-ready">Ready prompts</label>'
        + '<select id="poll-ready" class="poll-input"><option value="">Choose one to fill the prompt…</option>'
        + prompts.map((prompt) => `<option>${escapeHtml(prompt)}</option>`).join("") + "</select>"
        + '<label class="poll-check"><input id="poll-review" type="checkbox"> Review first: students’ words '
        + "are shown only once you approve them</label>"
        + '<div class="poll-buttons"><button id="poll-ask" class="class-button" type="button">Ask the class</button>'
        + '<button id="poll-close" class="class-button" type="button">Close the answers</button>'
        + '<button id="poll-clear" class="class-button" type="button">Clear</button></div>'
        + '<p id="poll-status"></p><p id="poll-heard" class="offscreen" role="status" aria-live="polite"></p>'
        + '<p id="poll-problem" class="class-problem" role="alert"></p>'
        + '<ul id="poll-words" class="poll-words" aria-label="The class\'s words"></ul>'
        + '<div class="poll-buttons"><button id="poll-csv" class="class-button" type="button">Download CSV</button>'
        + '<button id="poll-png" class="class-button" type="button">Download PNG</button></div></section>';
    }
    const round = poll || { round: 0, prompt: "", open: false, words: [], answers: 0, students: 0 };
    const asked = Boolean(round.prompt);
    document.getElementById("poll-close").disabled = !round.open;
    document.getElementById("poll-clear").disabled = !asked && !(round.words || []).length;
    document.getElementById("poll-review").checked = Boolean(round.review);
    const counts = `${round.answers || 0} answer${round.answers === 1 ? "" : "s"} from ${round.students || 0} `
      + `student${round.students === 1 ? "" : "s"}`;
    const status = !asked ? "No question asked yet."
      : `“${round.prompt}”: ${round.open ? "answers open" : "answers closed"} · ${counts}`;
    const shown = document.getElementById("poll-status");
    if (shown.textContent !== status) { // the counts as news, at the page's pace (assets/announce.js)
      text(shown, status);
      window.embeddingSay.later(document.getElementById("poll-heard"), status);
    }
    text(document.getElementById("poll-problem"), pollSaid ? `⚠️ ${pollSaid}` : "");
    const list = document.getElementById("poll-words");
    const items = (round.words || []).map((word) => {
      const name = escapeHtml(word.word);
      const shown = word.hidden ? "hidden" : round.review && !word.approved ? "waiting for approval" : "shown";
      const approve = round.review ? `<button class="poll-toggle" type="button" data-poll-approve="${name}" `
        + `data-on="${!word.approved}" aria-label="${word.approved ? "Withdraw" : "Approve"} ${name}">${
          word.approved ? "Withdraw" : "Approve"}</button>` : "";
      return `<li><span class="poll-word">${name}</span> ×${word.count} <span class="poll-state">(${shown})</span> `
        + `<button class="poll-toggle" type="button" data-poll-hide="${name}" data-on="${!word.hidden}" `
        + `aria-label="${word.hidden ? "Show" : "Hide"} ${name}">${word.hidden ? "Show" : "Hide"}</button>${approve}</li>`;
    }).join("");
    if (list.dataset.written !== items) { // a focused toggle keeps the focus through the rewrite
      const focused = document.activeElement && list.contains(document.activeElement)
        ? [...document.activeElement.attributes].find((a) => a.name.startsWith("data-poll-")) : null;
      list.innerHTML = items;
      list.dataset.written = items;
      if (focused) {
        const again = [...list.querySelectorAll(`[${focused.name}]`)].find((b) => b.getAttribute(focused.name)
          === focused.value);
        if (again) again.focus();
      }
    }
  }

  function studentPoll(element) {
    let part = document.getElementById("poll-student");
    const asked = state && state.role === "student" && !state.ended && poll && poll.prompt;
    if (!asked) {
      if (part) part.remove();
      return;
    }
    if (!part) {
      part = document.createElement("div");
      part.id = "poll-student";
      part.className = "poll-student";
      part.innerHTML = '<p class="poll-question"><span class="poll-kicker">The lecturer asks:</span> '
        + '<span id="poll-question"></span></p>'
        + '<form id="poll-form" class="poll-form"><label for="poll-answer">Your word</label>'
        + '<input id="poll-answer" type="text" maxlength="30" autocomplete="off" autocapitalize="none" '
        + 'spellcheck="false" enterkeyhint="send">'
        + '<button id="poll-send" class="class-button" type="submit">Send</button></form>'
        + '<p id="poll-said" aria-live="polite"></p><p id="poll-own"></p>';
      element.appendChild(part);
      if (phone()) plotToTop();  // the words are chosen from the plot, above the banner
    }
    text(document.getElementById("poll-question"), poll.prompt); // as text: a prompt is never markup
    const left = Math.max(0, PER_STUDENT - own.length);
    document.getElementById("poll-form").hidden = !poll.open || !left;
    text(document.getElementById("poll-said"), pollSaid ? `⚠️ ${pollSaid}` : poll.open ? "" : "The answers are closed.");
    text(document.getElementById("poll-own"), own.length
      ? `You sent: ${own.join(", ")} (${left} left)` : "");
  }

  async function sendWord() {
    const input = document.getElementById("poll-answer");
    if (!input || !poll) return;
    const before = own.length;
    const answer = await pollCall("answer", { word: input.value, round: poll.round });
    if (answer.error) return;
    input.value = "";
    // a word this page sent already is taken again without a change (a retry must not count twice):
    // the student is told, not left wondering where it went
    if (Array.isArray(answer.own) && answer.own.length === before) {
      pollSaid = "You sent that word already: each word counts once. Try another.";
      render();
    }
  }

  async function downloadCsv() {
    const answer = await pollCall("csv", {});
    if (answer.error) return;
    const link = document.createElement("a");
    link.href = URL.createObjectURL(new Blob([answer.csv], { type: "text/csv;charset=utf-8" }));
    link.download = `class-answers-round-${answer.poll ? answer.poll.round : 0}.csv`;
    document.body.appendChild(link);
    link.click();
    link.remove();
    setTimeout(() => URL.revokeObjectURL(link.href), 1000);
  }

  function boxHtml() {
    const said = [problem, reconnecting].filter(Boolean)
      .map((text) => `<p class="class-problem" role="alert">⚠️ ${escapeHtml(text)}</p>`).join("");
    if (!state || state.ended) {
      const ended = state && state.ended ? `<p>${escapeHtml(state.ended)}</p>` : "";
      if (state && state.role === "student") return said + ended;
      return `${said}${ended}<p>Teaching? Start a class: every student who opens its link sees what this page `
        + "shows, step by step, and you see how many follow.</p>"
        + '<button id="class-start" class="class-button" type="button">Start a class</button>';
    }
    if (state.role !== "lecturer") {
      return said + (state.following
        ? "<p>This page is in a class: it shows what the lecturer's page shows, step by step.</p>"
        : "<p>This page is in a class, and you are exploring on your own: the banner at the bottom brings "
          + "you back to the lecturer's view.</p>");
    }
    let links = `<label class="class-link">Student link <input id="class-student-link" readonly value="${
      escapeHtml(`${location.origin}${location.pathname}?class=${classId}`)}"></label>`
      + '<button id="class-copy" class="class-button" type="button">Copy the student link</button> ';
    if (justStarted) { // folded, so a projected page does not show it to the room
      links += '<details class="class-link"><summary>Lecturer link (shown once; keep it private)</summary>'
        + "It lets another screen (the projector's computer, say) lead this class. "
        + `<input id="class-lecturer-link" readonly value="${escapeHtml(justStarted.lecturer)}"></details>`;
    }
    return `${said}<p><strong>Class running.</strong> Students follow this page.</p>${links}`
      + '<button id="class-end" class="class-button" type="button">End the class</button>';
  }

  function banner() {
    let element = document.getElementById("class-banner");
    // a phone's plot makes room for it (assets/style.css)
    const row = document.getElementById("main-row");
    if (row) row.classList.toggle("in-class", Boolean(state || problem || reconnecting));
    if (!state && !problem && !reconnecting) {
      if (element) element.remove();
      return;
    }
    if (!element) { // its line says the class (a live region); a student's round has a part of its own
      element = document.createElement("div");
      element.id = "class-banner";
      element.innerHTML = '<div id="class-line" class="class-line"></div>'
        + '<p id="class-said" class="offscreen" role="status" aria-live="polite"></p>';
      document.body.appendChild(element);
    }
    const line = element.querySelector("#class-line");
    let html;
    if (state && state.ended) {
      html = `<span id="class-status">${escapeHtml(state.ended)}</span>`;
    } else if (reconnecting) {
      html = `<span id="class-status">⚠️ ${escapeHtml(reconnecting)}</span>`;
    } else if (!state) {
      html = `<span id="class-status">⚠️ ${escapeHtml(problem)}</span>`;
    } else if (state.role === "lecturer") {
      // a student's tabs share a seat: when pages outnumber the students, the lecturer is told how many
      // students they are (a line no longer than it was otherwise: it must not cover the column)
      const students = state.students || 0;
      const seats = students && students < state.connected
        ? ` (<b id="class-students" title="A student's tabs share one seat">${students}</b> `
          + `${students === 1 ? "student" : "students"})` : "";
      html = `<span id="class-status">Class: <b id="class-connected">${state.connected}</b> connected${seats}, `
        + `<b id="class-following">${state.following}</b> following</span>`;
    } else if (state.following) {
      html = `<span id="class-status">Following the lecturer (<span id="class-step">${
        escapeHtml(step(state))}</span>)</span>`;
    } else {
      html = `<span id="class-status">Exploring on your own. The lecturer is on <span id="class-step">${
        escapeHtml(step(state))}</span>.</span> `
        + '<button id="class-follow" class="class-button" type="button">Follow the lecturer again</button>';
    }
    if (line.dataset.written !== html) {
      line.innerHTML = html;
      line.dataset.written = html;
      // the line as news, at the page's pace (assets/announce.js): a hundred students joining are
      // heard as the latest count, not a hundred
      window.embeddingSay.later(element.querySelector("#class-said"), line.textContent);
    }
    studentPoll(element);
  }

  async function copyLink(button) {
    const input = document.getElementById("class-student-link");
    try {
      await navigator.clipboard.writeText(input.value);
      button.textContent = "Copied";
    } catch (error) { // no clipboard (a page not served over https): selected, for Ctrl-C
      input.select();
      button.textContent = "Selected: press Ctrl-C";
    }
  }

  document.addEventListener("click", (event) => {
    const target = event.target;
    if (!target || !target.closest) return;
    if (target.closest("#class-start")) start();
    else if (target.closest("#class-end")) end();
    else if (target.closest("#class-follow")) follow();
    else if (target.closest("#class-copy")) copyLink(target.closest("#class-copy"));
    else if (target.closest("#class-student-link, #class-lecturer-link")) target.select();
    else if (target.closest("#poll-ask")) {
      pollCall("ask", { prompt: document.getElementById("poll-prompt").value,
        review: document.getElementById("poll-review").checked });
    } else if (target.closest("#poll-close")) pollCall("close", {});
    else if (target.closest("#poll-clear")) pollCall("clear", {});
    else if (target.closest("#poll-csv")) downloadCsv();
    else if (target.closest("#poll-png")) window.embeddingExplorer.downloadPNG();
    else if (target.closest("[data-poll-hide]")) {
      const button = target.closest("[data-poll-hide]");
      pollCall("hide", { word: button.dataset.pollHide, on: button.dataset.on === "true" });
    } else if (target.closest("[data-poll-approve]")) {
      const button = target.closest("[data-poll-approve]");
      pollCall("approve", { word: button.dataset.pollApprove, on: button.dataset.on === "true" });
    }
  });
  document.addEventListener("change", (event) => {
    const target = event.target;
    if (target && target.id === "poll-ready" && target.value) {
      document.getElementById("poll-prompt").value = target.value;
      target.value = "";
      document.getElementById("poll-prompt").focus();
    } else if (target && target.id === "poll-review" && poll && poll.open) {
      pollCall("review", { on: target.checked }); // during a round: the mode changes now; else with the next ask
    }
  });
  document.addEventListener("submit", (event) => {
    if (!event.target || event.target.id !== "poll-form") return;
    event.preventDefault(); // Enter in the box sends, as the button does
    sendWord();
  });

  window.embeddingExplorerClass = {
    // the class box's script: where to write
    attach(element) {
      element.innerHTML = '<div class="class-main"></div><div class="poll-host"></div>';
      box = element.querySelector(".class-main");
      pollHost = element.querySelector(".poll-host");
      try { prompts = JSON.parse(element.dataset.prompts || "[]"); } catch (error) { prompts = []; }
      render();
    },
    setKey(value) {
      if (value === key) return;
      key = value;
      if (streaming) streaming.abort();
      streaming = null;
      connect();
    },
    param: () => (classId ? `class=${classId}` : ""),
  };
})();
