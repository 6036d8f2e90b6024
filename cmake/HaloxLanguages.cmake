# The C interface (halox::c, include/halox/halox.h over src/capi/) and, where a Fortran
# compiler exists, the Fortran module over it (halox::fortran, fortran/halox.f90): docs/fortran.md.
enable_language(C)
find_package(MPI REQUIRED COMPONENTS C)
add_library(halox_c
  src/capi/common.cpp
  src/capi/domain.cpp
  src/capi/field.cpp
  src/capi/exchange.cpp
  src/capi/unstructured.cpp)
add_library(halox::c ALIAS halox_c)
target_include_directories(halox_c PRIVATE ${PROJECT_SOURCE_DIR}/src)
target_link_libraries(halox_c PUBLIC halox MPI::MPI_C PRIVATE fmt::fmt)
set_target_properties(halox_c PROPERTIES POSITION_INDEPENDENT_CODE ON EXPORT_NAME c)
halox_warnings(halox_c)

include(CheckLanguage)
check_language(Fortran)
if(CMAKE_Fortran_COMPILER)
  set(_halox_fortran_default ON)
else()
  set(_halox_fortran_default OFF)
endif()
option(HALOX_BUILD_FORTRAN "Build the Fortran module (needs a Fortran compiler)"
  ${_halox_fortran_default})
if(HALOX_BUILD_FORTRAN AND NOT CMAKE_Fortran_COMPILER)
  message(FATAL_ERROR "HALOX_BUILD_FORTRAN needs a Fortran compiler (Debian: gfortran)")
endif()
if(HALOX_BUILD_FORTRAN)
  enable_language(Fortran)
  find_package(MPI REQUIRED COMPONENTS Fortran)
  if(NOT MPI_Fortran_HAVE_F08_MODULE)
    message(FATAL_ERROR "halox's Fortran module needs MPI's mpi_f08 module for ${CMAKE_Fortran_COMPILER}")
  endif()
  add_library(halox_fortran fortran/halox.f90)
  add_library(halox::fortran ALIAS halox_fortran)
  set(_halox_moddir ${PROJECT_BINARY_DIR}/fortran/modules)
  set_target_properties(halox_fortran PROPERTIES Fortran_MODULE_DIRECTORY ${_halox_moddir}
    POSITION_INDEPENDENT_CODE ON EXPORT_NAME fortran)
  target_include_directories(halox_fortran PUBLIC
    $<BUILD_INTERFACE:${_halox_moddir}>
    $<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}/halox/fortran>)
  target_link_libraries(halox_fortran PUBLIC halox_c MPI::MPI_Fortran)
  halox_warnings(halox_fortran)
  install(DIRECTORY ${_halox_moddir}/ DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/halox/fortran
    FILES_MATCHING PATTERN "*.mod")
  message(STATUS "halox: Fortran module with ${CMAKE_Fortran_COMPILER}")
else()
  message(STATUS "halox: no Fortran compiler found: the Fortran module, its tests and examples "
                 "are skipped (Debian: apt-get install gfortran)")
endif()
