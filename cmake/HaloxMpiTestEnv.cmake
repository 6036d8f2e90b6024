# The environment every MPI test and example runs under ctest, in one place. The Open MPI
# variables are cmake/mpi-env.sh's `export` lines (the scripts source that file): Open MPI may
# run as root and place more ranks than cores, so no command line needs --oversubscribe. Added
# here: leak checks off (MPI's own allocations are reported as leaks), and a wait that never
# completes fails the test after 120 s instead of hanging it.
set(_halox_mpi_env_sh ${CMAKE_CURRENT_LIST_DIR}/mpi-env.sh)
set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${_halox_mpi_env_sh})
file(STRINGS ${_halox_mpi_env_sh} _halox_mpi_env_lines REGEX "^export ")
set(HALOX_MPI_TEST_ENV "")
foreach(_line IN LISTS _halox_mpi_env_lines)
  string(REGEX MATCHALL "[A-Za-z_][A-Za-z0-9_]*=[^ ]*" _vars "${_line}")
  list(APPEND HALOX_MPI_TEST_ENV ${_vars})
endforeach()
list(APPEND HALOX_MPI_TEST_ENV "ASAN_OPTIONS=detect_leaks=0" "HALOX_WAIT_TIMEOUT=120")

# halox_add_mpi_test(<name> <ranks> <program> [args...]): ctest entry <name> running <program> on
# <ranks> MPI ranks under HALOX_MPI_TEST_ENV. A test that needs more variables appends them:
# set_property(TEST <name> APPEND PROPERTY ENVIRONMENT VAR=value).
function(halox_add_mpi_test name ranks)
  add_test(NAME ${name}
    COMMAND ${MPIEXEC_EXECUTABLE} ${MPIEXEC_NUMPROC_FLAG} ${ranks} ${MPIEXEC_PREFLAGS} ${ARGN})
  set_tests_properties(${name} PROPERTIES ENVIRONMENT "${HALOX_MPI_TEST_ENV}")
endfunction()
