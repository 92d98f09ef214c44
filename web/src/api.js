// The JSON API of `scalemodel ui` (docs/ui.md): POST /api/<command> with the
// CLI's options as an object; the answer is the CLI's --json report, or
// {"error": sentence} with HTTP 400.
export async function api(command, options) {
  const res = await fetch(`/api/${command}`, {
    method: "POST",
    headers: { "Content-Type": "application/json" },
    body: JSON.stringify(options),
  });
  const body = await res.json();
  if (!res.ok) throw new Error(body.error || `HTTP ${res.status}`);
  // The server's time for the command (Server-Timing: cli;dur=MS).
  const timing = /cli;dur=([\d.e+]+)/.exec(res.headers.get("Server-Timing") || "");
  if (timing) Object.defineProperty(body, "serverSeconds", { value: Number(timing[1]) / 1e3 });
  return body;
}

// Numbers as the CLI's tables print them: 3 significant digits with a
// unit prefix.
const PREFIXES = [
  [1e15, "P"], [1e12, "T"], [1e9, "G"], [1e6, "M"], [1e3, "k"],
];
export function si(value, unit = "") {
  if (value == null || !Number.isFinite(value)) return "n/a";
  const a = Math.abs(value);
  for (const [scale, p] of PREFIXES) {
    if (a >= scale) return `${(value / scale).toPrecision(3)} ${p}${unit}`;
  }
  return `${value.toPrecision(3)} ${unit}`.trim();
}

export function seconds(s) {
  if (s == null || !Number.isFinite(s)) return "n/a";
  if (s >= 1) return `${s.toPrecision(3)} s`;
  if (s >= 1e-3) return `${(s * 1e3).toPrecision(3)} ms`;
  return `${(s * 1e6).toPrecision(3)} µs`;
}

export function percent(x) {
  return x == null ? "n/a" : `${(100 * x).toFixed(1)}%`;
}
