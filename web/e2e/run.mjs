// End-to-end test of `scalemodel ui` in headless Chromium (docs/ui.md):
// starts the server on a free port, drives the page like a user, and
// compares the numbers on the page with the CLI's --json.
//   node e2e/run.mjs [path/to/scalemodel]   (default ../build/scalemodel)
// Env: CHROMIUM (default /usr/bin/chromium), SCREENSHOTS (a folder: save
// the main views there, e.g. ../docs/img), E2E_OUT (a JSON summary file).
import { spawn, spawnSync } from "node:child_process";
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { chromium } from "playwright-core";

const here = path.dirname(fileURLToPath(import.meta.url));
const root = path.resolve(here, "../..");
const bin = path.resolve(process.argv[2] || path.join(root, "build/scalemodel"));
const browserPath = process.env.CHROMIUM || "/usr/bin/chromium";
const shots = process.env.SCREENSHOTS ? path.resolve(process.env.SCREENSHOTS) : null;
const results = { checks: 0 };
let failures = 0;

function check(ok, what) {
  results.checks++;
  if (ok) {
    console.log(`ok   ${what}`);
  } else {
    failures++;
    console.log(`FAIL ${what}`);
  }
}

// The CLI's --json for `args`, with its wall time.
function cli(args) {
  const t0 = performance.now();
  const r = spawnSync(bin, [...args, "--json"], { encoding: "utf8" });
  const wall = (performance.now() - t0) / 1e3;
  if (r.status !== 0) throw new Error(`${args.join(" ")}: ${r.stderr}`);
  return { json: JSON.parse(r.stdout), wall };
}

// A plan search from the page against the same search run by the CLI, on
// a larger search than the 32-chip one (128 H100s, 4Mi tokens: 0.1-0.9 s by
// machine and load). Last, since it moves the page to another system.
async function searchTiming(page) {
  await page.click("#tabs button[data-view=search]");
  for (const [id, v] of [["system", "h100:8x16"], ["batch", "4Mi"]]) {
    await page.fill(`#${id}`, v);
    await page.locator(`#${id}`).dispatchEvent("change");
  }
  await page.waitForFunction(() => location.search.includes("8x16") && location.search.includes("batch=4Mi"));
  const args = ["plan", "train", "--model", "llama3-70b", "--system", "h100:8x16", "--batch-tokens", "4Mi",
    "--seq", "4096", "--top", "10"];
  // The CLI (a process, as a user runs it) and the page (a click until the
  // table is drawn) in turn, medians of 5 each: the machine may be busy.
  const walls = [], pageWalls = [], serverWalls = [];
  let c = null;
  for (let i = 0; i < 5; i++) {
    const run = cli(args);
    walls.push(run.wall);
    c = run.json;
    await page.click("#search-run");
    await done(page, "search");
    pageWalls.push(Number(await page.getAttribute("#search-status", "data-wall")));
    serverWalls.push(Number(await page.getAttribute("#search-status", "data-server")));
  }
  const keys = await page.$$eval("#plans tbody tr", (rows) => rows.map((r) => r.dataset.key));
  check(JSON.stringify(keys) === JSON.stringify(c.plans.map((p) => p.key)), `the 128-chip search lists the CLI's ${c.plans.length} plans in its order`);
  const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
  const cliWall = median(walls), pageWall = median(pageWalls), serverWall = median(serverWalls);
  results.search = { cli_wall_s: walls, page_wall_s: pageWalls, server_s: serverWalls,
    ratio_page_to_cli: pageWall / cliWall, ratio_server_to_cli: serverWall / cliWall };
  // The command on the server (what scalemodel controls) within 20% of the
  // CLI's process; the page's whole time too unless E2E_LOOSE_TIMING=1 (a
  // busy machine delays Chromium's processes, docs/performance.md).
  check(serverWall <= 1.2 * cliWall, `plan search on the server ${serverWall.toFixed(3)} s within 20% of the CLI's ${cliWall.toFixed(3)} s (medians of 5, in turn)`);
  const pageOk = pageWall <= 1.2 * cliWall;
  if (process.env.E2E_LOOSE_TIMING === "1" && !pageOk) {
    console.log(`note plan search from the page ${pageWall.toFixed(3)} s is ${(pageWall / cliWall).toFixed(2)}x the CLI's ${cliWall.toFixed(3)} s (not checked: E2E_LOOSE_TIMING=1)`);
  } else {
    check(pageOk, `plan search from the page ${pageWall.toFixed(3)} s within 20% of the CLI's ${cliWall.toFixed(3)} s (medians of 5, in turn)`);
  }
}

