#!/usr/bin/env bash
# The test suite (what CI runs): ruff, mypy --strict, then pytest. Extra arguments go to pytest.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/bootstrap.sh
.venv/bin/ruff check lwtool tests bench
.venv/bin/mypy
.venv/bin/python -m pytest "$@"
