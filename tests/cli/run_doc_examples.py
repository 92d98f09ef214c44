"""Every `scalemodel ...` command in a code block of README.md and docs/*.md
runs as written (issue #16: "the README's examples, copied as written, all
run"; "every docs/cli.md example runs in CI").

A command is a line of a fenced block that starts with `scalemodel ` (or
`$ scalemodel `), with `\\` continuations joined and a trailing `# comment`
dropped. It runs in a scratch copy of tests/cli/doc_fixtures, which holds the
files the examples name (a Megatron launch script, a MaxText config, a
torchtitan config). Exit 0 is expected, unless the block shows the command's
answer as a line starting with `error:` right after it: then exit 2 and that
exact line. `scalemodel ui` (a server that does not exit) is left out.

Usage: run_doc_examples.py SCALEMODEL SOURCE_DIR
"""
import glob
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile


def examples(path):
    text = open(path, encoding="utf-8").read()
    for block in re.findall(r"```[a-z]*\n(.*?)```", text, flags=re.S):
        lines = block.split("\n")
        i = 0
        while i < len(lines):
            line = lines[i].strip()
            if line.startswith("$ "):
                line = line[2:]
            if line.startswith("scalemodel "):
                while line.endswith("\\") and i + 1 < len(lines):
                    i += 1
                    line = line[:-1] + " " + lines[i].strip()
                nxt = lines[i + 1].strip() if i + 1 < len(lines) else ""
                yield line, nxt if nxt.startswith("error:") else None
            i += 1


def main():
    binary, source = sys.argv[1], sys.argv[2]
    docs = [os.path.join(source, "README.md")]
    docs += sorted(glob.glob(os.path.join(source, "docs", "*.md")))
    failures, ran = [], 0
    with tempfile.TemporaryDirectory() as scratch:
        work = os.path.join(scratch, "work")
        shutil.copytree(os.path.join(source, "tests", "cli", "doc_fixtures"),
                        work)
        for doc in docs:
            for command, error in examples(doc):
                words = shlex.split(command, comments=True)
                if len(words) < 2 or "ui" in words[1:]:
                    continue
                ran += 1
                r = subprocess.run([binary] + words[1:], cwd=work,
                                   capture_output=True, text=True,
                                   timeout=600)
                where = os.path.relpath(doc, source)
                if error is None and r.returncode != 0:
                    failures.append(f"{where}: `{command}`: exit "
                                    f"{r.returncode}: {r.stderr.strip()}")
                elif error is not None and (r.returncode != 2 or
                                            r.stderr.strip() != error):
                    failures.append(f"{where}: `{command}`: want exit 2 and "
                                    f"'{error}', got exit {r.returncode} and "
                                    f"'{r.stderr.strip()}'")
    for f in failures:
        print(f)
    print(f"{ran} documented commands run, {len(failures)} failed")
    return 1 if failures or ran == 0 else 0


if __name__ == "__main__":
    sys.exit(main())
