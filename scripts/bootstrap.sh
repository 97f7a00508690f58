#!/usr/bin/env bash
# Create .venv and install lwtool with its pinned dev dependencies (idempotent).
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON="${PYTHON:-python3}"
if [ ! -x .venv/bin/python ]; then
  "$PYTHON" -m venv .venv
fi
stamp=.venv/.lwtool-installed
if [ ! -f "$stamp" ] || [ pyproject.toml -nt "$stamp" ]; then
  .venv/bin/python -m pip install --quiet --upgrade pip >/dev/null
  .venv/bin/python -m pip install --quiet -e '.[dev]'
  touch "$stamp"
fi
# The clients some tests drive (tests/clients: yaml-language-server, mermaid), where npm is.
if command -v npm >/dev/null 2>&1; then
  clients=tests/clients
  if [ ! -f "$clients/node_modules/.lwtool-installed" ] \
      || [ "$clients/package-lock.json" -nt "$clients/node_modules/.lwtool-installed" ]; then
    if npm ci --prefix "$clients" --no-audit --no-fund --silent; then
      touch "$clients/node_modules/.lwtool-installed"
    else
      echo "bootstrap: npm ci in $clients failed; the tests/clients tests will fail" >&2
    fi
  fi
  # A real VS Code host for the extension's test (code-server; needs ripgrep and a
  # C++ toolchain: .ci/run installs them).
  if command -v rg >/dev/null 2>&1; then
    bash scripts/install_code_server.sh \
      || echo "bootstrap: code-server did not install; tests/clients/test_vscode.py will fail" >&2
  else
    echo "bootstrap: no ripgrep (apt-get install ripgrep): code-server is not installed" >&2
  fi
fi
