#!/usr/bin/env python3
"""Every key in the golden --json documents (tests/golden/*.json) is named
in docs/cli.md, so that the page lists the whole JSON schema.

Keys of maps whose keys are data, not schema (a chip's `sources` by
catalog field, `peak_flops_per_s` by dtype, `activations_bf16` by remat
policy), are not checked; docs/cli.md describes those maps.

Usage: check_json_keys.py GOLDEN_DIR DOCS_CLI_MD
"""

import glob
import json
import os
import re
import sys

DATA_KEYED = {"sources", "peak_flops_per_s", "activations_bf16"}


def keys_of(doc, parent, out):
    if isinstance(doc, dict):
        for k, v in doc.items():
            if parent not in DATA_KEYED:
                out.setdefault(k, parent)
            keys_of(v, k, out)
    elif isinstance(doc, list):
        for v in doc:
            keys_of(v, parent, out)


def main():
    golden, cli_md = sys.argv[1], sys.argv[2]
    found = {}
    files = sorted(glob.glob(os.path.join(golden, "*.json")))
    for f in files:
        with open(f) as fh:
            keys_of(json.load(fh), "", found)
    with open(cli_md) as fh:
        words = set(re.findall(r"[A-Za-z0-9_]+", fh.read()))
    missing = sorted(k for k in found if k not in words)
    for k in missing:
        print(f"docs/cli.md does not name the JSON key '{k}' "
              f"(under '{found[k] or 'top level'}')")
    print(f"{len(found)} keys in {len(files)} golden files, "
          f"{len(missing)} undocumented")
    return 1 if missing or len(files) < 10 else 0


if __name__ == "__main__":
    sys.exit(main())
