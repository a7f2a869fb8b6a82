#!/usr/bin/env bash
# tests/model/run.sh — model-checks the parking and close protocols (under
# sequential consistency, and the SPSC paths under x86-TSO) and the ring of
# stamped cells and SL_LIST's slots and segments, and the epoch records'
# announcement under x86-TSO, with spin.
#
#   run.sh                the default checks (exhaustive, ~1 min of CPU in all)
#   MODEL_FULL=1 run.sh   also the larger configurations (about half an hour
#                         on 2 cores; up to 8 GB a check)
#   MODEL_BUG=BUG_X run.sh
#                         the same checks with one planted bug compiled in
#                         (see the BUG_ lists in park.pml, eventcount.pml,
#                         close.pml, cellring.pml, list.pml, tso.pml,
#                         epoch.pml): failures are
#                         then expected
#   run.sh --mutants      every planted bug in turn, on the checks of the model
#                         it applies to; reports which check catches it, and
#                         fails if a bug that must be caught is not
#   run.sh --cover        every REACHED(n) mark in the models must be reachable
#                         (the checks are not vacuous)
#
# Each check: spin -a, cc, then pan, exhaustively (no bit-state hashing). A
# check passes when pan reports "errors: 0" and neither the depth bound nor
# the memory bound cut the search. Environment: SPIN (default spin), CC
# (default cc), MODEL_JOBS (checks run at once, default nproc), MODEL_MEM
# (pan's memory bound in MB per check, default 2048), MODEL_HASH (pan -w,
# default 24), MODEL_CFLAGS (for pan.c), MODEL_ONLY (only the checks whose
# name contains this), MODEL_KEEP=1 (keep the work folders; a failure names
# its folder).
# Prints one line per check and finally "model: N passed, M failed".
set -u

here=$(cd "$(dirname "$0")" && pwd)
SPIN=${SPIN:-spin}
CC=${CC:-cc}
MEM=${MODEL_MEM:-2048}
JOBS=${MODEL_JOBS:-$(nproc 2>/dev/null || echo 2)}
HASH=${MODEL_HASH:-24}
DEPTH=20000
# pan.c at -O0: it compiles in under a second, and the search is bound by
# hashing and memory, not by the code (clang -O2 ran ec-1s2r no faster).
# Not gcc -O2: gcc 12 miscompiles pan.c for park.pml, whose checks then
# report assertion violations whose trails replay clean in spin -t.
CFLAGS_PAN=${MODEL_CFLAGS:--O0}

if ! command -v "$SPIN" >/dev/null 2>&1; then
    echo "model: spin not found (set SPIN=...)" >&2
    exit 2
fi

tmp=$(mktemp -d "${TMPDIR:-/tmp}/sluice-model.XXXXXX")
trap '[ "${MODEL_KEEP:-0}" = 1 ] || rm -rf "$tmp"' EXIT

