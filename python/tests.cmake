# The Python tests (python/tests, pytest) and the examples (examples/*.py),
# under ctest. Each needs a module of the interpreter the package is built
# for; a missing one skips those tests with a message rather than failing
# the C++ build.
function(scalemodel_python_has module out)
  execute_process(COMMAND ${Python3_EXECUTABLE} -c "import ${module}"
    RESULT_VARIABLE rc OUTPUT_QUIET ERROR_QUIET)
  if(rc EQUAL 0)
    set(${out} ON PARENT_SCOPE)
  else()
    set(${out} OFF PARENT_SCOPE)
  endif()
endfunction()
scalemodel_python_has(pytest has_pytest)
scalemodel_python_has(matplotlib has_matplotlib)

set(py_env
  "PYTHONPATH=${CMAKE_CURRENT_BINARY_DIR}"
  "SCALEMODEL_BIN=$<TARGET_FILE:scalemodel>"
  "SCALEMODEL_SOURCE_DIR=${PROJECT_SOURCE_DIR}"
  "MPLBACKEND=Agg"
  "PYTHONDONTWRITEBYTECODE=1")
if(NOT SCALEMODEL_BUILD_CLI)
  message(STATUS "scalemodel: Python tests skipped: they compare with the "
                 "scalemodel executable (SCALEMODEL_BUILD_CLI=ON)")
elseif(NOT has_pytest)
  message(STATUS "scalemodel: Python tests skipped: ${Python3_EXECUTABLE} "
                 "has no pytest (apt-get install -y python3-pytest)")
else()
  file(GLOB test_files CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/tests/test_*.py)
  foreach(f ${test_files})
    get_filename_component(name ${f} NAME_WE)
    add_test(NAME python_${name}
      COMMAND ${Python3_EXECUTABLE} -m pytest -q -p no:cacheprovider ${f})
    set_tests_properties(python_${name} PROPERTIES ENVIRONMENT "${py_env}")
  endforeach()
endif()

if(NOT has_matplotlib)
  message(STATUS "scalemodel: Python examples skipped: ${Python3_EXECUTABLE} "
                 "has no matplotlib (apt-get install -y python3-matplotlib)")
else()
  file(GLOB examples CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/examples/*.py)
  foreach(f ${examples})
    get_filename_component(name ${f} NAME_WE)
    set(out ${CMAKE_CURRENT_BINARY_DIR}/examples/${name})
    # Runs the example in an empty directory; check_example.py fails unless
    # it wrote at least one non-empty PNG there.
    add_test(NAME python_example_${name}
      COMMAND ${Python3_EXECUTABLE}
              ${CMAKE_CURRENT_SOURCE_DIR}/tests/check_example.py ${f} ${out})
    set_tests_properties(python_example_${name} PROPERTIES
      ENVIRONMENT "${py_env}")
  endforeach()
endif()
