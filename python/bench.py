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
import os
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
# The built package (PYTHONPATH), not the sources beside this script.
sys.path = [p for p in sys.path if os.path.abspath(p or ".") != HERE]

import scalemodel as sm  # noqa: E402

# About 1.5 million configurations.
SEARCH = dict(model="llama3-70b", system="h100:8x16", batch_tokens="4Mi",
              seq=4096, top=5)


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
    code = ("import time; t = time.perf_counter(); c = time.process_time(); "
            "import scalemodel; "
            "print(time.perf_counter() - t, time.process_time() - c)")
    runs = [subprocess.run([sys.executable, "-c", code], check=True,
                           capture_output=True, text=True).stdout.split()
            for _ in range(5)]
    wall = [float(r[0]) for r in runs]
    cpu = [float(r[1]) for r in runs]
    print(f"import scalemodel over 5 interpreters: wall median "
          f"{statistics.median(wall):.3f} s (min {min(wall):.3f}), CPU median "
          f"{statistics.median(cpu):.3f} s; load average "
          f"{os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")

if __name__ == "__main__":
    main()
