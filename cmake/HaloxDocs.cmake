# `docs` target: the API reference from the public headers' doc comments. Without doxygen the
# target still exists and says what to do.
find_package(Doxygen QUIET)
if(DOXYGEN_FOUND)
  set(DOXYGEN_PROJECT_NAME halox)
  set(DOXYGEN_OUTPUT_DIRECTORY ${PROJECT_BINARY_DIR}/docs)
  set(DOXYGEN_EXTRACT_ALL NO)
  set(DOXYGEN_EXCLUDE_SYMBOLS detail)
  set(DOXYGEN_GENERATE_LATEX NO)
  set(DOXYGEN_WARN_IF_UNDOCUMENTED NO)
  set(DOXYGEN_QUIET YES)
  # The public headers only: the guides (README.md, docs/*.md) are Markdown read in the
  # repository, their links use its heading anchors. The main page (halox.hpp) points to them;
  # make_exchange, split_interior, make_plan and the other free functions are on the page of
  # namespace halox (Namespaces > halox).
  doxygen_add_docs(docs ${PROJECT_SOURCE_DIR}/include
    COMMENT "API reference (doxygen) in ${PROJECT_BINARY_DIR}/docs/html")
else()
  add_custom_target(docs
    COMMAND ${CMAKE_COMMAND} -E echo
            "halox: doxygen was not found when this build was configured; install it (Debian: doxygen) and run cmake again"
    COMMAND ${CMAKE_COMMAND} -E false
    VERBATIM)
endif()
