#!/usr/bin/env bash
# Runs the whole test suite (real-model tests included) from .venv; "no tests ran" counts as a failure.
set -uo pipefail
cd "$(dirname "$0")/.."
venv=${VENV:-.venv}
"$venv/bin/python" -m pytest "$@"
status=$?
if [ "$status" -eq 5 ]; then
  echo "error: pytest collected no tests" >&2
  exit 1
fi
exit "$status"
