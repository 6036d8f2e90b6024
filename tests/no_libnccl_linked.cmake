# ctest driver: fails where PROGRAM (a test program that links halox::halox and uses CUDA IPC)
# loads libnccl, by its own ELF NEEDED entries or those of the libraries it loads (ldd lists
# both). halox loads NCCL at run time, only when a transport needs it (src/transport/nccl_api.hpp).
cmake_minimum_required(VERSION 3.25)
execute_process(COMMAND ldd ${PROGRAM} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "ldd ${PROGRAM} failed (${rc}): ${err}")
endif()
if(out MATCHES "libnccl")
  message(FATAL_ERROR "${PROGRAM} loads libnccl; halox must load it at run time only:\n${out}")
endif()
message(STATUS "no libnccl among the libraries of ${PROGRAM}:\n${out}")
