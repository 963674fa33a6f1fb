#!/usr/bin/env bash
# Feeds a chapter program every kind of bad option value - missing, malformed,
# negative, huge, empty, unknown - reading its options from its own --help.
# Each must end with exit status 2 and a one-line "PROGRAM: error: ..." on
# stderr (followed by the usage), never a crash, a hang or a run.
# Usage: tests/support/bad-input.sh PROGRAM
set -u
program=$1
name=$(basename "$program")
fails=0; cases=0
expect_refusal() {
    cases=$((cases + 1))
    err=$(timeout 10 "$program" "$@" 2>&1 >/dev/null); rc=$?
    if [ $rc -ne 2 ] || ! head -1 <<<"$err" | grep -q "^$name: error: "; then
        echo "  bad-input: $name $* -> exit $rc: $(head -1 <<<"$err")"
        fails=$((fails + 1))
    fi
}
# Option lines of --help: "  --name METAVAR   help (min..max, default d)".
# An option whose help shows a range takes numbers (or a list of numbers).
while read -r option metavar numeric; do
    [ "$numeric" = numeric ] && [[ $metavar != *,* ]] && metavar=N
    case "$metavar" in
    N|*,*)  # numbers, and lists of numbers
        for value in "" abc 12abc -99999999 99999999999999999999 1.5 " 7" "+3"; do
            expect_refusal "$option" "$value"
        done
        [[ $metavar == *,* ]] && expect_refusal "$option" "1,,2" && expect_refusal "$option" "1,2,"
        expect_refusal "$option" ;;
    FILE|TEXT|URL|NAME|PATH|HOST) expect_refusal "$option"; expect_refusal "$option" "" ;;  # free text
    [A-Z]*) expect_refusal "$option" no-such-choice; expect_refusal "$option" ;;
    *) expect_refusal "$option=yes" ;;  # a flag given a value
    esac
done < <("$program" --help | grep -E '^  --[a-z]' | grep -v -- '--help' |
         sed -E -e 's/^  (--[a-z0-9-]+) ?([A-Z][A-Z,.:|]*)?(.*)$/\1 \2 \3/' \
                -e 's/^([^ ]+ [^ ]*) .*\(-?[0-9]+\.\.-?[0-9]+.*$/\1 numeric/' \
                -e 's/^([^ ]+ [^ ]*) [^n].*$/\1 -/')
expect_refusal --no-such-option
expect_refusal stray-argument
expect_refusal -x
printf '  %-58s %s\n' "$name (bad input: $cases cases)" "$([ $fails -eq 0 ] && echo passed || echo "$fails FAILED")"
[ $fails -eq 0 ]
