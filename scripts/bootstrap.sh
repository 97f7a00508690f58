#!/usr/bin/env bash
# Create .venv and install lwtool into it (idempotent: a stamp newer than pyproject.toml
# skips each part). `bootstrap.sh run` installs what running the examples needs
# (lwtool[run,observe]: scripts/demo.sh); `bootstrap.sh dev` (the default: scripts/
# test.sh, .ci/run) the pinned dev dependencies too, and the clients the tests drive
# (npm packages, the code-server VS Code host). Each slow part says so first.
set -euo pipefail
cd "$(dirname "$0")/.."
mode="${1:-dev}"
case "$mode" in
  run) extras='.[run,observe]' ;;
  dev) extras='.[dev]' ;;
  *) echo "bootstrap: usage: bootstrap.sh [run|dev]" >&2; exit 2 ;;
esac
PYTHON="${PYTHON:-python3}"
if [ ! -x .venv/bin/python ]; then
  echo "bootstrap: creating .venv" >&2
  "$PYTHON" -m venv .venv
fi
fresh() {  # a stamp newer than pyproject.toml
  [ -f "$1" ] && [ "$1" -nt pyproject.toml ]
}
stamp=".venv/.lwtool-installed-$mode"
if ! fresh "$stamp" && ! { [ "$mode" = run ] && fresh .venv/.lwtool-installed-dev; }; then
  # uv (a pinned wheel from PyPI) installs the same pinned packages as pip, several
  # times faster; pip does it where uv cannot be had.
  if [ ! -x .venv/bin/uv ]; then
    .venv/bin/python -m pip install --quiet --disable-pip-version-check uv==0.13.8 \
      >/dev/null 2>&1 || true
  fi
  echo "bootstrap: installing lwtool${extras#.} into .venv (the first time: a minute or so)" >&2
  if [ -x .venv/bin/uv ]; then
    VIRTUAL_ENV="$PWD/.venv" .venv/bin/uv pip install --quiet --compile-bytecode -e "$extras"
  else
    .venv/bin/python -m pip install --quiet --disable-pip-version-check -e "$extras"
  fi
  touch "$stamp"
fi
[ "$mode" = dev ] || exit 0
# The clients some tests drive (tests/clients: yaml-language-server, mermaid), where npm is.
if command -v npm >/dev/null 2>&1; then
  clients=tests/clients
  if [ ! -f "$clients/node_modules/.lwtool-installed" ] \
      || [ "$clients/package-lock.json" -nt "$clients/node_modules/.lwtool-installed" ]; then
    echo "bootstrap: installing the editor clients the tests drive (npm ci in $clients)" >&2
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
