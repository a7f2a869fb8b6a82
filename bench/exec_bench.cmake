# sl-bench exec: sources and peers (oneTBB task_group, OpenMP tasks with this
# compiler's runtime, LLVM libomp in a helper process, serial code).
# Included from bench/CMakeLists.txt, after the chan peers were looked for.
#
# As for the chan peers, every peer is optional: a missing one is reported
# here with a STATUS line and shown by `sl-bench exec` as a skipped row.

target_sources(sl-bench PRIVATE exec_bench.c exec_report.c exec_child.c exec_sluice.c)

# The kernels every contender shares (serial versions, UTS's SHA-1, BPC's
# busy work, the nqueens test), compiled once by the project's compiler and
# linked into sl-bench and the libomp helper alike: a contender built by
# another compiler must not get faster or slower work, only its own runtime.
add_library(slb_exec_kernels STATIC exec_work.c exec_uts.c)
target_compile_options(slb_exec_kernels PRIVATE ${SLUICE_WARNINGS})
target_link_libraries(slb_exec_kernels PUBLIC m)
target_link_libraries(sl-bench PRIVATE slb_exec_kernels)

# oneTBB task_group (the package was looked for in CMakeLists.txt).
if(TARGET TBB::tbb)
  target_sources(sl-bench PRIVATE exec_tbb.cpp)
  target_compile_definitions(sl-bench PRIVATE SLB_HAVE_XTBB=1)
  target_link_libraries(sl-bench PRIVATE TBB::tbb)
  message(STATUS "sl-bench exec: peer oneTBB task_group: found")
else()
  message(STATUS "sl-bench exec: peer oneTBB task_group: not found, skipped (Debian: libtbb-dev)")
endif()

# OpenMP tasks with this compiler's runtime (GCC: libgomp). Only exec_omp.c
# is compiled with the OpenMP flags; the runtime is linked into sl-bench.
find_package(OpenMP QUIET COMPONENTS C)
if(OpenMP_C_FOUND)
  if(CMAKE_C_COMPILER_ID STREQUAL "GNU")
    set(SLB_OMP_RUNTIME "libgomp")
  else()
    set(SLB_OMP_RUNTIME "${CMAKE_C_COMPILER_ID} OpenMP")
  endif()
  separate_arguments(SLB_OMP_FLAGS NATIVE_COMMAND "${OpenMP_C_FLAGS}")
  # The runtime alone: FindOpenMP may also list a static libpthread, and
  # sl-bench has Threads::Threads already.
  set(SLB_OMP_LIBS ${OpenMP_C_LIBRARIES})
  list(FILTER SLB_OMP_LIBS EXCLUDE REGEX "pthread")
  target_sources(sl-bench PRIVATE exec_omp.c)
  set_source_files_properties(exec_omp.c PROPERTIES COMPILE_OPTIONS "${SLB_OMP_FLAGS}")
  target_link_libraries(sl-bench PRIVATE ${SLB_OMP_LIBS})
  target_compile_definitions(sl-bench PRIVATE SLB_HAVE_GOMP=1
                             SLB_OMP_RUNTIME="${SLB_OMP_RUNTIME}")
  message(STATUS "sl-bench exec: peer OpenMP tasks (${SLB_OMP_RUNTIME}): found")
else()
  message(STATUS "sl-bench exec: peer OpenMP tasks: no OpenMP for this compiler, skipped")
endif()

# LLVM's libomp cannot share a process with libgomp, so its contender is a
# helper executable next to sl-bench, built by clang, that sl-bench starts
# once and drives over a pipe (exec_omp_helper.c). Built when clang can
# compile and link an OpenMP program against libomp; a clang build of
# sl-bench already has libomp in process and needs no helper.
set(SLB_HELPER_OK FALSE)
if(NOT CMAKE_C_COMPILER_ID STREQUAL "Clang")
  find_program(SLB_CLANG NAMES clang clang-19 clang-18 clang-17 clang-16 clang-15 clang-14)
  if(SLB_CLANG)
    set(SLB_PROBE_DIR ${CMAKE_CURRENT_BINARY_DIR}/omp_llvm_probe)
    file(MAKE_DIRECTORY ${SLB_PROBE_DIR})
    file(WRITE ${SLB_PROBE_DIR}/probe.c
         "#include <omp.h>\nint main(void) { return omp_get_max_threads() > 0 ? 0 : 1; }\n")
    execute_process(
      COMMAND ${SLB_CLANG} -fopenmp=libomp probe.c -o probe
      WORKING_DIRECTORY ${SLB_PROBE_DIR}
      RESULT_VARIABLE SLB_PROBE_RC OUTPUT_QUIET ERROR_QUIET)
    if(SLB_PROBE_RC EQUAL 0)
      set(SLB_HELPER_OK TRUE)
    endif()
  endif()
endif()
if(SLB_HELPER_OK)
  set(SLB_HELPER ${CMAKE_CURRENT_BINARY_DIR}/sl-bench-omp-llvm)
  set(SLB_HELPER_SOURCES exec_omp_helper.c exec_omp.c)
  # The same optimisation as the default preset (RelWithDebInfo) and the
  # project's strict warnings; clang compiles only the OpenMP code, the
  # kernels are the ones sl-bench has.
  add_custom_command(
    OUTPUT ${SLB_HELPER}
    COMMAND ${SLB_CLANG} -std=c11 -O2 -g -DNDEBUG -fopenmp=libomp ${SLUICE_WARNINGS}
            ${SLB_HELPER_SOURCES} $<TARGET_FILE:slb_exec_kernels> -lm -o ${SLB_HELPER}
    DEPENDS ${SLB_HELPER_SOURCES} slb_exec_kernels exec_bench.h exec_omp.h exec_uts.h
    WORKING_DIRECTORY ${CMAKE_CURRENT_SOURCE_DIR}
    COMMENT "Building the LLVM libomp helper sl-bench-omp-llvm with clang"
    VERBATIM)
  add_custom_target(sl-bench-omp-llvm DEPENDS ${SLB_HELPER})
  add_dependencies(sl-bench sl-bench-omp-llvm)
  message(STATUS "sl-bench exec: peer OpenMP tasks (LLVM libomp, helper process): found")
else()
  message(STATUS "sl-bench exec: peer OpenMP tasks (LLVM libomp): no clang with libomp, "
                 "skipped (Debian: clang libomp-dev)")
endif()

# The smoke test: tiny sizes of every workload for every contender, so that
# each one's result check runs in ctest. It asserts correctness, never speed.
add_test(NAME bench_exec_smoke
  COMMAND sl-bench exec --quick --seed 1 --csv ${CMAKE_CURRENT_BINARY_DIR}/exec_smoke.csv)
set_tests_properties(bench_exec_smoke PROPERTIES LABELS bench TIMEOUT 300)
