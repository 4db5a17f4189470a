# Third-party dependencies. All come from Debian packages (scripts/setup installs them) and ship
# CMake package configs, so CONFIG mode is used throughout.

include_guard(GLOBAL)

find_package(Threads REQUIRED)
find_package(fmt CONFIG REQUIRED)
find_package(spdlog CONFIG REQUIRED)
find_package(nlohmann_json CONFIG REQUIRED)
find_package(CLI11 CONFIG REQUIRED)

if(SPYRE_DMA_BUILD_TESTS)
  find_package(GTest CONFIG REQUIRED)  # GTest::gtest_main, GTest::gmock
  include(GoogleTest)                  # gtest_discover_tests()
endif()

if(SPYRE_DMA_BUILD_BENCHMARKS)
  find_package(benchmark CONFIG REQUIRED)  # benchmark::benchmark_main
endif()

# SystemC (for model/) has no CMake config on Debian, only systemc.pc. Optional here: when it is
# missing, SYSTEMC_FOUND is false and PkgConfig::SYSTEMC does not exist; whatever needs SystemC
# checks for that target instead of failing the configure.
find_package(PkgConfig QUIET)
if(PKG_CONFIG_FOUND)
  pkg_check_modules(SYSTEMC QUIET IMPORTED_TARGET systemc)
endif()
if(SYSTEMC_FOUND)
  message(STATUS "spyre-dma: SystemC ${SYSTEMC_VERSION} found (PkgConfig::SYSTEMC)")
else()
  message(STATUS "spyre-dma: SystemC not found; the SystemC model will not be built")
endif()

# zlib: SpyreDma::traces reads gzip-compressed trace files.
find_package(ZLIB REQUIRED)

# CUDA toolkit (for engine/cuda's CUDA executor). SPYRE_DMA_CUDA: AUTO (default) uses it when
# found, ON requires it, OFF never looks. Only the runtime library and headers are used (no nvcc).
set(SPYRE_DMA_CUDA "AUTO" CACHE STRING "Build the CUDA copy executor: AUTO (if the toolkit is found), ON, OFF")
set_property(CACHE SPYRE_DMA_CUDA PROPERTY STRINGS AUTO ON OFF)
set(SPYRE_DMA_HAVE_CUDA OFF)
if(SPYRE_DMA_CUDA STREQUAL "OFF")
  message(STATUS "spyre-dma: CUDA executor off (SPYRE_DMA_CUDA=OFF); the cuda backend runs on host memcpy only")
elseif(SPYRE_DMA_CUDA STREQUAL "AUTO" OR SPYRE_DMA_CUDA STREQUAL "ON")
  find_package(CUDAToolkit QUIET)
  if(CUDAToolkit_FOUND AND TARGET CUDA::cudart_static)
    set(SPYRE_DMA_HAVE_CUDA ON)
    message(STATUS "spyre-dma: CUDA toolkit ${CUDAToolkit_VERSION} found (${CUDAToolkit_BIN_DIR}); CUDA executor built")
  elseif(SPYRE_DMA_CUDA STREQUAL "ON")
    message(FATAL_ERROR "spyre-dma: SPYRE_DMA_CUDA=ON but the CUDA toolkit was not found: install it or put nvcc "
                        "on PATH (or set CUDAToolkit_ROOT), or configure with -DSPYRE_DMA_CUDA=OFF")
  else()
    message(STATUS "spyre-dma: CUDA toolkit not found; CUDA executor not built (set CUDAToolkit_ROOT to use one)")
  endif()
else()
  message(FATAL_ERROR "spyre-dma: SPYRE_DMA_CUDA='${SPYRE_DMA_CUDA}': expected AUTO, ON or OFF")
endif()

# Verilator (for rtl_bridge/: the RTL data path and the `rtl` backend). SPYRE_DMA_RTL defaults
# to ON when Verilator is found; ON without Verilator is an error that says what to install.
find_package(verilator QUIET HINTS /usr/share/verilator $ENV{VERILATOR_ROOT})
option(SPYRE_DMA_RTL "Build the Verilator RTL data path and the rtl backend (needs Verilator and SystemC)"
       ${verilator_FOUND})
if(SPYRE_DMA_RTL AND NOT verilator_FOUND)
  message(FATAL_ERROR "spyre-dma: SPYRE_DMA_RTL=ON but Verilator was not found: install the Debian package "
                      "'verilator' (scripts/setup does), set VERILATOR_ROOT, or configure with -DSPYRE_DMA_RTL=OFF")
elseif(SPYRE_DMA_RTL)
  message(STATUS "spyre-dma: Verilator ${verilator_VERSION} found; RTL data path and rtl backend built")
else()
  message(STATUS "spyre-dma: RTL data path not built (SPYRE_DMA_RTL=OFF or Verilator not found)")
endif()

