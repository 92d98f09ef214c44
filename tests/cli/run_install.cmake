# `cmake --install` into a fresh prefix, then the installed command runs on
# its own (the catalog is compiled in) and the man page is there.
#   cmake -DBUILD=build-dir -DPREFIX=tmp-prefix -P run_install.cmake
file(REMOVE_RECURSE ${PREFIX})
execute_process(COMMAND ${CMAKE_COMMAND} --install ${BUILD} --prefix ${PREFIX}
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "cmake --install failed (${rc}): ${out}${err}")
endif()

set(bin ${PREFIX}/bin/scalemodel)
# Run from the prefix, away from the source tree and its data/.
execute_process(COMMAND ${bin} --version WORKING_DIRECTORY ${PREFIX}
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 0 OR NOT out MATCHES "^scalemodel [0-9]+\\.[0-9]+\\.[0-9]+")
  message(FATAL_ERROR "installed scalemodel --version: ${rc} '${out}${err}'")
endif()
execute_process(
  COMMAND ${bin} train --model llama3-8b --system h100:8x4 --plan dp=4,tp=8
          --batch-tokens 1Mi --seq 4096 --json
  WORKING_DIRECTORY ${PREFIX}
  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 0 OR NOT out MATCHES "\"step_time_s\"")
  message(FATAL_ERROR "installed scalemodel train: ${rc} '${out}${err}'")
endif()

set(man ${PREFIX}/share/man/man1/scalemodel.1)
if(NOT EXISTS ${man})
  message(FATAL_ERROR "no man page at ${man}")
endif()
file(READ ${man} page)
foreach(section ".TH SCALEMODEL 1" ".SS scalemodel train" ".SS scalemodel plan serve")
  string(FIND "${page}" "${section}" at)
  if(at EQUAL -1)
    message(FATAL_ERROR "the man page has no '${section}'")
  endif()
endforeach()
file(REMOVE_RECURSE ${PREFIX})
