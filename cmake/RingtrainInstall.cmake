# `cmake --install BUILD --prefix P`: the binary and the user's tools in P/bin, the static
# library and its public headers, the docs in P/share/doc/ringtrain, the job scripts in
# P/share/ringtrain/jobs, and the CMake package (find_package(ringtrain) gives ringtrain::core).
include(CMakePackageConfigHelpers)

# The installed programs keep the RUNPATH of the libraries they link outside the system's
# folders (CUDA's, a module's), which CMake otherwise strips on install.
set(RINGTRAIN_PROGRAMS ringtrain)
if(RINGTRAIN_BENCH)
  list(APPEND RINGTRAIN_PROGRAMS bench_train_cpu bench_gemm bench_loader bench_allreduce
       bench_ddp_step bench_train_gpu)
endif()
set_target_properties(${RINGTRAIN_PROGRAMS} PROPERTIES INSTALL_RPATH_USE_LINK_PATH TRUE)
install(TARGETS ${RINGTRAIN_PROGRAMS} RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(PROGRAMS tools/plot_runs.py DESTINATION ${CMAKE_INSTALL_BINDIR}
        RENAME ringtrain-plot-runs)

install(DIRECTORY include/ringtrain DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}
        FILES_MATCHING PATTERN "*.hpp")
install(FILES ${PROJECT_BINARY_DIR}/include/ringtrain/core/version.hpp
        DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/ringtrain/core)
install(FILES README.md DESTINATION ${CMAKE_INSTALL_DOCDIR})
install(DIRECTORY docs/ DESTINATION ${CMAKE_INSTALL_DOCDIR})
install(DIRECTORY jobs/ DESTINATION ${CMAKE_INSTALL_DATADIR}/ringtrain/jobs USE_SOURCE_PERMISSIONS)

# Note: ringtrain_core stays the static library every in-tree program (and the GPU bundle)
# links, so the install adds no shared library to find at run time and changes no build. Its
# PRIVATE dependencies (OpenBLAS, oneDNN, OpenMP, spdlog, JPEG, PNG, libarchive, OpenSSL's
# crypto; with CUDA also the static CUDA runtime, cuBLAS, cuDNN, NCCL) are then a consumer's
# link dependencies: the exported target names them as $<LINK_ONLY:...> and
# ringtrainConfig.cmake finds each again with find_dependency as this build found it, so a
# consumer links what the ringtrain binary links (the development packages ringtrain builds
# with are needed). A new dependency of ringtrain_core needs its find_dependency there too
# (e2e.install fails without it). oneDNN has no CMake target: the exported target names the
# library file this build found.
set(RINGTRAIN_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/ringtrain)
install(TARGETS ringtrain_core EXPORT ringtrainTargets
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
        INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(EXPORT ringtrainTargets NAMESPACE ringtrain:: DESTINATION ${RINGTRAIN_CMAKE_DIR})
if(RINGTRAIN_WITH_CUDA)
  # ringtrainConfig.cmake looks for cuDNN and NCCL where this build found them, first.
  get_filename_component(RINGTRAIN_CUDNN_ROOT ${CUDNN_INCLUDE_DIR} DIRECTORY)
  get_filename_component(RINGTRAIN_NCCL_ROOT ${NCCL_INCLUDE_DIR} DIRECTORY)
  install(FILES cmake/FindCUDNN.cmake cmake/FindNCCL.cmake DESTINATION ${RINGTRAIN_CMAKE_DIR})
endif()
set(RINGTRAIN_HDF5_STATIC OFF)
if(HDF5_USE_STATIC_LIBRARIES)
  set(RINGTRAIN_HDF5_STATIC ON)
endif()
configure_package_config_file(cmake/ringtrainConfig.cmake.in
                              ${PROJECT_BINARY_DIR}/ringtrainConfig.cmake
                              INSTALL_DESTINATION ${RINGTRAIN_CMAKE_DIR})
write_basic_package_version_file(${PROJECT_BINARY_DIR}/ringtrainConfigVersion.cmake
                                 COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/ringtrainConfig.cmake
              ${PROJECT_BINARY_DIR}/ringtrainConfigVersion.cmake
        DESTINATION ${RINGTRAIN_CMAKE_DIR})
