#!/usr/bin/env bash
# Install the VS Code host the client tests drive (tests/clients/test_vscode.py):
# code-server (VS Code 1.100, Node 20) pinned in tests/clients/vscode-host. Its own
# postinstall downloads ripgrep from GitHub, so its steps are done here offline: the
# packages without their scripts, then the native modules VS Code needs built from
# source (node-gyp; gcc, make and Python), Debian's ripgrep in place of the download
# (apt-get install ripgrep), and the links the postinstall makes. Idempotent: a stamp
# newer than the lock file skips it.
set -euo pipefail
cd "$(dirname "$0")/../tests/clients/vscode-host"
stamp=node_modules/.lwtool-installed
if [ -f "$stamp" ] && [ "$stamp" -nt package-lock.json ]; then
  exit 0
fi
export npm_config_yes=true  # node-pty's post-install runs `npx node-gyp`
quiet=(--no-audit --no-fund --loglevel=error)
npm ci --ignore-scripts "${quiet[@]}" >/dev/null
npm rebuild argon2 "${quiet[@]}" >/dev/null
code=node_modules/code-server/lib/vscode
(cd "$code" && npm install --omit=dev --ignore-scripts "${quiet[@]}" >/dev/null \
  && npm rebuild @parcel/watcher @vscode/spdlog @vscode/deviceid native-watchdog node-pty \
       "${quiet[@]}" >/dev/null \
  && mkdir -p node_modules/@vscode/ripgrep/bin \
  && ln -sf "$(command -v rg)" node_modules/@vscode/ripgrep/bin/rg \
  && ln -sfn node_modules node_modules.asar \
  && (cd bin/remote-cli && ln -sf code-linux.sh code-server) \
  && (cd bin/helpers && ln -sf browser-linux.sh browser.sh) \
  && (cd extensions && npm install --omit=dev --ignore-scripts "${quiet[@]}" >/dev/null))
touch "$stamp"
