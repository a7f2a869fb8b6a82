#!/usr/bin/env bash
# scripts/mutants.sh — the planted bugs, each compiled in and run against the
# check meant to catch it.
#
#   scripts/mutants.sh [--fast | --all | --only NAME] [--markdown | --update-doc]
#                      [--model] [--baseline]
#
#   --fast        the C mutants whose check catches them in seconds (make test
#                 runs these); the default
#   --all         every C mutant, and the Promela models' planted bugs
#                 (tests/model/run.sh --mutants, a few minutes)
#   --only NAME   one mutant (NAME as in the list below, without SL_MUTANT_)
#   --model       with --fast or --only: the model's planted bugs as well
#   --baseline    also run each check on the build without the mutant (it must
#                 pass there, or "caught" means nothing)
#   --markdown    print the table for docs/guarantees.md instead of the lines
#   --update-doc  rewrite the table in docs/guarantees.md in place, between
#                 its marker comments (every mutant unless a set is named)
#
# Each C mutant is a compile-time switch, SL_MUTANT_<NAME>, in the source of
# the algorithm (grep for it). How one is built, sharing everything else: the
# preset's own build tree (build/<preset>) is configured and the check's
# targets built there as usual (nothing to do after make test); then only the
# objects whose dependency files name the file holding the switch are
# recompiled with -DSL_MUTANT_<NAME>, with that target's flags, into
# build/mutant-<name>-<preset>-<target>/, and the check's executable is
# relinked there from the unchanged objects, a copy of libsluice.a with the
# changed members replaced, and the target's own link line. A switch that changes no object is reported
# as ESCAPED: a misspelt name cannot pass for a caught bug.
#
# Output: one line per mutant — name, check, caught / ESCAPED (expected) /
# ESCAPED, the first failing line, seconds — then a summary that names the
# escapes. A mutant that must be caught and escapes its check's run gets a
# second run (most checks meet their bug through a race); caught there, its
# verdict reads "caught (2nd run)". Exit status 1 when a mutant that must be
# caught escapes both runs (or its build fails).
# Mutants run MUTANT_LANES at a time (default 2), each in its own folder; a
# catch that only says a time limit passed, made beside another check, is
# confirmed by a run alone once every lane is done ("caught (alone)", listed
# last), as a slow correct check could have run out of time too.
# Environment: MUTANT_TIMEOUT (seconds per check, default 120), MUTANT_LANES,
# JOBS (build parallelism, default nproc).
set -u

root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root" || exit 2
JOBS=${JOBS:-$(nproc 2>/dev/null || echo 2)}
LIMIT=${MUTANT_TIMEOUT:-120}
LANES=${MUTANT_LANES:-2}

