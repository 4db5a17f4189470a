# cmake -P script behind the `install_consumer` CTest test (see CMakeLists.txt next to it).
#
#   1. cmake --install <build> --prefix <work>/prefix
#   2. configure + build consumer/ with CMAKE_PREFIX_PATH=<work>/prefix
#   3. run the consumer
#
# Inputs (-D): SPYRE_DMA_BINARY_DIR, SPYRE_DMA_CONFIG, CONSUMER_SOURCE_DIR, WORK_DIR, GENERATOR,
# CXX_COMPILER, CXX_FLAGS, EXE_LINKER_FLAGS, EXPECT_SIM.

cmake_minimum_required(VERSION 3.20)

foreach(_var IN ITEMS SPYRE_DMA_BINARY_DIR CONSUMER_SOURCE_DIR WORK_DIR GENERATOR CXX_COMPILER)
  if(NOT DEFINED ${_var} OR "${${_var}}" STREQUAL "")
    message(FATAL_ERROR "install_consumer: -D${_var}=... is required")
  endif()
endforeach()

set(_prefix "${WORK_DIR}/prefix")
set(_consumer_build "${WORK_DIR}/build")

# run(<step> <command>...): runs a command, fails the test with its output when it fails.
function(run step)
  message(STATUS "install_consumer: ${step}")
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE _rc)
  if(NOT _rc EQUAL 0)
    message(FATAL_ERROR "install_consumer: ${step} failed (${_rc})")
  endif()
endfunction()

# Start from nothing, so a file that is no longer installed cannot make the test pass.
file(REMOVE_RECURSE "${_prefix}" "${_consumer_build}")

set(_config_args "")
if(SPYRE_DMA_CONFIG)
  set(_config_args --config "${SPYRE_DMA_CONFIG}")
endif()

run("install into ${_prefix}"
  "${CMAKE_COMMAND}" --install "${SPYRE_DMA_BINARY_DIR}" --prefix "${_prefix}" ${_config_args})

set(_build_type_arg "")
if(SPYRE_DMA_CONFIG)
  set(_build_type_arg "-DCMAKE_BUILD_TYPE=${SPYRE_DMA_CONFIG}")
endif()

run("configure the consumer"
  "${CMAKE_COMMAND}"
    -S "${CONSUMER_SOURCE_DIR}" -B "${_consumer_build}" -G "${GENERATOR}"
    "-DCMAKE_PREFIX_PATH=${_prefix}"
    # Only the scratch prefix may provide SpyreDma, never a copy installed elsewhere.
    "-DCMAKE_FIND_PACKAGE_NO_PACKAGE_REGISTRY=ON"
    "-DCMAKE_CXX_COMPILER=${CXX_COMPILER}"
    "-DCMAKE_CXX_FLAGS=${CXX_FLAGS}"
    "-DCMAKE_EXE_LINKER_FLAGS=${EXE_LINKER_FLAGS}"
    "-DEXPECT_SIM=${EXPECT_SIM}"
    ${_build_type_arg})

run("build the consumer" "${CMAKE_COMMAND}" --build "${_consumer_build}" ${_config_args})

# A component the package does not have is refused by name (and the ones it has are listed).
set(_missing_dir "${WORK_DIR}/missing_component")
file(REMOVE_RECURSE "${_missing_dir}")
file(WRITE "${_missing_dir}/CMakeLists.txt" "cmake_minimum_required(VERSION 3.20)
project(SpyreDmaMissingComponent LANGUAGES CXX)
find_package(SpyreDma REQUIRED COMPONENTS engine no_such_component)
")
execute_process(
  COMMAND "${CMAKE_COMMAND}" -S "${_missing_dir}" -B "${_missing_dir}/build" -G "${GENERATOR}"
    "-DCMAKE_PREFIX_PATH=${_prefix}" "-DCMAKE_FIND_PACKAGE_NO_PACKAGE_REGISTRY=ON"
    "-DCMAKE_CXX_COMPILER=${CXX_COMPILER}"
  RESULT_VARIABLE _rc OUTPUT_VARIABLE _out ERROR_VARIABLE _err)
string(REGEX REPLACE "[ \t\r\n]+" " " _said "${_out}${_err}")  # CMake wraps the message's lines
if(_rc EQUAL 0 OR NOT _said MATCHES "has no component no_such_component; it has [a-z_, ]*engine")
  message(FATAL_ERROR "install_consumer: a missing component was not refused by name (${_rc}):\n${_out}${_err}")
endif()
message(STATUS "install_consumer: a missing component is refused by name")

# Single-config generators put the executable at the top of the build tree, multi-config ones
# in a folder per configuration.
set(_exe "${_consumer_build}/spyre_dma_consumer")
if(NOT EXISTS "${_exe}" AND SPYRE_DMA_CONFIG)
  set(_exe "${_consumer_build}/${SPYRE_DMA_CONFIG}/spyre_dma_consumer")
endif()
run("run the consumer" "${_exe}")

# The Python package, where the build made one: the installed copy imports, opens an engine and
# names the installed spyre-dma command (which exists), not the build tree's.
if(PYTHON_EXECUTABLE AND PYTHON_PACKAGE_DIR)
  set(_site "${_prefix}/${PYTHON_PACKAGE_DIR}")
  run("import the installed Python package from ${_site}"
    "${CMAKE_COMMAND}" -E env "PYTHONPATH=${_site}" PYTHONDONTWRITEBYTECODE=1
    "${PYTHON_EXECUTABLE}" -c "
import os, spyre_dma
from spyre_dma import _build_info
prefix = os.path.realpath('${_prefix}')
assert os.path.realpath(spyre_dma.__file__).startswith(prefix), spyre_dma.__file__
assert os.path.realpath(_build_info.cli).startswith(prefix) and os.access(_build_info.cli, os.X_OK), _build_info.cli
with spyre_dma.Engine('refdev') as e:
    s = e.create_stream(); b = e.allocate(4096); out = bytearray(4096)
    s.copy_h2d(b, b'x' * 4096); s.copy_d2h(out, b); s.synchronize()
    assert out == b'x' * 4096
print('installed spyre_dma: ok')
")
endif()
