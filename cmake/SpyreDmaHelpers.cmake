# Helpers shared by every CMakeLists.txt of the project.

include_guard(GLOBAL)

# spyre_dma_set_warnings(<target>...)
#
# Strict warnings for code the project owns. They are PRIVATE compile options on purpose (not an
# INTERFACE library linked into each target): nothing about them may leak into the installed,
# exported interface, where they would be forced on every consumer.
function(spyre_dma_set_warnings)
  foreach(_target IN LISTS ARGN)
    if(CMAKE_CXX_COMPILER_ID MATCHES "GNU|Clang")
      target_compile_options(${_target} PRIVATE
        -Wall -Wextra -Wpedantic -Wshadow -Wnon-virtual-dtor -Wold-style-cast -Wcast-align
        -Woverloaded-virtual -Wnull-dereference -Wimplicit-fallthrough
        $<$<BOOL:${SPYRE_DMA_WERROR}>:-Werror>)
    elseif(MSVC)
      target_compile_options(${_target} PRIVATE /W4 $<$<BOOL:${SPYRE_DMA_WERROR}>:/WX>)
    endif()
  endforeach()
endfunction()

# spyre_dma_add_library(<target> EXPORT_NAME <name> SOURCES <src>...)
#
# A project library: <target> (spyre_dma_<name>) with alias SpyreDma::<name>, exported and
# installed as SpyreDma::<name>, strict warnings on. Include directories and links are left to
# the caller.
function(spyre_dma_add_library target)
  cmake_parse_arguments(PARSE_ARGV 1 arg "" "EXPORT_NAME" "SOURCES")
  if(NOT arg_EXPORT_NAME OR NOT arg_SOURCES)
    message(FATAL_ERROR "spyre_dma_add_library(${target}): EXPORT_NAME and SOURCES are required")
  endif()
  add_library(${target} ${arg_SOURCES})
  add_library(SpyreDma::${arg_EXPORT_NAME} ALIAS ${target})
  spyre_dma_export(${target} EXPORT_NAME ${arg_EXPORT_NAME})
  # Consumers of the installed package need C++17 too (our headers use std::optional etc.).
  target_compile_features(${target} PUBLIC cxx_std_17)
  spyre_dma_set_warnings(${target})
endfunction()

# spyre_dma_export(<target> EXPORT_NAME <name>)
#
# Installs and exports a library made some other way (generated code, third-party C) as
# SpyreDma::<name>: what an exported library links, even privately when it is static, must be
# exported with it.
function(spyre_dma_export target)
  cmake_parse_arguments(PARSE_ARGV 1 arg "" "EXPORT_NAME" "")
  if(NOT arg_EXPORT_NAME)
    message(FATAL_ERROR "spyre_dma_export(${target}): EXPORT_NAME is required")
  endif()
  set_target_properties(${target} PROPERTIES EXPORT_NAME ${arg_EXPORT_NAME})
  # Remembered for the install rules (cmake/SpyreDmaInstall.cmake).
  set_property(GLOBAL APPEND PROPERTY SPYRE_DMA_EXPORTED_LIBRARIES ${target})
endfunction()

# spyre_dma_runs_on_coroutines(<target>...)
#
# Marks targets whose code runs on SystemC's coroutine stacks (SC_THREADs), where
# SPYRE_DMA_COROUTINE_CXX_FLAGS apply. ASan does not follow every unwind on those stacks (an
# exception thrown in a process leaves the unwound frames' redzones poisoned); the asan preset uses
# this to leave the stack out of ASan's instrumentation there (docs/hardening.md says why).
function(spyre_dma_runs_on_coroutines)
  separate_arguments(_flags UNIX_COMMAND "${SPYRE_DMA_COROUTINE_CXX_FLAGS}")
  if(_flags)
    foreach(_target IN LISTS ARGN)
      target_compile_options(${_target} PRIVATE ${_flags})
    endforeach()
  endif()
endfunction()
