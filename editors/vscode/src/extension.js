// A thin client: everything (diagnostics, hover, completion, definition, outline)
// comes from `lwtool lsp`, the same validator as `lwtool validate`.
const fs = require("fs");
const path = require("path");
const vscode = require("vscode");
const { LanguageClient, TransportKind } = require("vscode-languageclient/node");

let client;

const NOT_FOUND =
  "lwtool was not found, so LWIR files get no diagnostics. Install it (from a clone of " +
  "lwtool: bash scripts/bootstrap.sh; it is not on a package index yet), or set " +
  "`lwtool.command` to how to start it, e.g. [\".venv/bin/lwtool\", \"lsp\"].";

const WINDOWS = process.platform === "win32";

function executable(file) {
  try {
    fs.accessSync(file, WINDOWS ? fs.constants.F_OK : fs.constants.X_OK);
    return fs.statSync(file).isFile();
  } catch {
    return false;
  }
}

function found(file) {
  const names = WINDOWS ? [file, `${file}.exe`, `${file}.cmd`] : [file];
  return names.find(executable);
}

function workspaceDirs() {
  return (vscode.workspace.workspaceFolders || [])
    .filter((folder) => folder.uri.scheme === "file")
    .map((folder) => folder.uri.fsPath);
}

// The server command with its program resolved, or undefined when it is nowhere. The
// extension host's PATH is the login shell's, not the terminal's that opened the
// window, so a project's own .venv is looked in too (unless a command is set).
function serverCommand() {
  const config = vscode.workspace.getConfiguration("lwtool");
  const set = config.inspect("command") || {};
  const chosen = set.workspaceFolderValue || set.workspaceValue || set.globalValue;
  const [command, ...args] = config.get("command", ["lwtool", "lsp"]);
  let program;
  if (command.includes("/") || command.includes("\\")) {
    const candidates = path.isAbsolute(command) ? [command]
      : workspaceDirs().map((dir) => path.join(dir, command));
    program = candidates.map(found).find(Boolean);
  } else {
    program = (process.env.PATH || "").split(path.delimiter).filter(Boolean)
      .map((dir) => found(path.join(dir, command))).find(Boolean);
    if (!program && !chosen) {
      program = workspaceDirs().map((dir) => found(
        path.join(dir, ".venv", WINDOWS ? "Scripts" : "bin", command))).find(Boolean);
    }
  }
  // TransportKind.stdio adds --stdio, which `lwtool lsp` takes.
  return program ? { command: program, args, transport: TransportKind.stdio } : undefined;
}

// Said without waiting for an answer: activation and restarts must not hang on it.
function notStarted(message) {
  vscode.window.showErrorMessage(message, "Open settings").then((choice) => {
    if (choice === "Open settings") {
      vscode.commands.executeCommand("workbench.action.openSettings", "lwtool.command");
    }
  });
}

async function start() {
  const server = serverCommand();
  if (!server) {
    notStarted(NOT_FOUND);
    return;
  }
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
  client = new LanguageClient("lwtool", "lwtool", server, clientOptions);
  try {
    await client.start();
  } catch (error) {
    client = undefined;
    const why = (error && (error.message || String(error))) || "see the lwtool output";
    notStarted(`lwtool lsp (${server.command}) did not start: ${why}`);
  }
}

// One restart at a time: a settings file saved in two writes fires two changes.
let restarting = Promise.resolve();

function restart() {
  restarting = restarting.then(async () => {
    if (client) {
      const old = client;
      client = undefined;
      await old.stop().catch(() => undefined);
    }
    await start();
  });
  return restarting;
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
