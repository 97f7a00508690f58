#!/usr/bin/env bash
# The main job on a real example, offline: validate, hash and check the committed
# example workflows against their locks.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/bootstrap.sh
.venv/bin/lwtool validate examples/*.lwir.*
.venv/bin/lwtool hash examples/candidate-review.lwir.yaml
.venv/bin/lwtool check examples