# run_check NAME MODEL "DEFINES" KIND "EXTRA DEFINES" DIR
#   KIND: safety            assertions + invalid end states (deadlocks)
#         progress          non-progress cycles (pan -l; the model's progress
#                           labels), no fairness, plus the assertions
#         ltl:PROP          the never claim PROP, acceptance cycles, no fairness
#         ltlfair:PROP      the same under weak fairness (pan -f)
# Writes DIR/result: "pass" or "fail", a tab, then a summary or pan's first
# error line.
run_check() {
    local name=$1 model=$2 defs=$3 kind=$4 extra=$5 dir=$6
    mkdir -p "$dir"
    cp "$here"/*.pml "$dir"/
    local ccflags="$CFLAGS_PAN -DMEMLIM=$MEM -DVECTORSZ=2048"
    local panflags="-m$DEPTH -w$HASH"
    case $kind in
    safety) ccflags="$ccflags -DSAFETY -DNOCLAIM" ;;
    progress) ccflags="$ccflags -DNP" panflags="$panflags -l" ;;
    ltl:*) panflags="$panflags -a -N ${kind#ltl:}" ;;
    ltlfair:*) panflags="$panflags -a -f -N ${kind#ltlfair:}" ;;
    esac
    local t0 t1
    t0=$(date +%s.%N)
    # shellcheck disable=SC2086
    if ! (cd "$dir" && "$SPIN" $defs $extra -a "$model" >spin.out 2>&1); then
        printf 'fail\tspin -a failed: %s\n' "$(tail -n 3 "$dir/spin.out" | tr '\n' ' ')" >"$dir/result"
        return
    fi
    # shellcheck disable=SC2086
    if ! (cd "$dir" && $CC $ccflags -o pan pan.c >cc.out 2>&1); then
        printf 'fail\tcc failed: %s\n' "$(tail -n 3 "$dir/cc.out" | tr '\n' ' ')" >"$dir/result"
        return
    fi
    # shellcheck disable=SC2086
    (cd "$dir" && ./pan $panflags >pan.out 2>&1)
    t1=$(date +%s.%N)
    local out="$dir/pan.out" errors states secs line
    errors=$(sed -n 's/.*errors: \([0-9][0-9]*\).*/\1/p' "$out" | head -n 1)
    states=$(sed -n 's/^ *\([0-9.e+]*\) states, stored.*/\1/p' "$out" | head -n 1)
    secs=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", b - a }')
    if [ "$errors" = 0 ] && ! grep -q -e "max search depth too small" \
        -e "reached -DMEMLIM" -e "out of memory" "$out"; then
        printf 'pass\t%s states, %ss\n' "$states" "$secs" >"$dir/result"
    else
        line=$(grep -m 1 -e '^pan:[0-9]*:' -e 'max search depth too small' \
            -e 'reached -DMEMLIM' -e 'out of memory' "$out")
        [ -n "$line" ] || line="errors: ${errors:-?}"
        local where=""
        [ "${MODEL_KEEP:-0}" = 1 ] && where=" ($dir)"
        printf 'fail\t%s [%s states, %ss]%s\n' "$line" "$states" "$secs" "$where" >"$dir/result"
    fi
}

