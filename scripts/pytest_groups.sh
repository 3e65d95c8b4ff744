#!/usr/bin/env bash
# The test runs of `make test`, `make faults` and each `make test-clock` moment (issue #47):
#   1. every selected test but those marked `serial`, in parallel worker processes (pytest-xdist,
#      -n auto from setup.cfg: tests/conftest.py says how many), each with its own database;
#   2. the selected tests marked `serial`, alone and one at a time (-n0).
# The serial run runs whatever the parallel one did, so one report shows every failure, and is left
# out when the selection holds no `serial` test; the exit status is the worse of the two. The last
# line says how long the whole took. With TEST_RESULTS_FILE set (`make test` of the whole suite), it
# also writes there how long pytest took, how many tests ran and whether they passed, for
# bench/figures.py's `make test` row.
#
#   scripts/pytest_groups.sh LABEL PYTEST [PYTEST_ARGS...]
# PYTEST_ARGS go to both runs: `-n0` makes the first one serial too.
set -uo pipefail
label=$1
pytest=$2
shift 2
started=$SECONDS
# The parallel run writes here how many selected tests it left to the serial run.
SERIAL_TESTS_FILE=$(mktemp)
export SERIAL_TESTS_FILE
TEST_COUNT_FILE=$(mktemp)
export TEST_COUNT_FILE
trap 'rm -f "$SERIAL_TESTS_FILE" "$TEST_COUNT_FILE"' EXIT
"$pytest" --serial-group=without "$@"
parallel=$?
serial=0
if [ "$(cat "$SERIAL_TESTS_FILE")" != 0 ]; then
  # -n0 last: it must win over a -n among the arguments.
  "$pytest" --serial-group=only "$@" -n0
  serial=$?
fi
status=$(( parallel > serial ? parallel : serial ))
elapsed=$(( SECONDS - started ))
printf '%s: %s in %d min %02d s (parallel run exit %d, serial run exit %d)\n' "$label" \
  "$([ "$status" -eq 0 ] && echo passed || echo FAILED)" $(( elapsed / 60 )) $(( elapsed % 60 )) "$parallel" "$serial"
if [ -n "${TEST_RESULTS_FILE:-}" ]; then
  printf '{"seconds": %d, "tests": %d, "passed": %s}\n' "$elapsed" \
    "$(awk '{ sum += $1 } END { print sum + 0 }' "$TEST_COUNT_FILE")" \
    "$([ "$status" -eq 0 ] && echo true || echo false)" > "$TEST_RESULTS_FILE"
fi
exit "$status"