# The C mutants, one per line:
#   NAME | preset | target | environment for the check | arguments | must be
#   caught (1) or expected to escape (0) | fast (1: make test runs it) |
#   the planted bug, as the table shows it
# The check runs as `env ENV build/mutant-<name>-<preset>-<target>/TARGET ARGS`
# under a timeout.
# Suites narrow themselves to one Check test case with CK_RUN_CASE.
mutants=(
"MPMC_SPLIT_PUBLISH|faults|unit_mpmc|CK_RUN_CASE=threads CK_TIMEOUT_MULTIPLIER=0.2||1|1|a push claims the cell with a stamp CAS and writes the value afterwards (the window the double-width CAS closes)"
"MPMC_FREE_BEFORE_READ|faults|unit_mpmc|CK_RUN_CASE=threads CK_TIMEOUT_MULTIPLIER=0.2||1|1|a pop frees the cell for the next lap before reading its value"
"MPMC_COPY_AFTER_TAKE|faults|unit_mpmc|CK_RUN_CASE=threads CK_TIMEOUT_MULTIPLIER=0.2||1|1|MPMC swap form (9-256 bytes): a pop copies its slot out after taking the cell, when the next lap's pushes may be writing that slot"
"MPMC_STARVED_UNSAID|default|unit_mpmc|CK_RUN_CASE=starve||1|1|MPMC swap form: a push that finds no spare never raises the starved flag, so the give-back that ends its SL_FULL wakes no blocked sender"
"CHAN_UNMARK_NO_BELL|faults|unit_select|CK_RUN_CASE=close_in_flight CK_TIMEOUT_MULTIPLIER=0.5||1|1|a sender that unmarks after a close wakes the receivers on not_empty but rings no select bell: a selector whose look saw the close and that sender's mark (so answered empty) sleeps to its deadline"
"CHAN_RECORD_MARKS_UNREAD|faults|unit_select|CK_RUN_CASE=close_in_flight CK_TIMEOUT_MULTIPLIER=0.5||1|1|SL_MPMC, SL_LIST: a receiver deciding SL_CLOSED reads the in-flight counts but not the marks in the threads' records, so a sender past its closed-check that has still to push is not seen: the receiver says closed and drained, and the send then returns SL_OK with its message never received"
"MPMC_STARVED_SELECTORS_UNRUNG|default|unit_mpmc|CK_RUN_CASE=starve||1|1|MPMC swap form: the give-back that ends a SL_FULL said for want of a spare wakes the senders on not_full but rings no selector, so a select whose send case failed so sleeps on with room and a spare free"
"MPMC_SPARE_BACK_EARLY|faults|unit_mpmc|CK_RUN_CASE=threads CK_TIMEOUT_MULTIPLIER=0.2||1|1|MPMC swap form: a push puts the slot it just published back among the spares too, for another push to overwrite"
"CELLRING_HEAD_WALKS_WRITTEN|default|unit_mpmc|CK_RUN_CASE=sequential||1|1|a pop's walk from the lazy head steps over cells written for their position as well as taken ones (the tail's bound): it passes messages by and answers empty, or takes a later one"
"LIST_EARLY_FREE|asan|unit_list|CK_RUN_CASE=threads||1|1|SL_LIST frees a segment without waiting for threads still inside it"
"EPOCH_SCAN_UNFENCED|asan|unit_list|CK_RUN_CASE=threads||0|0|SL_LIST: a reclaimer scans the epoch records without the heavy barrier (membarrier), so an announcement still in its thread's store buffer is missed and the segment that thread is about to load is freed (a store-buffer window of nanoseconds: tests/model/epoch.pml's BUG_SCAN_UNFENCED catches it, not a C test)"
"EPOCH_ATFORK_LATE|default|unit_list|CK_RUN_CASE=reclaim||1|0|the fork handler is registered by the thread that created the record key, after publishing it: a thread that takes a record and enters an operation before the registration, with a fork in between, leaves the child its announcement and a fork count of 0, and the child never frees a segment again"
"LIST_IDLE_AT_BOUNDARY_KEEPS|default|unit_list|CK_RUN_CASE=reclaim||1|1|SL_LIST: a pop that finds the list empty because the head segment is used up with no next one (a burst drained exactly at a segment's end) skips the idle reclaim, so segments retired while another thread was inside stay allocated until the next growth"
"BCAST_WAIT_UNCOUNTED|default|unit_broadcast|CK_RUN_CASE=waking CK_TIMEOUT_MULTIPLIER=0.2||1|1|broadcast: a subscriber parks on the ring's event without counting itself among its unwoken sleepers, while sends wake only for counted ones: the send that should wake it makes no FUTEX_WAKE"
"LIST_POISON_BY_STORE|faults|unit_list|CK_RUN_CASE=threads CK_TIMEOUT_MULTIPLIER=0.2 SL_STRESS_SCALE=4||1|1|SL_LIST: a pop whose slot is still unpublished after its wait poisons it with a load and a store instead of an exchange (the plain store a pop may use only on a FULL slot), so a producer that publishes between the two returns SL_OK with its message lost"
"LIST_FORK_FLAG_KEPT|default|unit_list|CK_RUN_CASE=reclaim||1|1|SL_LIST: a reclaim flag raised by a thread that a fork left behind is respected in the child as if its holder were still running, so the child never frees a segment of that list again"
"LIST_GUESS_TRUSTED|default|unit_list|CK_RUN_CASE=threads||1|1|SL_LIST: a push takes its guess of the next position (its last claim plus one) as its claim, storing \`enq\` instead of checking the guess with a CAS: two producers fill one slot, and one message is lost or read twice"
"LIST_GROUP_FORGETS_STATES|default|unit_list|CK_RUN_CASE=raw CK_TIMEOUT_MULTIPLIER=0.02||1|1|SL_LIST's slot groups hold as many messages as a line holds, forgetting the states' bytes: a group's last message overlaps the next group's states"
"LIST_ENOMEM_FIRST_LOOK|default|unit_list|CK_RUN_CASE=reclaim||1|0|SL_LIST: a growing push whose allocation fails answers SL_ENOMEM from its first look at the used-up tail segment, although another producer linked a segment while it allocated: the list did grow, and the push should have gone on into it"
"LIST_BATCH_KEEPS_EPOCH|default|unit_list|CK_RUN_CASE=reclaim||1|0|SL_LIST: a push_n announces itself only on entry, not between its messages, so for as long as a long batch runs no list frees a segment retired meanwhile (a push_n of 20 million messages kept 15 thousand segments of another list that never held more than one message)"
"EPOCH_EXIT_RETAKES|default|unit_list|CK_RUN_CASE=reclaim||1|0|a thread that uses a list from another key's destructor after its record went back at thread exit takes a record again and sets the key; in glibc's last round of destructors no round follows to give it back, so the record stays owned: one lost per such thread"
"MPMC_CAP_PLUS_ONE|fuzz|fuzz_mpmc||-max_total_time=60 -max_len=4096 -timeout=20 -rss_limit_mb=4096 @DIR@/corpus @ROOT@/tests/fuzz/corpus/mpmc|1|1|MPMC holds capacity + 1"
"MPMC_POP_N_ONE_FEWER|fuzz|fuzz_mpmc||-max_total_time=60 -max_len=4096 -timeout=20 -rss_limit_mb=4096 @DIR@/corpus @ROOT@/tests/fuzz/corpus/mpmc|1|1|MPMC \`pop_n\` (under \`try_recv_n\`) reports one fewer than it took"
"MPMC_PUBLISH_BEFORE_COPY|default|stress_lincheck|||1|0|MPMC push publishes the slot index before copying the bytes"
"MPMC_RELEASE_BEFORE_COPY|default|stress_lincheck|||1|0|MPMC pop frees the slot before copying out"
"MPMC_EMPTY_ON_LOST_CAS|faults|stress_lincheck|||1|0|MPMC pop returns SL_EMPTY when its take of a cell loses a race"
"LIST_OK_AFTER_POISON|default|stress_lincheck|||1|0|LIST push returns OK after its slot was poisoned"
"LIST_DROP_LATE_FULL|default|stress_lincheck|||1|0|LIST pop drops a slot that became FULL while it waited"
"RING_EVICT_NEWEST|default|stress_lincheck|CK_RUN_CASE=lincheck||1|0|the same eviction of the newest, met by the linearizability checker (SL_RING, capacity 1 and 2)"
"LIST_NEW_SEG_ENQ_ZERO|fuzz|fuzz_list||-max_total_time=60 -max_len=4096 -timeout=20 -rss_limit_mb=4096 @DIR@/corpus @ROOT@/tests/fuzz/corpus/list|1|1|LIST new segment starts with enq = 0"
"LIST_LEN_FULL_SEG|fuzz|fuzz_list||-max_total_time=60 -max_len=4096 -timeout=20 -rss_limit_mb=4096 @DIR@/corpus @ROOT@/tests/fuzz/corpus/list|1|1|LIST len miscounts a full segment"
"RING_EVICT_NEWEST|fuzz|fuzz_ring||-max_total_time=60 -max_len=4096 -timeout=20 -rss_limit_mb=4096 @DIR@/corpus @ROOT@/tests/fuzz/corpus/ring|1|1|ring evicts the newest instead of the oldest (messages of at most 8 bytes)"
"SPSC_PUSH_N_ONE_TOO_MANY|fuzz|fuzz_spsc||-max_total_time=60 -max_len=4096 -timeout=20 -rss_limit_mb=4096 @DIR@/corpus @ROOT@/tests/fuzz/corpus/spsc|1|1|SPSC push_n publishes one too many"
"SPSC_INLINE_CAP_PLUS_ONE|fuzz|fuzz_spsc||-max_total_time=60 -max_len=4096 -timeout=20 -rss_limit_mb=4096 @DIR@/corpus @ROOT@/tests/fuzz/corpus/spsc|1|1|SPSC inline push lets capacity + 1 in"
"CHAN_SEND_N_AFTER_CLOSE|fuzz|fuzz_list||-max_total_time=60 -max_len=4096 -timeout=20 -rss_limit_mb=4096 @DIR@/corpus @ROOT@/tests/fuzz/corpus/list|1|1|close lets \`try_send_n\` through"
"PARK_NO_RECHECK|default|stress_park|TIMEOUT=90 CK_RUN_CASE=chan_pingpong||1|0|no re-check after \`sl_event_prepare\`"
"PARK_MIXED_SET_SHARED_ONLY|default|unit_park|CK_RUN_CASE=barrier||1|0|a wait on a set of private and shared eventcounts (a select over an in-process and a shared channel) issues only the shared barrier, which in a fenced segment is a fence alone: the in-process notifiers, compiler-ordered in asymmetric mode, are left unpaired"
"PARK_UNWOKEN_TWICE|default|unit_chan|CK_RUN_CASE=syscalls||1|1|a sleeper that a notify woke (and took off the count of unwoken sleepers) takes itself off too: the count runs low, and a later notify skips the system call with a receiver still asleep"
"PARK_SLEEPER_UNCOUNTED|default|unit_chan|CK_RUN_CASE=syscalls||1|1|a sleeper goes into the kernel without adding itself to the count of unwoken sleepers, so a notify that finds the count 0 wakes nobody"
"PARK_SLEEPS_PAST_DEADLINE|default|unit_park|CK_RUN_CASE=sysops||1|0|a timed wait whose deadline has already passed (a 1 ns timeout, once its spin reads the clock) still registers, issues the registration barrier and calls FUTEX_WAIT, which the kernel's timer slack keeps asleep about 50 us past the deadline"
"PARK_WAKE_BEFORE_BUMP|default|stress_park|TIMEOUT=60 CK_RUN_CASE=event_pingpong||1|0|notify_one issues the futex wake before it bumps the epoch"
"PARK_CLOSE_NOTIFY_ONE|default|stress_park|TIMEOUT=60 CK_RUN_CASE=many_receivers||1|0|close (notify_all) wakes one waiter instead of all"
"SELECT_NO_SHUFFLE|default|unit_select|||1|1|select without shuffling"
"SELECT_NO_REGISTER|default|unit_select|CK_RUN_CASE=biased CK_TIMEOUT_MULTIPLIER=0.05||1|1|select without registering on its channels"
"CHAN_NO_SELECT_BELL|default|unit_select|TIMEOUT=90 CK_RUN_CASE=blocking CK_TIMEOUT_MULTIPLIER=0.05||1|0|no select bell on send or receive"
"SELECT_CLOSED_NOT_READY|default|unit_select|TIMEOUT=60 CK_RUN_CASE=semantics CK_TIMEOUT_MULTIPLIER=0.1||1|1|select: a closed channel's case is not ready"
"SELECT_PAIR_BIASED|default|unit_select|TIMEOUT=60 CK_RUN_CASE=semantics CK_TIMEOUT_MULTIPLIER=0.1||1|1|select of two cases: the one draw that orders them puts case 1 first three times in four"
"SELECT_LOOK_IGNORES_CLOSE|default|unit_select|TIMEOUT=60 CK_RUN_CASE=semantics CK_TIMEOUT_MULTIPLIER=0.1||1|1|select: the look at an SL_MPMC case answers full or empty without reading \`closed\`, so a closed channel that is full (send case) or drained (receive case) is refused instead of ready with SL_CLOSED"
"SELECT_LOOK_SKIPS_DESCRIPTOR|default|unit_chanfd|CK_RUN_CASE=contract||1|1|select: the look at an empty SL_MPMC receive case answers SL_EMPTY even when the channel has a receive-end descriptor, which the try would have re-armed: the descriptor stays readable with nothing to receive"
"POOL_STATS_NO_RINGS|default|unit_pool|CK_RUN_CASE=batches CK_TIMEOUT_MULTIPLIER=0.05||1|1|pool: stats leave out the jobs in batch rings"
"POOL_BATCH_THROUGH_STOP|default|unit_pool|CK_RUN_CASE=batches CK_TIMEOUT_MULTIPLIER=0.05||1|1|pool: a worker runs the rest of its batch through a stop"
"POOL_RING_JOB_KEEPS_TOKEN|default|unit_pool|CK_RUN_CASE=batches||1|1|a worker woken with the wake token runs its batch ring's jobs still holding it (ending the search only before fresh work), so a ring job left by a stop that submits a child after the start wakes nobody while another worker sleeps"
"POOL_SWEEP_PENDING_LATE|default|unit_pool|CK_RUN_CASE=corners||1|0|a reset's sweep takes a job out of \`pending\` only after its on_discard report, so a report that submits to a full bounded pool with a blocking call waits for room only the sweep itself would make: the reset never completes"
"POOL_DEATHS_KEPT|default|unit_pool|CK_RUN_CASE=corners||1|0|a death the pool did not replace (it had the workers it wanted without) stays counted, and the next spawn for demand or a grow is counted in respawned as a replacement"
"POOL_FINI_WITHOUT_INIT|default|unit_pool|CK_RUN_CASE=corners||1|0|a worker that died in its worker_init gets worker_fini all the same, with a context its init never returned"
"POOL_FINI_DEATH_REPLACED|default|unit_pool|CK_RUN_CASE=corners||1|0|a worker that retired and then died in its worker_fini is counted a death too, and the control thread starts a replacement that undoes the shrink"
"POOL_DEATH_REPORT_HOLDS_SLOT|default|unit_pool|CK_RUN_CASE=corners||1|0|a dead worker's job is reported before the worker leaves its slot and the live count, so an on_discard that resubmits it with the blocking call to a full bounded pool of one worker waits for room that only the replacement, placed after the report, would make"
"POOL_DISCARD_DEATH_REPEATED|default|unit_pool|CK_RUN_CASE=corners||1|0|an on_discard that ends its thread while reporting a dead worker's job is called again for the same job when the cleanup handler runs again: the job is reported twice, and for ever if on_discard exits each time"
"POOL_ORPHAN_BATCH_LAST|default|unit_pool|CK_RUN_CASE=corners||1|0|a batch that a stop left in a worker's ring, and that worker then left (a shrink retired it), is taken only by a steal, after the lists: the one worker left runs the newer jobs of its level first"
"POOL_WAKER_DROPS_TOKEN|faults|unit_pool|CK_RUN_CASE=corners||1|0|a waker that finds no sleeper left to claim gives its token back without the last searcher's hand-on, so a submit that counted the token as a searcher leaves its job queued with a worker asleep"
"POOL_BUSY_RING_IS_WORK|faults|unit_pool|CK_RUN_CASE=corners||1|0|a ring counted busy is work to a worker deciding to park even while it holds no job, so idle workers poll at full CPU while a batch's filler is preempted"
"POOL_RESET_ONE_COUNT|default|unit_pool|CK_RUN_CASE=commands||1|1|a reset counts the jobs queued when it began and spends the count in pop order (top level and inbox 0 first), so jobs its own discards submit there are taken instead of older ones, which run after the next start"
"POOL_UNIQUE_REFUSED_IN_REPORT|default|unit_pool|CK_RUN_CASE=corners||1|0|a job whose key is held by a job in its on_discard report (discarded, or its worker died in it) is refused under SL_JOB_UNIQUE as if that job were queued or running, so on_discard's retry of a unique job gets SL_EXISTS and the job is lost"
"POOL_UNIQUE_WAITS_FOR_ROOM|default|unit_pool|CK_RUN_CASE=jobs||1|0|a unique job whose key is queued, submitted to a full bounded queue, waits for room before admission refuses it: SL_TIMEDOUT after its timeout instead of SL_EXISTS, and a submit without one blocks until a job leaves"
"POOL_KEYS_NEVER_SHRINK|default|unit_pool|CK_RUN_CASE=jobs||1|0|the key table never shrinks: a burst of distinct keys leaves its largest table allocated for the life of the pool"
"POOL_SWEEP_MISSES_HANDOVER|faults|unit_pool|CK_RUN_CASE=corners||1|0|a reset's sweep does not wait for a key's next job that a release took from the key's list and has not pushed yet: a dead worker's report handing its key on while the pool is stopped leaves that job, queued before the reset, in no place the sweep looks, and it runs after the next start"
"EXEC_WAITER_LEAVES_EARLY|faults|stress_exec|CK_RUN_CASE=lent||1|1|executor: a syncer or scope waiter leaves as soon as it sees the completion, while the completer still rings the event it lent (a worker's of another executor, which the caller may then free)"
"EXEC_DEEP_POP_NO_WAKE|faults|unit_exec|CK_RUN_CASE=faults||1|0|a deep waiter that pops a task from its own mailbox wakes nobody after taking it off its submitter's count: a parker that read the count before the decrement took another worker's task in a busy worker's mailbox for its own and slept beside it"
"EXEC_OWN_MAILBOX_ONLY|faults|unit_exec|CK_RUN_CASE=faults||1|0|a parking worker re-checks only its own mailbox, and a searcher that puts its own submission back wakes nobody else: a task submitted into a busy worker's mailbox, whose wake check counted a searcher, waits for the busy owner while the other workers sleep"
"EXEC_SUBMITTER_PARKS_SILENTLY|faults|unit_exec|CK_RUN_CASE=faults||1|0|a worker parks without a hand-on while submissions of its own wait in mailboxes: its re-check discounts them, so a popper that counted it as a searcher hands nothing on, and a task in a busy worker's mailbox waits while another worker, whose re-check the pop hid it from, sleeps"
"EXEC_INLINE_UNFRAMED|asan|unit_exec|CK_RUN_CASE=executors||1|0|a scope task run on the spawning thread (too big to queue, or no memory) is not counted as a task of its executor: sl_exec_free there frees the executor under its open scope"
"EXEC_FREE_GLOBAL|asan|unit_exec|CK_RUN_CASE=executors||1|0|sl_exec_free frees the global executor, which sl_exec_global goes on returning: its next use is of freed memory"
"EXEC_INLINE_ARGS_SHARED|asan|unit_exec|CK_RUN_CASE=scopes||1|0|a scope task run on its spawning thread for want of a record copies its arguments to the heap, like a too-big one, and with no memory for that either is handed the caller's bytes: unaligned, read-only or not, and written by the task"
"POOL_NO_STEAL_BUSY|default|unit_pool|CK_RUN_CASE=batches CK_TIMEOUT_MULTIPLIER=0.05||1|1|pool: no stealing from a busy worker's batch"
"POOL_NO_SWEEP_RINGS|default|unit_pool|CK_RUN_CASE=batches CK_TIMEOUT_MULTIPLIER=0.05||1|1|pool: reset and cancel do not sweep the rings"
"POOL_CLAIM_STORE|default|stress_pool|CK_RUN_CASE=accounting||1|0|pool: a ring claim moves \`head\` with a store instead of a CAS"
"POOL_FILL_TAIL_FIRST|faults|stress_pool|CK_RUN_CASE=accounting||1|0|pool: a ring fill publishes \`tail\` before its entries"
"RING_CAP_OFF_BY_ONE|default|unit_ring|CK_RUN_CASE=raw||1|1|ring capacity off by one"
"RING_SPARE_SHORT|default|unit_ring|CK_RUN_CASE=blocking||1|0|ring: one spare slot fewer than SL_RING_SPARE, so a send over 8 bytes waits with SL_RING_SPARE - 1 slots held, where sluice/ring.h says it is lock-free"
"MPMC_DRAIN_SKIPS_LEFTOVER|fuzz|fuzz_ring||-max_total_time=60 -max_len=4096 -timeout=20 -rss_limit_mb=4096 @DIR@/corpus @ROOT@/tests/fuzz/corpus/ring|1|1|ring free (the MPMC drain under it) skips a leftover"
"SPSC_WRAP_NOT_COPIED|fuzz|fuzz_spsc||-max_total_time=60 -max_len=4096 -timeout=20 -rss_limit_mb=4096 @DIR@/corpus @ROOT@/tests/fuzz/corpus/spsc|1|1|SPSC push_n leaves out the part of a batch that wraps around"
"PARK_TIMEOUT_NO_RETRY|default|stress_park|CK_RUN_CASE=timed_never_early||0|0|a timed-out waiter skips its final retry (harmless: the model shows why, below)"
"POOL_DEATH_LEAVES_RUNNING|default|unit_pool|CK_RUN_CASE=batches||0|0|pool: a dying worker leaves its slot marked running"
"CHAN_NO_LAST_LOOK|default|stress_chan|CK_RUN_CASE=close_drains||1|0|receiver skips the last look after close (answers SL_CLOSED with a message inside)"
"TIMER_BACKLOG|default|unit_timer|CK_TIMEOUT_MULTIPLIER=0.1||1|1|timer: a ticker's next fire is the missed one plus one period (missed ticks queue up)"
"TIMER_TAKE_BY_STORE|default|unit_timer|CK_TIMEOUT_MULTIPLIER=0.1||1|1|timer: a receive takes a due fire with a plain store instead of the CAS"
"TIMER_CLOSE_UNCHECKED|default|unit_timer|CK_TIMEOUT_MULTIPLIER=0.1||1|1|timer: a receive checks \`closed\` only before its clock read, so one that stalls there through a close and past the next fire takes a fire scheduled after the close"
"TIMER_BLIND_WAIT|default|unit_timer|CK_TIMEOUT_MULTIPLIER=0.1||1|0|timer: waits ignore the timers' next fire (\`sl__chan_ready_at\` says SL_FOREVER)"
"SHM_PRIVATE_FUTEX|default|unit_shm|CK_RUN_CASE=park SL_SHM_CHILD_ALARM=1||1|1|shared eventcounts wait and wake with FUTEX_PRIVATE_FLAG: a receiver parked in one process is never woken by a send or close in another"
"SHM_UNBOUNDED_INDEX|asan|unit_shm|CK_RUN_CASE=refusals||1|0|a shared SL_MPMC channel uses a slot index read from the segment without checking it against the slot count (a peer's garbage becomes an access outside the segment)"
"SHM_UNCHECKED_SPARE|default|unit_shm|CK_RUN_CASE=refusals||1|1|a shared SL_MPMC channel of the swap form (9-256 bytes) writes a message through a slot index taken from the spare table without checking it against the slot count (a peer's garbage there becomes a write outside the slots)"
"SHM_LARGE_TAIL_DROPPED|faults|unit_shm|CK_RUN_CASE=owner||1|1|a receive from a shared SL_MPMC channel of messages over 256 bytes that found no spare to hold (and so copies straight into the caller's buffer before its take) leaves out the message's bytes past its last whole word"
"SHM_ZOMBIE_LEADER_DEAD|default|unit_shm|CK_RUN_CASE=death||1|1|a process whose main thread exited while other threads run (/proc: a zombie with threads left) is taken for dead: a look reclaims its record and closes the channel under its living sender"
"SHM_FOREIGN_JUDGED|default|unit_shm|CK_RUN_CASE=death||1|1|a look judges owners across pid and time namespaces: a process outside the segment's creator's namespaces, or an owner outside them, has its pid read in another namespace's /proc, where it names another process (or none), so a living sender is taken for dead and the channel closed under it"
"SHM_PROC_OF_ANOTHER|default|unit_shm|CK_RUN_CASE=death||1|0|a process believes a /proc mounted from another pid namespace (its /proc/self is not its pid): a sender takes its start time from the host's process of its pid, and a receiver with a /proc of its own takes it for dead and closes the channel under it"
"SHM_FOREIGN_LOOKS|default|unit_shm|CK_RUN_CASE=death||1|0|a process outside the creator's namespaces takes the periodic look's turn, though its look judges nobody: a foreign poller that keeps winning keeps a native waiter from ever finding that the last sender died"
"SHM_WATCHER_STAYS|default|unit_shm|CK_RUN_CASE=fd||1|1|the descriptor watcher thread stays for the process's life: a sender whose main thread exits after its descriptors were freed never ends, its record and registration kept, its receivers never told the last sender is gone"
"SHM_SETTLE_UNHELD|faults|unit_shm|CK_RUN_CASE=death||1|1|SL_MPMC shared: a look settles a dead record's spare entries before it takes the record (layout version 12's order), so a look stopped between its read of a held word and its CAS applies its decision after another look freed the record and a new owner held the same word anew: a slot in two places, a message read twice and one lost"
"SHM_POP_HOLDS_UNCLAIMED|faults|unit_shm|CK_RUN_CASE=death||1|1|SL_MPMC shared, messages over 256 bytes: a fork()ed child's receive on the handle it inherited takes a spare in its parent's record name when a message arrives after the view's emptiness check, so the parent's death would have a look settle that spare under the child"
"SHM_POP_SWAP_BACK_EARLY|faults|unit_shm|CK_RUN_CASE=owner||1|1|a shared SL_MPMC receive of messages over 256 bytes gives the message's slot back among the spares before copying it out, for a push to overwrite while it copies"
"SHM_SPSC_BATCH_UNBOUNDED|asan|unit_shm|CK_RUN_CASE=refusals||1|0|a shared SL_SPSC channel's batch send believes counters that claim more room than the capacity (a batch then copies past the ring's storage)"
"SHM_UNBOUNDED_INDEX|fuzz|fuzz_shm||-max_total_time=60 -max_len=4096 -timeout=20 -rss_limit_mb=4096 @DIR@/corpus @ROOT@/tests/fuzz/corpus/shm|1|1|the same unchecked slot index, met by the shared-memory fuzz target (a peer writes chosen bytes between operations)"
"SHM_UNCHECKED_SPARE|fuzz|fuzz_shm||-max_total_time=60 -max_len=4096 -timeout=20 -rss_limit_mb=4096 @DIR@/corpus @ROOT@/tests/fuzz/corpus/shm|1|0|the same unchecked spare, met by the shared-memory fuzz target"
"SHM_SPSC_BATCH_UNBOUNDED|fuzz|fuzz_shm||-max_total_time=60 -max_len=4096 -timeout=20 -rss_limit_mb=4096 @DIR@/corpus @ROOT@/tests/fuzz/corpus/shm|1|1|the same unbounded SL_SPSC batch, met by the shared-memory fuzz target"
"SHM_UNGUARDED_RING|fuzz|fuzz_shm||-max_total_time=60 -max_len=4096 -timeout=20 -rss_limit_mb=4096 @DIR@/corpus @ROOT@/tests/fuzz/corpus/shm|1|0|a shared SL_MPMC ring helps a counter along past any stamp, however far ahead (a peer's garbage keeps a call spinning for as many steps as the garbage says)"
"SHM_RECLAIMER_DEATH_KEPT|faults|unit_shm|CK_RUN_CASE=death SL_SHM_WAIT_S=1||1|1|a record whose reclaim was cut short (its process killed inside a look, between taking the record and clearing its roles) stays held for good: the dead sender's role it still shows keeps the channel from closing once the last registered sender is gone"
"SHM_OFFER_UNSAID|faults|unit_shm|CK_RUN_CASE=death SL_SHM_WAIT_S=1||1|1|a shared SL_MPMC push of the swap form does not record the slot its cell offers before its CAS: a sender killed after that CAS leaves an entry that seems to have tried none, and the look gives back the slot it published (now in two places)"
"SHM_SETTLE_BACKWARDS|default|unit_shm|CK_RUN_CASE=refusals||1|1|the look that settles a dead sender's held spare gives back the slot it saw in circulation instead of the one that died with the process"
"SHM_HELD_NEVER_SETTLED|default|unit_shm|CK_RUN_CASE=refusals||1|1|a look that finds a shared SL_MPMC sender dead never settles the spare entries it held (as before layout version 8): each such death takes a spare with it, and once all are gone every send says SL_FULL"
"SHM_HELD_NEVER_SETTLED|default|stress_shm|CK_RUN_CASE=kill SL_STRESS_SCALE=3||0|0|the same unsettled spares, met by stress_shm's kill loop (producers killed by SIGKILL at random instants: a kill lands while a send holds a spare in most runs at this scale, not in all)"
"SHM_DEAD_MARKS_COUNT|default|unit_shm|CK_RUN_CASE=death SL_SHM_CHILD_ALARM=2 SL_SHM_WAIT_S=1||1|0|a receiver deciding SL_CLOSED on a shared channel counts the in-flight mark of a dead sender process (or of a reused pid) as a send still landing, so the closed channel never reads as closed: the dead peer wedges its receivers"
"SHM_LANES_UNREAD|default|unit_shm|CK_RUN_CASE=death SL_SHM_WAIT_S=1||1|1|a receiver deciding SL_CLOSED on a shared channel reads each record's count but not its lanes (the flags SL_MPMC's sending threads mark themselves in), so a send of a living thread past its closed-check is taken for landed"
"SHM_LANES_UNREAD|faults|unit_shm|CK_RUN_CASE=owner||1|0|the same unread lanes, met by a send stopped at each of its steps while the channel is closed: it returns SL_OK with its message never received"
"SHM_LANE_SHARED|faults|unit_shm|CK_RUN_CASE=owner||1|1|every sending thread of a process marks itself in the same lane of its shared SL_MPMC handle's record: one thread's unmark clears another's mark while that one's send is still landing, and a receiver says SL_CLOSED before it lands"
"SHM_LANE_SHARED|default|stress_shm|CK_RUN_CASE=processes||0|0|the same shared lane, met by stress_shm's close under 2 x 12 sending threads across processes (a close lands inside one thread's send while another unmarks in about three runs of ten)"
"SHM_LANE_STOLEN|faults|unit_shm|CK_RUN_CASE=owner||1|1|a thread that finds every lane of its handle's record owned takes one from a living thread (as if its owner had exited): the two share a flag, and the thief's unmark clears the owner's mark mid-send"
"SHM_NO_LOOK|faults|unit_shm|CK_RUN_CASE=death SL_SHM_CHILD_ALARM=2 SL_SHM_WAIT_S=1 CK_TIMEOUT_MULTIPLIER=0.05||1|0|a waiter on a shared channel sleeps until a notify with no periodic look: a notify lost with a sender killed between its epoch bump and its futex wake leaves a published message unreceived, and a blocked receiver never learns that the last registered sender died"
"SHM_SELECT_NO_BELL|default|unit_shm|CK_RUN_CASE=select SL_SHM_CHILD_ALARM=2 CK_TIMEOUT_MULTIPLIER=0.05||1|0|a send, receive or close of a shared channel rings only its own process's select bell, never the segment's: a selector in another process sleeps through the change (its periodic look, lengthened by the test, would otherwise stand in 50 ms later)"
"SHM_WATCH_NO_ARM|default|unit_shm|CK_RUN_CASE=fd SL_SHM_WAIT_S=1 SL_SHM_CHILD_ALARM=3||1|1|the watcher thread of shared channels' event-loop descriptors looks at its channels without arming their segments' bells first: a change made in another process rings no bell, and the descriptor never becomes readable"
"SHM_COMPILER_FENCE|faults|stress_shm|||0|0|a shared SL_SPSC channel orders its in-flight flag and its pop with a compiler barrier whatever the segment's barrier mode: in a fenced segment (a participant that cannot use membarrier) nothing forces the store before the load (a store-buffer window of nanoseconds: the argument in docs/guarantees.md, \`Across processes\`, not a test, rules it out)"
"SHM_NO_GLOBAL_BARRIER|default|unit_shm|CK_RUN_CASE=barrier||1|1|a waiter on a shared channel in asymmetric mode (its registration, its SL_CLOSED decision) issues only a fence, not membarrier(MEMBARRIER_CMD_GLOBAL_EXPEDITED), while the other processes' fast sides rely on it and have only a compiler barrier"
"SHM_SEND_WITHOUT_RECORD|default|unit_shm|CK_RUN_CASE=death||1|1|a send on a shared channel whose handle finds every record held by a living handle goes ahead with an anonymous mark (as up to layout version 9), so a process killed in it leaves a mark, and a spare, that nothing can tell from a living one's"
"SHM_PARKED_KEPT|default|unit_shm|CK_RUN_CASE=death||1|1|reclaiming a dead process's record leaves its parked threads counted in the waiter count: every later notify on that side makes a futex system call for nobody"
"SHM_RECLAIM_UNDECIDED|default|unit_shm|CK_RUN_CASE=death||1|0|a dead owner's record reclaimed outside a look (by a claim that found every record held) has its roles cleared with no decision whether it held the last of one: the channel stays open until the next look, a look period on, or two after the death when that look ran while the reclaim held the record"
"SHM_RECEIVERS_IGNORED|default|unit_shm|CK_RUN_CASE=receivers SL_SHM_CHILD_ALARM=2 SL_SHM_WAIT_S=1 CK_TIMEOUT_MULTIPLIER=0.05||1|0|the check \`every registered X is gone\` closes for senders only: a sender blocked on a full shared channel whose registered receivers were all freed or killed waits for ever (or until its timeout)"
"SHM_BATCH_NO_LOOK|default|unit_shm|CK_RUN_CASE=receivers SL_SHM_WAIT_S=1||1|1|the batch forms on a shared channel make no periodic look: an empty \`try_recv_n\`, or a \`try_send_n\` that finds the channel full, never runs the look that finds every registered peer gone, so a loop polling with batches never sees the channel close after the last registered sender (or receiver) is killed"
"SHM_GONE_WITHOUT_CAS|faults|unit_shm|CK_RUN_CASE=receivers||1|0|the decision that every registered handle of a role is gone is the look at the records alone: a registration between that look and the close is told SL_OK by a channel that then closes under it"
"SHM_PAGES_UNRESERVED|default|unit_shm|CK_RUN_CASE=refusals||1|0|a new segment's pages are not reserved at creation: a full /dev/shm or a machine out of memory raises SIGBUS in the first process to touch a missing page, mid-send, instead of refusing the creation"
"CHANFD_CANCEL_POINTS|default|unit_chanfd|CK_RUN_CASE=contract||1|0|an event-loop descriptor's eventfd is written and reset with write(2) and read(2), cancellation points inside a send: a cancel pending at the send is acted on between its mark and its unmark, and the channel never answers SL_CLOSED"
"SHM_WATCH_COND_INHERITED|default|unit_shm|CK_RUN_CASE=fd||1|0|a fork()ed child keeps the watcher's condition variable as the parent's remover left it: the child's first watched channel freed waits for that waiter, which the child does not have, for ever"
"SHM_WATCH_SEEN_ON_SUCCESS|default|unit_shm|CK_RUN_CASE=fd||1|0|the watcher acknowledges a change of its list only after a rebuild that found memory: a free of a watched channel waits as long as the watcher's allocation fails"
"CHANFD_PRIVATE_BARRIER|default|unit_shm|CK_RUN_CASE=barrier||1|0|a shared channel's event-loop descriptor counts itself in the segment's selectors behind the process's own barrier alone: a send in another process, compiler-ordered in an asymmetric segment, can miss it while the loop's re-arm misses the send"
"SHM_SPSC_PEER_ABORTS|asan|unit_shm|CK_RUN_CASE=refusals||1|0|a shared SL_SPSC channel runs the debug builds' misuse check on the \`active\` words in the segment, so a peer's write of a nonzero there aborts a process that sends or receives"
"SHM_NAMED_FD_TRUSTED|default|unit_shm|CK_RUN_CASE=refusals||1|0|\`sl_chan_shm_open_fd\` maps an unsealed file that has a name (a file in /tmp, a named object), which the peer that passed it could truncate as well (SIGBUS on the next access)"
"SHM_UNSEALED_FD|default|unit_shm|CK_RUN_CASE=refusals||1|0|\`sl_chan_shm_open_fd\` maps a memfd that is not sealed against shrinking, which the peer that passed it could truncate under the mapping (SIGBUS on the next access)"
"SELECT_BIASED_SHUFFLES|default|unit_select|CK_RUN_CASE=biased||1|1|biased select shuffles its cases like the fair one"
"SELECT_ARM_ONCE|default|unit_select|CK_RUN_CASE=blocking||1|0|select arms the bell at its first re-check only, not after a wake that found nothing"
"SELECT_ONE_BELL|default|unit_select|CK_RUN_CASE=bells||1|1|every selector sleeps on the bell that every change rings, whatever its cases' directions"
"SELECT_RING_ONE_WAY|default|unit_select|TIMEOUT=90 CK_RUN_CASE=blocking CK_TIMEOUT_MULTIPLIER=0.05||1|0|a receive never rings the bells of selectors waiting to send"
"RECV_N_EMPTY_AT_ZERO|fuzz|fuzz_mpmc||-max_total_time=60 -max_len=4096 -timeout=20 -rss_limit_mb=4096 @DIR@/corpus @ROOT@/tests/fuzz/corpus/mpmc|1|1|\`recv_n_for\` with a zero timeout on an empty channel answers SL_EMPTY instead of SL_TIMEDOUT"
"RECV_N_NO_LAST_LOOK|faults|stress_chan|CK_RUN_CASE=close_drains||1|0|batch receive skips the last look after close (\`recv_n\` answers SL_CLOSED with messages inside)"
"RECV_N_NO_LAST_LOOK|faults|unit_shm|CK_RUN_CASE=batchrace||1|0|the same skipped last look, met across processes: a sender process's batches race the close, and the receiver drains to SL_CLOSED short of what they counted"
"CHANFD_RECHECK_TAKES_ALL|default|unit_chanfd|CK_RUN_CASE=contract||1|1|a receive-end re-arm signals its descriptor after the re-check only when the channel is closed and empty, as if the re-check's one message were all that the reset wiped: two sends, or a close, made before the reset leave the descriptor unreadable"
"CHANFD_NO_RECHECK|default|unit_chanfd|CK_RUN_CASE=contract||1|1|event-loop descriptor: a receive's re-arm resets and arms without its re-check"
"CHANFD_RECHECK_NESTS|default|unit_chanfd|CK_RUN_CASE=contract||1|0|a receive-end re-check that finds the channel empty re-arms from inside itself: one more stack frame for every message that a send signalled and another receive took while the end was being armed"
"CHANFD_CLOSED_SPINS|faults|unit_chanfd|CK_RUN_CASE=close_in_flight||1|0|a receive that finds the channel closed and empty, with a send still landing, leaves its descriptor signalled (no re-arm), and a re-check that meets such a close signals it: the event loop retries in a busy wait until that send lands, for good where it never does (a shared channel's sender dead where no look can find it)"
"CHANFD_ARMED_SKIPS_RESET|faults|unit_chanfd|CK_RUN_CASE=stale_signal||1|0|a failed try that finds its end armed re-arms nothing: a signal stopped between taking down an earlier re-arm's flag and its write lands after a later re-arm, and the descriptor stays readable while every try fails, the event loop spinning until the next change"
"CHANFD_QUIET_ON_LOAD|default|unit_chanfd|CK_RUN_CASE=contract||1|0|a failed try skips its re-arm's look when a load before the reset finds the flag up, not when the exchange after it does: a signal between the load and the reset takes the flag down and writes, the reset wipes the write, and the descriptor stays unreadable with a message in the channel (room at the send end)"
"CHANFD_RETRY_RESETS|default|unit_chanfd|CK_RUN_CASE=contract||1|0|a blocking receive, select or send resets an armed descriptor on every failed retry: about twenty read(2) calls in a 2 ms wait beside an event loop"
"CHANFD_FIRST_TRY_SKIPS|default|unit_chanfd|CK_RUN_CASE=contract||1|0|a timed receive's first try counts as one of its wait's retries and leaves an armed end as it finds it: a loop that takes a timed receive as its try, after a signal's late write, finds the descriptor readable while every try fails, and spins until the next change"
"CHANFD_FORK_INHERITED|default|unit_shm|CK_RUN_CASE=fd||1|0|a fork()ed child's copy of a shared channel's handle uses its parent's descriptors: its empty receive resets the parent's eventfd, taking the wake-up owed to the parent's loop, whose flag stays down: the loop sleeps for good with messages in the channel"
"CHANFD_FORK_UNCOUNTED|default|unit_chanfd|CK_RUN_CASE=contract||1|0|a process that mapped no segment keeps its generation across fork(): a child's copy of an in-process channel uses the parent's descriptors, and its empty receive takes the wake-up owed to the parent's loop"
"RDV_SELECT_NO_HOLD|default|stress_flavors|CK_RUN_CASE=rendezvous SL_STRESS_SCALE=4||1|1|rendezvous: a select rounds over its cases with its offers open (a partner takes one while the round performs another case)"
"RDV_NO_RECHECK|faults|unit_rendezvous|CK_RUN_CASE=held CK_TIMEOUT_MULTIPLIER=0.1||1|1|rendezvous: a select re-opens its offers without looking for a partner that posted while they were held"
"RDV_LEAVE_UNLOCKED|tsan|unit_rendezvous|CK_RUN_CASE=plain||1|0|rendezvous: an owner whose offer was taken returns without taking the channel's lock (before the partner's copy is known done)"
"BCAST_NO_RECHECK|faults|unit_broadcast|CK_RUN_CASE=threads||1|1|broadcast: a receive does not re-check the slot's stamp after its copy (an overwrite tears the message it returns)"
"BCAST_SENDERS_SHARE_SLOT|faults|unit_broadcast|CK_RUN_CASE=threads CK_TIMEOUT_MULTIPLIER=0.1||1|0|broadcast: a sender does not wait for the sender a lap earlier in its slot (two senders write one slot at once)"
"BCAST_NO_OVERWRITE_DROP|default|unit_broadcast|CK_RUN_CASE=contract||1|1|broadcast: an overwritten original is never dropped"
"BCAST_LAG_MISCOUNT|default|unit_broadcast|CK_RUN_CASE=contract||1|1|broadcast: a lag skips one message more than SL_LAGGED reports"
"BCAST_LAG_DOUBLE_RELEASE|default|unit_broadcast|CK_RUN_CASE=contract||1|1|broadcast: a lag gives up the subscriber's share of the message it moves to, and the read of it gives it up again (dropped before the other subscribers read it)"
"BCAST_LEAVER_FORGETS|default|unit_broadcast|CK_RUN_CASE=contract||1|1|broadcast: a leaving subscriber keeps its shares of what it did not read (those messages wait for their overwrite)"
"BCAST_JOIN_NO_SETTLE|default|unit_broadcast|CK_RUN_CASE=threads||1|0|broadcast: a subscribe does not settle the positions below its start whose senders counted it (dropped only at their overwrite)"
"BCAST_ATTACHING_KEPT|faults|unit_broadcast|CK_RUN_CASE=contract||1|0|broadcast: a subscribe keeps naming the ring it joins while its join may run the drop function, so a drop that makes a broadcast channel gets a subscriber of this ring instead"
"BCAST_REFUSED_SEND_COUNTED|faults|unit_broadcast|CK_RUN_CASE=contract||1|0|broadcast: a send on a subscriber handle (refused) marks itself among the ring's sends in flight, which the send handle's free reads as its own and aborts on"
"BCAST_LEN_AFTER_END|default|unit_broadcast|CK_RUN_CASE=contract||1|0|broadcast: a subscriber closed on its own handle still counts in sl_chan_len the messages it can no longer receive"
)

