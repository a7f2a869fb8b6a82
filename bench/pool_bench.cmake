# sl-bench pool: sources and peers (GThreadPool, oneTBB task_arena/task_group, a
# mutex/condvar pool). Included from bench/CMakeLists.txt, after the chan peers
# have been looked for: GLib and oneTBB are found there (SLB_GLIB_FOUND,
# TBB::tbb) and reused here. A missing peer is a "skipped" row, never an error.
target_sources(sl-bench PRIVATE pool_bench.c pool_work.c pool_report.c pool_mutex.c
               pool_sluice.c)

if(SLB_GLIB_FOUND)
  target_sources(sl-bench PRIVATE pool_glib.c)
  target_compile_definitions(sl-bench PRIVATE SLB_HAVE_POOL_GLIB=1)
  message(STATUS "sl-bench pool: peer GLib GThreadPool: found")
else()
  message(STATUS "sl-bench pool: peer GLib GThreadPool: not found, skipped (Debian: libglib2.0-dev)")
endif()

if(TARGET TBB::tbb)
  target_sources(sl-bench PRIVATE pool_tbb.cpp)
  target_compile_definitions(sl-bench PRIVATE SLB_HAVE_POOL_TBB=1)
  message(STATUS "sl-bench pool: peer oneTBB task_arena/task_group: found")
else()
  message(STATUS "sl-bench pool: peer oneTBB task_arena/task_group: not found, skipped (Debian: libtbb-dev)")
endif()

# The smoke test: one tiny round of every workload for every contender, so
# that each run's verification (every job exactly once) runs in ctest. It
# asserts correctness only — never a speed.
add_test(NAME bench_pool_smoke
  COMMAND sl-bench pool --quick --seed 1 --csv ${CMAKE_CURRENT_BINARY_DIR}/pool_smoke.csv)
set_tests_properties(bench_pool_smoke PROPERTIES LABELS bench TIMEOUT 300)
