# `scalemodel ui` (docs/ui.md): the HTTP server over RunCli (cpp-httplib,
# Debian's libcpp-httplib-dev) and the page, embedded from web/dist when it
# has been built (cd web && npm ci && npm run build).
find_package(PkgConfig QUIET)
if(PkgConfig_FOUND)
  pkg_check_modules(HTTPLIB QUIET IMPORTED_TARGET cpp-httplib>=0.11)
endif()
if(NOT HTTPLIB_FOUND)
  message(FATAL_ERROR "scalemodel needs cpp-httplib >= 0.11: install it with "
                      "`apt-get install -y libcpp-httplib-dev pkg-config`")
endif()

set(SCALEMODEL_WEB_DIST ${PROJECT_SOURCE_DIR}/web/dist)
file(GLOB_RECURSE SCALEMODEL_WEB_FILES CONFIGURE_DEPENDS ${SCALEMODEL_WEB_DIST}/*)
set(SCALEMODEL_WEB_CC ${PROJECT_BINARY_DIR}/generated/web_assets.cc)
add_custom_command(
  OUTPUT ${SCALEMODEL_WEB_CC}
  COMMAND ${CMAKE_COMMAND} -DDIST=${SCALEMODEL_WEB_DIST} -DOUT=${SCALEMODEL_WEB_CC}
          -P ${PROJECT_SOURCE_DIR}/cmake/embed_web.cmake
  VERBATIM
  DEPENDS ${SCALEMODEL_WEB_FILES} ${PROJECT_SOURCE_DIR}/cmake/embed_web.cmake
  COMMENT "Embedding the page (web/dist)")
if(NOT EXISTS ${SCALEMODEL_WEB_DIST}/index.html)
  message(STATUS "web/dist not built: `scalemodel ui` serves the API and a "
                 "page that says how to build the page")
endif()

add_library(scalemodel_ui tools/ui/api.cc tools/ui/server.cc
  tools/ui/ui_command.cc ${SCALEMODEL_WEB_CC})
target_include_directories(scalemodel_ui PUBLIC tools/ui)
target_link_libraries(scalemodel_ui PUBLIC scalemodel_cli PkgConfig::HTTPLIB
  nlohmann_json::nlohmann_json Threads::Threads PRIVATE scalemodel_warnings)
