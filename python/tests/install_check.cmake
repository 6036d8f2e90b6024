# ctest python_install: cmake --install the python component into a fresh prefix, then import
# the package from there (and nowhere else) and run a checked exchange on two ranks.
file(REMOVE_RECURSE "${WORK_DIR}")
execute_process(COMMAND ${CMAKE_COMMAND} --install "${BUILD_DIR}" --prefix "${WORK_DIR}/prefix"
                        --component python
                RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "cmake --install failed (${rc})")
endif()
set(ENV{PYTHONPATH} "${WORK_DIR}/prefix/${SITE}")
execute_process(COMMAND ${MPIEXEC} -n 2 ${PYTHON} ${SMOKE} "${WORK_DIR}/prefix"
                WORKING_DIRECTORY "${WORK_DIR}" RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "the installed package failed its smoke test (${rc})")
endif()
