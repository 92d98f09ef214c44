"""Runs one example script (examples/*.py) in an empty directory and fails
unless it exits 0 and leaves at least one non-empty PNG there.

Usage: check_example.py EXAMPLE.py OUT_DIR
"""

import os
import shutil
import subprocess
import sys


def main():
    script, out = os.path.abspath(sys.argv[1]), sys.argv[2]
    shutil.rmtree(out, ignore_errors=True)
    os.makedirs(out)
    p = subprocess.run([sys.executable, script], cwd=out, check=False)
    if p.returncode != 0:
        sys.exit(f"{script}: exit code {p.returncode}")
    pngs = [f for f in os.listdir(out) if f.endswith(".png")]
    if not pngs:
        sys.exit(f"{script}: wrote no PNG in {out}")
    for f in pngs:
        size = os.path.getsize(os.path.join(out, f))
        with open(os.path.join(out, f), "rb") as fh:
            magic = fh.read(8)
        if size == 0 or magic != b"\x89PNG\r\n\x1a\n":
            sys.exit(f"{script}: {f} is empty or not a PNG ({size} bytes)")
        print(f"{f}: {size} bytes")


if __name__ == "__main__":
    main()
