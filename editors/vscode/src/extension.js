// A thin client: everything (diagnostics, hover, completion, definition, outline)
// comes from `lwtool lsp`, the same validator as `lwtool validate`.
const vscode = require("vscode");
const { LanguageClient, TransportKind } = require("vscode-languageclient/node");

let client;

function activate(context) {
  const [command, ...args] = vscode.workspace
    .getConfiguration("lwtool")
    .get("command", ["lwtool", "lsp"]);
  const serverOptions = { command, args, transport: TransportKind.stdio };
  const clientOptions = {
    // The files stay YAML and JSON documents (their highlighting, and the schemas
    // contributed through yamlValidation/jsonValidation, keep working); the server
    // attaches to LWIR, workflow, definition and pipeline files among them.
    documentSelector: [
      { scheme: "file", language: "yaml", pattern: "**/*.{lwir,workflow,definition,pipeline}.{yaml,yml}" },
      { scheme: "file", language: "json", pattern: "**/*.{lwir,workflow,definition,pipeline}.json" },
    ],
  };
  client = new LanguageClient("lwtool", "lwtool", serverOptions, clientOptions);
  context.subscriptions.push({ dispose: () => client && client.stop() });
  return client.start();
}

function deactivate() {
  return client ? client.stop() : undefined;
}

module.exports = { activate, deactivate };
