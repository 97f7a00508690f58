#!/usr/bin/env bash
# Pack the VS Code extension as its publisher would (npm ci, then vsce package, which
# runs vscode:prepublish: schemas copied in, the client bundled) and check the .vsix:
# it must hold the bundled client, both JSON Schemas (as in schemas/), the manifest and
# the license, and nothing of node_modules or the sources. Needs node and npm (and the
# npm registry); without them it says so and exits 0.
set -euo pipefail
cd "$(dirname "$0")/.."
if ! command -v npm >/dev/null 2>&1; then
  echo "check_vscode: skipped: node/npm are not installed"
  exit 0
fi
out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT
(cd editors/vscode && npm ci --no-audit --no-fund --loglevel=error >/dev/null \
  && npx vsce package --no-dependencies --out "$out/lwtool-lwir.vsix" >/dev/null)
python3 - "$out/lwtool-lwir.vsix" <<'PY'
import json
import sys
import zipfile
from pathlib import Path

vsix = zipfile.ZipFile(sys.argv[1])
names = set(vsix.namelist())
manifest = json.loads(vsix.read("extension/package.json"))
main = "extension/" + manifest["main"].removeprefix("./")
wanted = {main, "extension/package.json", "extension/LICENSE.txt",
          "extension/schemas/lwir.schema.json", "extension/schemas/definition.schema.json",
          "extension/schemas/pipeline.schema.json"}
problems = [f"missing {name}" for name in sorted(wanted - names)]
problems += [f"should not be packed: {name}" for name in sorted(names)
             if "/node_modules/" in name or name.startswith("extension/src/")]
for schema in ("lwir", "definition", "pipeline"):
    packed = f"extension/schemas/{schema}.schema.json"
    editor = f"schemas/editor/{schema}.schema.json"  # completion and hover, no findings
    if packed in names and vsix.read(packed) != Path(editor).read_bytes():
        problems.append(f"{packed} differs from {editor}")
for event in ("onLanguage:yaml", "onLanguage:json"):  # a first new file gets diagnostics
    if event not in manifest.get("activationEvents", []):
        problems.append(f"activationEvents lacks {event}")
if main in names and b"LanguageClient" not in vsix.read(main):
    problems.append(f"{main} does not hold the language client")
for contribution in ("yamlValidation", "jsonValidation"):
    for entry in manifest["contributes"][contribution]:
        if "extension/" + entry["url"].removeprefix("./") not in names:
            problems.append(f"{contribution} names {entry['url']}, which is not packed")
if problems:
    sys.exit("check_vscode: " + "; ".join(problems))
print(f"check_vscode: {sys.argv[1].rsplit('/', 1)[1]} holds {len(names)} files: the bundled "
      "client, the schemas, the manifest and the license")
PY
