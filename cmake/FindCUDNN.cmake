# Finds cuDNN: CUDNN_FOUND, CUDNN_INCLUDE_DIR, CUDNN_LIBRARY and the target CUDNN::cudnn.
# Searches CUDNN_ROOT, CUDA_HOME and the CUDA toolkit, then the system, and the pip wheels
# (site-packages/nvidia/cudnn) when CUDNN_ROOT points there.
find_path(CUDNN_INCLUDE_DIR cudnn.h
  HINTS ${CUDNN_ROOT} $ENV{CUDNN_ROOT} $ENV{CUDA_HOME} ${CUDAToolkit_INCLUDE_DIRS}/..
  PATH_SUFFIXES include)
find_library(CUDNN_LIBRARY NAMES cudnn libcudnn.so.9
  HINTS ${CUDNN_ROOT} $ENV{CUDNN_ROOT} $ENV{CUDA_HOME} ${CUDAToolkit_LIBRARY_DIR}/..
  PATH_SUFFIXES lib lib64 lib/x86_64-linux-gnu)
include(FindPackageHandleStandardArgs)
find_package_handle_standard_args(CUDNN REQUIRED_VARS CUDNN_LIBRARY CUDNN_INCLUDE_DIR)
if(CUDNN_FOUND AND NOT TARGET CUDNN::cudnn)
  add_library(CUDNN::cudnn UNKNOWN IMPORTED)
  set_target_properties(CUDNN::cudnn PROPERTIES IMPORTED_LOCATION "${CUDNN_LIBRARY}"
                        INTERFACE_INCLUDE_DIRECTORIES "${CUDNN_INCLUDE_DIR}")
endif()
mark_as_advanced(CUDNN_INCLUDE_DIR CUDNN_LIBRARY)
