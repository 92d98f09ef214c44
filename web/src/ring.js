// An all-gather or reduce-scatter around a ring, as the book draws it: N
// chips, each array cut into N chunks; every step each chip passes one
// chunk to its neighbour, N - 1 steps in all.
const NS = "http://www.w3.org/2000/svg";
const COLORS = ["#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f", "#edc948",
  "#b07aa1", "#ff9da7", "#9c755f", "#bab0ac", "#1f77b4", "#2ca02c", "#d62728",
  "#9467bd", "#8c564b", "#e377c2"];

function el(name, attrs, parent) {
  const e = document.createElementNS(NS, name);
  for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, v);
  if (parent) parent.append(e);
  return e;
}

// What chip i holds after `step` steps: chunk -> how many chips' shares
// it sums (reduce-scatter) or 1 (all-gather).
function holdings(kind, n, i, step) {
  const held = new Map();
  if (kind === "all-gather") {
    for (let t = 0; t <= step; t++) held.set((i - t + n * n) % n, 1);
  } else {
    for (let c = 0; c < n; c++) held.set(c, 1);
    // Chunk (i - t - 1) arrives at step t + 1 carrying t + 1 shares.
    for (let t = 0; t < step; t++) held.set((i - t - 1 + 2 * n) % n, t + 2);
  }
  return held;
}

// The picture after `step` steps, with the chunks in flight to step + 1.
function draw(svg, kind, n, step, width) {
  svg.replaceChildren();
  const cx = width / 2, cy = 180, r = 125;
  const pos = (i) => [cx + r * Math.sin((2 * Math.PI * i) / n), cy - r * Math.cos((2 * Math.PI * i) / n)];
  el("circle", { cx, cy, r, fill: "none", stroke: "#ccc", "stroke-dasharray": "3,4" }, svg);
  const box = n <= 8 ? 8 : 6;
  const perRow = Math.min(n, 8), rows = Math.ceil(n / 8);
  const w = perRow * (box + 1) + 7, h = rows * (box + 1) + 7;
  for (let i = 0; i < n; i++) {
    const [x, y] = pos(i);
    el("rect", { x: x - w / 2, y: y - h / 2, width: w, height: h, rx: 4, fill: "#f4f4f4", stroke: "#555" }, svg);
    el("text", { x, y: y - h / 2 - 4, "text-anchor": "middle", "font-size": 10 }, svg).textContent = `chip ${i}`;
    const held = holdings(kind, n, i, step);
    for (let c = 0; c < n; c++) {
      const shares = held.get(c) || 0;
      const done = kind === "all-gather" ? shares > 0 : shares === n;
      const col = c % 8, row = Math.floor(c / 8);
      el("rect", {
        x: x - w / 2 + 4 + col * (box + 1), y: y - h / 2 + 4 + row * (box + 1), width: box, height: box,
        fill: shares ? COLORS[c % COLORS.length] : "white",
        "fill-opacity": done ? 1 : shares ? 0.25 + 0.6 * (shares / n) : 1,
        stroke: "#999", "stroke-width": 0.5,
      }, svg);
    }
  }
  if (step >= n - 1) return;
  for (let i = 0; i < n; i++) {
    const chunk = kind === "all-gather" ? (i - step + n * n) % n : (i - step - 1 + 2 * n) % n;
    const [x0, y0] = pos(i), [x1, y1] = pos((i + 1) % n);
    const packet = el("rect", { x: x0 - box / 2, y: y0 - box / 2, width: box + 2, height: box + 2, fill: COLORS[chunk % COLORS.length], stroke: "black" }, svg);
    el("animate", { attributeName: "x", from: x0 - box / 2, to: x1 - box / 2, dur: "0.8s", fill: "freeze" }, packet);
    el("animate", { attributeName: "y", from: y0 - box / 2, to: y1 - box / 2, dur: "0.8s", fill: "freeze" }, packet);
  }
}

// Starts the animation in a new <svg>; returns it and a stop function.
export function ringAnimation(kind, n, stepSeconds, onStep) {
  const width = 460;
  const svg = el("svg", { width, height: 380, viewBox: `0 0 ${width} 380`, "data-kind": kind, "data-chips": n });
  let step = 0;
  const tick = () => {
    draw(svg, kind, n, step, width);
    el("text", { x: 8, y: 352, "font-size": 12 }, svg).textContent = step < n - 1
      ? `step ${step + 1} of ${n - 1}: each chip sends one chunk to its neighbour`
      : `done: ${kind === "all-gather" ? "every chip holds every chunk" : "each chip holds one fully reduced chunk"}`;
    el("text", { x: 8, y: 370, "font-size": 11, fill: "#555" }, svg).textContent = stepSeconds;
    if (onStep) onStep(step);
    step = step >= n - 1 ? 0 : step + 1;
  };
  tick();
  const timer = setInterval(tick, 1200);
  return { svg, stop: () => clearInterval(timer) };
}
