# fortran_heat2d_acc: the Fortran mini-app on the GPU with OpenACC (docs/fortran.md). Built
# when halox has CUDA and the Fortran compiler offloads OpenACC to NVIDIA GPUs (gfortran with
# Debian's gcc-12-offload-nvptx); ctest label gpu, skipped (exit 77) where no GPU is visible.
# sm_80 PTX (the driver compiles it for newer GPUs): gfortran 12's default, sm_35, is
# refused by the ptxas of CUDA 12 and later, which nvptx-as runs where it finds one.
set(HALOX_OPENACC_FLAGS "-fopenacc;-foffload=nvptx-none;-foffload-options=nvptx-none=-misa=sm_80"
  CACHE STRING "Fortran compile and link flags for OpenACC offloaded to NVIDIA GPUs")
if(NOT HALOX_ENABLE_CUDA)
  message(STATUS "halox: fortran_heat2d_acc (OpenACC) skipped: halox is built without CUDA")
  return()
endif()
include(CheckSourceCompiles)
set(CMAKE_REQUIRED_LINK_OPTIONS ${HALOX_OPENACC_FLAGS})
list(JOIN HALOX_OPENACC_FLAGS " " CMAKE_REQUIRED_FLAGS)
check_source_compiles(Fortran [=[
program p
  use openacc
  integer :: i, a(4)
  !$acc parallel loop copyout(a)
  do i = 1, 4
    a(i) = i
  end do
  print *, a, acc_get_num_devices(acc_device_nvidia)
end program p
]=] HALOX_FORTRAN_OPENACC_NVPTX)
unset(CMAKE_REQUIRED_FLAGS)
unset(CMAKE_REQUIRED_LINK_OPTIONS)
if(NOT HALOX_FORTRAN_OPENACC_NVPTX)
  message(STATUS "halox: fortran_heat2d_acc (OpenACC) skipped: ${CMAKE_Fortran_COMPILER} does "
                 "not offload OpenACC to nvptx with ${HALOX_OPENACC_FLAGS} (Debian: apt-get install "
                 "gcc-12-offload-nvptx)")
  return()
endif()

add_executable(fortran_heat2d_acc fortran_heat2d_acc/heat2d_acc.f90)
# cudaSetDevice, which the app calls so that OpenACC and halox share one CUDA context.
target_link_libraries(fortran_heat2d_acc PRIVATE halox::fortran CUDA::cudart)
target_compile_options(fortran_heat2d_acc PRIVATE ${HALOX_OPENACC_FLAGS})
# -no-pie: the offload table gfortran links in (crtoffloadtable.o) is not position-independent,
# and in a PIE it needs text relocations (a linker warning).
target_link_options(fortran_heat2d_acc PRIVATE ${HALOX_OPENACC_FLAGS} -no-pie)
halox_warnings(fortran_heat2d_acc)
message(STATUS "halox: fortran_heat2d_acc with OpenACC (${HALOX_OPENACC_FLAGS})")
if(HALOX_BUILD_TESTS)
  foreach(mode stream blocking)
    foreach(n 1 2)
      set(_name example_fortran_heat2d_acc_${mode}_np${n})
      halox_add_mpi_test(${_name} ${n} $<TARGET_FILE:fortran_heat2d_acc> 40 30 ${mode})
      set_tests_properties(${_name} PROPERTIES LABELS "example;fortran;gpu;mpi;np${n}"
        TIMEOUT 120 SKIP_RETURN_CODE 77 PASS_REGULAR_EXPRESSION "verified bit for bit")
    endforeach()
  endforeach()
  # Over NCCL between two GPUs (each rank its own virtual node, so CUDA IPC is not offered):
  # skipped where the machine has fewer than two GPUs (ranks sharing one cannot use NCCL).
  set(_name example_fortran_heat2d_acc_nccl_np2)
  add_test(NAME ${_name}
    COMMAND sh -c "test \"$(nvidia-smi -L 2>/dev/null | grep -c '^GPU')\" -ge 2 || { echo 'SKIP: needs two GPUs'; exit 77; }; exec \"$0\" \"$@\""
      ${MPIEXEC_EXECUTABLE} ${MPIEXEC_NUMPROC_FLAG} 2 ${MPIEXEC_PREFLAGS}
      $<TARGET_FILE:fortran_heat2d_acc> 40 30 stream)
  set_tests_properties(${_name} PROPERTIES
    ENVIRONMENT "${HALOX_MPI_TEST_ENV};HALOX_STAGING=nccl;HALOX_NODE_SIZE=1"
    LABELS "example;fortran;gpu;nccl;mpi;np2" TIMEOUT 120 SKIP_RETURN_CODE 77
    PASS_REGULAR_EXPRESSION "verified bit for bit")
endif()
