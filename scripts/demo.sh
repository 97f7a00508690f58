#!/usr/bin/env bash
# The main job on real examples, offline: check the committed workflows against their
# locks, then run two of them durably in a data dir of their own (.little-workflow/demo,
# made afresh each time and kept, so `lwtool ui` can show them) and show what was recorded.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/bootstrap.sh run
data=.little-workflow/demo
rm -rf "$data"
mkdir -p "$data"
.venv/bin/lwtool check examples
echo "== refine-loop (tool.call + decision back-edge loop)"
.venv/bin/lwtool run examples/refine-loop.lwir.yaml --input examples/inputs/refine-loop.json \
  --tools examples/tools.py:tools --data-dir "$data" --run-id demo-loop
echo "== candidate-review (parallel branches, ai.generate on the offline model)"
.venv/bin/lwtool run examples/candidate-review.lwir.yaml \
  --input examples/inputs/candidate-review.json --models examples/models.offline.yaml \
  --data-dir "$data" --run-id demo-review
.venv/bin/lwtool report demo-review --data-dir "$data"
.venv/bin/lwtool runs --data-dir "$data"
echo "== what was recorded: the loop's graph with step statuses (Mermaid), and the review as OpenTelemetry"
.venv/bin/lwtool graph examples/refine-loop.lwir.yaml --run demo-loop --data-dir "$data"
.venv/bin/lwtool export-otel demo-review --data-dir "$data" --file "$data/demo-review.otlp.json"
echo "== the runs are kept in $data: browse them with .venv/bin/lwtool ui --data-dir $data"
