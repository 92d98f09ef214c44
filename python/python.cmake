# What the Python module (python/) needs: a Python 3 with its headers
# (Debian: python3-dev) and pybind11 (pybind11-dev). Sets
# SCALEMODEL_WITH_PYTHON; without them the C++ build goes on without the
# module. Included from the top CMakeLists.txt before the libraries, since the
# module is a shared object that links them, so they are built as
# position-independent code.
# Debian's python3-pytest, python3-matplotlib and pybind11 are installed for
# the system interpreter, so prefer it to whatever python3 comes first on the
# PATH (pyenv, a venv) unless the caller names one (-DPython3_EXECUTABLE=...;
# setup.py names the interpreter pip runs).
if(NOT DEFINED Python3_EXECUTABLE AND EXISTS /usr/bin/python3)
  set(Python3_EXECUTABLE /usr/bin/python3)
endif()
find_package(Python3 3.9 COMPONENTS Interpreter Development.Module QUIET)
if(Python3_FOUND)
  find_package(pybind11 2.6 CONFIG QUIET)
endif()
if(Python3_FOUND AND pybind11_FOUND)
  set(SCALEMODEL_WITH_PYTHON ON)
  set(CMAKE_POSITION_INDEPENDENT_CODE ON)
  message(STATUS "scalemodel: Python module for ${Python3_EXECUTABLE} "
                 "(${Python3_VERSION}), pybind11 ${pybind11_VERSION}")
else()
  message(STATUS "scalemodel: Python module skipped: it needs Python 3 "
                 "headers and pybind11 (apt-get install -y python3-dev "
                 "pybind11-dev); -DSCALEMODEL_PYTHON=OFF silences this")
endif()
if(DEFINED SCALEMODEL_PYTHON_OUTPUT_DIR AND NOT SCALEMODEL_WITH_PYTHON)
  message(FATAL_ERROR "pip install: the Python module needs Python 3 headers "
                      "and pybind11: apt-get install -y python3-dev pybind11-dev")
endif()
