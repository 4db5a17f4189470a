# rtl_bridge/: the RTL data path (rtl/*.sv), verilated in --cc mode into the SystemC model's
# library, with its bridge (src/*.cpp). Included from model/CMakeLists.txt, after the model's
# target exists, when SPYRE_DMA_RTL is on: SimTop picks the RTL controller when
# SimConfig::controller says "rtl".
set(SPYRE_DMA_RTL_DIR "${CMAKE_CURRENT_LIST_DIR}")
set(SPYRE_DMA_RTL_SOURCES
  "${SPYRE_DMA_RTL_DIR}/rtl/spyre_dma_pkg.sv"
  "${SPYRE_DMA_RTL_DIR}/rtl/xlat_check.sv"
  "${SPYRE_DMA_RTL_DIR}/rtl/cb_section_decode.sv"
  "${SPYRE_DMA_RTL_DIR}/rtl/stream_arbiter.sv"
  "${SPYRE_DMA_RTL_DIR}/rtl/dmai_engine.sv"
  "${SPYRE_DMA_RTL_DIR}/rtl/dmao_engine.sv"
  "${SPYRE_DMA_RTL_DIR}/rtl/spyre_dma_core.sv")

# The verilated model is its own library, built without the project's warning flags (the code is
# generated); the bridge (src/) is part of the model's library and sees Verilator's headers as
# system headers.
add_library(spyre_dma_rtl_core STATIC)
set(_rtl_vdir "${CMAKE_CURRENT_BINARY_DIR}/rtl_core")
# -O3 on the generated C++ and no --timing (the design has no delays): cycles per second matter.
# --trace: VCD waveforms are available per run (--wave FILE); they cost nothing while off.
verilate(spyre_dma_rtl_core
  SOURCES ${SPYRE_DMA_RTL_SOURCES}
  TOP_MODULE spyre_dma_core
  PREFIX Vspyre_dma_core
  DIRECTORY "${_rtl_vdir}"
  TRACE
  VERILATOR_ARGS -Wall --no-timing -O3 --x-assign fast --x-initial fast
  OPT_FAST -O2)

file(GLOB _rtl_bridge_sources CONFIGURE_DEPENDS "${SPYRE_DMA_RTL_DIR}/src/*.cpp" "${SPYRE_DMA_RTL_DIR}/src/*.hpp")
target_sources(spyre_dma_model PRIVATE ${_rtl_bridge_sources})
target_include_directories(spyre_dma_model PRIVATE "${SPYRE_DMA_RTL_DIR}/src" PUBLIC "${SPYRE_DMA_RTL_DIR}/include")
target_include_directories(spyre_dma_model SYSTEM PRIVATE "${_rtl_vdir}" "${VERILATOR_ROOT}/include"
                                                          "${VERILATOR_ROOT}/include/vltstd")
target_link_libraries(spyre_dma_model PRIVATE spyre_dma_rtl_core)
target_compile_definitions(spyre_dma_model PUBLIC SPYRE_DMA_HAVE_RTL=1)

# The same sources, linted as the README promises (verilator --lint-only -Wall).
if(SPYRE_DMA_BUILD_TESTS)
  add_test(NAME rtl.lint
           COMMAND ${VERILATOR_BIN} --lint-only -Wall --top-module spyre_dma_core ${SPYRE_DMA_RTL_SOURCES})
  set_tests_properties(rtl.lint PROPERTIES LABELS "unit;rtl")
endif()

# rtl_speed: cycles per wall second of the data path alone and of the whole model (a measurement;
# not run by CTest). It reuses the tests' ring driver.
if(SPYRE_DMA_BUILD_BENCHMARKS)
  add_executable(rtl_speed "${SPYRE_DMA_RTL_DIR}/bench/rtl_speed.cpp")
  target_include_directories(rtl_speed PRIVATE "${PROJECT_SOURCE_DIR}/testbench/unit/rtl")
  target_include_directories(rtl_speed SYSTEM PRIVATE "${_rtl_vdir}" "${VERILATOR_ROOT}/include"
                                                     "${VERILATOR_ROOT}/include/vltstd")
  target_link_libraries(rtl_speed PRIVATE spyre_dma_model spyre_dma_rtl_core)
  spyre_dma_set_warnings(rtl_speed)
endif()
