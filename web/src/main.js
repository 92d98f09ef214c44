// The page of `scalemodel ui` (docs/ui.md): pickers, then one view at a time,
// every number from the CLI's --json through the API. The state lives in
// the URL, so a view can be shared.
import "./style.css";
import { api, si, seconds, percent } from "./api.js";
import { showPlot } from "./download.js";
import { memoryPlot, breakdownPlot, rooflinePlot, frontierPlot } from "./plots.js";
import { ringAnimation } from "./ring.js";

const $ = (id) => document.getElementById(id);

// Defaults; the URL's query overrides them (and is rewritten on change).
const state = {
  view: "train", model: "llama3-8b", system: "h100:8x1", plan: "fsdp=8",
  batch: "1Mi", seq: "8192", top: "10", sort: "step", dir: "asc",
  prompt: "11", output: "8", rate: "2", splan: "",
  kind: "all-gather", axis: "", bytes: "64MiB",
};
let uploaded = null; // an uploaded config.json (not in the URL)

function readUrl() {
  const q = new URLSearchParams(location.search);
  for (const k of Object.keys(state)) if (q.has(k)) state[k] = q.get(k);
}
function writeUrl() {
  const q = new URLSearchParams(state);
  history.replaceState(null, "", `${location.pathname}?${q}`);
}

function showError(e) {
  const box = $("error");
  box.textContent = e ? String(e.message || e) : "";
  box.hidden = !e;
}

// Each run of a view gets a number; a run that a later one overtook
// renders nothing (its answers may arrive after the later run's).
let generation = 0;
class Stale extends Error {}
function current(gen) {
  if (gen !== generation) throw new Stale();
}

// Runs `fn(gen)`, marking `section` busy and showing a failure's sentence.
async function guarded(section, fn) {
  const gen = ++generation;
  section.dataset.state = "busy";
  showError(null);
  try {
    await fn(gen);
    current(gen);
    section.dataset.state = "done";
  } catch (e) {
    if (e instanceof Stale) return;
    section.dataset.state = "error";
    showError(e);
  }
}

function model() {
  return uploaded ?? state.model;
}

function numbers(container, rows) {
  container.replaceChildren();
  for (const [id, label, text, value] of rows) {
    const d = document.createElement("div");
    d.className = "number";
    d.innerHTML = `<span class="label"></span><span class="value" data-testid="${id}"></span>`;
    d.querySelector(".label").textContent = label;
    const v = d.querySelector(".value");
    v.textContent = text;
    if (value !== undefined) v.dataset.value = String(value);
    container.append(d);
  }
}

// ---- Train: numbers, memory stack, breakdown, roofline.
const cache = new Map();
async function cached(command, options) {
  const key = command + JSON.stringify(options);
  if (!cache.has(key)) cache.set(key, api(command, options).catch((e) => { cache.delete(key); throw e; }));
  return cache.get(key);
}

async function runTrain(gen) {
  const r = await api("train", { model: model(), system: state.system, plan: state.plan, "batch-tokens": state.batch, seq: state.seq });
  current(gen);
  const mem = r.memory_per_chip;
  numbers($("train-numbers"), [
    ["step-time", "Step time", r.feasible ? seconds(r.step_time_s) : "infeasible", r.step_time_s],
    ["mfu", "MFU", percent(r.mfu), r.mfu],
    ["tokens-per-chip", "Tokens/s per chip", si(r.tokens_per_s_per_chip), r.tokens_per_s_per_chip],
    ["memory", "Memory per chip", `${si(mem.total_bytes, "B")} of ${si(mem.capacity_bytes, "B")}`, mem.total_bytes],
    ["bottleneck", "Bottleneck", r.bottleneck || r.reason, r.bottleneck],
  ]);
  const notes = $("train-notes");
  notes.replaceChildren(...[r.reason, ...(r.notes || [])].filter(Boolean).map((n) => {
    const li = document.createElement("li");
    li.textContent = n;
    return li;
  }));
  showPlot($("plot-memory"), memoryPlot(mem));
  showPlot($("plot-breakdown"), breakdownPlot(r.breakdown));
  await runRoofline(gen);
}

async function runRoofline(gen) {
  const sys = await cached("system", { name: state.system });
  const m = await cached("model", { name: model() });
  const a = m.architecture;
  const ffn = a.moe ? a.moe.expert_ffn || a.ffn : a.ffn;
  const tokens = [1, 16, 128, 1024, 8192, 65536];
  const points = await Promise.all(tokens.map(async (b) => {
    const r = await cached("roofline", { chip: sys.chip, matmul: `${b}x${a.d_model}x${ffn}` });
    return { ...r, label: `B=${b}` };
  }));
  current(gen);
  showPlot($("plot-roofline"), rooflinePlot(points));
}

