# CUDA for orca's targets, on a GPU or on the CUDA twin (cuda_twin/README.md).
#
# Targets use these names only, never CUDA::* directly, so one build option swaps the
# libraries underneath:
#   orca::cuda_headers  the toolkit's headers (cuda_runtime_api.h, cublas_v2.h, nccl.h)
#   orca::cudart        the CUDA runtime: libcudart, or the twin's host runtime
#   orca::cublas        cuBLAS: libcublas, or the twin's GemmEx over OpenBLAS
#   orca::nccl          NCCL: libnccl (when found), or the twin's NCCL over loopback TCP
# and orca_cuda_kernels_library() for the .cu kernels: nvcc device code on a GPU build;
# on the twin, each .cu rewritten by cuda_twin/cu_to_cc.py (launches and __shared__
# declarations) and compiled as host C++ with cuda_twin/device_env.h force-included.
# Included by the top-level CMakeLists.txt once ORCA_CUDA_ENABLED is known.

if(NOT ORCA_CUDA_ENABLED)
  return()
endif()

add_library(orca_cuda_headers INTERFACE)
add_library(orca::cuda_headers ALIAS orca_cuda_headers)
target_include_directories(orca_cuda_headers SYSTEM INTERFACE ${CUDAToolkit_INCLUDE_DIRS})

if(ORCA_CUDA_TWIN)
  # Everything the gpu-twin tests run (scripts/test-twin.sh builds it and `orca`).
  add_custom_target(twin_tests)
  add_subdirectory(${PROJECT_SOURCE_DIR}/cuda_twin ${PROJECT_BINARY_DIR}/cuda_twin)
  add_library(orca::cudart ALIAS orca_cuda_twin_runtime)
  add_library(orca::cublas ALIAS orca_cuda_twin_cublas)
  add_library(orca::nccl ALIAS orca_cuda_twin_nccl)
  set(ORCA_NCCL_FOUND ON)
else()
  add_library(orca_cudart INTERFACE)
  add_library(orca::cudart ALIAS orca_cudart)
  target_link_libraries(orca_cudart INTERFACE CUDA::cudart orca_cuda_headers)
  add_library(orca_cublas INTERFACE)
  add_library(orca::cublas ALIAS orca_cublas)
  target_link_libraries(orca_cublas INTERFACE CUDA::cublas orca_cuda_headers)
  # NCCL ships with some CUDA installs (here /usr/local/cuda/lib) and as libnccl-dev;
  # without it orca::comm_nccl is left out.
  find_path(ORCA_NCCL_INCLUDE_DIR nccl.h
    HINTS ${CUDAToolkit_INCLUDE_DIRS} ${CUDAToolkit_LIBRARY_ROOT}/include $ENV{NCCL_HOME}/include)
  find_library(ORCA_NCCL_LIBRARY nccl
    HINTS ${CUDAToolkit_LIBRARY_DIR} ${CUDAToolkit_LIBRARY_ROOT}/lib ${CUDAToolkit_LIBRARY_ROOT}/lib64
          $ENV{NCCL_HOME}/lib)
  set(ORCA_NCCL_FOUND OFF)
  if(ORCA_NCCL_INCLUDE_DIR AND ORCA_NCCL_LIBRARY)
    message(STATUS "orca: NCCL found: ${ORCA_NCCL_LIBRARY}")
    add_library(orca_nccl INTERFACE)
    add_library(orca::nccl ALIAS orca_nccl)
    target_include_directories(orca_nccl SYSTEM INTERFACE ${ORCA_NCCL_INCLUDE_DIR})
    target_link_libraries(orca_nccl INTERFACE ${ORCA_NCCL_LIBRARY} orca_cuda_headers)
    set(ORCA_NCCL_FOUND ON)
  else()
    message(STATUS "orca: NCCL not found; skipping orca::comm_nccl")
  endif()
endif()

# nvcc: every warning is an error, and host code gets the project's warnings too.
set(ORCA_CUDA_WARNINGS
  $<$<COMPILE_LANGUAGE:CUDA>:--Werror=all-warnings>
  $<$<COMPILE_LANGUAGE:CUDA>:-Xcompiler=-Wall,-Wextra,-Werror>)

# orca_cuda_kernels_library(NAME kernels SRCS a.cu b.cu PUBLIC_DEPS ...): orca::NAME from
# CUDA sources, for a GPU or for the twin (see the top of this file).
function(orca_cuda_kernels_library)
  cmake_parse_arguments(ARG "" "NAME" "SRCS;PUBLIC_DEPS" ${ARGN})
  if(NOT ORCA_CUDA_TWIN)
    orca_cc_library(NAME ${ARG_NAME} SRCS ${ARG_SRCS} PUBLIC_DEPS ${ARG_PUBLIC_DEPS} orca::cudart)
    target_compile_options(orca_${ARG_NAME} PRIVATE ${ORCA_CUDA_WARNINGS})
    set_target_properties(orca_${ARG_NAME} PROPERTIES CUDA_STANDARD 17 CUDA_STANDARD_REQUIRED ON
                                                      POSITION_INDEPENDENT_CODE ON)
    return()
  endif()
  find_package(Python3 REQUIRED COMPONENTS Interpreter)
  set(translator ${PROJECT_SOURCE_DIR}/cuda_twin/cu_to_cc.py)
  set(host_sources)
  foreach(cu ${ARG_SRCS})
    get_filename_component(abs ${cu} ABSOLUTE)
    file(RELATIVE_PATH rel ${PROJECT_SOURCE_DIR} ${abs})
    string(REGEX REPLACE "\\.cu$" ".twin.cc" out ${PROJECT_BINARY_DIR}/cuda_twin_src/${rel})
    add_custom_command(OUTPUT ${out}
      COMMAND Python3::Interpreter ${translator} ${abs} ${out} ${rel}
      DEPENDS ${abs} ${translator}
      COMMENT "cuda twin: translating ${rel}" VERBATIM)
    list(APPEND host_sources ${out})
  endforeach()
  orca_cc_library(NAME ${ARG_NAME} SRCS ${host_sources}
                  PUBLIC_DEPS ${ARG_PUBLIC_DEPS} orca::cudart)
  target_compile_options(orca_${ARG_NAME} PRIVATE
    -include ${PROJECT_SOURCE_DIR}/cuda_twin/device_env.h -Wno-unknown-pragmas)
endfunction()