# The checks: name | model | defines | kinds
checks_default=(
    # eventcount: one sender (2 messages), a blocking and a timed receiver,
    # one spurious wake-up
    "ec-1s2r|eventcount.pml||safety ltlfair:no_lost_wakeup ltl:terminates"
    # eventcount: a blocking and a timed sender (1 message each), one receiver
    "ec-2s1r|eventcount.pml|-DNS=2 -DNR=1 -DMSGS=1|safety ltlfair:no_lost_wakeup ltl:terminates"
    # the eventcount without the channel's count of unwoken sleepers (the
    # public sl_event, a shared channel's)
    "ec-1s2r-uncounted|eventcount.pml|-DUNCOUNTED|safety ltlfair:no_lost_wakeup"
    # close: one sender, two receivers, a closer
    "close-1s2r|close.pml||safety ltlfair:no_hang"
    # close: a sender blocked on a full buffer at the close (2 messages)
    "close-1s1r-full|close.pml|-DNR=1 -DMSGS=2|safety ltlfair:no_hang ltl:terminates"
    # close: two senders on two in-flight slots, two buffer slots
    "close-2s1r|close.pml|-DNS=2 -DNR=1 -DCAP=2|safety ltlfair:no_hang"
    # the ring of stamped cells: NAME-cCAP-PxM-CxK is P producers of M
    # messages, C consumers of K try-pops each, then a drain at rest; -ow-:
    # displacing pushes (the overwrite ring); -wrap: the positions wrap
    "cellring-c1-2x2-1x2|cellring.pml|-DCAP=1 -DMSGS=2 -DNC=1 -DPOPS=2|safety progress"
    "cellring-c2-2x2-1x2-wrap|cellring.pml|-DCAP=2 -DMSGS=2 -DNC=1 -DPOPS=2 -DBASE=56|safety progress"
    "cellring-c1-2x1-2x2|cellring.pml|-DCAP=1 -DMSGS=1 -DNC=2 -DPOPS=2|safety"
    "cellring-c2-2x1-2x2|cellring.pml|-DCAP=2 -DMSGS=1 -DNC=2 -DPOPS=2|safety"
    "cellring-ow-c1-2x1-2x2|cellring.pml|-DDISPLACE -DCAP=1 -DMSGS=1 -DNC=2 -DPOPS=2|safety"
    "cellring-ow-c2-2x2-1x2-wrap|cellring.pml|-DDISPLACE -DCAP=2 -DMSGS=2 -DNC=1 -DPOPS=2 -DBASE=56|safety progress"
    "cellring-ow-c3-2x2-1x2|cellring.pml|-DDISPLACE -DCAP=3 -DMSGS=2 -DNC=1 -DPOPS=2|safety"
    # -swap-: SL_MPMC's swap form (slots swapped through the cells, spares)
    "cellring-swap-c1-2x2-1x2|cellring.pml|-DSWAP -DCAP=1 -DMSGS=2 -DNC=1 -DPOPS=2|safety progress"
    "cellring-swap-c2-2x1-2x2|cellring.pml|-DSWAP -DCAP=2 -DMSGS=1 -DNC=2 -DPOPS=2|safety"
    "cellring-swap-c2-2x2-1x2-wrap|cellring.pml|-DSWAP -DCAP=2 -DMSGS=2 -DNC=1 -DPOPS=2 -DBASE=56|safety progress"
    # SL_LIST's slots and segments: NAME-sSEG-PxM-CxK is SEG slots a
    # segment, P producers of M messages, C consumers of K try-pops each,
    # then a drain at rest; -nomem: a growing push's allocation may fail
    # (the second look, SL_ENOMEM)
    "list-s2-2x1-1x2|list.pml|-DSEG=2 -DNP=2 -DMSGS=1 -DNC=1 -DPOPS=2|safety progress"
    "list-s1-2x1-1x2-nomem|list.pml|-DSEG=1 -DNP=2 -DMSGS=1 -DNC=1 -DPOPS=2 -DALLOC_FAIL|safety progress"
    # two producers growing past each segment at once, no consumer before
    # the drain: a spare put back while a failed allocation looks again
    "list-s1-2x2-0x0-nomem|list.pml|-DSEG=1 -DNP=2 -DMSGS=2 -DNC=0 -DALLOC_FAIL|safety progress"
    "list-s2-1x2-2x1|list.pml|-DSEG=2 -DNP=1 -DMSGS=2 -DNC=2 -DPOPS=1|safety"
    "list-s1-1x2-2x1|list.pml|-DSEG=1 -DNP=1 -DMSGS=2 -DNC=2 -DPOPS=1|safety"
    # the SPSC channel's send and receive paths and the parking handshake
    # under x86-TSO (store buffers), asymmetric (membarrier) and fence mode:
    # one sender of 2 messages, one receiver, capacity 1 (both sides park);
    # -close: one message and a closer at any moment
    "tso-asym|tso.pml|-DASYM|safety"
    "tso-fence|tso.pml||safety"
    "tso-asym-close|tso.pml|-DASYM -DCLOSER -DMSGS=1|safety"
    "tso-fence-close|tso.pml|-DCLOSER -DMSGS=1|safety"
    # the epoch records' announcement against a reclaimer's scan under
    # x86-TSO, asymmetric (membarrier) and fence mode: two operations in a
    # row, one reclaimer freeing the segment it unlinked
    "epoch-asym|epoch.pml|-DASYM|safety"
    "epoch-fence|epoch.pml||safety"
)
checks_full=(
    "ec-1s2r-timed|eventcount.pml|-DSENDER_TIMED|safety ltlfair:no_lost_wakeup"
    "ec-1s2r-3msg|eventcount.pml|-DMSGS=3|safety ltlfair:no_lost_wakeup"
    "ec-2s1r-2msg|eventcount.pml|-DNS=2 -DNR=1 -DMSGS=2|safety ltlfair:no_lost_wakeup"
    "close-1s2r-2msg|close.pml|-DMSGS=2|safety"
    "close-2s1r-cap1|close.pml|-DNS=2 -DNR=1 -DCAP=1|safety"
    "close-2s1r-sameslot|close.pml|-DNS=2 -DNR=1 -DCAP=2 -DSAME_SLOT|safety"
    "cellring-c1-2x2-2x2|cellring.pml|-DCAP=1 -DMSGS=2 -DNC=2 -DPOPS=2|safety"
    "cellring-c2-2x2-2x2|cellring.pml|-DCAP=2 -DMSGS=2 -DNC=2 -DPOPS=2|safety"
    "cellring-c3-2x2-1x2|cellring.pml|-DCAP=3 -DMSGS=2 -DNC=1 -DPOPS=2|safety progress"
    "cellring-c2-2x2-2x1|cellring.pml|-DCAP=2 -DMSGS=2 -DNC=2 -DPOPS=1|safety progress"
    "cellring-ow-c1-2x2-2x1|cellring.pml|-DDISPLACE -DCAP=1 -DMSGS=2 -DNC=2 -DPOPS=1|safety"
    "cellring-ow-c2-2x2-2x2|cellring.pml|-DDISPLACE -DCAP=2 -DMSGS=2 -DNC=2 -DPOPS=2|safety"
    "cellring-ow-c3-2x2-2x2|cellring.pml|-DDISPLACE -DCAP=3 -DMSGS=2 -DNC=2 -DPOPS=2|safety"
    "cellring-ow-c1-2x1-2x2-p|cellring.pml|-DDISPLACE -DCAP=1 -DMSGS=1 -DNC=2 -DPOPS=2|progress"
    "list-s1-2x1-2x1|list.pml|-DSEG=1 -DNP=2 -DMSGS=1 -DNC=2 -DPOPS=1|safety"
    "list-s2-2x1-2x1|list.pml|-DSEG=2 -DNP=2 -DMSGS=1 -DNC=2 -DPOPS=1|safety"
    "list-s1-2x2-1x1-nomem|list.pml|-DSEG=1 -DNP=2 -DMSGS=2 -DNC=1 -DPOPS=1 -DALLOC_FAIL|safety"
    "tso-asym-close-2msg|tso.pml|-DASYM -DCLOSER|safety"
    "tso-fence-close-2msg|tso.pml|-DCLOSER|safety"
    "tso-asym-c2-3msg|tso.pml|-DASYM -DCAP=2 -DMSGS=3|safety"
    "tso-fence-c2-3msg|tso.pml|-DCAP=2 -DMSGS=3|safety"
    "tso-asym-sb8-spurious|tso.pml|-DASYM -DSB=8 -DSPURIOUS=1|safety"
    "epoch-asym-3ops|epoch.pml|-DASYM -DOPS=3|safety"
    "epoch-fence-3ops|epoch.pml|-DOPS=3|safety"
)

