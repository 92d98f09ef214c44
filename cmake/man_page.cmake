# Writes the scalemodel(1) man page from the built binary's --help texts:
# the top-level help, then each subcommand's (and each of `plan`'s), as
# listed under "Subcommands:". Run at build time:
#   cmake -DBIN=path/to/scalemodel -DOUT=scalemodel.1 -DVERSION=0.1.0 -P man_page.cmake

# The --help text of `BIN ARGS... --help`, in `var`.
function(help_of var)
  execute_process(COMMAND ${BIN} ${ARGN} --help OUTPUT_VARIABLE text
                  RESULT_VARIABLE rc ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "scalemodel ${ARGN} --help failed (${rc}): ${err}")
  endif()
  set(${var} "${text}" PARENT_SCOPE)
endfunction()

# Names listed under "Subcommands:" (two-space indent) in a help text.
function(subcommands_of var text)
  string(FIND "${text}" "Subcommands:" at)
  set(names)
  if(NOT at EQUAL -1)
    string(SUBSTRING "${text}" ${at} -1 tail)
    string(REGEX MATCHALL "\n  [a-z][a-z-]*" found "${tail}")
    foreach(f IN LISTS found)
      string(STRIP "${f}" f)
      list(APPEND names ${f})
    endforeach()
    list(REMOVE_DUPLICATES names)
  endif()
  set(${var} ${names} PARENT_SCOPE)
endfunction()

# A help text as a no-fill roff block: backslashes escaped, lines that would
# start a roff request guarded.
function(roff_block var text)
  string(REPLACE "\\" "\\e" text "${text}")
  string(REGEX REPLACE "\n([.'])" "\n\\\\&\\1" text "\n${text}")
  set(${var} ".nf\n${text}\n.fi\n" PARENT_SCOPE)
endfunction()

help_of(top)
string(REGEX MATCH "^[^\n]*" summary "${top}")
string(REGEX REPLACE "^scalemodel: *" "" summary "${summary}")
string(REPLACE "\\" "\\e" summary "${summary}")
roff_block(top_block "${top}")
set(page ".TH SCALEMODEL 1 \"\" \"scalemodel ${VERSION}\" \"User Commands\"\n")
string(APPEND page ".SH NAME\nscalemodel \\- ${summary}\n")
string(APPEND page ".SH SYNOPSIS\n.B scalemodel\n[\\fIOPTIONS\\fR] \\fISUBCOMMAND\\fR [\\fIARGS\\fR]\n")
string(APPEND page ".SH DESCRIPTION\nThis page is generated from \\fBscalemodel --help\\fR and each subcommand's \\fB--help\\fR.\n")
string(APPEND page "${top_block}.SH COMMANDS\n")
subcommands_of(commands "${top}")
foreach(c IN LISTS commands)
  help_of(text ${c})
  subcommands_of(subs "${text}")
  if(subs)
    foreach(s IN LISTS subs)
      help_of(sub ${c} ${s})
      roff_block(block "${sub}")
      string(APPEND page ".SS scalemodel ${c} ${s}\n${block}")
    endforeach()
  else()
    roff_block(block "${text}")
    string(APPEND page ".SS scalemodel ${c}\n${block}")
  endif()
endforeach()
string(APPEND page ".SH SEE ALSO\nThe project's docs/cli.md, docs/catalog-format.md and docs/model.md.\n")
file(WRITE ${OUT} "${page}")
