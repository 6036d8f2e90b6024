# install() rules and the exported package: find_package(halox CONFIG) gives halox::halox.
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

set(_halox_targets halox)
if(HALOX_ENABLE_CUDA)
  list(APPEND _halox_targets halox_cuda)
endif()
list(APPEND _halox_targets halox_c)
if(HALOX_BUILD_FORTRAN)
  list(APPEND _halox_targets halox_fortran)
endif()
install(TARGETS ${_halox_targets} EXPORT haloxTargets
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
  INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(DIRECTORY include/halox DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(EXPORT haloxTargets NAMESPACE halox:: DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/halox)

configure_package_config_file(cmake/haloxConfig.cmake.in
  ${PROJECT_BINARY_DIR}/haloxConfig.cmake
  INSTALL_DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/halox)
write_basic_package_version_file(${PROJECT_BINARY_DIR}/haloxConfigVersion.cmake
  COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/haloxConfig.cmake ${PROJECT_BINARY_DIR}/haloxConfigVersion.cmake
  DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/halox)
