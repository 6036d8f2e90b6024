# The C and Fortran mini-apps (docs/fortran.md): 2-D periodic heat through halox.h and through
# the Fortran module, each verified bit for bit against its own serial run.
add_executable(c_heat2d c_heat2d/heat2d.c)
set_target_properties(c_heat2d PROPERTIES C_STANDARD 11 C_STANDARD_REQUIRED ON)
target_link_libraries(c_heat2d PRIVATE halox::c)
halox_warnings(c_heat2d)
set(_halox_language_apps c_heat2d)
if(HALOX_BUILD_FORTRAN)
  add_executable(fortran_heat2d fortran_heat2d/heat2d.f90)
  target_link_libraries(fortran_heat2d PRIVATE halox::fortran)
  halox_warnings(fortran_heat2d)
  list(APPEND _halox_language_apps fortran_heat2d)
  include(fortran_heat2d_acc/openacc.cmake)  # the GPU variant, with OpenACC
endif()
if(HALOX_BUILD_TESTS)
  foreach(app IN LISTS _halox_language_apps)
    string(REGEX MATCH "^[a-z]+" _label ${app})
    foreach(n 1 2 3 4)
      halox_add_mpi_test(example_${app}_np${n} ${n} $<TARGET_FILE:${app}> 40 30)
      set_tests_properties(example_${app}_np${n} PROPERTIES LABELS "example;${_label};mpi;np${n}"
        TIMEOUT 120 PASS_REGULAR_EXPRESSION "verified bit for bit")
    endforeach()
  endforeach()
endif()
