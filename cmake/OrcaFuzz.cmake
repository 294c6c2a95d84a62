# The libFuzzer build (tests/fuzz, docs/fuzzing.md): -DORCA_FUZZ=ON with clang.
#
# Every target of the build directory is compiled with libFuzzer's coverage
# instrumentation and AddressSanitizer + UndefinedBehaviorSanitizer, so the parsers the
# fuzzers drive (orca::model, orca::tokenizer, ...) are the project's own libraries,
# instrumented; the fuzzer binaries alone link libFuzzer's main (-fsanitize=fuzzer).
# Included by the top-level CMakeLists.txt before any component is added.

option(ORCA_FUZZ "Build the libFuzzer targets of tests/fuzz (clang only)" OFF)
if(NOT ORCA_FUZZ)
  return()
endif()

if(NOT CMAKE_CXX_COMPILER_ID STREQUAL "Clang" OR NOT CMAKE_C_COMPILER_ID STREQUAL "Clang")
  message(FATAL_ERROR
    "ORCA_FUZZ=ON needs clang for C and C++ (libFuzzer is part of clang), but the compilers "
    "are ${CMAKE_C_COMPILER_ID} and ${CMAKE_CXX_COMPILER_ID}. Configure a fresh build "
    "directory with -DCMAKE_C_COMPILER=clang-14 -DCMAKE_CXX_COMPILER=clang++-14, or run "
    "scripts/test-fuzz.sh.")
endif()
if(NOT ORCA_BUILD_TESTS)
  message(FATAL_ERROR "ORCA_FUZZ=ON needs ORCA_BUILD_TESTS=ON (the fuzzers live in tests/fuzz)")
endif()
if(ORCA_SANITIZE)
  message(FATAL_ERROR "ORCA_FUZZ=ON chooses its own sanitizers; leave ORCA_SANITIZE empty")
endif()

# Any sanitizer report aborts (libFuzzer counts only crashes), so UBSan must not recover.
# -O1 and line tables only: symbolized stacks at half the compile time of -O2 -g.
set(ORCA_FUZZ_FLAGS "-O1 -gline-tables-only -fsanitize=fuzzer-no-link,address,undefined \
-fno-sanitize-recover=all -fno-omit-frame-pointer")
string(APPEND CMAKE_C_FLAGS " ${ORCA_FUZZ_FLAGS}")
string(APPEND CMAKE_CXX_FLAGS " ${ORCA_FUZZ_FLAGS}")
# The build type's flags (-O2 -g -DNDEBUG) would follow and override these; a fuzz build
# has none, so assertions stay on too (nlohmann::json asserts on misuse that is
# undefined behaviour in a release build, such as const operator[] on a missing key).
foreach(config DEBUG RELEASE RELWITHDEBINFO MINSIZEREL)
  set(CMAKE_C_FLAGS_${config} "")
  set(CMAKE_CXX_FLAGS_${config} "")
endforeach()
string(APPEND CMAKE_EXE_LINKER_FLAGS " -fsanitize=address,undefined")
# g++ keeps the code free of warnings; clang's extra ones stay warnings here, not errors
# (scripts/check-thread-safety.sh runs the clang warnings that matter).
list(APPEND ORCA_WARNINGS -Wno-error)
message(STATUS "orca: libFuzzer build (tests/fuzz), flags: ${ORCA_FUZZ_FLAGS}")
