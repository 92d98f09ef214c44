"""Shared by the Python tests: the scalemodel executable to compare with
(SCALEMODEL_BIN, set by ctest) and the source tree."""

import json
import os
import subprocess

import pytest

SOURCE_DIR = os.environ.get(
    "SCALEMODEL_SOURCE_DIR",
    os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(
        __file__)))))
BIN = os.environ.get("SCALEMODEL_BIN")


def run_binary(args):
    """(exit code, stdout, stderr) of the scalemodel executable."""
    if not BIN:
        pytest.skip("SCALEMODEL_BIN is not set (ctest sets it)")
    p = subprocess.run([BIN] + list(args), capture_output=True, text=True,
                       check=False)
    return p.returncode, p.stdout, p.stderr


def binary_json(args):
    code, out, err = run_binary(args)
    assert code == 0, err
    return json.loads(out)