mode="" only="" out=lines model=0 baseline=0
while [ $# -gt 0 ]; do
    case $1 in
    --fast) mode=fast ;;
    --all) mode=all model=1 ;;
    --only) mode=only only=${2:?--only needs a name}; shift ;;
    --model) model=1 ;;
    --baseline) baseline=1 ;;
    --markdown) out=markdown ;;
    --update-doc) out=doc ;;
    -h|--help) sed -n '2,/^set -u/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) echo "mutants: unknown option $1 (see --help)" >&2; exit 2 ;;
    esac
    shift
done
# The doc's table covers everything unless a set was named.
if [ -z "$mode" ]; then
    mode=fast
    [ "$out" = doc ] && mode=all model=1
fi

# The lines go to stdout, or to stderr while the table is the output.
log() { if [ "$out" = lines ]; then echo "$@"; else echo "$@" >&2; fi; }

# Builds the preset's tree and TARGET there (a no-op when up to date). A tree
# already configured is not configured again: its build re-runs CMake by
# itself when a CMakeLists.txt changed, and a configure of the default preset
# (the benchmark peers' probes) costs most of a second per mutant.
base_build() {
    local preset=$1 target=$2
    if [ ! -f "build/$preset/CMakeCache.txt" ]; then
        cmake --preset "$preset" >/dev/null || return 1
    fi
    cmake --build "build/$preset" -j "$JOBS" --target "$target" >/dev/null || return 1
}

