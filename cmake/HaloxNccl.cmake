# NCCL for device messages between nodes (optional). HALOX_ENABLE_NCCL: AUTO (use it when found
# next to the CUDA toolkit or under NCCL_ROOT), ON (required), OFF.
set(HALOX_ENABLE_NCCL AUTO CACHE STRING "Build the NCCL transport: AUTO, ON or OFF")
set_property(CACHE HALOX_ENABLE_NCCL PROPERTY STRINGS AUTO ON OFF)
set(HALOX_NCCL_FOUND OFF)
if(HALOX_ENABLE_CUDA AND NOT HALOX_ENABLE_NCCL STREQUAL "OFF")
  find_path(HALOX_NCCL_INCLUDE_DIR nccl.h
    HINTS ${NCCL_ROOT} $ENV{NCCL_ROOT} ${CUDAToolkit_INCLUDE_DIRS}
    PATH_SUFFIXES include)
  find_library(HALOX_NCCL_LIBRARY nccl
    HINTS ${NCCL_ROOT} $ENV{NCCL_ROOT} ${CUDAToolkit_LIBRARY_DIR}
    PATH_SUFFIXES lib lib64)
  if(HALOX_NCCL_INCLUDE_DIR AND HALOX_NCCL_LIBRARY)
    set(HALOX_NCCL_FOUND ON)
    message(STATUS "halox: NCCL transport with ${HALOX_NCCL_LIBRARY}")
  elseif(HALOX_ENABLE_NCCL STREQUAL "ON")
    message(FATAL_ERROR "HALOX_ENABLE_NCCL=ON but nccl.h / libnccl were not found next to the "
                        "CUDA toolkit; set NCCL_ROOT")
  else()
    message(STATUS "halox: NCCL not found, building without the NCCL transport")
  endif()
elseif(HALOX_ENABLE_NCCL STREQUAL "ON")
  message(FATAL_ERROR "HALOX_ENABLE_NCCL=ON needs HALOX_ENABLE_CUDA=ON")
endif()