# Runs a list of checks, JOBS at a time, then prints them in order and counts
# into passed/failed (caught_by: the first failure; broken: the failures of
# spin -a or cc, which are no verdict). $1: extra spin defines,
# $2: only checks of this model (empty: all), rest: the check specs.
passed=0
failed=0
broken=0
caught_by=""
batch=0
run_list() {
    local extra=$1 only=$2
    shift 2
    local spec name model defs kinds kind i=0 running=0
    local -a dirs=() labels=()
    batch=$((batch + 1))
    for spec in "$@"; do
        IFS='|' read -r name model defs kinds <<<"$spec"
        [ -z "$only" ] || [ "$only" = "$model" ] || continue
        [ -z "${MODEL_ONLY:-}" ] || [[ $name == *"$MODEL_ONLY"* ]] || continue
        for kind in $kinds; do
            i=$((i + 1))
            local dir="$tmp/$batch-$i-$name-${kind//:/-}"
            dirs+=("$dir")
            labels+=("$(printf '%-28s %-22s' "$name" "$kind")")
            if [ "$running" -ge "$JOBS" ]; then
                wait -n
                running=$((running - 1))
            fi
            run_check "$name" "$model" "$defs" "$kind" "$extra" "$dir" &
            running=$((running + 1))
        done
    done
    wait
    local k res line
    for k in "${!dirs[@]}"; do
        if [ -f "${dirs[$k]}/result" ]; then
            IFS=$'\t' read -r res line <"${dirs[$k]}/result"
        else
            res=fail
            line="no result"
        fi
        if [ "$res" = pass ]; then
            passed=$((passed + 1))
            echo "  ok    ${labels[$k]} $line"
        else
            failed=$((failed + 1))
            case $line in "spin -a failed"* | "cc failed"*) broken=$((broken + 1)) ;; esac
            echo "  FAIL  ${labels[$k]} $line"
            [ -n "$caught_by" ] || caught_by="$(echo "${labels[$k]}" | tr -s ' ') $line"
        fi
    done
}

