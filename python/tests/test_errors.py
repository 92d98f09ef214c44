"""Bad inputs raise scalemodel.Error (a ValueError) with the CLI's sentence
and never take the interpreter down: every row of tests/cli/errors.txt,
through run_cli and through keyword arguments."""

import os
import shlex

import pytest

import scalemodel as sm
from conftest import SOURCE_DIR, run_binary

CLI_DIR = os.path.join(SOURCE_DIR, "tests", "cli")


def error_rows():
    rows = []
    with open(os.path.join(CLI_DIR, "errors.txt"), encoding="utf-8") as f:
        for line in f:
            line = line.rstrip("\n")
            if not line or line.startswith("#"):
                continue
            args, expected = line.split(" => ", 1)
            rows.append((shlex.split(args.replace("{dir}", CLI_DIR)),
                         expected.replace("{dir}", CLI_DIR)))
    return rows


ROWS = error_rows()


@pytest.mark.parametrize("args,expected", ROWS,
                         ids=[" ".join(r[0])[:60] for r in ROWS])
def test_run_cli_prints_the_cli_error(args, expected):
    code, out, err = sm.run_cli(args)
    assert (code, err.strip()) == (2, expected)
    assert out == ""


def as_keywords(args):
    """A command line as (words, positional, options) for scalemodel.run, or
    None for one that has no keyword spelling (a value after a flag that
    looks like a flag, repeated options)."""
    words = args[:2] if args[:1] == ["plan"] else args[:1]
    rest = args[len(words):]
    positional, options = [], {}
    i = 0
    while i < len(rest):
        a = rest[i]
        if a.startswith("--") and " " in a:
            return None  # a quoted launch line (--from): no keyword spelling
        if a == "--csv":
            return None  # the module always asks for --json
        if not a.startswith("--"):
            if options:
                return None
            positional.append(a)
            i += 1
            continue
        if "=" in a:
            key, value = a[2:].split("=", 1)
            i += 1
        elif i + 1 < len(rest) and not rest[i + 1].startswith("--"):
            key, value = a[2:], rest[i + 1]
            i += 2
        else:
            key, value = a[2:], True
            i += 1
        key = key.replace("-", "_")
        if key in options or not key:
            return None
        options[key] = value
    return words, positional, options


@pytest.mark.parametrize("args,expected", ROWS,
                         ids=[" ".join(r[0])[:60] for r in ROWS])
def test_keywords_raise_the_cli_sentence(args, expected):
    spelled = as_keywords(args)
    if spelled is None:
        pytest.skip("no keyword spelling")
    words, positional, options = spelled
    with pytest.raises(sm.Error) as e:
        sm.run(" ".join(words), *positional, **options)
    assert isinstance(e.value, ValueError)
    assert e.value.exit_code == 2
    assert "error: " + str(e.value) == expected


def test_function_errors_match_the_binary():
    cases = [
        (sm.train, dict(model="llama3-8b", system="h100:8x1", plan="fsdp=16",
                        batch_tokens="1Mi", seq=8192),
         ["train", "--model", "llama3-8b", "--system", "h100:8x1", "--plan",
          "fsdp=16", "--batch-tokens", "1Mi", "--seq", "8192"]),
        (sm.chip, {"name": "h10"}, ["chip", "h10"]),
        (sm.serve, dict(model="llama3-70b", system="h100:8x1", plan="tp=8",
                        batch=0, prompt=1, output=1),
         ["serve", "--model", "llama3-70b", "--system", "h100:8x1", "--plan",
          "tp=8", "--batch", "0", "--prompt", "1", "--output", "1"]),
        (sm.roofline, dict(chip="h100", matmul="1x2x3", bogus_option=1),
         # Options go as --name=value, which is how CLI11 quotes an unknown
         # one: "--bogus-option=1".
         ["roofline", "--chip", "h100", "--matmul", "1x2x3",
          "--bogus-option=1"]),
        (sm.model, {"name": {"num_layers": "x"}}, None),
    ]
    for fn, kwargs, cli in cases:
        with pytest.raises(sm.Error) as e:
            fn(**kwargs)
        if cli is not None:
            code, _, err = run_binary(cli)
            assert code == 2
            assert "error: " + str(e.value) == err.strip()
        assert str(e.value)


def test_internal_errors_are_exceptions_too():
    assert issubclass(sm.InternalError, sm.Error)
    assert issubclass(sm.Error, ValueError)


def test_a_nul_byte_is_refused_not_cut():
    """A shell cannot pass NUL, Python and the HTTP API can: the C-string
    parsers would stop at it and accept the rest silently."""
    code, out, err = sm.run_cli(["system", "h100:8x1\x00zz"])
    assert (code, out) == (2, "")
    assert err.strip() == ("error: argument 2 ('h100:8x1\\0...'): expected "
                           "text, found a NUL byte at byte 9; remove it")
    code, _, _ = sm.run_cli(["roofline", "--chip", "h100", "--matmul",
                             "128x128x128\x00junk"])
    assert code == 2
