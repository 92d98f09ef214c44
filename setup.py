"""Builds the extension module of the scalemodel package with the project's
CMake (pyproject.toml has the metadata). Used by
`pip install --no-build-isolation .`; see docs/python.md."""

import os
import shutil
import subprocess
import sys

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

SOURCE_DIR = os.path.dirname(os.path.abspath(__file__))


class CMakeExtension(Extension):
    """An extension that CMake builds (python/CMakeLists.txt)."""

    def __init__(self, name):
        super().__init__(name, sources=[])


class CMakeBuild(build_ext):
    """Configures the project with only the module (no CLI, tests or
    benchmarks) for this interpreter and builds the _scalemodel target into
    the wheel's package directory. SCALEMODEL_JOBS sets the parallel jobs
    (default 2)."""

    def build_extension(self, ext):
        out_dir = os.path.abspath(os.path.dirname(
            self.get_ext_fullpath(ext.name)))
        build_dir = os.path.abspath(os.path.join(self.build_temp, "cmake"))
        configure = [
            "cmake", "-S", SOURCE_DIR, "-B", build_dir,
            "-DCMAKE_BUILD_TYPE=Release",
            "-DSCALEMODEL_BUILD_TESTS=OFF", "-DSCALEMODEL_BUILD_CLI=OFF",
            "-DSCALEMODEL_BUILD_BENCH=OFF", "-DSCALEMODEL_PYTHON=ON",
            f"-DPython3_EXECUTABLE={sys.executable}",
            f"-DSCALEMODEL_PYTHON_OUTPUT_DIR={out_dir}",
        ]
        if shutil.which("ninja"):
            configure += ["-G", "Ninja"]
        if shutil.which("ccache"):
            configure += ["-DCMAKE_CXX_COMPILER_LAUNCHER=ccache"]
        subprocess.check_call(configure)
        subprocess.check_call([
            "cmake", "--build", build_dir, "--target", "_scalemodel", "-j",
            os.environ.get("SCALEMODEL_JOBS", "2")])


setup(
    ext_modules=[CMakeExtension("scalemodel._scalemodel")],
    cmdclass={"build_ext": CMakeBuild},
    # Beside the CMake build/ of the README, not in it.
    options={"build": {"build_base": "build-python"}},
)
