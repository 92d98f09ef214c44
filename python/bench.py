#!/usr/bin/env python3
"""Python against the CLI on the same plan search, and `import scalemodel`
time (docs/performance.md, "Python").

Usage: PYTHONPATH=build/python python3 python/bench.py [--bin build/scalemodel]
       [--runs 5]

Runs `scalemodel plan train ... --json` as a process and
scalemodel.plan_train(...) in this process alternately, `runs` times each,
and prints the median wall time of each (process: start to exit; Python:
the call, JSON parsing included), the median search_time_s each reports, and
the configurations covered. Then the median of five fresh interpreters'
`import scalemodel`.
"""

import argparse
import json
import statistics
import subprocess
import sys
import time

import scalemodel as sm

SEARCH = dict(model="llama3-405b", system="h100:8x256", batch_tokens="16Mi",
              seq=8192, top=5)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", default="build/scalemodel")
    ap.add_argument("--runs", type=int, default=5)
    a = ap.parse_args()
    argv = [a.bin] + sm._cli.argv(["plan", "train"], (), SEARCH)
    cli_wall, cli_search, py_wall, py_search = [], [], [], []
    configs = None
    for _ in range(a.runs):
        t = time.perf_counter()
        p = subprocess.run(argv, capture_output=True, text=True, check=True)
        cli_wall.append(time.perf_counter() - t)
        cli_search.append(json.loads(p.stdout)["search_time_s"])
        t = time.perf_counter()
        r = sm.plan_train(**SEARCH)
        py_wall.append(time.perf_counter() - t)
        py_search.append(r.search_time_s)
        configs = r.configs_evaluated
    print(f"search: {' '.join(argv[1:-1])}")
    print(f"configurations covered: {configs:.4g}, runs: {a.runs} each, "
          f"alternating")
    print(f"{'':8} {'wall_s (median)':>16} {'search_time_s (median)':>24}")
    print(f"{'CLI':8} {statistics.median(cli_wall):16.3f} "
          f"{statistics.median(cli_search):24.3f}")
    print(f"{'Python':8} {statistics.median(py_wall):16.3f} "
          f"{statistics.median(py_search):24.3f}")
    print(f"Python / CLI wall: "
          f"{statistics.median(py_wall) / statistics.median(cli_wall):.3f}")
    code = ("import time; t = time.perf_counter(); import scalemodel; "
            "print(time.perf_counter() - t)")
    imports = [float(subprocess.run([sys.executable, "-c", code], check=True,
                                    capture_output=True, text=True).stdout)
               for _ in range(5)]
    print(f"import scalemodel: median {statistics.median(imports):.3f} s "
          f"(min {min(imports):.3f}, max {max(imports):.3f}) over 5 "
          f"interpreters")


if __name__ == "__main__":
    main()
