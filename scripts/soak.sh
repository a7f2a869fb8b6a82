#!/usr/bin/env bash
# scripts/soak.sh — the stress suites again and again, larger than `make test`
# runs them, until a time limit: for the rare interleavings a CI run does not
# reach (a process killed inside a reclaim took 65 runs of stress_shm's kill
# loop under ThreadSanitizer to show).
#
#   scripts/soak.sh [--minutes M] [--scale S] [--presets "default asan tsan faults"]
#                   [--suites "stress_raw stress_shm ..."]
#
# Each round runs every suite in every preset's build (built first, as
# `make test-PRESET` would build it) with its own seed (SL_STRESS_SEED), the
# suites' sizes multiplied by S (SL_STRESS_SCALE, default 2; stress_park's
# time budget, SL_STRESS_PARK_S, too), and producer,
# consumer and worker counts that change from round to round (2, 5 or 8, on
# however many cores there are: the oversubscription is the point). Check's
# time limits are four times the usual. A failing run's last lines go to
# build/soak/FAIL-<preset>-<suite>-<seed>.txt, with the environment that
# replays it; the script goes on, and exits 1 at the end if anything failed.
# A suite that skips itself in a build (exit 77) is not a failure.
set -u
minutes=20 scale=2 presets="default asan tsan faults"
suites="stress_raw stress_flavors stress_chan stress_lincheck stress_shm stress_park stress_pool stress_exec stress_stall"
while [ $# -gt 0 ]; do
    case $1 in
    --minutes) minutes=$2; shift ;;
    --scale) scale=$2; shift ;;
    --presets) presets=$2; shift ;;
    --suites) suites=$2; shift ;;
    *) echo "usage: $0 [--minutes M] [--scale S] [--presets LIST] [--suites LIST]" >&2; exit 2 ;;
    esac
    shift
done
root=$(cd "$(dirname "$0")/.." && pwd)
out=$root/build/soak
mkdir -p "$out"
for p in $presets; do
    cmake --preset "$p" >/dev/null && cmake --build --preset "$p" -j "$(nproc)" >/dev/null ||
        { echo "soak: the $p build failed" >&2; exit 2; }
done
end=$(($(date +%s) + minutes * 60))
round=0 failed=0
base=$(date +%s)
while [ "$(date +%s)" -lt "$end" ]; do
    round=$((round + 1))
    seed=$((base + round))
    prod=$(((round % 3) * 3 + 2)) cons=$((((round + 1) % 3) * 3 + 2))
    for p in $presets; do
        for s in $suites; do
            exe=$root/build/$p/tests/$s
            [ -x "$exe" ] || continue
            env="SL_STRESS_SEED=$seed SL_STRESS_SCALE=$scale SL_STRESS_PRODUCERS=$prod"
            env="$env SL_STRESS_CONSUMERS=$cons SL_POOL_WORKERS=$((prod + 1))"
            env="$env SL_EXEC_WORKERS=$((cons + 1)) CK_TIMEOUT_MULTIPLIER=4"
            # stress_park's time budget (6 s a ping-pong), scaled too
            env="$env SL_STRESS_PARK_S=$(awk -v s="$scale" 'BEGIN { print int(6 * s + 0.5) }')"
            log=$(cd "$(dirname "$exe")" && env $env timeout 1800 "$exe" 2>&1)
            rc=$?
            echo "$(date +%T) round $round $p $s: exit $rc ($env)"
            # 77: the suite skips itself in this build (stress_stall needs
            # the faults build's SL_FI() marks).
            if [ $rc -ne 0 ] && [ $rc -ne 77 ]; then
                failed=$((failed + 1))
                { echo "replay: cd build/$p/tests && $env ./$s"; echo "$log" | tail -60; } \
                    >"$out/FAIL-$p-$s-$seed.txt"
            fi
        done
    done
done
echo "soak: $round rounds, $failed failed run(s)"
[ "$failed" -eq 0 ]
