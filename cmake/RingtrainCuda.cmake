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

if(RINGTRAIN_WITH_CUDA)
  if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES)
    set(CMAKE_CUDA_ARCHITECTURES 90)  # Hopper (H100/H200); override with -DCMAKE_CUDA_ARCHITECTURES
  endif()
  enable_language(CUDA)
  set(CMAKE_CUDA_STANDARD 17)
  set(CMAKE_CUDA_STANDARD_REQUIRED ON)
endif()
message(STATUS "ringtrain: CUDA backend ${RINGTRAIN_WITH_CUDA} (RINGTRAIN_CUDA=${RINGTRAIN_CUDA})")