all_checks=("${checks_default[@]}")
if [ "${MODEL_FULL:-0}" = 1 ]; then
    all_checks+=("${checks_full[@]}")
    # up to ~150 million states (close-1s2r-2msg: 152.8 million, past 4 GB
    # even compressed; 518 s): compress them (COLLAPSE), 8 GB per check
    CFLAGS_PAN=${MODEL_CFLAGS:--O0 -DCOLLAPSE}
    HASH=${MODEL_HASH:-26}
    MEM=${MODEL_MEM:-8192}
fi

if [ "${1:-}" = "--cover" ]; then
    # REACHED(n) in the models: each must be reachable in the default
    # configurations (the safety check with -DCOVER=n must fail there).
    covers=(
        "1|eventcount.pml|FUTEX_WAKE(1) dequeues a sleeper"
        "2|eventcount.pml|FUTEX_WAKE(all) (close) dequeues sleepers"
        "3|eventcount.pml|FUTEX_WAIT finds the epoch moved (EAGAIN)"
        "4|eventcount.pml|a spurious futex return"
        "5|eventcount.pml|FUTEX_WAIT times out (ETIMEDOUT)"
        "6|eventcount.pml|F3: after its futex returned, a timed waiter finds the epoch moved"
        "7|eventcount.pml|W3: the re-check after prepare succeeds (cancel)"
        "8|eventcount.pml|W5: sl_event_wait timed out, yet the final attempt succeeds"
        "9|eventcount.pml|W5: timed out, the final attempt fails: SL_TIMEDOUT"
        "10|eventcount.pml|W5: woken, another thread won: park again"
        "11|eventcount.pml|N3u: waiters registered, no sleeper unwoken: no FUTEX_WAKE"
        "2|close.pml|close wakes sleepers (FUTEX_WAKE all)"
        "21|close.pml|S2: a sender sees closed: SL_CLOSED"
        "22|close.pml|S5: an unmark after the close wakes receivers"
        "23|close.pml|R3: drained: SL_CLOSED at once"
        "25|close.pml|R5: closed, a sender in flight: SL_EMPTY"
        "26|close.pml|R6: the last look finds a message"
        "31|cellring.pml|P2: a push answers SL_FULL"
        "32|cellring.pml|P2: the push's walk steps over a done cell"
        "33|cellring.pml|P4: the double-width CAS fails (another push won the cell)"
        "34|cellring.pml|C2: a pop answers SL_EMPTY"
        "35|cellring.pml|C4: the take fails (another pop, or a displacement, won)"
        "36|cellring.pml|C2: the pop's walk steps over a taken cell"
        "37|cellring.pml|W, P6: the tail's move finds it there already (another thread moved it)"
        "38|cellring.pml|P4: a displacing push takes the oldest message"
        "39|cellring.pml|P5: the head CAS fails (the head is not at the displaced position)"
        "40|cellring.pml|C4: a pop loses its message to a displacing push"
        "41|cellring.pml|at rest a counter lags behind its front (inside its line)"
        "42|cellring.pml|W, C5: the head's move finds it there already (another thread moved it)"
        "43|cellring.pml|S0: a swap-form push answers SL_FULL before taking a spare"
        "44|cellring.pml|S1: a swap-form push finds every spare held"
        "71|list.pml|L4: a push finds its slot poisoned"
        "72|list.pml|G3: a push loses the link CAS to another push"
        "73|list.pml|Q3: a pop finds slot deq taken (its deq was stale)"
        "74|list.pml|T1: a pop claims a slot whose producer has not published"
        "75|list.pml|W: the exchange finds the message published while the pop waited"
        "76|list.pml|W: the exchange poisons the slot"
        "77|list.pml|A1: a pop finds the head segment used up and no next: SL_EMPTY"
        "78|list.pml|E1: slot deq unpublished but claimed by a push: the pop claims it"
        "79|list.pml|E2: slot deq unclaimed, a next segment exists: the pop claims it"
        "80|list.pml|Lb: a push's claim loses its CAS to another push's"
        "81|list.pml|Q4: a pop's claim loses its CAS to another pop's"
        "85|list.pml|G2a: a growing push takes the spare a lost link put back"
        "86|list.pml|G6: after a failed allocation, the second look finds a segment another push linked"
        "87|list.pml|G7: no segment at the second look, no spare: SL_ENOMEM"
        "88|list.pml|G7: no segment at the second look, but a spare put back meanwhile"
        "51|tso.pml|N2: the sender reads no waiter while its tail store is still buffered"
        "52|tso.pml|W1: the membarrier drains another thread's non-empty store buffer"
        "53|tso.pml|W3: the re-check after prepare succeeds (cancel)"
        "54|tso.pml|N4: FUTEX_WAKE dequeues a sleeper"
        "55|tso.pml|F2: FUTEX_WAIT finds the epoch moved (EAGAIN)"
        "56|tso.pml|S3: the ring is full: SL_FULL (the sender parks)"
        "57|tso.pml|S2: the sender sees closed: SL_CLOSED"
        "58|tso.pml|R5: closed, after the barrier the sender's flag is set: SL_EMPTY"
        "59|tso.pml|R6: the last look after the close finds a message"
        "60|tso.pml|R4: the sender's mark (flag = 1) is still buffered at the receiver's barrier"
        "61|tso.pml|R4: the receiver's membarrier drains the sender's non-empty store buffer"
        "81|epoch.pml|E4: an operation uses the segment it loaded as its root"
        "82|epoch.pml|U4: the scan's membarrier drains a buffered announcement"
        "83|epoch.pml|U5: the reclaimer frees the segment"
    )
    safety_only=()
    for spec in "${all_checks[@]}"; do
        IFS='|' read -r name model defs kinds <<<"$spec"
        safety_only+=("$name|$model|$defs|safety")
    done
    # A mark whose model has no check left under MODEL_ONLY is skipped.
    missed=0
    skipped=0
    for c in "${covers[@]}"; do
        IFS='|' read -r id model what <<<"$c"
        passed=0
        failed=0
        caught_by=""
        run_list "-DCOVER=$id" "$model" "${safety_only[@]}" >/dev/null
        if [ $((passed + failed)) = 0 ]; then
            skipped=$((skipped + 1))
        elif [ "$failed" -gt 0 ] && [[ $caught_by == *"assertion violated"* ]]; then
            printf '  reached      %-3s %-15s %s\n' "$id" "$model" "$what"
        else
            printf '  NOT REACHED  %-3s %-15s %s\n' "$id" "$model" "$what"
            missed=$((missed + 1))
        fi
    done
    note=""
    [ "$skipped" = 0 ] || note=", $skipped skipped (MODEL_ONLY)"
    echo "model cover: $((${#covers[@]} - skipped - missed)) reached, $missed not reached$note"
    [ "$missed" = 0 ]
    exit
