# NCCL for device messages (optional; staging::nccl, docs/nccl.md). HALOX_ENABLE_NCCL: AUTO (use
# it when found under NCCL_ROOT or next to the CUDA toolkit: CUDA 13 ships it), ON (required),
# OFF. Never without CUDA. Sets HALOX_NCCL_FOUND and, when found, HALOX_NCCL_INCLUDE_DIR (halox
# compiles against nccl.h), HALOX_NCCL_LIBRARY (halox loads it at run time: nothing links it but
# the benchmark's raw NCCL rows) and the target halox::nccl (HaloxFindNCCL.cmake).
set(HALOX_ENABLE_NCCL AUTO CACHE STRING "Build the NCCL transport: AUTO, ON or OFF")
set_property(CACHE HALOX_ENABLE_NCCL PROPERTY STRINGS AUTO ON OFF)
string(TOUPPER "${HALOX_ENABLE_NCCL}" _halox_nccl_request)
if(_halox_nccl_request MATCHES "^(ON|TRUE|YES|Y|1)$")
  set(_halox_nccl_request ON)
elseif(_halox_nccl_request MATCHES "^(OFF|FALSE|NO|N|0)$")
  set(_halox_nccl_request OFF)
elseif(NOT _halox_nccl_request STREQUAL "AUTO")
  message(FATAL_ERROR "HALOX_ENABLE_NCCL is '${HALOX_ENABLE_NCCL}': use AUTO, ON or OFF")
endif()
set(HALOX_NCCL_FOUND OFF)
if(_halox_nccl_request STREQUAL "ON" AND NOT HALOX_ENABLE_CUDA)
  message(FATAL_ERROR "HALOX_ENABLE_NCCL=ON needs HALOX_ENABLE_CUDA=ON")
elseif(HALOX_ENABLE_CUDA AND NOT _halox_nccl_request STREQUAL "OFF")
  include(${CMAKE_CURRENT_LIST_DIR}/HaloxFindNCCL.cmake)
  halox_find_nccl()
  if(HALOX_NCCL_FOUND)
    message(STATUS "halox: NCCL transport with NCCL ${HALOX_NCCL_VERSION} (${HALOX_NCCL_LIBRARY})")
  elseif(_halox_nccl_request STREQUAL "ON")
    message(FATAL_ERROR "HALOX_ENABLE_NCCL=ON but NCCL >= 2.14 was not found next to the CUDA "
      "toolkit (${CUDAToolkit_INCLUDE_DIRS}) nor under NCCL_ROOT: set NCCL_ROOT to its prefix")
  else()
    message(STATUS "halox: NCCL not found, building without the NCCL transport")
  endif()
endif()
