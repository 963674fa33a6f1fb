#!/usr/bin/env bash
# make mutants: for every classic bug in tests/mutants/<chapter>/*.patch, copy
# solutions/, apply the patch, build that chapter's tests against the copy and
# run them, stopping at the first test that does not pass. A mutant is killed
# when some test fails, crashes or times out; it survives when all pass.
# Exit status 1 if any mutant survived (or did not apply).
# Usage: tests/support/mutants.sh CHAPTER...      (e.g. 01-monitor-queue)
set -u
root=$(pwd)
grader=build/tools/kit-grade
timeout=${MUTANT_TIMEOUT:-20}
jobs=$(nproc 2>/dev/null || echo 2)
survivors=0; total=0
summary=()

printf '%-16s %-36s %-8s %s\n' chapter mutant result "caught by"
for chapter in "$@"; do
    for patch in tests/mutants/"$chapter"/*.patch; do
        [ -e "$patch" ] || continue
        name=$(basename "$patch" .patch)
        work=build/mutants/$chapter/$name
        rm -rf "$work"; mkdir -p "$work"
        cp -r solutions "$work/solutions"
        total=$((total + 1))
        start=$(date +%s)
        if ! patch -s -p1 -d "$work" <"$patch" >"$work/patch.log" 2>&1; then
            result="NO-APPLY"; caught="$(head -1 "$work/patch.log")"; survivors=$((survivors + 1))
        elif ! make --no-print-directory -s -j"$jobs" IMPL="$root/$work/solutions" OUT="$work/out" CH="$chapter" \
                tests-bin >"$work/build.log" 2>&1; then
            result="NO-BUILD"; caught="see $work/build.log"; survivors=$((survivors + 1))
        else
            "$grader" --mode mutant --rubric tests/rubric.tsv --bin "$work/out/tests" --chapter "$chapter" \
                --timeout "$timeout" --report "$work/report" --source-root "$root/$work/" >"$work/run.log" 2>&1
            if [ $? -eq 0 ]; then
                result="killed"; caught=$(sed -n 's/^killed by //p' "$work/run.log")
            else
                result="SURVIVED"; caught="-"; survivors=$((survivors + 1))
            fi
        fi
        printf '%-16s %-36s %-8s %s  (%ds)\n' "${chapter:0:16}" "$name" "$result" "$caught" $(( $(date +%s) - start ))
    done
done
echo
echo "Mutants: $total, killed: $((total - survivors)), survived or broken: $survivors"
[ "$survivors" -eq 0 ]