fi

if [ "${1:-}" = "--mutants" ]; then
    # bug | model | must be caught (1) or not expected to be (0)
    mutants=(
        "BUG_LOAD_BEFORE_CHANGE|eventcount.pml|1"
        "BUG_NO_RECHECK|eventcount.pml|1"
        "BUG_WAKE_BEFORE_BUMP|eventcount.pml|1"
        "BUG_TIMEOUT_NO_RETRY|eventcount.pml|0"
        "BUG_CLOCK_FIRST|eventcount.pml|0"
        "BUG_TIMEOUT_NO_RETRY -DBUG_CLOCK_FIRST|eventcount.pml|1"
        "BUG_KEY_FIRST|eventcount.pml|0"
        "BUG_CLOSE_NOTIFY_ONE|eventcount.pml|1"
        "BUG_UNWOKEN_TWICE|eventcount.pml|1"
        "BUG_SLEEPER_UNCOUNTED|eventcount.pml|1"
        "BUG_UNWOKEN_TWICE -DNO_COUNT_INVARIANT|eventcount.pml|1"
        "BUG_SLEEPER_UNCOUNTED -DNO_COUNT_INVARIANT|eventcount.pml|1"
        "BUG_NO_MARK|close.pml|1"
        "BUG_MARK_AFTER_CHECK|close.pml|1"
        "BUG_NO_LAST_LOOK|close.pml|1"
        "BUG_UNMARK_NO_NOTIFY|close.pml|1"
        "BUG_SPLIT_PUBLISH|cellring.pml|1"
        "BUG_FREE_BEFORE_READ|cellring.pml|1"
        "BUG_HEAD_WALKS_WRITTEN|cellring.pml|1"
        "BUG_STALE_HELP|cellring.pml|1"
        "BUG_NO_HELP|cellring.pml|1"
        "BUG_DISPLACE_NO_HEAD|cellring.pml|1"
        "BUG_COPY_AFTER_TAKE|cellring.pml|1"
        "BUG_SPARE_BACK_EARLY|cellring.pml|1"
        "BUG_POISON_BY_STORE|list.pml|1"
        "BUG_TAKE_EMPTY_BY_STORE|list.pml|1"
        "BUG_OK_AFTER_POISON|list.pml|1"
        "BUG_NEW_SEG_ENQ_ZERO|list.pml|1"
        "BUG_EMPTY_NO_ENQ|list.pml|1"
        "BUG_CLAIM_UNCHECKED|list.pml|1"
        "BUG_ENOMEM_FIRST_LOOK|list.pml|1"
        "BUG_NO_MEMBARRIER|tso.pml|1"
        "BUG_NO_MEMBARRIER -DSC|tso.pml|0"
        "BUG_SEND_NO_FENCE|tso.pml|1"
        "BUG_SEND_NO_FENCE -DSC|tso.pml|0"
        "BUG_POP_NO_FENCE|tso.pml|1"
        "BUG_POP_NO_FENCE -DSC|tso.pml|0"
        "BUG_NO_CLOSE_BARRIER|tso.pml|1"
        "BUG_NO_CLOSE_BARRIER -DSC|tso.pml|0"
        "BUG_NO_CLOSE_BARRIER -DCLOSE_BARRIER|tso.pml|1"
        "BUG_TAIL_FIRST|tso.pml|1"
        "BUG_SCAN_UNFENCED|epoch.pml|1"
        "BUG_SCAN_UNFENCED -DSC|epoch.pml|0"
        "BUG_ANNOUNCE_UNFENCED|epoch.pml|1"
        "BUG_ANNOUNCE_UNFENCED -DSC|epoch.pml|0"
    )
    # A mutant that does not build is a broken switch, not a caught bug; one
    # whose model has no check left under MODEL_ONLY is skipped.
    bad=0
    skipped=0
    for m in "${mutants[@]}"; do
        IFS='|' read -r bug model must <<<"$m"
        passed=0
        failed=0
        broken=0
        caught_by=""
        run_list "-D$bug" "$model" "${all_checks[@]}" >"$tmp/mutant.out"
        if [ $((passed + failed)) = 0 ]; then
            skipped=$((skipped + 1))
            continue
        fi
        echo "mutant -D$bug ($model):"
        cat "$tmp/mutant.out"
        if [ "$broken" -gt 0 ]; then
            echo "  => does not build"
            bad=$((bad + 1))
            continue
        fi
        if [ "$failed" -gt 0 ]; then
            echo "  => caught: $caught_by"
        else
            echo "  => not caught"
        fi
        if [ "$must" = 1 ] && [ "$failed" = 0 ]; then bad=$((bad + 1)); fi
    done
    note=""
    [ "$skipped" = 0 ] || note=", $skipped skipped (MODEL_ONLY)"
    echo "model mutants: $((${#mutants[@]} - skipped - bad)) as expected, $bad escaped or broken$note"
    [ "$bad" = 0 ]
    exit
fi

extra=""
if [ -n "${MODEL_BUG:-}" ]; then
    extra="-D$MODEL_BUG"
    echo "model: with the planted bug $MODEL_BUG (failures expected)"
fi
run_list "$extra" "" "${all_checks[@]}"
echo "model: $passed passed, $failed failed"
[ "$failed" = 0 ]
