# Small helpers in the spirit of abseil's absl_cc_library / absl_cc_test.
#
#   orca_cc_library(NAME model SRCS a.cc b.cc DEPS absl::status PUBLIC_DEPS ...)
#     -> target orca_model, alias orca::model; our warnings; include root = repo root.
#   orca_cc_test(NAME model_test SRCS t.cc DEPS orca::model LABELS unit [ENV K=V...])
#     -> a gtest binary registered with ctest (gtest_discover_tests is avoided so
#        that a test binary is one ctest entry: cheaper on 2 cores).

set(ORCA_WARNINGS -Wall -Wextra -Werror)

function(orca_apply_warnings target)
  target_compile_options(${target} PRIVATE $<$<COMPILE_LANGUAGE:CXX>:${ORCA_WARNINGS}>)
  if(ORCA_SANITIZE)
    target_compile_options(${target} PRIVATE -fsanitize=${ORCA_SANITIZE} -fno-omit-frame-pointer)
    target_link_options(${target} PRIVATE -fsanitize=${ORCA_SANITIZE})
    # g++'s flow analysis sees through the sanitizers' instrumentation poorly: under
    # -fsanitize=address it reports std::regex's own std::function members as maybe
    # uninitialized (libstdc++ 12), a known false positive.
    if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
      target_compile_options(${target} PRIVATE $<$<COMPILE_LANGUAGE:CXX>:-Wno-maybe-uninitialized>)
    endif()
  endif()
endfunction()

function(orca_cc_library)
  cmake_parse_arguments(ARG "" "NAME" "SRCS;DEPS;PUBLIC_DEPS" ${ARGN})
  set(target orca_${ARG_NAME})
  add_library(${target} STATIC ${ARG_SRCS})
  add_library(orca::${ARG_NAME} ALIAS ${target})
  target_include_directories(${target} PUBLIC ${PROJECT_SOURCE_DIR} ${PROJECT_BINARY_DIR}/gen)
  target_link_libraries(${target} PUBLIC ${ARG_PUBLIC_DEPS} PRIVATE ${ARG_DEPS})
  orca_apply_warnings(${target})
endfunction()

function(orca_cc_binary)
  cmake_parse_arguments(ARG "" "NAME" "SRCS;DEPS" ${ARGN})
  add_executable(${ARG_NAME} ${ARG_SRCS})
  target_include_directories(${ARG_NAME} PRIVATE ${PROJECT_SOURCE_DIR})
  target_link_libraries(${ARG_NAME} PRIVATE ${ARG_DEPS})
  orca_apply_warnings(${ARG_NAME})
endfunction()

function(orca_cc_test)
  if(NOT ORCA_BUILD_TESTS)
    return()
  endif()
  cmake_parse_arguments(ARG "" "NAME;TIMEOUT" "SRCS;DEPS;LABELS;ENV" ${ARGN})
  add_executable(${ARG_NAME} ${ARG_SRCS})
  target_include_directories(${ARG_NAME} PRIVATE ${PROJECT_SOURCE_DIR})
  target_link_libraries(${ARG_NAME} PRIVATE ${ARG_DEPS} GTest::gtest GTest::gtest_main GTest::gmock)
  orca_apply_warnings(${ARG_NAME})
  add_test(NAME ${ARG_NAME} COMMAND ${ARG_NAME} WORKING_DIRECTORY ${PROJECT_SOURCE_DIR})
  if(NOT ARG_LABELS)
    set(ARG_LABELS unit)
  endif()
  if(NOT ARG_TIMEOUT)
    set(ARG_TIMEOUT 600)
  endif()
  set_tests_properties(${ARG_NAME} PROPERTIES LABELS "${ARG_LABELS}" TIMEOUT ${ARG_TIMEOUT}
    ENVIRONMENT "ORCA_SOURCE_DIR=${PROJECT_SOURCE_DIR};ORCA_BINARY_DIR=${PROJECT_BINARY_DIR};${ARG_ENV}")
endfunction()

# Developer builds may leave folders out: -DORCA_SKIP_DIRS="controller;metrics".
set(ORCA_SKIP_DIRS "" CACHE STRING "Folder names that orca_add_all_subdirectories leaves out")

# Adds every immediate subdirectory of the current directory that has a CMakeLists.txt,
# so components (and their tests) can be added without editing a shared list.
macro(orca_add_all_subdirectories)
  file(GLOB _orca_children LIST_DIRECTORIES true RELATIVE ${CMAKE_CURRENT_SOURCE_DIR}
       ${CMAKE_CURRENT_SOURCE_DIR}/*)
  list(SORT _orca_children)
  foreach(_child ${_orca_children})
    if(_child IN_LIST ORCA_SKIP_DIRS)
      message(STATUS "orca: skipping ${CMAKE_CURRENT_SOURCE_DIR}/${_child} (ORCA_SKIP_DIRS)")
      continue()
    endif()
    if(IS_DIRECTORY ${CMAKE_CURRENT_SOURCE_DIR}/${_child} AND
       EXISTS ${CMAKE_CURRENT_SOURCE_DIR}/${_child}/CMakeLists.txt)
      add_subdirectory(${_child})
    endif()
  endforeach()
endmacro()
