#!/usr/bin/env bash
# make feedback: grade tests/feedback - a deliberately wrong "submission" and
# tests that trip each of its mistakes - and check that the screen says what
# tests/feedback/expect.txt requires: the student's line for a crash, every
# thread's wait for a hang (the test's own check and the runner's time-out),
# both accesses of a race, a misused pthread call in words, the rubric
# sentence and the log file of every failure. Three gradings: as `make
# grade` runs the tests (each on one schedule, "plain"), on real threads
# (`REAL_THREADS=1`, "real"), and under ThreadSanitizer ("tsan"). As root,
# the tests run in the grading sandbox, as they do for `make grade`; the
# plain grading is also confined by kit-confine where bubblewrap is there,
# exactly as `make grade` confines a test (a crash must read as a crash
# through it too).
# Usage: tests/support/feedback.sh TSAN_WRAPPER
set -u
grader=build/tools/kit-grade
out=build/feedback
tsan_wrapper=${1:-}
rm -rf "$out"; mkdir -p "$out"
sandbox=()
[ "$(id -u)" -eq 0 ] && sandbox=(--sandbox-uid 64000)
confined=()
command -v bwrap >/dev/null && confined=(--confine build/tools/kit-confine)
grep -v race tests/feedback/rubric.tsv >"$out/rubric-plain.tsv"
grep race tests/feedback/rubric.tsv >"$out/rubric-tsan.tsv"
"$grader" --mode grade --rubric "$out/rubric-plain.tsv" --bin build/tests --chapter feedback --timeout 12 \
    --report "$out/plain" --source-root "$PWD/" "${sandbox[@]}" "${confined[@]}" >"$out/plain.txt" 2>&1
"$grader" --mode grade --rubric "$out/rubric-plain.tsv" --bin build/tests --chapter feedback --timeout 12 \
    --real-threads --report "$out/real" --source-root "$PWD/" "${sandbox[@]}" >"$out/real.txt" 2>&1
KIT_SLOW=1 "$grader" --mode grade --rubric "$out/rubric-tsan.tsv" --bin build/tsan/tests --chapter feedback \
    --timeout 20 --wrapper "$tsan_wrapper" --report "$out/tsan" --source-root "$PWD/" "${sandbox[@]}" \
    >"$out/tsan.txt" 2>&1

fail=0
while IFS=$'\t' read -r run text; do
    case "$run" in '#'* | '') continue ;; esac
    if grep -qF -- "$text" "$out/$run.txt"; then
        printf '  ok    %-5s %s\n' "$run" "$text"
    else
        printf '  FAIL  %-5s %s\n' "$run" "$text"
        fail=1
    fi
done <tests/feedback/expect.txt
# Correct code the schedule cannot follow is graded on real threads, and passes.
fallback=test_feedback_pipe_handover_runs_on_real_threads
if grep -qE "^  $fallback +passed" "$out/plain.txt" &&
   grep -q "it runs again, on real threads" "$out/plain/logs/feedback.$fallback.log"; then
    printf '  ok    %-5s %s\n' plain "$fallback passed, on real threads after its schedule stalled"
else
    printf '  FAIL  %-5s %s\n' plain "$fallback did not pass on real threads after its schedule stalled"
    fail=1
fi
if grep -qE '0x[0-9a-f]{6,}|E\?' "$out/plain.txt" "$out/real.txt" "$out/tsan.txt"; then
    echo "  FAIL  an address or an unnamed error code reached the screen:"
    grep -hE '0x[0-9a-f]{6,}|E\?' "$out/plain.txt" "$out/real.txt" "$out/tsan.txt" | head -5
    fail=1
fi
if [ $fail -eq 0 ]; then
    echo "feedback: every failure is shown as expected ($out/plain.txt, $out/real.txt, $out/tsan.txt)"
else
    echo "feedback: FAILED - the screens are in $out/plain.txt, $out/real.txt and $out/tsan.txt"
fi
exit $fail
