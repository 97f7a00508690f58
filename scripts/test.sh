#!/usr/bin/env bash
# The test suite (what CI runs): ruff, mypy --strict, then pytest in parallel workers
# (pytest-xdist; a module's tests stay on one worker, sharing its fixtures). Extra
# arguments go to pytest. `--quick` (first) is the inner loop: no lint, and none of the
# tests that drive a real editor or browser (marker `clients`). LWTOOL_TEST_WORKERS
# sets the number of workers (default 4: most tests wait on subprocesses; 0 runs the
# tests in pytest's own process).
set -euo pipefail
cd "$(dirname "$0")/.."
quick=0
if [ "${1:-}" = "--quick" ]; then
  quick=1
  shift
fi
bash scripts/bootstrap.sh dev
parallel=(-n "${LWTOOL_TEST_WORKERS:-4}" --dist loadscope)
if [ "$quick" = 1 ]; then
  exec .venv/bin/python -m pytest "${parallel[@]}" -m "not integration and not clients" "$@"
fi
.venv/bin/ruff check lwtool tests bench
.venv/bin/mypy
exec .venv/bin/python -m pytest "${parallel[@]}" "$@"
