# Warnings on and clean for every target halox builds (-Wall -Wextra; -Werror with HALOX_WERROR).
function(halox_warnings target)
  target_compile_options(${target} PRIVATE
    $<$<COMPILE_LANGUAGE:CXX>:-Wall -Wextra -Wpedantic -Wshadow>
    $<$<COMPILE_LANGUAGE:C>:-Wall -Wextra -Wpedantic -Wshadow>
    # Fortran: exact comparisons of reals are how the tests check bit-for-bit results.
    $<$<COMPILE_LANGUAGE:Fortran>:-Wall -Wextra -Wno-compare-reals -std=f2008>
    $<$<COMPILE_LANGUAGE:CUDA>:-Xcompiler=-Wall,-Wextra>)
  if(HALOX_WERROR)
    target_compile_options(${target} PRIVATE
      $<$<COMPILE_LANGUAGE:CXX,C,Fortran>:-Werror> $<$<COMPILE_LANGUAGE:CUDA>:-Werror=all-warnings>)
  endif()
endfunction()
