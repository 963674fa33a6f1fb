#!/usr/bin/env bash
# make mutants: for every classic bug in tests/mutants/<chapter>/*.patch, copy
# solutions/, apply the patch, build that chapter's tests against the copy and
# run them, stopping at the first test that does not pass. A mutant is killed
# when some test fails, crashes or times out; it survives when all pass.
# MUTANT_JOBS mutants are tried at once (default: the number of cores).
# A mutant whose tests all pass is run again, up to MUTANT_TRIES runs in all
# (default 3): a race some stress test catches only when the scheduler
# cooperates is then reported as "killed (run 2 of 3)", so the luck it needed
# is on record instead of failing CI one run in ten.
# Exit status 1 if any mutant survived (or did not apply or build).
# MUTANT_DIR holds the patches (default tests/mutants; make sweep passes the
# generated wake-up mutations) and MUTANT_WORK the copies (default build/mutants).
# Usage: tests/support/mutants.sh CHAPTER...      (e.g. 01-monitor-queue)
set -u
root=$(pwd)
grader=build/tools/kit-grade
timeout=${MUTANT_TIMEOUT:-20}
tries=${MUTANT_TRIES:-3}
jobs=${MUTANT_JOBS:-$(nproc 2>/dev/null || echo 2)}
patches=${MUTANT_DIR:-tests/mutants}
work_root=${MUTANT_WORK:-build/mutants}
results=$work_root/results
rm -rf "$work_root"; mkdir -p "$results"

# What every mutant build shares (lib, tests, harness, the earlier chapters'
# reference objects) is built once, first: side by side, two builds would
# make the same shared object at once, and one would link it half written.
make --no-print-directory -s -j"$jobs" CH="$*" tests-bin grader earlier-references >/dev/null

# One mutant: patch a copy of solutions/, build the chapter's tests, run them.
try_mutant() {
    local chapter=$1 patch=$2
    local name; name=$(basename "$patch" .patch)
    local work=$work_root/$chapter/$name
    local result caught start
    start=$(date +%s)
    rm -rf "$work"; mkdir -p "$work"
    cp -r solutions "$work/solutions"
    # The grader reads each binary's test names from its source, under
    # --source-root: the copy must show the kit's tests beside its solutions.
    ln -s "$root/tests" "$work/tests"
    if ! patch -s -p1 --batch --forward -d "$work" <"$patch" >"$work/patch.log" 2>&1; then
        result="NO-APPLY"; caught="$(head -1 "$work/patch.log")"
    elif ! make --no-print-directory -s IMPL="$root/$work/solutions" OUT="$work/out" CH="$chapter" \
            tests-bin >"$work/build.log" 2>&1; then
        result="NO-BUILD"; caught="see $work/build.log"
    else
        result="SURVIVED"; caught="-"
        local run
        for ((run = 1; run <= tries; run++)); do
            if "$grader" --mode mutant --rubric tests/rubric.tsv --bin "$work/out/tests" --chapter "$chapter" \
                    --timeout "$timeout" --report "$work/report" --source-root "$root/$work/" \
                    ${REAL_THREADS:+--real-threads} >"$work/run.log" 2>&1; then
                result="killed"; caught=$(sed -n 's/^killed by //p' "$work/run.log")
                [ "$run" -eq 1 ] || caught="$caught  [only in run $run of $tries]"
                # A test the grader could not find kills nothing: the run is broken.
                case "$caught" in *"(MISSING)"*) result="NO-TESTS" ;; esac
                break
            fi
        done
    fi
    printf '%-16s %-36s %-8s %s  (%ds)\n' "${chapter:0:16}" "$name" "$result" "$caught" \
        $(( $(date +%s) - start )) >"$results/$chapter.$name"
    cat "$results/$chapter.$name"
}

printf '%-16s %-36s %-8s %s\n' chapter mutant result "caught by"
start=$(date +%s)
for chapter in "$@"; do
    for patch in "$patches/$chapter"/*.patch; do
        [ -e "$patch" ] || continue
        # at most $jobs at once
        while [ "$(jobs -rp | wc -l)" -ge "$jobs" ]; do wait -n; done
        try_mutant "$chapter" "$patch" &
    done
done
wait
total=$(find "$results" -type f | wc -l)
bad=$(grep -L -E '^[^ ]+ +[^ ]+ +killed ' "$results"/* 2>/dev/null | wc -l)
echo
echo "Mutants: $total, killed: $((total - bad)), survived or broken: $bad ($(( $(date +%s) - start )) s)"
[ "$bad" -eq 0 ]