// ---- Plan search: the top plans, sortable, each one explainable.
let plans = [];
const COLUMNS = [
  ["rank", "#", (p) => p.rank],
  ["key", "Plan", (p) => p.key],
  ["step", "Step time (s)", (p) => p.step_time_s],
  ["mfu", "MFU", (p) => p.mfu],
  ["tps", "Tokens/s/chip", (p) => p.tokens_per_s_per_chip],
  ["mem", "Memory/chip (GB)", (p) => p.memory_per_chip.total_bytes / 1e9],
  ["bottleneck", "Bottleneck", (p) => p.bottleneck],
];

function renderPlans() {
  const col = COLUMNS.find((c) => c[0] === state.sort) || COLUMNS[2];
  const sign = state.dir === "desc" ? -1 : 1;
  const rows = [...plans].sort((a, b) => {
    const x = col[2](a), y = col[2](b);
    return sign * (x < y ? -1 : x > y ? 1 : 0);
  });
  const head = document.createElement("tr");
  for (const [id, label] of COLUMNS) {
    const th = document.createElement("th");
    th.textContent = label + (id === state.sort ? (state.dir === "asc" ? " ▲" : " ▼") : "");
    th.dataset.sort = id;
    th.addEventListener("click", () => {
      state.dir = state.sort === id && state.dir === "asc" ? "desc" : "asc";
      state.sort = id;
      writeUrl();
      renderPlans();
    });
    head.append(th);
  }
  head.append(document.createElement("th"));
  $("plans").tHead.replaceChildren(head);
  $("plans").tBodies[0].replaceChildren(...rows.map((p) => {
    const tr = document.createElement("tr");
    tr.dataset.key = p.key;
    const cells = [p.rank, p.key, p.step_time_s.toPrecision(4), percent(p.mfu),
      si(p.tokens_per_s_per_chip), (p.memory_per_chip.total_bytes / 1e9).toFixed(1), p.bottleneck];
    for (const c of cells) {
      const td = document.createElement("td");
      td.textContent = c;
      tr.append(td);
    }
    const td = document.createElement("td");
    const b = document.createElement("button");
    b.textContent = "explain this plan";
    b.addEventListener("click", () => {
      state.plan = p.key;
      $("plan").value = p.key;
      show("train");
    });
    td.append(b);
    tr.append(td);
    return tr;
  }));
}

async function runSearch(gen) {
  const t0 = performance.now();
  const r = await api("plan-train", { model: model(), system: state.system, "batch-tokens": state.batch, seq: state.seq, top: Number(state.top) });
  current(gen);
  const wall = (performance.now() - t0) / 1e3;
  plans = r.plans.map((p, i) => ({ ...p, rank: i + 1 }));
  const status = $("search-status");
  status.textContent = `${plans.length} plans of ${r.configs_evaluated.toLocaleString()} evaluated; ` +
    `${wall.toFixed(2)} s from the page (the command on the server: ${r.serverSeconds?.toFixed(2) ?? "?"} s, ` +
    `of which the search: ${r.search_time_s.toFixed(2)} s)`;
  status.dataset.wall = String(wall);
  status.dataset.search = String(r.search_time_s);
  status.dataset.server = String(r.serverSeconds ?? "");
  renderPlans();
}

// ---- Serve: the frontier and one simulated load.
const pow2 = (v) => Math.round(2 ** Number(v));
const rate = () => Number((2 ** Number(state.rate)).toPrecision(3));

// The serve plan: as typed, or tp over up to 8 chips and replicas over
// the rest of the system.
function servePlan(sys) {
  if (state.splan) return state.splan;
  const tp = Math.min(8, sys.num_chips);
  return sys.num_chips > tp ? `tp=${tp},dp=${Math.floor(sys.num_chips / tp)}` : `tp=${tp}`;
}

async function runServe(gen) {
  $("prompt-v").textContent = pow2(state.prompt);
  $("output-v").textContent = pow2(state.output);
  $("rate-v").textContent = rate();
  const sys = await cached("system", { name: state.system });
  const common = { model: model(), prompt: pow2(state.prompt), output: pow2(state.output) };
  const [plan, sim] = await Promise.all([
    api("plan-serve", { ...common, chip: sys.chip }),
    api("serve", { ...common, system: state.system, plan: servePlan(sys), rate: rate(), requests: 400 }),
  ]);
  current(gen);
  numbers($("serve-numbers"), [
    ["serve-ttft", "TTFT p50", seconds(sim.ttft_s?.p50), sim.ttft_s?.p50],
    ["serve-tpot", "TPOT p50", seconds(sim.tpot_s?.p50), sim.tpot_s?.p50],
    ["serve-tps", "Output tokens/s per chip", si(sim.output_tokens_per_s_per_chip), sim.output_tokens_per_s_per_chip],
    ["serve-rps", "Requests/s served", si(sim.requests_per_s), sim.requests_per_s],
    ["serve-best", "Best plan (frontier)", plan.best?.feasible ? `${plan.best.plan ?? ""}${plan.best.dp_attention ? " dp-attention" : ""}`.trim() || "see plot" : "none", ""],
  ]);
  const here = sim.feasible ? { feasible: true, tokens_per_s_per_chip: sim.output_tokens_per_s_per_chip, decode_step_time_s: sim.tpot_s.p50 } : null;
  showPlot($("plot-frontier"), frontierPlot(plan.frontier, here));
}

