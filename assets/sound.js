// The plane heard (the View tab's Sound, or a link's ?sound=1), for a student who cannot see the plot
// or would rather hear its shape as well. With sound on, a point the keys reach on the main plane
// (assets/plotkeys.js moves its ring there and says so: "embedding-explorer:reached") plays a short tone:
//  - its pitch is the point's height in the plot: 220 Hz at the bottom of the drawn range to 880 Hz at
//    the top, equal rises equal musical steps (a logarithmic scale, as the ear hears pitch);
//  - its stereo place is its place from left to right (the plot's left edge hard left);
//  - its timbre is its group's (TIMBRES): token a sine, position a triangle, segment a soft square,
//    sum a filtered sawtooth, output a sine with its octave; at encoder layer K, a token's path's
//    vertices (the ring's "layer 1" … "layer K") a sine with its twelfth.
// With the plot focused, P plays the sentence's tokens in order, 150 ms apart, in the group the ring
// is on (the token group when it is put away); G plays every point of that group once, from left to
// right, so the group's shape is heard as a line of pitches. Escape stops at once, and so does the
// page being hidden: every tone already scheduled is stopped, not only those still to come.
// Web Audio alone, nothing loaded. Nothing sounds unless a key asks: the audio context is made (or
// woken) only in a key's handler, never with sound off, never on load, a figure or typing.
(() => {
  const LOW = 220; // Hz at the bottom of the plot
  const HIGH = 880; // Hz at its top: two octaves
  const TONE = 0.12; // seconds a tone lasts
  const GAP = 0.15; // seconds from one tone of a phrase to the next
  const ATTACK = 0.012; // seconds the envelope rises in, so that no tone clicks
  const LEAD = 0.02; // seconds from a key to its first tone: the audio thread's time to take it
  const LOUDNESS = 0.2; // all tones together, well under full scale
  // each group's timbre: a wave (or partials, the fundamental's and its octave's amplitudes), its
  // loudness against the others (a square and a sawtooth sound louder than a sine of the same
  // amplitude), and a low-pass filter's corner frequency that takes the sawtooth's edge off
  const TIMBRES = {
    token: { wave: "sine", gain: 1 },
    position: { wave: "triangle", gain: 0.9 },
    segment: { wave: "square", gain: 0.3 },
    sum: { wave: "sawtooth", gain: 0.45, lowpass: 1400 },
    output: { partials: [1, 0.5], gain: 0.8 },
    layer: { partials: [1, 0, 0.35], gain: 0.8 },
  };
  const LAYER = /^layer \d+$/; // assets/plotkeys.js: a stop on a token's path through the encoder's layers
  const KEYS = { p: "phrase", g: "group" }; // with the plot focused
  const SAID = " Sound is on: each point reached plays a tone, higher for higher points, from the left or the "
    + "right as it lies, each group its own timbre; P plays the sentence's tokens in order, G the ring's group "
    + "from left to right, Escape stops.";

  let on = false; // the view's sound (ui/viewpanel.py tells it: `on`)
  let audio = null; // the audio context, made by the first key that sounds
  let output = null; // every tone goes through it: the loudness of the whole
  const waves = {}; // a group's periodic wave, made once per context
  const sounding = new Set(); // every oscillator scheduled or playing, until it ends

  const plot = () => document.querySelector("#embed-plot [role=application]");
  const keys = () => window.embeddingExplorerKeys;
  // where `value` lies within `range` ([low, high] as drawn), from 0 to 1; outside it (a zoomed plot), at its edge
  function share(value, range) {
    const [low, high] = range;
    if (high === low || !Number.isFinite(value)) return 0.5;
    return Math.min(1, Math.max(0, (value - low) / (high - low)));
  }
  const pitch = (point) => LOW * (HIGH / LOW) ** share(point.y, point.yRange);
  const place = (point) => 2 * share(point.x, point.xRange) - 1;

  // the audio context, made or woken; only ever called from a key's handler (a user's gesture)
  function context() {
    if (!audio) {
      const Context = window.AudioContext || window.webkitAudioContext;
      if (!Context) return null;
      audio = new Context();
      output = audio.createGain();
      output.gain.value = LOUDNESS;
      output.connect(audio.destination);
    }
    if (audio.state === "suspended") audio.resume();
    return audio;
  }

  function tone(point, when) {
    const kind = LAYER.test(point.group) ? "layer" : point.group in TIMBRES ? point.group : "token";
    const timbre = TIMBRES[kind];
    const oscillator = audio.createOscillator();
    if (timbre.partials) {
      const zeros = new Float32Array(timbre.partials.length + 1);
      waves[kind] = waves[kind] || audio.createPeriodicWave(zeros, new Float32Array([0, ...timbre.partials]));
      oscillator.setPeriodicWave(waves[kind]);
    } else {
      oscillator.type = timbre.wave;
    }
    oscillator.frequency.setValueAtTime(pitch(point), when);
    let source = oscillator;
    if (timbre.lowpass) {
      source = audio.createBiquadFilter();
      source.type = "lowpass";
      source.frequency.setValueAtTime(timbre.lowpass, when);
      oscillator.connect(source);
    }
    const envelope = audio.createGain(); // a quick rise and a soft fall: no click at either end
    envelope.gain.setValueAtTime(0, when);
    envelope.gain.linearRampToValueAtTime(timbre.gain, when + ATTACK);
    envelope.gain.setTargetAtTime(0, when + ATTACK, (TONE - ATTACK) / 4);
    const panner = audio.createStereoPanner();
    panner.pan.setValueAtTime(place(point), when);
    source.connect(envelope).connect(panner).connect(output);
    oscillator.onended = () => {
      sounding.delete(oscillator);
      panner.disconnect();
    };
    sounding.add(oscillator);
    oscillator.start(when);
    oscillator.stop(when + TONE);
  }

  // the points as tones, one after the other, in place of whatever was sounding
  function play(points) {
    if (!on || !points.length || !context()) return;
    hush();
    const start = audio.currentTime + LEAD;
    points.forEach((point, i) => tone(point, start + i * GAP));
  }

  // every tone stopped now, those scheduled for later included
  function hush() {
    for (const oscillator of sounding) {
      try {
        oscillator.stop();
      } catch { // never started: nothing to stop
      }
    }
    sounding.clear();
  }

  // what P and G play: the group the ring is on (put away: the token group, or the first drawn), its
  // tokens in sentence order (P), or each of its points once, from left to right (G)
  function phrase(what) {
    const at = keys().at();
    const group = at ? at.group : Object.keys(TIMBRES).find((name) => keys().placed(name).length);
    const points = group ? keys().placed(group) : [];
    if (what === "phrase") return points;
    const seen = new Set();
    return points.filter((point) => {
      const spot = `${point.x},${point.y}`;
      if (seen.has(spot)) return false;
      seen.add(spot);
      return true;
    }).sort((a, b) => a.x - b.x);
  }

  // the plot's name says the sound keys while sound is on
  function label() {
    const host = plot();
    if (!host) return;
    const name = host.getAttribute("aria-label") || "";
    const plain = name.endsWith(SAID) ? name.slice(0, -SAID.length) : name;
    const wanted = on ? plain + SAID : plain;
    if (wanted !== name) host.setAttribute("aria-label", wanted);
  }

  document.addEventListener("embedding-explorer:reached", (event) => {
    if (on && event.detail) play([event.detail]);
  });
  document.addEventListener("keydown", (event) => {
    if (event.key === "Escape") {
      hush();
      return;
    }
    const what = KEYS[String(event.key).toLowerCase()];
    if (!on || !what || event.altKey || event.ctrlKey || event.metaKey || event.target !== plot() || !keys()) return;
    event.preventDefault();
    play(phrase(what));
  });
  document.addEventListener("visibilitychange", () => { if (document.visibilityState === "hidden") hush(); });
  document.addEventListener("explorer:written", label); // the plot's name, once the plot is there

  window.embeddingExplorerSound = {
    // the view's sound, from its checkbox (ui/viewpanel.py): off stops what sounds
    on(value) {
      on = Boolean(value);
      if (!on) hush();
      label();
      return [];
    },
  };
})();
