# Install rules, the SpyreDmaTargets export set and the SpyreDma package config, so that another
# project can do
#
#   find_package(SpyreDma REQUIRED)
#   target_link_libraries(app PRIVATE SpyreDma::engine SpyreDma::refdev)
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
foreach(_tree IN ITEMS contract device_core backend . refdev vfio)
  install(DIRECTORY "${PROJECT_SOURCE_DIR}/engine/${_tree}/include/"
    DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}
    FILES_MATCHING PATTERN "*.hpp" PATTERN "*.h")
endforeach()

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
