/* The C test programs' checks: a failed CHECK prints the rank, file and line and counts a
 * failure (the program reduces `failures` over the ranks at the end); OK and MPI_OK check a
 * call's status. Each program defines `rank`, `size` and `failures` through this header. */
#ifndef HALOX_TESTS_C_CHECK_H
#define HALOX_TESTS_C_CHECK_H

#include <halox/halox.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int rank = 0, size = 1, failures = 0;

#define CHECK(cond, ...)                                             \
  do {                                                               \
    if (!(cond)) {                                                   \
      fprintf(stderr, "rank %d: %s:%d: ", rank, __FILE__, __LINE__); \
      fprintf(stderr, __VA_ARGS__);                                  \
      fputc('\n', stderr);                                           \
      ++failures;                                                    \
    }                                                                \
  } while (0)
#define OK(call) CHECK((call) == HALOX_SUCCESS, "%s: %s", #call, halox_last_error())
#define MPI_OK(call) CHECK((call) == MPI_SUCCESS, "%s failed", #call)

#endif
