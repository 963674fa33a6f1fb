#!/usr/bin/env bash
# make explore: run the exploration tests (tests/NN-name/test_*_explore) of the
# chosen chapters, each test in its own process, with the explorer's knobs:
#   SCHEDULES=N  schedules per strategy (KIT_SCHEDULES)
#   STRATEGY=S   strategies instead of the tests' own seeds (KIT_SCHED), e.g.
#                "random:42", "pct:7:3 dfs:2"
#   REPLAY=TOKEN one recorded schedule (KIT_SCHED=replay:TOKEN); needs TEST
#   TEST=name    only this test
#   KIT_RUN_PREFIX  the command each test runs under (kit-confine, for a submission)
# A test program's tests are read from its source, never asked of a program
# that may hold a submission's code.
# Usage: tests/support/explore.sh BIN_DIR CHAPTER...
# Exit status 1 if any test failed; the failure's report (with its replay
# token and the numbered steps) is printed as it happens.
set -u
bin_dir=$1; shift
if [ -n "${REPLAY:-}" ]; then
    [ -n "${TEST:-}" ] || { echo "make explore REPLAY=... needs TEST=name: the test the token was printed by"; exit 2; }
    export KIT_SCHED="replay:${REPLAY#replay:}"
elif [ -n "${STRATEGY:-}" ]; then
    export KIT_SCHED="$STRATEGY"
fi
[ -z "${SCHEDULES:-}" ] || export KIT_SCHEDULES="$SCHEDULES"
export KIT_NO_LOCK_DELAYS=1 KIT_EXPLORE_STATS=1
logs=build/explore; mkdir -p "$logs"
passed=0; failed=0; start=$(date +%s)
for chapter in "$@"; do
    for bin in "$bin_dir/$chapter"/test_*_explore; do
        [ -x "$bin" ] || continue
        source=tests/$chapter/$(basename "$bin").c
        for test in $(sed -n '/struct CMUnitTest/,/^};/p' "$source" | grep -oE '\(test_[a-z0-9_]+' | tr -d '('); do
            [ -z "${TEST:-}" ] || [ "$TEST" = "$test" ] || continue
            t0=$(date +%s%N)
            # shellcheck disable=SC2086  # the prefix is a command and its words
            if ${KIT_RUN_PREFIX:-} "$bin" --run "$test" >"$logs/$test.log" 2>&1; then
                verdict=passed
                # A data race or a lock-order inversion fails a search too (make grade: the race-free line)
                grep -q '^\[ race     \] \(DATA RACE\|LOCK ORDER\)' "$logs/$test.log" && verdict=RACE
            else
                verdict=FAILED
                grep -v '^\[ \(RUN\|  FAILED\|  PASSED\|==========\|       OK\|race    \) \|^$\|FAILED TEST' "$logs/$test.log"
            fi
            if [ "$verdict" = passed ]; then passed=$((passed + 1)); else failed=$((failed + 1)); fi
            sed -n 's/^\[ race     \] //p' "$logs/$test.log"
            printf '%-8s %-60s %6d ms\n' "$verdict" "$chapter/$test" $((($(date +%s%N) - t0) / 1000000))
            # A test of generated scenarios says what they came to; another, each search's speed.
            if grep -q '^\[ scenario \]' "$logs/$test.log"; then
                sed -n 's/^\[ scenario \] [a-z0-9_]*: \([^;]*\).*/         \1/p' "$logs/$test.log"
            else
                sed -n 's/^\[ explore  \] [a-z0-9_]*: \([0-9]* schedules.*\)/         \1/p' "$logs/$test.log"
            fi
        done
    done
done
echo "Explored: $passed passed, $failed failed ($(( $(date +%s) - start )) s)${KIT_SCHED:+, KIT_SCHED=$KIT_SCHED}${KIT_SCHEDULES:+, $KIT_SCHEDULES schedules per strategy}"
[ "$failed" -eq 0 ] && [ $((passed + failed)) -gt 0 ]
