"""The command line, run in this process: keyword arguments to arguments,
the --json report to a dict, a failure to an exception.

Every function of the package goes through `call`, which runs the same code
as the `scalemodel` executable (tools/cli/run.h, RunCli) in this process, so
every answer, number and error sentence is the CLI's own.
"""

import json
import os

from . import _scalemodel

__all__ = ["Error", "InternalError", "argv", "call", "text", "run_cli"]


class Error(ValueError):
    """A bad input, as the CLI reports it with exit code 2.

    str(error) is the CLI's sentence without its "error: " prefix (where,
    what was expected, what was found, a suggestion); `args_` is the command
    line that was run, `exit_code` the CLI's exit code.
    """

    def __init__(self, message, args_=None, exit_code=2):
        super().__init__(message)
        self.message = message
        self.args_ = list(args_ or [])
        self.exit_code = exit_code


class InternalError(Error):
    """A failure that is the tool's fault (the CLI's exit code 1)."""


def _value(value):
    """One option value as the CLI reads it."""
    if isinstance(value, (list, tuple)):
        return ",".join(_value(v) for v in value)
    if isinstance(value, os.PathLike):
        return os.fspath(value)
    if isinstance(value, float):
        return repr(value)
    return str(value)


def _config_path(config, tmpdir):
    """A HuggingFace config given as a dict, written to a config.json."""
    meta = config.get("_scalemodel") or {}
    name = str(meta.get("id") or config.get("model_type") or "model")
    folder = os.path.join(tmpdir, name.replace(os.sep, "_"))
    os.makedirs(folder, exist_ok=True)
    path = os.path.join(folder, "config.json")
    with open(path, "w", encoding="utf-8") as f:
        json.dump(config, f)
    return path


def argv(command, positional=(), options=None, json_report=True,
         _tmpdir=None):
    """The command line for `command` (a list such as ["plan", "train"]),
    its positional arguments and keyword options.

    A keyword becomes its flag with dashes for underscores
    (batch_tokens="1Mi" -> --batch-tokens=1Mi); True gives a bare flag,
    False and None leave the option out; lists are joined with commas; a
    dict given for `model` (or as the model positional) is a HuggingFace
    config, written to a temporary config.json.
    """
    args = list(command)
    for p in positional:
        if isinstance(p, dict):
            p = _config_path(p, _tmpdir)
        args.append(_value(p))
    for key, value in (options or {}).items():
        if value is None or value is False:
            continue
        flag = "--" + key.rstrip("_").replace("_", "-")
        if value is True:
            args.append(flag)
            continue
        if isinstance(value, dict):
            value = _config_path(value, _tmpdir)
        args.append(flag + "=" + _value(value))
    if json_report:
        args.append("--json")
    return args


def _decode(data):
    return data.decode("utf-8", errors="replace")


def run_cli(args):
    """Runs one command line (without the program name) in this process.

    Returns (exit_code, stdout, stderr) as the executable would print them;
    never raises for a bad input. The GIL is released while it runs; Ctrl-C
    stops a `plan train` search and raises KeyboardInterrupt.
    """
    code, out, err = _scalemodel.run([str(a) for a in args])
    return code, _decode(out), _decode(err)


def _raise(code, err, args):
    line = err.strip()
    if code == 1:
        raise InternalError(line, args, code)
    if line.startswith("error: "):
        line = line[len("error: "):]
    raise Error(line, args, code)


def _run(command, positional, options, json_report):
    needs_dir = any(isinstance(p, dict) for p in positional) or any(
        isinstance(v, dict) for v in (options or {}).values())
    tmpdir = None
    if needs_dir:
        import tempfile  # only here: keeps `import scalemodel` short
        tmpdir = tempfile.mkdtemp(prefix="scalemodel-")
    try:
        args = argv(command, positional, options, json_report, tmpdir)
        code, out, err = run_cli(args)
    finally:
        if tmpdir:
            import shutil
            shutil.rmtree(tmpdir, ignore_errors=True)
    if code != 0:
        _raise(code, err, args)
    return out


def call(command, positional=(), options=None):
    """Runs `command` with --json and returns the report as a dict; raises
    Error (exit code 2) or InternalError (exit code 1) with the CLI's
    sentence."""
    return json.loads(_run(command, positional, options, True))


def text(command, *positional, **options):
    """The CLI's text report (what it prints without --json), e.g.
    print(scalemodel.text("train", model="llama3-8b", ...)). `command` is a
    command ("train", "plan train") or a list of its words."""
    words = command.split() if isinstance(command, str) else list(command)
    return _run(words, positional, options, False)
