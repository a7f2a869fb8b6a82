# sl-bench exec: sources and peers (oneTBB task_group, OpenMP tasks, serial).
# Included from bench/CMakeLists.txt.
target_sources(sl-bench PRIVATE exec_bench.c)
