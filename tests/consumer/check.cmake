# ctest driver: install halox from HALOX_BUILD_DIR into a scratch prefix, build the consumer
# project against it, run it on 2 ranks.
file(REMOVE_RECURSE ${WORK_DIR})
function(run)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "failed (${rc}): ${ARGN}\n${out}")
  endif()
  message(STATUS "${out}")
endfunction()
run(${CMAKE_COMMAND} --install ${HALOX_BUILD_DIR} --prefix ${WORK_DIR}/prefix)
run(${CMAKE_COMMAND} -S ${CONSUMER_SOURCE} -B ${WORK_DIR}/build -G ${GENERATOR}
    -DCMAKE_PREFIX_PATH=${WORK_DIR}/prefix -DCMAKE_BUILD_TYPE=Release)
run(${CMAKE_COMMAND} --build ${WORK_DIR}/build)
if(NOT EXECUTABLE)
  set(EXECUTABLE consumer)
endif()
# Exit code 77: the program found no GPU and skipped (ctest reports it skipped).
execute_process(COMMAND ${MPIEXEC} -n 2 ${WORK_DIR}/build/${EXECUTABLE}
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
message(STATUS "${out}")
if(rc EQUAL 77 OR out MATCHES "no GPU, nothing to run")
  message(STATUS "HALOX_CONSUMER_SKIPPED")
elseif(NOT rc EQUAL 0)
  message(FATAL_ERROR "failed (${rc}): ${EXECUTABLE}\n${out}")
endif()