# compile_object BASE OBJ DEFINE DEST: recompiles BASE/OBJ (a path like
# CMakeFiles/x.dir/src.c.o under some folder of BASE) with DEFINE into DEST,
# using the flags CMake wrote for its target.
compile_object() {
    local base=$1 obj=$2 define=$3 dest=$4
    local tdir=${obj%%.dir/*}.dir
    local flags="$base/$tdir/flags.make"
    local src cc defs incs cflags
    src=$(grep -o -m 1 "$root/[^ ]*\.c\b" "$base/$obj.d")
    cc=$(sed -n 's/^# compile C with //p' "$flags")
    defs=$(sed -n 's/^C_DEFINES = //p' "$flags")
    incs=$(sed -n 's/^C_INCLUDES = //p' "$flags")
    cflags=$(sed -n 's/^C_FLAGS = //p' "$flags")
    # shellcheck disable=SC2086
    $cc $defs "-D$define" $incs $cflags -o "$dest" -c "$src"
}

# build_mutant NAME PRESET TARGET: prints the build folder's executable, or
# fails with a reason on stdout.
build_mutant() {
    local name=$1 preset=$2 target=$3
    local base="$root/build/$preset" dir="$root/build/mutant-${name,,}-$preset-$target"
    local define="SL_MUTANT_$name"
    local files
    files=$(grep -rlw --include='*.c' --include='*.h' "$define" channels pool include)
    if [ -z "$files" ]; then echo "no source holds $define"; return 1; fi
    [ "${based:-0}" = 1 ] || base_build "$preset" "$target" ||
        { echo "base build of $target ($preset) failed"; return 1; }
    local tpath
    tpath=$(find "$base" -path '*/CMakeFiles/*' -prune -o -type f -name "$target" -perm -u+x -print | head -n 1)
    [ -n "$tpath" ] || { echo "no $target in build/$preset"; return 1; }
    local tparent=${tpath%/*}
    local link="$tparent/CMakeFiles/$target.dir/link.txt"
    rm -rf "$dir"
    mkdir -p "$dir/obj"
    echo "$tpath" >"$dir/base-exe"
    # The objects to recompile: the library's, and the target's own, whose
    # dependency files name a file holding the switch.
    local objs=() d f
    while IFS= read -r d; do
        for f in $files; do
            if grep -q "$root/$f\b" "$d"; then objs+=("${d%.d}"); break; fi
        done
    done < <(find "$base/CMakeFiles/sluice_objects.dir" "$tparent/CMakeFiles/$target.dir" -name '*.o.d')
    [ ${#objs[@]} -gt 0 ] || { echo "no object of $target depends on $files"; return 1; }
    local lib="$dir/libsluice.a" sed_args=() changed=0 o rel new
    cp "$base/libsluice.a" "$lib"
    for o in "${objs[@]}"; do
        rel=${o#"$base"/}
        new="$dir/obj/$(echo "$rel" | tr / _)"
        compile_object "$base" "$rel" "$define" "$new" >"$dir/build.log" 2>&1 ||
            { echo "compile of $rel failed: $(grep -m 1 error "$dir/build.log")"; return 1; }
        cmp -s "$new" "$o" || changed=1
        if [[ $rel == CMakeFiles/sluice_objects.dir/* ]]; then
            # the archive's member is named by the source's file name
            cp "$new" "$dir/obj/${o##*/}"
            ar r "$lib" "$dir/obj/${o##*/}" 2>>"$dir/build.log"
        else
            sed_args+=(-e "s| ${o#"$tparent"/} | $new |")
        fi
    done
    [ "$changed" = 1 ] || { echo "$define changes no object"; return 1; }
    local cmd
    cmd=$(sed "${sed_args[@]}" -e "s| -o $target | -o $dir/$target |" \
        -e "s| [^ ]*libsluice\.a | $lib |" "$link")
    echo "$cmd" >>"$dir/build.log"
    (cd "$tparent" && eval "$cmd") >>"$dir/build.log" 2>&1 ||
        { echo "link of $target failed"; return 1; }
    echo "$dir/$target"
}