// ---- Collective: one ring on the chosen axis, animated.
let ring = null;
async function runCollective(gen) {
  const sys = await cached("system", { name: state.system });
  const axes = sys.axes.filter((a) => a.size > 1);
  const select = $("axis");
  select.replaceChildren(...axes.map((a) => new Option(`${a.name} (${a.size} chips, ${a.kind})`, a.name)));
  if (!axes.some((a) => a.name === state.axis)) state.axis = axes[0]?.name ?? "";
  select.value = state.axis;
  $("kind").value = state.kind;
  if (!state.axis) throw new Error(`system ${state.system} has no axis of more than one chip`);
  const r = await api("collective", { kind: state.kind, system: state.system, axes: state.axis, bytes: state.bytes });
  current(gen);
  const n = axes.find((a) => a.name === state.axis).size;
  numbers($("collective-numbers"), [
    ["collective-time", "Time", seconds(r.time_s), r.time_s],
    ["collective-algorithm", "Algorithm", r.algorithm, r.algorithm],
    ["collective-bound", "Bound", r.bound, r.bound],
  ]);
  if (ring) ring.stop();
  const shown = Math.min(n, 16);
  const perStep = `${seconds(r.bandwidth_time_s / Math.max(1, n - 1))} a step at the bandwidth, ${n - 1} steps` +
    (shown < n ? `; ${shown} of ${n} chips drawn` : "");
  ring = ringAnimation(state.kind, shown, perStep);
  showPlot($("plot-ring"), ring.svg);
}

// ---- Views and pickers.
const RUNNERS = { train: runTrain, search: null, serve: runServe, collective: runCollective };

function show(view) {
  state.view = RUNNERS[view] !== undefined ? view : "train";
  writeUrl();
  for (const b of document.querySelectorAll("#tabs button")) {
    b.classList.toggle("active", b.dataset.view === state.view);
  }
  for (const s of document.querySelectorAll(".view")) s.hidden = s.id !== `view-${state.view}`;
  const run = RUNNERS[state.view];
  if (run) guarded($(`view-${state.view}`), run);
}

function bind(id, key, event = "change") {
  const input = $(id);
  input.value = state[key];
  let timer = null;
  input.addEventListener(event, () => {
    state[key] = input.value;
    writeUrl();
    clearTimeout(timer);
    timer = setTimeout(() => show(state.view), event === "input" ? 250 : 0);
  });
}

async function loadCatalog() {
  const [models, systems] = await Promise.all([api("models", {}), api("systems", {})]);
  const select = $("model");
  select.replaceChildren(...models.models.map((m) => new Option(`${m.name} (${m.id})`, m.id)));
  select.value = state.model;
  $("systems").replaceChildren(...["h100:8x1", "h100:8x4", "tpu-v5e:4x4", "tpu-v5p:4x4x4", "b200:8x1",
    ...systems.systems.map((s) => s.id)].map((id) => new Option(id)));
}

function bindUpload() {
  $("config").addEventListener("change", async (ev) => {
    const file = ev.target.files[0];
    if (!file) return;
    try {
      uploaded = JSON.parse(await file.text());
    } catch (e) {
      showError(new Error(`${file.name}: expected a HuggingFace config.json, got invalid JSON (${e.message})`));
      return;
    }
    const id = `uploaded: ${file.name}`;
    $("model").append(new Option(id, id));
    $("model").value = id;
    cache.clear();
    show(state.view);
  });
}

async function start() {
  readUrl();
  for (const b of document.querySelectorAll("#tabs button")) {
    b.addEventListener("click", () => show(b.dataset.view));
  }
  $("model").addEventListener("change", () => {
    if (!$("model").value.startsWith("uploaded: ")) {
      uploaded = null;
      state.model = $("model").value;
    }
    show(state.view);
  });
  bindUpload();
  for (const [id, key] of [["system", "system"], ["plan", "plan"], ["batch", "batch"], ["seq", "seq"], ["top", "top"], ["splan", "splan"],
    ["kind", "kind"], ["axis", "axis"], ["bytes", "bytes"]]) bind(id, key);
  for (const key of ["prompt", "output", "rate"]) bind(key, key, "input");
  $("search-run").addEventListener("click", () => guarded($("view-search"), runSearch));
  await guarded(document.body, loadCatalog);
  show(state.view);
}

start();
