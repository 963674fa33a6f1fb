#!/usr/bin/env bash
# Smoke-runs one chapter program the way `make test` expects every program to
# behave: a short run exits 0, --help prints the usage and exits 0, and a bad
# option prints one error line and the usage and exits 2.
# Usage: tests/support/smoke.sh PROGRAM [ARGS for the short run...]
set -u
program=$1; shift
name=$(basename "$program")
fail() { echo "smoke: $name: $*"; exit 1; }

[ -x "$program" ] || fail "not built"
out=$(timeout 120 "$program" "$@" 2>&1); rc=$?
[ $rc -eq 0 ] || { echo "$out" | tail -20; fail "'$name $*' exited with $rc"; }
help=$("$program" --help 2>&1); rc=$?
if [ $rc -ne 0 ] || ! grep -q '^usage:' <<<"$help"; then fail "--help: exit $rc, or no usage line"; fi
err=$("$program" --no-such-option 2>&1 >/dev/null); rc=$?
[ $rc -eq 2 ] || fail "a bad option exited with $rc, expected 2"
grep -q "^$name: error: " <<<"$err" || fail "a bad option printed no one-line error"
printf '  %-58s %s\n' "$name (run, --help, bad option)" "passed"
