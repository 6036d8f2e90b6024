# The environment every MPI test and example run under ctest gets, in one place: Open MPI may
# run as root (containers, CI) and place more ranks than cores; leak checks are off because
# MPI's own allocations are reported as leaks; a wait that never completes fails the test
# instead of hanging it.
set(HALOX_MPI_TEST_ENV
    "OMPI_ALLOW_RUN_AS_ROOT=1;OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1;OMPI_MCA_rmaps_base_oversubscribe=1;ASAN_OPTIONS=detect_leaks=0;HALOX_WAIT_TIMEOUT=120")