# UCX (engine/rdma: remote memory over UCX's UCP API; Debian libucx-dev, ucx-utils for
# ucx_perftest). SPYRE_DMA_RDMA defaults to ON when UCX is found; ON without it is an error.
if(PKG_CONFIG_FOUND)
  pkg_check_modules(UCX QUIET IMPORTED_TARGET ucx)
endif()
option(SPYRE_DMA_RDMA "Build remote memory over UCX (engine/rdma; needs libucx-dev)" ${UCX_FOUND})
if(SPYRE_DMA_RDMA AND NOT UCX_FOUND)
  message(FATAL_ERROR "spyre-dma: SPYRE_DMA_RDMA=ON but UCX was not found: install the Debian packages 'libucx-dev' "
                      "and 'ucx-utils' (scripts/setup does), or configure with -DSPYRE_DMA_RDMA=OFF")
elseif(SPYRE_DMA_RDMA)
  message(STATUS "spyre-dma: UCX ${UCX_VERSION} found; remote memory (engine/rdma) built")
else()
  message(STATUS "spyre-dma: UCX not found; remote memory (engine/rdma) not built")
endif()

# FST waveforms (model/'s WaveWriter): the FST library Verilator ships (GTKWave's fstapi with
# LZ4 and FastLZ; zlib compresses its hierarchy), compiled as C. Without it .vcd is still written
# and .fst is refused with an error that says why.
set(SPYRE_DMA_FSTAPI_DIR "")
foreach(_dir "${VERILATOR_ROOT}/include/gtkwave" "$ENV{VERILATOR_ROOT}/include/gtkwave" /usr/share/verilator/include/gtkwave)
  if(NOT SPYRE_DMA_FSTAPI_DIR AND EXISTS "${_dir}/fstapi.c" AND EXISTS "${_dir}/lz4.c" AND EXISTS "${_dir}/fastlz.c")
    set(SPYRE_DMA_FSTAPI_DIR "${_dir}")
  endif()
endforeach()
if(SPYRE_DMA_FSTAPI_DIR)
  enable_language(C)
  message(STATUS "spyre-dma: FST library found (${SPYRE_DMA_FSTAPI_DIR}); .fst waveforms available")
else()
  message(STATUS "spyre-dma: Verilator's FST library not found; waveforms are VCD only")
endif()

# Python bindings (python/: the spyre_dma package, pybind11). SPYRE_DMA_PYTHON: AUTO (default)
# builds them when pybind11 and the interpreter's headers are found, ON requires them, OFF never
# looks. The interpreter is Debian's (python3-torch, python3-pandas and python3-pytest are its
# packages), not whichever python3 comes first on PATH; SPYRE_DMA_PYTHON_EXECUTABLE names another.
set(SPYRE_DMA_PYTHON "AUTO" CACHE STRING "Build the Python package: AUTO (if pybind11 is found), ON, OFF")
set_property(CACHE SPYRE_DMA_PYTHON PROPERTY STRINGS AUTO ON OFF)
set(SPYRE_DMA_PYTHON_EXECUTABLE "/usr/bin/python3" CACHE FILEPATH
    "The Python interpreter the package is built and tested for")
set(SPYRE_DMA_HAVE_PYTHON OFF)
if(SPYRE_DMA_PYTHON STREQUAL "AUTO" OR SPYRE_DMA_PYTHON STREQUAL "ON")
  set(Python_EXECUTABLE "${SPYRE_DMA_PYTHON_EXECUTABLE}")
  set(PYBIND11_FINDPYTHON ON)
  find_package(Python 3.8 QUIET COMPONENTS Interpreter Development.Module)
  if(Python_FOUND)
    find_package(pybind11 2.6 CONFIG QUIET)
  endif()
  if(Python_FOUND AND pybind11_FOUND)
    set(SPYRE_DMA_HAVE_PYTHON ON)
    message(STATUS "spyre-dma: pybind11 ${pybind11_VERSION} and Python ${Python_VERSION} (${Python_EXECUTABLE}) found; "
                   "Python package built")
  elseif(SPYRE_DMA_PYTHON STREQUAL "ON")
    message(FATAL_ERROR "spyre-dma: SPYRE_DMA_PYTHON=ON but pybind11 or the headers of ${SPYRE_DMA_PYTHON_EXECUTABLE} "
                        "were not found: install the Debian packages 'pybind11-dev' and 'python3-dev' "
                        "(scripts/setup does), or configure with -DSPYRE_DMA_PYTHON=OFF")
  else()
    message(STATUS "spyre-dma: pybind11 or Python headers not found; Python package not built")
  endif()
elseif(NOT SPYRE_DMA_PYTHON STREQUAL "OFF")
  message(FATAL_ERROR "spyre-dma: SPYRE_DMA_PYTHON='${SPYRE_DMA_PYTHON}': expected AUTO, ON or OFF")
endif()
