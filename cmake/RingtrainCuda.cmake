# Decides whether the CUDA backend is built (RINGTRAIN_CUDA = AUTO | ON | OFF) and sets
# RINGTRAIN_WITH_CUDA. AUTO builds it when nvcc, cuDNN and NCCL are all found; a machine
# without a GPU still compiles and links every .cu file.
set(RINGTRAIN_WITH_CUDA OFF)
if(NOT RINGTRAIN_CUDA STREQUAL "OFF")
  include(CheckLanguage)
  check_language(CUDA)
  if(CMAKE_CUDA_COMPILER)
    find_package(CUDAToolkit)
    find_package(CUDNN)
    find_package(NCCL)
  endif()
  if(CMAKE_CUDA_COMPILER AND CUDAToolkit_FOUND AND CUDNN_FOUND AND NCCL_FOUND)
    set(RINGTRAIN_WITH_CUDA ON)
  elseif(RINGTRAIN_CUDA STREQUAL "ON")
    message(FATAL_ERROR "RINGTRAIN_CUDA=ON but the CUDA toolchain is incomplete: nvcc='${CMAKE_CUDA_COMPILER}' "
                        "CUDAToolkit=${CUDAToolkit_FOUND} cuDNN=${CUDNN_FOUND} NCCL=${NCCL_FOUND}")
  endif()
endif()

# The GPUs the kernels are compiled for. -DCMAKE_CUDA_ARCHITECTURES (or the CUDAARCHS environment
# variable) decides when given: a list such as "86" or "80;90", or native (the GPUs of the
# building machine). Otherwise a machine with GPUs builds for them (native), and one without
# builds for RINGTRAIN_CUDA_DEFAULT_ARCHITECTURES: machine code for each family CUDA 13 supports
# (7.5 Turing; 8.0 Ampere, which runs on 8.6 and Ada's 8.9 too; 9.0 Hopper; 10.0 Blackwell
# B100/B200/B300; 12.0 Blackwell RTX) and PTX of the newest, which the driver compiles for later
# GPUs. RINGTRAIN_CUDA_BUILT_ARCHITECTURES is the list the binary holds; the CUDA backend refuses a
# GPU none of them runs on (src/backend/cuda/architectures.cpp).
set(RINGTRAIN_CUDA_DEFAULT_ARCHITECTURES "75-real;80-real;90-real;100-real;120")
set(RINGTRAIN_CUDA_BUILT_ARCHITECTURES "")
if(RINGTRAIN_WITH_CUDA)
  set(ringtrain_cuda_architectures_chosen OFF)
  if(DEFINED CMAKE_CUDA_ARCHITECTURES OR DEFINED ENV{CUDAARCHS})
    set(ringtrain_cuda_architectures_chosen ON)
  else()
    set(CMAKE_CUDA_ARCHITECTURES ${RINGTRAIN_CUDA_DEFAULT_ARCHITECTURES})
  endif()
  enable_language(CUDA)
  set(CMAKE_CUDA_STANDARD 17)
  set(CMAKE_CUDA_STANDARD_REQUIRED ON)
  # Note: enable_language ran a test program that lists this machine's GPUs, found or not.
  if(NOT ringtrain_cuda_architectures_chosen AND CMAKE_CUDA_ARCHITECTURES_NATIVE)
    set(CMAKE_CUDA_ARCHITECTURES native)
  endif()
  if(CMAKE_CUDA_ARCHITECTURES STREQUAL "native")
    set(RINGTRAIN_CUDA_BUILT_ARCHITECTURES "${CMAKE_CUDA_ARCHITECTURES_NATIVE}")
  elseif(CMAKE_CUDA_ARCHITECTURES STREQUAL "all")
    set(RINGTRAIN_CUDA_BUILT_ARCHITECTURES "${CMAKE_CUDA_ARCHITECTURES_ALL}")
  elseif(CMAKE_CUDA_ARCHITECTURES STREQUAL "all-major")
    set(RINGTRAIN_CUDA_BUILT_ARCHITECTURES "${CMAKE_CUDA_ARCHITECTURES_ALL_MAJOR}")
  else()
    set(RINGTRAIN_CUDA_BUILT_ARCHITECTURES "${CMAKE_CUDA_ARCHITECTURES}")
  endif()
  if(RINGTRAIN_CUDA_BUILT_ARCHITECTURES STREQUAL "")
    message(FATAL_ERROR "CMAKE_CUDA_ARCHITECTURES=native but no GPU was found on this machine: "
                        "name the GPUs' compute capabilities instead, e.g. -DCMAKE_CUDA_ARCHITECTURES=86")
  endif()
  message(STATUS "ringtrain: CUDA kernels for ${RINGTRAIN_CUDA_BUILT_ARCHITECTURES} "
                 "(CMAKE_CUDA_ARCHITECTURES=${CMAKE_CUDA_ARCHITECTURES})")
endif()
message(STATUS "ringtrain: CUDA backend ${RINGTRAIN_WITH_CUDA} (RINGTRAIN_CUDA=${RINGTRAIN_CUDA})")
