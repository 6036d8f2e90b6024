# ctest driver: install halox from HALOX_BUILD_DIR into a scratch prefix, build the consumer
# project against it, run it on 2 ranks.
cmake_minimum_required(VERSION 3.25)  # this script's policies (IN_LIST)
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
# Verbose, so that the log shows every compiler command. halox must not give a dialect to the
# consumer's CUDA sources: nvcc says "incompatible redefinition for option 'std'" when two -std
# flags reach one file. (The consumer's sources static_assert the dialect each must have.)
execute_process(COMMAND ${CMAKE_COMMAND} --build ${WORK_DIR}/build --verbose
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
message(STATUS "${out}")
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "failed (${rc}): build of ${CONSUMER_SOURCE}\n${out}")
endif()
if(out MATCHES "incompatible redefinition")
  message(FATAL_ERROR "nvcc saw two -std options on one file (see the log above)")
endif()
# NEEDED_CUDART: executables that must load libcudart.so (CUDA_RUNTIME_LIBRARY Shared); the
# other executables must not (the static runtime is linked in).
if(DEFINED NEEDED_CUDART)
  string(REPLACE "," ";" NEEDED_CUDART "${NEEDED_CUDART}")
  string(REPLACE "," ";" all "${EXECUTABLES}")
  foreach(exe IN LISTS all NEEDED_CUDART)
    execute_process(COMMAND readelf -d ${WORK_DIR}/build/${exe} OUTPUT_VARIABLE dyn
                    RESULT_VARIABLE rc)
    if(NOT rc EQUAL 0)
      message(FATAL_ERROR "readelf -d ${exe} failed (${rc})")
    endif()
    if(dyn MATCHES "NEEDED[^\n]*libnccl")  # halox loads NCCL at run time, when it needs it
      message(FATAL_ERROR "${exe} links libnccl:\n${dyn}")
    endif()
    set(shared OFF)
    if(dyn MATCHES "NEEDED[^\n]*libcudart\\.so")
      set(shared ON)
    endif()
    if(exe IN_LIST NEEDED_CUDART AND NOT shared)
      message(FATAL_ERROR "${exe} asked for the shared CUDA runtime and does not load it:\n${dyn}")
    elseif(NOT exe IN_LIST NEEDED_CUDART AND shared)
      message(FATAL_ERROR "${exe} loads libcudart.so although it asked for the static runtime")
    endif()
  endforeach()
endif()
if(NOT EXECUTABLES)
  set(EXECUTABLES consumer)
endif()
string(REPLACE "," ";" EXECUTABLES "${EXECUTABLES}")  # a comma-separated list
# Exit code 77: the program found no GPU and skipped (ctest reports it skipped).
foreach(exe IN LISTS EXECUTABLES)
  execute_process(COMMAND ${MPIEXEC} -n 2 ${WORK_DIR}/build/${exe}
                  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
  message(STATUS "${out}")
  if(rc EQUAL 77 OR out MATCHES "no GPU, nothing to run")
    message(STATUS "HALOX_CONSUMER_SKIPPED")
  elseif(NOT rc EQUAL 0)
    message(FATAL_ERROR "failed (${rc}): ${exe}\n${out}")
  endif()
endforeach()
