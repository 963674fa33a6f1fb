#!/usr/bin/env bash
# Gradescope runs this once, as root, to build the autograder's image: it
# installs what the kit needs to grade (the same list as `make deps`), then
# builds the grader and the tests of the chapters it grades once, so that
# each submission compiles only the student's files. The kit is in source/kit beside this file.
set -eu
umask 022 # the grader's sandbox uid reads what is built here
here=$(cd "$(dirname "$0")" && pwd)
apt-get update -q >/dev/null 2>&1 || true
cd "$here/kit"
tools/bootstrap
# Only the chapters it grades (the file chapters beside this one; every
# chapter when there is none): a grade of another would build its tests then.
chapters=$(cat "$here/chapters" 2>/dev/null || true)
make --no-print-directory -s grader all CH="$chapters" >/dev/null
make --no-print-directory -s SAN=tsan tests-bin CH="$chapters" >/dev/null
