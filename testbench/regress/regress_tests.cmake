# Included by testbench/CMakeLists.txt (after tools/, which defines spyre-dma).
# The regression suites as CTest tests (label `regress`): smoke, directed and footprint on refdev and sim,
# the fault campaign on sim, and the scoreboard's self-test (a corrupted seed must fail, with the
# finding named). `spyre-dma regress` runs the tests in two worker processes.
if(TARGET spyre-dma)
  set(_regress_out "${CMAKE_CURRENT_BINARY_DIR}/regress-results")
  file(MAKE_DIRECTORY "${_regress_out}")
  set(_backends refdev)
  if(TARGET SpyreDma::model)
    list(APPEND _backends sim)
  endif()
  # The sanitizer presets run a shorter smoke (their builds are several times slower).
  set(SPYRE_DMA_REGRESS_SMOKE_SEEDS "" CACHE STRING "Seeds A..B of the CTest smoke runs (empty: the suite's own)")
  foreach(_backend IN LISTS _backends)
    foreach(_suite smoke directed footprint)
      set(_seeds "")
      if(NOT _suite STREQUAL "directed" AND SPYRE_DMA_REGRESS_SMOKE_SEEDS)
        set(_seeds --seeds ${SPYRE_DMA_REGRESS_SMOKE_SEEDS})
      endif()
      add_test(NAME regress.${_suite}.${_backend}
        COMMAND spyre-dma regress --suite ${_suite} --backend ${_backend} ${_seeds} --jobs 2 --progress lines
                --json "${_regress_out}/${_suite}-${_backend}.json"
                --junit "${_regress_out}/${_suite}-${_backend}.xml"
                --coverage "${_regress_out}/${_suite}-${_backend}-coverage.txt")
      set_tests_properties(regress.${_suite}.${_backend} PROPERTIES LABELS regress TIMEOUT 600 PROCESSORS 2)
    endforeach()
  endforeach()
  # smoke on the RTL controller: the same programs, the same checkers, plus the RTL's own stream
  # checker on every cycle.
  if(TARGET SpyreDma::model AND SPYRE_DMA_RTL)
    add_test(NAME regress.smoke.rtl
      COMMAND spyre-dma regress --suite smoke --backend rtl --jobs 2 --progress lines
              --json "${_regress_out}/smoke-rtl.json" --junit "${_regress_out}/smoke-rtl.xml"
              --coverage "${_regress_out}/smoke-rtl-coverage.txt")
    set_tests_properties(regress.smoke.rtl PROPERTIES LABELS "regress;rtl" TIMEOUT 600 PROCESSORS 2)
  endif()
  # The same programs on every device of a simulated server at once (four devices, two behind
  # each switch): every device's run has every checker of its own, and the test fails if one does.
  if(TARGET SpyreDma::model)
    foreach(_suite smoke faults)
      add_test(NAME regress.${_suite}.sim_server
        COMMAND spyre-dma regress --suite ${_suite} --backend sim --preset server-8x-gen5x16 --devices 4
                --seeds 1..6 --jobs 2 --progress lines
                --json "${_regress_out}/${_suite}-sim-server.json")
      set_tests_properties(regress.${_suite}.sim_server PROPERTIES LABELS regress TIMEOUT 600 PROCESSORS 2)
    endforeach()
  endif()
  # smoke through vfio-user: each test's device in a private `spyre-dma serve` process, the
  # scoreboard's set-up and checks through the server's memory region.
  if(TARGET SpyreDma::vfio)
    foreach(_backend IN LISTS _backends)
      add_test(NAME regress.smoke.vfio_user_${_backend}
        COMMAND spyre-dma regress --suite smoke --backend vfio-user --vfio-serve ${_backend} --seeds 1..40
                --jobs 2 --progress lines --json "${_regress_out}/smoke-vfio-user-${_backend}.json")
      set_tests_properties(regress.smoke.vfio_user_${_backend} PROPERTIES LABELS "regress;vfio" TIMEOUT 600
        PROCESSORS 2)
    endforeach()
    # A soak across processes: each test's server killed (SIGKILL) at an op drawn from its seed,
    # half the time; every op must end once, done or with a typed error (docs/regress.md, "Soak").
    add_test(NAME regress.soak.vfio_user_kills
      COMMAND spyre-dma regress --suite smoke --backend vfio-user --vfio-serve refdev --duration 10s --warmup 2s
              --max-rss-growth 1000 --kill-server-rate 0.5 --jobs 2 --progress none)
    set_tests_properties(regress.soak.vfio_user_kills PROPERTIES LABELS "regress;vfio" TIMEOUT 180 PROCESSORS 2
      PASS_REGULAR_EXPRESSION "faults injected +[1-9].*lost completions +0\n  duplicated completions +0\n  corrupted data +0\n"
      FAIL_REGULAR_EXPRESSION "FAIL")
  endif()
  if(TARGET SpyreDma::model)
    add_test(NAME regress.faults.sim
      COMMAND spyre-dma regress --suite faults --backend sim --jobs 2 --progress lines
              --json "${_regress_out}/faults-sim.json" --junit "${_regress_out}/faults-sim.xml")
    set_tests_properties(regress.faults.sim PROPERTIES LABELS regress TIMEOUT 600 PROCESSORS 2)
    # The fault campaign on the RTL data path: the TLP-level kinds through its transactors.
    if(SPYRE_DMA_RTL)
      add_test(NAME regress.faults.rtl
        COMMAND spyre-dma regress --suite faults --backend rtl --jobs 2 --progress lines
                --json "${_regress_out}/faults-rtl.json" --junit "${_regress_out}/faults-rtl.xml")
      set_tests_properties(regress.faults.rtl PROPERTIES LABELS "regress" TIMEOUT 600 PROCESSORS 2)
    endif()
    # Determinism proven: smoke, a slice of the nightly and the fault campaign, each run with one
    # worker and with two, give the same digest of every RB, memory image and simulated time.
    find_package(Python3 COMPONENTS Interpreter)
    if(Python3_Interpreter_FOUND)
      set(_det_backends --backend sim)
      if(SPYRE_DMA_RTL)
        list(APPEND _det_backends --backend rtl)
      endif()
      add_test(NAME regress.determinism
        COMMAND ${Python3_EXECUTABLE} "${CMAKE_CURRENT_LIST_DIR}/determinism.py" --tool $<TARGET_FILE:spyre-dma>
                ${_det_backends})
      set_tests_properties(regress.determinism PROPERTIES LABELS regress TIMEOUT 900 PROCESSORS 2)
    endif()
  endif()
  # A short soak: seeds drawn until the time is up, the invariant counters and the workers' memory
  # reported (the RSS limit is not the point of a 20 s run, so it is lifted), and its options checked.
  add_test(NAME regress.soak.refdev
    COMMAND spyre-dma regress --suite smoke --backend refdev --duration 20s --warmup 5s --max-rss-growth 1000
            --jobs 2 --progress none)
  set_tests_properties(regress.soak.refdev PROPERTIES LABELS regress TIMEOUT 120 PROCESSORS 2
    PASS_REGULAR_EXPRESSION "soak: 20 s asked.*lost completions +0\n  duplicated completions +0\n  corrupted data +0\n.*after the warm-up.*RSS growth"
    FAIL_REGULAR_EXPRESSION "FAIL")
  add_test(NAME regress.soak.warmup_needs_duration
    COMMAND spyre-dma regress --suite smoke --backend refdev --warmup 5s)
  set_tests_properties(regress.soak.warmup_needs_duration PROPERTIES LABELS regress
    PASS_REGULAR_EXPRESSION "--warmup is for a soak: it needs --duration")
  add_test(NAME regress.soak.warmup_shorter_than_duration
    COMMAND spyre-dma regress --suite smoke --backend refdev --duration 10s --warmup 10s)
  set_tests_properties(regress.soak.warmup_shorter_than_duration PROPERTIES LABELS regress
    PASS_REGULAR_EXPRESSION "--warmup '10s': expected a time such as 90s or 3m, shorter than --duration 10s")
  # A deliberately broken model (a debug hook that loses the completion of the first CB whose last
  # flit is partial) must be found, and its failure triaged: a trace, a reproducer shrunk to at
  # most three ops, and the reproducer's waves.
  if(TARGET SpyreDma::model)
    set(_selftest_backends sim)
    if(SPYRE_DMA_RTL)
      list(APPEND _selftest_backends rtl)
    endif()
    foreach(_backend IN LISTS _selftest_backends)
      add_test(NAME regress.selftest.dropped_completion_${_backend}
        COMMAND spyre-dma regress --suite smoke --backend ${_backend} --seeds 1..2 --debug-hook drop_partial_flit_rb
                --cb-timeout 1 --jobs 2 --progress none --triage "${_regress_out}/triage-${_backend}")
      set_tests_properties(regress.selftest.dropped_completion_${_backend} PROPERTIES LABELS regress TIMEOUT 600
        PROCESSORS 2
        PASS_REGULAR_EXPRESSION "FAIL seed 1 .*trace: [^\n]*trace.json\n.*reproducer: [^\n]* [(][1-3] of [0-9]+ ops, [0-9]+ runs[)]\n.*reproducer waves: [^\n]*reproducer-wave[.]vcd\n.*FAIL seed 2 .*reproducer: [^\n]* [(][1-3] of [0-9]+ ops, [0-9]+ runs[)]\n"
        FAIL_REGULAR_EXPRESSION "budget reached|did not reproduce")
    endforeach()
  endif()
  # Coverage closure: from two seeds, the run keeps drawing until every bin smoke on refdev can reach
  # is hit (and says how many seeds it took).
  add_test(NAME regress.closure.smoke_refdev
    COMMAND spyre-dma regress --suite smoke --backend refdev --seeds 1..2 --close 200 --jobs 2 --progress none)
  set_tests_properties(regress.closure.smoke_refdev PROPERTIES LABELS regress TIMEOUT 300 PROCESSORS 2
    PASS_REGULAR_EXPRESSION "no hole it could fill[^\n]*\nclosure: [0-9]+ more seed[(]s[)], 3[.][.][0-9]+, until every hole"
    FAIL_REGULAR_EXPRESSION "FAIL")
  # The scoreboard must catch a byte flipped behind the engine's back: exactly the corrupted seed
  # fails, and with a data finding.
  add_test(NAME regress.selftest.corrupt_seed
    COMMAND spyre-dma regress --suite smoke --backend refdev --seeds 5..6 --corrupt-seed 5 --progress lines)
  set_tests_properties(regress.selftest.corrupt_seed PROPERTIES LABELS regress
    PASS_REGULAR_EXPRESSION "FAIL seed 5 \\[fail\\]: device buffer [0-9]+: 1 of [0-9]+ destination byte\\(s\\)|FAIL seed 5 \\[fail\\]: host buffer [0-9]+: 1 of [0-9]+ destination byte\\(s\\)"
    FAIL_REGULAR_EXPRESSION "FAIL seed 6")
endif()