# The line of a check's output that says what failed: a Check failure, else
# a sanitizer's report, else a fuzz target's mismatch, an assertion or a
# watchdog, else a Check error (a crash, a timeout), else whatever says it
# failed.
first_failure() {
    local pat line
    for pat in ':F:[^:]*:[^:]*:[0-9]+: ' 'ERROR: [A-Za-z]*Sanitizer|runtime error:' \
        'MISMATCH|VIOLATION|[Aa]ssertion|no progress for' ':E:[^:]*:[^:]*:[0-9]+: ' \
        'ERROR: libFuzzer|FAIL|[Ff]ailed'; do
        line=$(grep -m 1 -E -e "$pat" "$1") && break
    done
    printf '%s\n' "$line" | head -n 1 | sed -e 's/^[^ ]*\/tests\///' -e 's/^==[0-9]*==//' \
        -e 's/ on address 0x.*//' | cut -c1-160
}

results=()   # name|check|verdict|how|seconds|bug
escaped=()   # the names that escaped, for the summary
bad=0

# run_check DIR LIMIT PRESET ENV EXE ARGS MUST: one run of a mutant's check
# in DIR; sets verdict and how.
run_check() {
    local dir=$1 limit=$2 preset=$3 env=$4 exe=$5 args=$6 must=$7 rc
    # Line-buffered output, so that a check stopped at its time limit
    # leaves what it printed (not under ASan: it must be loaded first).
    local buf=""
    case $preset in default|faults) command -v stdbuf >/dev/null && buf="stdbuf -oL -eL" ;; esac
    # shellcheck disable=SC2086
    (cd "$dir" && timeout "$limit" $buf env $env "$exe" $args) >"$dir/check.out" 2>&1
    rc=$?
    how=$(first_failure "$dir/check.out")
    if [ "$rc" = 124 ] && [ -n "$how" ]; then
        verdict=caught how="$how (stopped at ${limit}s)"
    elif [ "$rc" = 124 ]; then
        verdict=ESCAPED how="no verdict within ${limit}s"
    elif [ "$rc" != 0 ]; then
        verdict=caught
        [ -n "$how" ] || how="exit status $rc: $(tail -n 1 "$dir/check.out" | cut -c1-120)"
    elif [ "$must" = 1 ]; then
        verdict=ESCAPED how=""
    else
        verdict="ESCAPED (expected)" how=""
    fi
}

