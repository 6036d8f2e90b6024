# Finds NCCL for halox's build (the installed package needs none: halox loads libnccl at run
# time, src/transport/nccl_api.hpp, and checks its version there too):
# under NCCL_ROOT (CMake variable or environment) first, then next to the CUDA toolkit
# (CUDAToolkit_INCLUDE_DIRS, CUDAToolkit_LIBRARY_DIR: NCCL ships inside CUDA 13 toolkits), then
# in the extra directories given and CMake's default places.
#
#   halox_find_nccl([HINTS dir...])
#
# Sets HALOX_NCCL_FOUND, HALOX_NCCL_VERSION, HALOX_NCCL_INCLUDE_DIR, HALOX_NCCL_LIBRARY and,
# when found, the imported target halox::nccl. NCCL 2.19 or newer (ncclCommRegister,
# ncclCommInitRankConfig, ncclGetLastError, ncclCommFinalize) is required.
function(halox_find_nccl)
  cmake_parse_arguments(F "" "" "HINTS" ${ARGN})
  set(_roots)
  if(DEFINED NCCL_ROOT)
    list(APPEND _roots "${NCCL_ROOT}")
  endif()
  if(DEFINED ENV{NCCL_ROOT})
    list(APPEND _roots "$ENV{NCCL_ROOT}")
  endif()
  find_path(HALOX_NCCL_INCLUDE_DIR nccl.h
    HINTS ${_roots} ${CUDAToolkit_INCLUDE_DIRS} ${F_HINTS}
    PATH_SUFFIXES include
    DOC "Directory holding nccl.h")
  find_library(HALOX_NCCL_LIBRARY NAMES nccl
    HINTS ${_roots} ${CUDAToolkit_LIBRARY_DIR} ${F_HINTS}
    PATH_SUFFIXES lib64 lib
    DOC "The NCCL library (libnccl.so)")

  set(_found FALSE)
  set(_version "")
  if(EXISTS "${HALOX_NCCL_INCLUDE_DIR}/nccl.h" AND EXISTS "${HALOX_NCCL_LIBRARY}")
    file(STRINGS "${HALOX_NCCL_INCLUDE_DIR}/nccl.h" _defs
      REGEX "^#define NCCL_(MAJOR|MINOR|PATCH) +[0-9]+")
    foreach(_part MAJOR MINOR PATCH)
      set(_v_${_part} 0)
      foreach(_d IN LISTS _defs)
        if(_d MATCHES "^#define NCCL_${_part} +([0-9]+)")
          set(_v_${_part} ${CMAKE_MATCH_1})
        endif()
      endforeach()
    endforeach()
    set(_version "${_v_MAJOR}.${_v_MINOR}.${_v_PATCH}")
    if(_version VERSION_GREATER_EQUAL 2.19)
      set(_found TRUE)
    else()
      message(STATUS "halox: NCCL ${_version} at ${HALOX_NCCL_INCLUDE_DIR} is older than 2.19 (halox calls ncclCommRegister)")
    endif()
  endif()

  if(_found AND NOT TARGET halox::nccl)
    add_library(halox::nccl UNKNOWN IMPORTED)
    set_target_properties(halox::nccl PROPERTIES
      IMPORTED_LOCATION "${HALOX_NCCL_LIBRARY}"
      INTERFACE_INCLUDE_DIRECTORIES "${HALOX_NCCL_INCLUDE_DIR}")
  endif()
  set(HALOX_NCCL_FOUND ${_found} PARENT_SCOPE)
  set(HALOX_NCCL_VERSION "${_version}" PARENT_SCOPE)
endfunction()
