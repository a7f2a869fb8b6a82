# Builds one of the peers that run in their own process (bench/remote.c);
# run by a custom command of bench/remote.cmake as
#   cmake -DLANG=rust|go -DSRC=<its sources> -DWORK=<its build directory>
#         -DOUT=<the program, next to sl-bench> -DTOOL=<cargo or go>
#         [-DREGISTRY=<crate directory registry> -DRUSTC=<rustc>] -P build_peer.cmake
# Everything it writes is under WORK; nothing is downloaded. A failure does
# not fail sl-bench's build: it says so loudly and leaves no program, and
# sl-bench then skips the peer with a line saying why.
file(REMOVE ${OUT} ${WORK}/built.stamp)
if(LANG STREQUAL "rust")
  # The crate is built from a copy: cargo writes Cargo.lock next to
  # Cargo.toml, and takes the offline directory registry (Debian's crate
  # sources) from .cargo/config.toml in the directory it runs in.
  file(REMOVE_RECURSE ${WORK}/crate/src)
  file(COPY ${SRC}/Cargo.toml ${SRC}/src DESTINATION ${WORK}/crate)
  file(WRITE ${WORK}/crate/.cargo/config.toml
       "[source.crates-io]\nreplace-with = \"debian\"\n\n"
       "[source.debian]\ndirectory = \"${REGISTRY}\"\n")
  set(ENV{CARGO_TARGET_DIR} ${WORK}/target)
  # The rustc CMake checked, not whichever comes first on PATH.
  set(ENV{RUSTC} ${RUSTC})
  execute_process(COMMAND ${TOOL} build --release --offline --quiet
                  WORKING_DIRECTORY ${WORK}/crate RESULT_VARIABLE rc)
  set(built ${WORK}/target/release/sl-peer-rust)
else()
  # Standard library only: no module download, no cgo; the build cache is
  # ours, not the user's.
  set(ENV{GOCACHE} ${WORK}/cache)
  set(ENV{GOPATH} ${WORK}/gopath)
  set(ENV{GOTOOLCHAIN} local)
  set(ENV{GOPROXY} off)
  set(ENV{GOFLAGS} "")
  set(ENV{CGO_ENABLED} 0)
  execute_process(COMMAND ${TOOL} build -o ${WORK}/sl-peer-go .
                  WORKING_DIRECTORY ${SRC} RESULT_VARIABLE rc)
  set(built ${WORK}/sl-peer-go)
endif()
if(NOT rc EQUAL 0)
  message(WARNING "sl-bench: building ${OUT} with ${TOOL} failed (${rc}); sl-bench "
                  "will skip its peers. The C build is not affected.")
  return()
endif()
file(COPY_FILE ${built} ${OUT})
file(TOUCH ${WORK}/built.stamp)
