# The peers that run in their own process (bench/remote.c): crossbeam-channel
# and flume in sl-peer-rust (bench/peers/rust), Go's channels in sl-peer-go
# (bench/peers/go). Included from bench/CMakeLists.txt.
#
# Each program is built by its own toolchain, offline, under this build
# directory (peers/build_peer.cmake), and placed next to sl-bench, which
# starts it for every run. Like every peer they are optional: a missing
# toolchain or crate is reported here and by `sl-bench chan`, and sl-bench
# depends on a program's target only when it was found, so a machine
# without them builds and tests exactly as before.

set(SLB_PEER_SCRIPT ${CMAKE_CURRENT_SOURCE_DIR}/peers/build_peer.cmake)

# Adds the custom target that builds program `name`; sl-bench depends on it.
function(slb_process_peer name lang tool what)
  cmake_parse_arguments(P "" "REGISTRY;RUSTC" "SOURCES" ${ARGN})
  set(work ${CMAKE_CURRENT_BINARY_DIR}/${lang})
  add_custom_command(
    OUTPUT ${work}/built.stamp
    BYPRODUCTS ${CMAKE_CURRENT_BINARY_DIR}/${name}
    COMMAND ${CMAKE_COMMAND} -DLANG=${lang} -DSRC=${CMAKE_CURRENT_SOURCE_DIR}/peers/${lang}
            -DWORK=${work} -DOUT=${CMAKE_CURRENT_BINARY_DIR}/${name} -DTOOL=${tool}
            -DREGISTRY=${P_REGISTRY} -DRUSTC=${P_RUSTC} -P ${SLB_PEER_SCRIPT}
    DEPENDS ${P_SOURCES} ${SLB_PEER_SCRIPT}
    COMMENT "Building ${name} (${what}) with ${tool}, offline"
    VERBATIM)
  add_custom_target(${name} DEPENDS ${work}/built.stamp)
  add_dependencies(sl-bench ${name})
endfunction()

# The version a tool prints, e.g. "1.63.0" from "rustc 1.63.0 (...)".
function(slb_tool_version tool regex out)
  execute_process(COMMAND ${tool} version OUTPUT_VARIABLE text ERROR_QUIET)
  if(NOT text)
    execute_process(COMMAND ${tool} --version OUTPUT_VARIABLE text ERROR_QUIET)
  endif()
  string(REGEX MATCH "${regex}" _ "${text}")
  set(${out} "${CMAKE_MATCH_1}" PARENT_SCOPE)
endfunction()

# ---- Rust: crossbeam-channel and flume, from Debian's crate sources ----
set(SLB_CARGO_REGISTRY /usr/share/cargo/registry CACHE PATH
    "Directory registry with the crate sources of crossbeam-channel and flume")
find_program(SLB_CARGO cargo)
find_program(SLB_RUSTC rustc)
file(GLOB SLB_CB_CRATE LIST_DIRECTORIES true ${SLB_CARGO_REGISTRY}/crossbeam-channel-0.5.*)
file(GLOB SLB_FLUME_CRATE LIST_DIRECTORIES true ${SLB_CARGO_REGISTRY}/flume-0.1[01].*)
if(SLB_RUSTC)
  slb_tool_version(${SLB_RUSTC} "rustc ([0-9]+\\.[0-9]+)" SLB_RUSTC_VERSION)
endif()
set(SLB_RUST_WHY "")
if(NOT SLB_CARGO OR NOT SLB_RUSTC)
  set(SLB_RUST_WHY "no cargo and rustc (Debian: rustc cargo)")
elseif(SLB_RUSTC_VERSION VERSION_LESS 1.63)
  set(SLB_RUST_WHY "rustc ${SLB_RUSTC_VERSION} is older than 1.63")
elseif(NOT SLB_CB_CRATE OR NOT SLB_FLUME_CRATE)
  string(CONCAT SLB_RUST_WHY "crossbeam-channel 0.5 and flume 0.10/0.11 are not both in "
         "${SLB_CARGO_REGISTRY} (Debian: librust-crossbeam-channel-dev librust-flume-dev)")
endif()
if(SLB_RUST_WHY STREQUAL "")
  # Globbed, so that a new module cannot be left out of the rebuild (a
  # listed set once missed select.rs, and an edit there left a stale program).
  file(GLOB SLB_RUST_SOURCES CONFIGURE_DEPENDS
       ${CMAKE_CURRENT_SOURCE_DIR}/peers/rust/src/*.rs)
  slb_process_peer(sl-peer-rust rust ${SLB_CARGO} "crossbeam-channel, flume"
    REGISTRY ${SLB_CARGO_REGISTRY} RUSTC ${SLB_RUSTC}
    SOURCES peers/rust/Cargo.toml ${SLB_RUST_SOURCES})
  target_compile_definitions(sl-bench PRIVATE SLB_HAVE_RUST=1)
  message(STATUS "sl-bench: peers crossbeam-channel, flume (Rust ${SLB_RUSTC_VERSION}, own "
                 "process): found")
else()
  message(STATUS "sl-bench: peers crossbeam-channel, flume: ${SLB_RUST_WHY}; skipped")
endif()

# ---- Go: channels, standard library only --------------------------------
find_program(SLB_GO go)
if(SLB_GO)
  slb_tool_version(${SLB_GO} "go([0-9]+\\.[0-9]+)" SLB_GO_VERSION)
endif()
if(SLB_GO AND SLB_GO_VERSION VERSION_GREATER_EQUAL 1.19)
  # Globbed, as the Rust sources are (select.go was once left out).
  file(GLOB SLB_GO_SOURCES CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/peers/go/*.go
       ${CMAKE_CURRENT_SOURCE_DIR}/peers/go/*.s)
  slb_process_peer(sl-peer-go go ${SLB_GO} "Go channels"
    SOURCES peers/go/go.mod ${SLB_GO_SOURCES})
  target_compile_definitions(sl-bench PRIVATE SLB_HAVE_GO=1)
  message(STATUS "sl-bench: peer Go channels (Go ${SLB_GO_VERSION}, own process): found")
elseif(SLB_GO)
  message(STATUS "sl-bench: peer Go channels: ${SLB_GO} is not Go 1.19 or newer "
                 "('${SLB_GO_VERSION}'); skipped")
else()
  message(STATUS "sl-bench: peer Go channels: no go, skipped (Debian: golang-go)")
endif()