# A catch that only says time ran out: a check run beside another (a lane)
# may just have been slow, so such a catch is confirmed by a run alone.
timed_catch() {
    [[ $1 == *"Test timeout expired"* || $1 == *"(stopped at "*"s)" || $1 == *"no progress for"* ]]
}

# run_one SPEC OUT: builds one mutant and runs its check, writing to OUT the
# line "name|check|verdict|how|seconds|bug|dir|limit|preset|env|exe|args|must"
# (fields with no | in them but `bug` and `how`, which are read by position).
run_one() {
    local spec=$1 outf=$2 name preset target env args must fast bug
    IFS='|' read -r name preset target env args must fast bug <<<"$spec"
    local t0 exe verdict how secs check dir=""
    # TIMEOUT=N in the environment field: this check's own time limit
    local limit=$LIMIT
    if [[ $env == TIMEOUT=* ]]; then
        limit=${env%% *}
        limit=${limit#TIMEOUT=}
        [[ $env == *" "* ]] && env=${env#* } || env=""
    fi
    check="$target${env:+ ($env)}"
    [[ $args == *-max_total_time=* ]] && check="$target (seed corpus, then fuzzing)"
    [ "$preset" = default ] || check="$check, $preset build"
    t0=$(date +%s.%N)
    if ! exe=$(build_mutant "$name" "$preset" "$target"); then
        verdict="BUILD FAILED" how=$exe exe=""
    else
        dir=${exe%/*}
        mkdir -p "$dir/corpus"
        args=${args//@DIR@/$dir}
        args=${args//@ROOT@/$root}
        if [ "$baseline" = 1 ]; then
            # shellcheck disable=SC2086
            (cd "$dir" && timeout "$limit" env $env "$(cat base-exe)" $args) \
                >"$dir/baseline.out" 2>&1 ||
                { echo "mutants: $check fails without $name too (see $dir/baseline.out)" >&2
                  verdict="BASELINE FAILED" how="the check fails without the planted bug"; }
        fi
        if [ "${verdict:-}" != "BASELINE FAILED" ]; then
            run_check "$dir" "$limit" "$preset" "$env" "$exe" "$args" "$must"
            # Most checks meet their bug through a race, so a run can miss
            # it by chance (on a loaded machine, one in tens). A bug that
            # must be caught gets one more run, and the verdict says it
            # took two; a bug that escapes both fails the step.
            if [ "$verdict" = ESCAPED ]; then
                local first=$how
                cp "$dir/check.out" "$dir/check-1.out"
                run_check "$dir" "$limit" "$preset" "$env" "$exe" "$args" "$must"
                if [ "$verdict" = caught ]; then
                    verdict="caught (2nd run)"
                    how="${how}${first:+ (1st run: $first)}"
                fi
            fi
        fi
    fi
    secs=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.0f", b - a }')
    how=${how//$'\n'/ }
    printf '%s\n' "$name" "$check" "$verdict" "$how" "$secs" "$bug" "$dir" "$limit" \
        "$preset" "$env" "$exe" "$args" "$must" >"$outf"
}

# Whether a finished mutant's catch (OUT file) needs a run alone.
needs_confirm() {
    local verdict how
    { read -r; read -r; read -r verdict; read -r how; } <"$1"
    [ "$LANES" -gt 1 ] && [[ $verdict == caught* ]] && timed_catch "$how"
}

# Reads a finished mutant's OUT file and counts and prints it; with
# `alone`, runs its check once more first, with no other check running.
report_one() {
    local outf=$1 alone=${2:-} name check verdict how secs bug dir limit preset env exe args must
    { read -r name; read -r check; read -r verdict; read -r how; read -r secs; read -r bug
      read -r dir; read -r limit; read -r preset; read -r env; read -r exe; read -r args
      read -r must; } <"$outf"
    if [ -n "$alone" ]; then
        local first=$how t0
        t0=$(date +%s)
        run_check "$dir" "$limit" "$preset" "$env" "$exe" "$args" "$must"
        secs=$((secs + $(date +%s) - t0))
        if [[ $verdict == caught ]]; then
            verdict="caught (alone)"
        else
            how="beside another check: $first; alone: ${how:-passed}"
        fi
    fi
    case $verdict in
    "BUILD FAILED") bad=$((bad + 1)) escaped+=("$name (build)") ;;
    "BASELINE FAILED") bad=$((bad + 1)) escaped+=("$name (baseline)") ;;
    ESCAPED) bad=$((bad + 1)) escaped+=("$name") ;;
    esac
    log "$(printf '%-26s %-40s %-8s %4ss  %s' "$name" "$check" "$verdict" "$secs" "$how")"
    results+=("$name|$check|$verdict|$how|$secs|$bug")
}

selected=()
for spec in "${mutants[@]}"; do
    IFS='|' read -r name _ _ _ _ _ fast _ <<<"$spec"
    case $mode in
    fast) [ "$fast" = 1 ] || continue ;;
    only) [ "$name" = "$only" ] || continue ;;
    esac
    selected+=("$spec")
done
if [ "$mode" = only ] && [ ${#selected[@]} = 0 ] && [ "$model" = 0 ]; then
    echo "mutants: no mutant named $only" >&2
    exit 2
fi

# The preset trees' builds first, one at a time (two builds of one tree at
# once would trip over each other); the lanes then only compile into their
# own folders.
for spec in "${selected[@]}"; do
    IFS='|' read -r name preset target _ <<<"$spec"
    base_build "$preset" "$target" || echo "mutants: base build of $target ($preset) failed" >&2
done
based=1

# LANES mutants at a time, each building its own copy and running its check;
# reported in the list's order as they finish, except the catches to be
# confirmed alone, which wait until every lane is done.
work=$(mktemp -d "${TMPDIR:-/tmp}/sluice-mutants.XXXXXX")
trap 'rm -rf "$work"' EXIT
next_report=0
to_confirm=()
report_ready() {
    while [ "$next_report" -lt ${#selected[@]} ] && [ -f "$work/$next_report.done" ]; do
        if needs_confirm "$work/$next_report"; then
            to_confirm+=("$next_report")
        else
            report_one "$work/$next_report"
        fi
        next_report=$((next_report + 1))
    done
}
for i in "${!selected[@]}"; do
    while [ "$(jobs -rp | wc -l)" -ge "$LANES" ]; do
        wait -n
        report_ready
    done
    (run_one "${selected[$i]}" "$work/$i"; touch "$work/$i.done") &
done
wait
report_ready
for i in ${to_confirm[@]+"${to_confirm[@]}"}; do
    report_one "$work/$i" alone
done

# The models' planted bugs: run.sh --mutants prints "mutant -DBUG (model):",
# the checks, then "  => caught: CHECK KIND pan's line" or "  => not caught".
model_rows=()
if [ "$model" = 1 ]; then
    log "model mutants (tests/model/run.sh --mutants) ..."
    mout=$(mktemp)
    t0=$(date +%s)
    bash tests/model/run.sh --mutants >"$mout" 2>&1
    mrc=$?
    while IFS= read -r line; do
        case $line in
        "mutant -D"*) mbug=${line#mutant -D}; mbug=${mbug%:} ;;
        "  => caught: "*) model_rows+=("$mbug|caught|${line#  => caught: }") ;;
        # run.sh's exit status says whether one that must be caught was not
        "  => not caught"*) model_rows+=("$mbug|not caught|") ;;
        esac
    done <"$mout"
    for r in "${model_rows[@]}"; do
        IFS='|' read -r mbug v how <<<"$r"
        log "$(printf '%-52s %-19s %s' "model $mbug" "$v" "$how")"
    done
    [ "$mrc" = 0 ] || { log "model mutants: $(tail -n 1 "$mout")"; bad=$((bad + 1)); }
    log "model mutants: $(($(date +%s) - t0))s"
    rm -f "$mout"
fi

markdown() {
    echo "| planted bug | check | verdict | first failing line | s |"
    echo "|---|---|---|---|---|"
    local r name check verdict how secs bug
    for r in "${results[@]}"; do
        IFS='|' read -r name check verdict how secs bug <<<"$r"
        how=${how//|/\\|}
        echo "| \`SL_MUTANT_$name\`: $bug | $check | $verdict | ${how:+\`$how\`} | $secs |"
    done
    for r in "${model_rows[@]}"; do
        IFS='|' read -r mbug verdict how <<<"$r"
        echo "| model \`${mbug% (*}\` (${mbug##* (} | \`tests/model/run.sh --mutants\` | $verdict | ${how:+\`$how\`} | |"
    done
}

doc=docs/guarantees.md
begin='<!-- mutants table: generated by scripts/mutants.sh --update-doc -->'
end='<!-- end of mutants table -->'
case $out in
markdown) markdown ;;
doc)
    if ! grep -qF "$begin" "$doc" || ! grep -qF "$end" "$doc"; then
        echo "mutants: $doc has no marker comments" >&2
        exit 2
    fi
    table=$(mktemp)
    markdown >"$table"
    awk -v b="$begin" -v e="$end" -v t="$table" '
        $0 == b { print; while ((getline l < t) > 0) print l; skip = 1; next }
        $0 == e { skip = 0 }
        !skip' "$doc" >"$doc.new" && mv "$doc.new" "$doc"
    rm -f "$table"
    echo "mutants: table in $doc rewritten (${#results[@]} C mutants, ${#model_rows[@]} model)"
    ;;
esac
log "mutants: ${#results[@]} run, $bad escaped or failed to build${escaped:+ (escaped: ${escaped[*]})}"
[ "$bad" = 0 ]
