# Install rules, the SpyreDmaTargets export set and the SpyreDma package config, so that another
# project can do
#
#   find_package(SpyreDma REQUIRED COMPONENTS engine backends)
#   target_link_libraries(app PRIVATE SpyreDma::engine SpyreDma::backends)
#
# Included last from the top-level CMakeLists.txt, once every target exists.

include_guard(GLOBAL)
include(CMakePackageConfigHelpers)

set(SPYRE_DMA_INSTALL_CMAKEDIR "${CMAKE_INSTALL_LIBDIR}/cmake/SpyreDma"
  CACHE STRING "Where SpyreDmaConfig.cmake and the exported targets are installed")
mark_as_advanced(SPYRE_DMA_INSTALL_CMAKEDIR)

# Libraries made by spyre_dma_add_library(), in dependency order.
get_property(_spyre_dma_libraries GLOBAL PROPERTY SPYRE_DMA_EXPORTED_LIBRARIES)

if(NOT _spyre_dma_libraries)
  message(STATUS "spyre-dma: no libraries yet; nothing to install")
  return()
endif()

install(TARGETS ${_spyre_dma_libraries}
  EXPORT SpyreDmaTargets
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
  RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
# (No INCLUDES DESTINATION: each library's $<INSTALL_INTERFACE:include> already names it.)

# Public headers: every exported library's tree goes to <prefix>/include/spyre_dma/...
set(_spyre_dma_header_trees)
foreach(_tree IN ITEMS contract device_core backend . refdev vfio rdma cuda)
  list(APPEND _spyre_dma_header_trees "${PROJECT_SOURCE_DIR}/engine/${_tree}/include")
endforeach()
if(TARGET spyre_dma_model)
  list(APPEND _spyre_dma_header_trees "${PROJECT_SOURCE_DIR}/model/include")
endif()
if(TARGET spyre_dma_rtl)
  list(APPEND _spyre_dma_header_trees "${PROJECT_SOURCE_DIR}/rtl_bridge/include")
endif()
foreach(_tree IN LISTS _spyre_dma_header_trees)
  install(DIRECTORY "${_tree}/"
    DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}
    FILES_MATCHING PATTERN "*.hpp" PATTERN "*.h")
endforeach()

# What the package's config must find for the exported targets (SpyreDmaConfig.cmake.in).
set(SPYRE_DMA_PACKAGE_SYSTEMC OFF)
if(TARGET spyre_dma_model)
  set(SPYRE_DMA_PACKAGE_SYSTEMC ON)
endif()
set(SPYRE_DMA_PACKAGE_ZLIB OFF)
if(TARGET spyre_dma_fstapi)
  set(SPYRE_DMA_PACKAGE_ZLIB ON)
endif()
set(SPYRE_DMA_PACKAGE_UCX OFF)
if(SPYRE_DMA_RDMA)
  set(SPYRE_DMA_PACKAGE_UCX ON)
endif()
set(SPYRE_DMA_PACKAGE_CUDA OFF)
if(TARGET spyre_dma_cuda AND SPYRE_DMA_HAVE_CUDA)
  set(SPYRE_DMA_PACKAGE_CUDA ON)
endif()

# The CLI is installed but not exported: nothing links against it.
if(TARGET spyre-dma)
  install(TARGETS spyre-dma RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
endif()

install(EXPORT SpyreDmaTargets
  NAMESPACE SpyreDma::
  FILE SpyreDmaTargets.cmake
  DESTINATION ${SPYRE_DMA_INSTALL_CMAKEDIR})

configure_package_config_file(
  "${PROJECT_SOURCE_DIR}/cmake/SpyreDmaConfig.cmake.in"
  "${PROJECT_BINARY_DIR}/SpyreDmaConfig.cmake"
  INSTALL_DESTINATION ${SPYRE_DMA_INSTALL_CMAKEDIR})
write_basic_package_version_file(
  "${PROJECT_BINARY_DIR}/SpyreDmaConfigVersion.cmake"
  VERSION ${PROJECT_VERSION}
  COMPATIBILITY SameMajorVersion)
install(FILES
  "${PROJECT_BINARY_DIR}/SpyreDmaConfig.cmake"
  "${PROJECT_BINARY_DIR}/SpyreDmaConfigVersion.cmake"
  DESTINATION ${SPYRE_DMA_INSTALL_CMAKEDIR})