// The shown text "12.5 s" / "540 ms" / "54.6%" / "10.5 k" as a number in
// SI units, to compare with the CLI's value at the 3 digits shown.
function shown(text) {
  const m = text.match(/^(-?[\d.]+(?:e[+-]?\d+)?)\s*(%|ms|µs|s|k|M|G|T|P|kB|MB|GB|TB)?/);
  if (!m) return NaN;
  const scale = { "%": 0.01, ms: 1e-3, "µs": 1e-6, s: 1, k: 1e3, M: 1e6, G: 1e9, T: 1e12, P: 1e15,
    kB: 1e3, MB: 1e6, GB: 1e9, TB: 1e12 };
  return Number(m[1]) * (m[2] ? scale[m[2]] : 1);
}
const close = (a, b, rel) => Math.abs(a - b) <= rel * Math.abs(b);

async function startServer() {
  const server = spawn(bin, ["ui", "--port", "0"], { stdio: ["ignore", "pipe", "inherit"] });
  const url = await new Promise((resolve, reject) => {
    let seen = "";
    server.stdout.on("data", (d) => {
      seen += d;
      const m = seen.match(/http:\/\/[^\s/]+\//);
      if (m) resolve(m[0]);
    });
    server.on("exit", (code) => reject(new Error(`scalemodel ui exited with ${code}: ${seen}`)));
    setTimeout(() => reject(new Error("scalemodel ui printed no URL in 20 s")), 20000);
  });
  return { server, url };
}

async function value(page, id) {
  const el = page.locator(`[data-testid="${id}"]`);
  return { text: (await el.textContent()).trim(), value: Number(await el.getAttribute("data-value")) };
}

// Waits for the view's run to finish. An error may be the answer to an
// intermediate state the test passes through (a new system before the plan
// that fits it), which the next run replaces: only an error that stays for
// 15 s fails the test.
async function done(page, view) {
  let errorSince = 0;
  for (;;) {
    await page.waitForSelector(`#view-${view}[data-state="done"], #view-${view}[data-state="error"]`, { timeout: 120000 });
    const state = await page.getAttribute(`#view-${view}`, "data-state");
    if (state !== "error") return;
    if (!errorSince) errorSince = Date.now();
    if (Date.now() - errorSince > 15000) throw new Error(`${view}: ${await page.textContent("#error")}`);
    await page.waitForTimeout(250);
  }
}

async function shot(page, name) {
  if (!shots) return;
  mkdirSync(shots, { recursive: true });
  await page.screenshot({ path: path.join(shots, name), fullPage: true });
}

async function firstPaint(browser, url) {
  const page = await browser.newPage();
  await page.goto(url, { waitUntil: "load" });
  await page.waitForFunction(() => performance.getEntriesByName("first-contentful-paint").length > 0);
  const t = await page.evaluate(() => {
    const fcp = performance.getEntriesByName("first-contentful-paint")[0].startTime;
    const nav = performance.getEntriesByType("navigation")[0];
    return { fcp, load: nav.loadEventEnd };
  });
  await page.close();
  return t;
}

async function train(page) {
  await page.selectOption("#model", "llama3-70b");
  await done(page, "train");
  await page.fill("#system", "h100:8x4");
  await page.press("#system", "Enter");
  await page.locator("#system").dispatchEvent("change");
  await page.fill("#plan", "fsdp=8,tp=4");
  await page.locator("#plan").dispatchEvent("change");
  await page.fill("#seq", "4096");
  await page.locator("#seq").dispatchEvent("change");
  await page.waitForFunction(() => location.search.includes("seq=4096") && location.search.includes("tp%3D4"));
  await page.waitForTimeout(100);
  await done(page, "train");
  await page.waitForSelector("#plot-roofline svg");
  const c = cli(["train", "--model", "llama3-70b", "--system", "h100:8x4", "--plan", "fsdp=8,tp=4",
    "--batch-tokens", "1Mi", "--seq", "4096"]).json;
  const step = await value(page, "step-time");
  check(step.value === c.step_time_s, `step time on the page ${step.value} = the CLI's ${c.step_time_s}`);
  check(close(shown(step.text), c.step_time_s, 0.005), `step time shown '${step.text}' reads the CLI's ${c.step_time_s}`);
  const mfu = await value(page, "mfu");
  check(close(shown(mfu.text), c.mfu, 0.002), `MFU shown '${mfu.text}' reads the CLI's ${c.mfu}`);
  const mem = await value(page, "memory");
  check(mem.value === c.memory_per_chip.total_bytes, `memory per chip ${mem.value} = the CLI's`);
  check(close(shown(mem.text), c.memory_per_chip.total_bytes, 0.005), `memory shown '${mem.text}'`);
  results.train = { step_time_s: c.step_time_s, shown: step.text };
  await shot(page, "ui-train.png");
}

async function downloads(page) {
  const [svg] = await Promise.all([page.waitForEvent("download"),
    page.click("#plot-memory .downloads button:text('SVG')")]);
  const svgText = readFileSync(await svg.path(), "utf8");
  check(svgText.startsWith("<svg") && svgText.includes("HBM"), `SVG download of the memory plot (${svgText.length} bytes)`);
  const [png] = await Promise.all([page.waitForEvent("download"),
    page.click("#plot-roofline .downloads button:text('PNG')")]);
  const pngBytes = readFileSync(await png.path());
  check(pngBytes.subarray(1, 4).toString() === "PNG" && pngBytes.length > 1000, `PNG download of the roofline (${pngBytes.length} bytes)`);
}

async function search(page) {
  await page.click("#tabs button[data-view=search]");
  const args = ["plan", "train", "--model", "llama3-70b", "--system", "h100:8x4", "--batch-tokens", "1Mi",
    "--seq", "4096", "--top", "10"];
  const { json: c } = cli(args);
  await page.click("#search-run");
  await done(page, "search");
  const keys = await page.$$eval("#plans tbody tr", (rows) => rows.map((r) => r.dataset.key));
  check(JSON.stringify(keys) === JSON.stringify(c.plans.map((p) => p.key)), `the table lists the CLI's ${c.plans.length} plans in its order`);
  await page.click("#plans th[data-sort=mfu]");
  await page.click("#plans th[data-sort=mfu]");
  const mfus = await page.$$eval("#plans tbody tr td:nth-child(4)", (tds) => tds.map((t) => parseFloat(t.textContent)));
  check(mfus.every((m, i) => i === 0 || mfus[i - 1] >= m), "sorting by MFU (descending) orders the rows");
  await shot(page, "ui-search.png");
  const second = c.plans[1];
  await page.click(`#plans tbody tr[data-key="${second.key}"] button`);
  await done(page, "train");
  const step = await value(page, "step-time");
  check(step.value === second.step_time_s, `"explain this plan" shows the plan's step time ${second.step_time_s}`);
}

async function serve(page) {
  await page.click("#tabs button[data-view=serve]");
  await done(page, "serve");
  await page.locator("#rate").fill("3");
  await page.waitForFunction(() => location.search.includes("rate=3"));
  await page.waitForTimeout(400);
  await done(page, "serve");
  const c = cli(["serve", "--model", "llama3-70b", "--system", "h100:8x4", "--plan", "tp=8,dp=4", "--prompt", "2048",
    "--output", "256", "--rate", "8", "--requests", "400"]).json;
  const tpot = await value(page, "serve-tpot");
  check(tpot.value === c.tpot_s.p50, `TPOT p50 at 8 requests/s on the page ${tpot.value} = the CLI's ${c.tpot_s.p50}`);
  await page.waitForSelector("#plot-frontier svg");
  await shot(page, "ui-serve.png");
}

async function collective(page) {
  await page.click("#tabs button[data-view=collective]");
  await done(page, "collective");
  await page.selectOption("#kind", "reduce-scatter");
  await page.waitForFunction(() => location.search.includes("kind=reduce-scatter"));
  await page.waitForTimeout(100);
  await done(page, "collective");
  const c = cli(["collective", "reduce-scatter", "--system", "h100:8x4", "--axes", "node", "--bytes", "64MiB"]).json;
  const t = await value(page, "collective-time");
  check(t.value === c.time_s, `reduce-scatter time on the page ${t.value} = the CLI's ${c.time_s}`);
  const chips = await page.getAttribute("#plot-ring svg", "data-chips");
  check(chips === "8", `the ring draws the node axis's 8 chips (${chips})`);
  await page.waitForTimeout(1500);
  await shot(page, "ui-collective.png");
}

async function sharedUrl(browser, page) {
  const url = page.url();
  const other = await browser.newPage();
  await other.goto(url);
  await done(other, "collective");
  check(await other.inputValue("#kind") === "reduce-scatter" && await other.inputValue("#system") === "h100:8x4",
    "the URL restores the view and the pickers");
  await other.close();
}

async function uploadAndErrors(page) {
  await page.click("#tabs button[data-view=train]");
  await done(page, "train");
  await page.setInputFiles("#config", path.join(root, "data/models/llama3-70b.json"));
  await page.waitForFunction(() => document.querySelector("#model").value.startsWith("uploaded"));
  await done(page, "train");
  const c = cli(["train", "--model", "llama3-70b", "--system", "h100:8x4", "--plan", second_plan_key(),
    "--batch-tokens", "1Mi", "--seq", "4096"]).json;
  const step = await value(page, "step-time");
  check(step.value === c.step_time_s, "an uploaded config.json gives the catalog model's step time");
  await page.fill("#plan", "fsdp=7");
  await page.locator("#plan").dispatchEvent("change");
  await page.waitForSelector("#view-train[data-state=error]");
  const err = spawnSync(bin, ["train", "--model", "llama3-70b", "--system", "h100:8x4", "--plan", "fsdp=7",
    "--batch-tokens", "1Mi", "--seq", "4096", "--json"], { encoding: "utf8" }).stderr.trim().replace(/^error: /, "");
  const shownErr = (await page.textContent("#error")).trim();
  check(shownErr === err, `a bad plan shows the CLI's sentence: '${shownErr}'`);
}
let explained = "";
const second_plan_key = () => explained;

async function main() {
  if (!existsSync(browserPath)) throw new Error(`no Chromium at ${browserPath} (apt-get install -y chromium)`);
  const { server, url } = await startServer();
  const browser = await chromium.launch({ executablePath: browserPath, args: ["--no-sandbox"] });
  try {
    await firstPaint(browser, url); // warm the server's page cache
    const paints = [];
    for (let i = 0; i < 3; i++) paints.push(await firstPaint(browser, url));
    const fcp = Math.min(...paints.map((p) => p.fcp));
    results.first_contentful_paint_ms = paints.map((p) => Math.round(p.fcp));
    check(fcp < 1000, `first contentful paint ${fcp.toFixed(0)} ms < 1000 ms (best of 3: ${results.first_contentful_paint_ms.join(", ")})`);
    const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
    await page.goto(url);
    await done(page, "train");
    await train(page);
    await downloads(page);
    await search(page);
    explained = new URL(page.url()).searchParams.get("plan");
    await serve(page);
    await collective(page);
    await sharedUrl(browser, page);
    await uploadAndErrors(page);
    await searchTiming(page);
  } finally {
    await browser.close();
    server.kill("SIGTERM");
  }
  results.failures = failures;
  console.log(JSON.stringify(results));
  if (process.env.E2E_OUT) writeFileSync(process.env.E2E_OUT, JSON.stringify(results, null, 2));
  process.exit(failures ? 1 : 0);
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
