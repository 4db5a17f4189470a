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
