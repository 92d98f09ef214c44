// The plots of the page, each from one --json report (Observable Plot).
import * as Plot from "@observablehq/plot";

const GB = 1e9;

// Memory per chip as one stacked bar against the chip's HBM (train's
// memory_per_chip).
export function memoryPlot(mem) {
  const parts = [
    ["parameters", mem.params_bytes],
    ["gradients", mem.grads_bytes],
    ["optimizer", mem.optimizer_bytes],
    ["activations", mem.activations_bytes],
    ["other", mem.other_bytes],
  ].filter(([, b]) => b > 0)
    .map(([part, b]) => ({ part, gb: b / GB, chip: "per chip" }));
  const cap = mem.capacity_bytes / GB;
  const top = Math.max(cap, mem.total_bytes / GB) * 1.1;
  return Plot.plot({
    width: 460, height: 200, marginLeft: 60,
    x: { label: "GB per chip", domain: [0, top], grid: true },
    y: { label: null },
    color: { legend: true, scheme: "tableau10" },
    marks: [
      Plot.barX(parts, Plot.stackX({ x: "gb", y: "chip", fill: "part", title: (d) => `${d.part}: ${d.gb.toFixed(1)} GB` })),
      Plot.ruleX([cap], { stroke: "crimson", strokeWidth: 2 }),
      Plot.text([cap], { x: (d) => d, text: () => `HBM ${cap.toFixed(0)} GB`, frameAnchor: "top", dy: -2, fill: "crimson", textAnchor: "end", dx: -4 }),
    ],
  });
}

// Where one step's time goes (train's breakdown).
export function breakdownPlot(b) {
  const rows = [
    ["compute", b.compute_s],
    ["exposed communication", b.exposed_comm_s],
    ["pipeline bubble", b.bubble_s],
    ["other", b.other_s],
  ].map(([part, s]) => ({ part, s }));
  return Plot.plot({
    width: 460, height: 200, marginLeft: 140, marginRight: 50,
    x: { label: "seconds per step", grid: true },
    y: { label: null, domain: rows.map((r) => r.part) },
    marks: [
      Plot.barX(rows, { x: "s", y: "part", fill: "steelblue", title: (d) => `${d.part}: ${d.s.toPrecision(3)} s` }),
      Plot.text(rows, { x: "s", y: "part", text: (d) => d.s.toPrecision(3) + " s", dx: 4, textAnchor: "start" }),
      Plot.ruleX([0]),
    ],
  });
}

// The chip's roofline (achieved FLOP/s against arithmetic intensity) with
// the roofline reports of `points` (one per token count).
export function rooflinePlot(points) {
  const p0 = points[0];
  const peak = p0.peak_flops_per_s;
  const bw = p0.bandwidth_bytes_per_s;
  const lo = Math.min(...points.map((p) => p.intensity)) / 2;
  const hi = Math.max(...points.map((p) => p.intensity), p0.critical_intensity) * 2;
  const line = [];
  for (let i = 0; i <= 60; i++) {
    const x = lo * Math.pow(hi / lo, i / 60);
    line.push({ x, y: Math.min(peak, bw * x) });
  }
  return Plot.plot({
    width: 460, height: 280, marginLeft: 60,
    x: { type: "log", label: "arithmetic intensity (FLOPs/byte)", grid: true },
    y: { type: "log", label: "FLOP/s", grid: true },
    color: { legend: true, domain: ["compute", "memory"], range: ["seagreen", "darkorange"] },
    marks: [
      Plot.line(line, { x: "x", y: "y", stroke: "gray" }),
      Plot.ruleX([p0.critical_intensity], { stroke: "gray", strokeDasharray: "4,3" }),
      Plot.dot(points, { x: "intensity", y: "achieved_flops_per_s", fill: "bound", r: 5, title: (d) => `${d.label}: ${d.bound}-bound` }),
      Plot.text(points, { x: "intensity", y: "achieved_flops_per_s", text: "label", dy: -10 }),
    ],
  });
}

// The serving frontier (plan serve's frontier): latency per output token
// against throughput per chip, one dot per plan and batch.
export function frontierPlot(frontier, best) {
  const rows = frontier.map((f) => ({
    ...f, tpot_ms: 1e3 * f.decode_step_time_s,
    plan: f.dp_attention ? `${f.plan} dp-attention` : f.plan,
    label: `${f.plan}${f.dp_attention ? " dp-attention" : ""} b=${f.batch}`,
  }));
  const marks = [
    Plot.line(rows, { x: "tokens_per_s_per_chip", y: "tpot_ms", stroke: "steelblue", sort: "tokens_per_s_per_chip" }),
    Plot.dot(rows, { x: "tokens_per_s_per_chip", y: "tpot_ms", fill: "steelblue", r: 4, title: (d) => `${d.label}: ${d.chips} chips, TTFT ${(d.ttft_s * 1e3).toFixed(0)} ms, ${d.bound}-bound` }),
    Plot.text(rows, { x: "tokens_per_s_per_chip", y: "tpot_ms", text: "plan", dy: -9, fontSize: 9 }),
  ];
  if (best && best.feasible) {
    marks.push(Plot.dot([best], { x: "tokens_per_s_per_chip", y: (d) => 1e3 * d.decode_step_time_s, stroke: "crimson", r: 8, strokeWidth: 2 }));
  }
  return Plot.plot({
    width: 620, height: 320, marginLeft: 60,
    x: { type: "log", label: "output tokens/s per chip", grid: true },
    y: { type: "log", label: "time per output token (ms)", grid: true },
    marks,
  });
}
