#!/usr/bin/env bash
# make stress [CH=NN] [REPEAT=N] [HOGS=N]: run the test suite N times (default
# 20) while CPU hogs compete for the cores (HOGS, default one per core; twice
# as many as cores shows that no test needs several CPUs at once), and report
# each test that ever failed, with the seed that reproduces it (SEED=... on
# its test binary).
# Usage: tests/support/stress.sh REPEAT GRADER-ARGS...
set -u
repeat=${1:-20}; shift
out=build/stress
rm -rf "$out"; mkdir -p "$out"

hogs=()
for ((i = 0; i < ${HOGS:-$(nproc)}; i++)); do
    ( while :; do :; done ) &
    hogs+=($!)
done
trap 'kill "${hogs[@]}" 2>/dev/null' EXIT
echo "stress: $repeat runs of the suite with ${#hogs[@]} CPU hog(s) competing ..."
start=$(date +%s)
for ((run = 1; run <= repeat; run++)); do
    build/tools/kit-grade --mode test --report "$out/run-$run" "$@" >"$out/run-$run.log" 2>&1
    failed=$(grep -c -E '^  test_[a-z0-9_]+ +(FAILED|CRASHED|TIMED OUT|DATA RACE|MEMORY ERROR|NO RESULT)' "$out/run-$run.log")
    printf '  run %2d: %s\n' "$run" "$([ "$failed" -eq 0 ] && echo ok || echo "$failed failed")"
done
echo
failures=$(grep -h -E '^  test_[a-z0-9_]+ +(FAILED|CRASHED|TIMED OUT|DATA RACE|MEMORY ERROR|NO RESULT)' "$out"/run-*.log |
    awk '{ print $1 }' | sort | uniq -c)
if [ -z "$failures" ]; then
    echo "stress: 0 failures in $repeat runs ($(( $(date +%s) - start )) s)"
    exit 0
fi
echo "stress: tests that failed at least once (count, test, seeds):"
while read -r count name; do
    # the seeds of the runs where this test failed, not of every run
    seeds=""
    for log in "$out"/run-*.log; do
        if grep -q -E "^  $name +(FAILED|CRASHED|TIMED OUT|DATA RACE|MEMORY ERROR|NO RESULT)" "$log"; then
            seeds+=$(grep -h -o 'SEED=[0-9]*' "${log%.log}"/logs/*."$name".log 2>/dev/null | sort -u | tr '\n' ' ')
        fi
    done
    echo "  $count x $name  ${seeds:-(no seed printed)}"
done <<<"$failures"
exit 1
