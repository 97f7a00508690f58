// A thin client: everything (diagnostics, hover, completion, definition, outline)
// comes from `lwtool lsp`, the same validator as `lwtool validate`.
const vscode = require("vscode");
const { LanguageClient, TransportKind } = require("vscode-languageclient/node");

let client;

const NOT_FOUND =
  "lwtool was not found, so LWIR files get no diagnostics. Install it (from a clone of " +
  "lwtool: bash scripts/bootstrap.sh; it is not on a package index yet), or set " +
  "`lwtool.command` to how to start it, e.g. [\".venv/bin/lwtool\", \"lsp\"].";

function serverCommand() {
  const [command, ...args] = vscode.workspace
    .getConfiguration("lwtool")
    .get("command", ["lwtool", "lsp"]);
  // TransportKind.stdio adds --stdio, which `lwtool lsp` takes.
  return { command, args, transport: TransportKind.stdio };
}

async function start() {
  const clientOptions = {
    // The files stay YAML and JSON documents (their highlighting, and the schemas
    // contributed through yamlValidation/jsonValidation, keep working); the server
    // attaches to LWIR, workflow, definition and pipeline files among them.
    documentSelector: [
      { scheme: "file", language: "yaml", pattern: "**/*.{lwir,workflow,definition,pipeline}.{yaml,yml}" },
      { scheme: "file", language: "json", pattern: "**/*.{lwir,workflow,definition,pipeline}.json" },
    ],
    // A server that cannot start is said once, not retried five times.
    initializationFailedHandler: () => false,
  };
  client = new LanguageClient("lwtool", "lwtool", serverCommand(), clientOptions);
  try {
    await client.start();
  } catch (error) {
    const missing = String((error && (error.code || error.message)) || "").includes("ENOENT");
    const choice = await vscode.window.showErrorMessage(
      missing ? NOT_FOUND : `lwtool lsp did not start: ${error && error.message}`,
      "Open settings");
    if (choice === "Open settings") {
      vscode.commands.executeCommand("workbench.action.openSettings", "lwtool.command");
    }
    client = undefined;
  }
}

async function restart() {
  if (client) {
    const old = client;
    client = undefined;
    await old.stop().catch(() => undefined);
  }
  await start();
}

function activate(context) {
  context.subscriptions.push(
    vscode.workspace.onDidChangeConfiguration((event) => {
      if (event.affectsConfiguration("lwtool.command")) {
        restart(); // a changed command takes effect without a reload
      }
    }),
    { dispose: () => client && client.stop() });
  return start();
}

function deactivate() {
  return client ? client.stop() : undefined;
}

module.exports = { activate, deactivate };
