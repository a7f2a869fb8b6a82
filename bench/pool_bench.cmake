# sl-bench pool: sources and peers (GThreadPool, oneTBB task_arena/task_group, a
# mutex/condvar pool). Included from bench/CMakeLists.txt.
target_sources(sl-bench PRIVATE pool_bench.c)
