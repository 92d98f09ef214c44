#!/usr/bin/env python3
"""Lists functions longer than a limit in C++ sources (issue #14: no function
in src/estimate or src/search over about 80 lines).

Usage: tools/dev/function_lengths.py [--limit 80] FILE...
A function is a brace block whose opening line ends a signature (a line with
'(' before the '{', not a namespace, struct, class, enum or lambda
assignment); lambdas and nested blocks count toward their enclosing function.
Exit status 1 when any function is over the limit.
"""
import argparse
import re
import sys

SKIP = re.compile(r'^\s*(namespace|struct|class|enum|union|extern)\b')


def functions(path):
    lines = open(path).read().split('\n')
    out = []
    depth = 0
    start = None
    name = None
    for i, line in enumerate(lines):
        code = re.sub(r'//.*', '', line)
        code = re.sub(r'"(\\.|[^"\\])*"', '""', code)
        opens, closes = code.count('{'), code.count('}')
        if start is None and opens > closes and not SKIP.match(code):
            # Signature: this line or the ones above it (to the last ';',
            # '}' or blank) hold a '('.
            j = i
            sig = code
            while j > 0 and '(' not in sig:
                j -= 1
                prev = re.sub(r'//.*', '', lines[j])
                if prev.strip() == '' or prev.rstrip().endswith((';', '}')):
                    break
                sig = prev + sig
            indent = len(line) - len(line.lstrip())
            at_scope = depth == scope_depth(lines, i, depth)
            if '(' in sig and at_scope and '=' not in sig.split('(')[0]:
                start, name, base = j, sig.strip().split('(')[0], depth
        depth += opens - closes
        if start is not None and depth <= base:
            out.append((name, start + 1, i - start + 1))
            start = None
    return out


def scope_depth(lines, i, depth):
    # Functions start at namespace or class scope; treat any depth as scope
    # when no function is open (the caller tracks an open function).
    return depth


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--limit', type=int, default=80)
    ap.add_argument('files', nargs='+')
    a = ap.parse_args()
    bad = 0
    for f in a.files:
        for name, line, n in functions(f):
            if n > a.limit:
                bad += 1
                print(f'{f}:{line}: {name.split()[-1] if name else "?"} '
                      f'{n} lines')
    return 1 if bad else 0


if __name__ == '__main__':
    sys.exit(main())
