// A thin client: everything (diagnostics, hover, completion, definition, outline)
// comes from `lwtool lsp`, the same validator as `lwtool validate`.
const childProcess = require("child_process");
const fs = require("fs");
const path = require("path");
const vscode = require("vscode");

let client;

const NOT_FOUND =
  "lwtool was not found, so LWIR files get no diagnostics. Install it (from a clone of " +
  "lwtool: bash scripts/bootstrap.sh; it is not on a package index yet), or set " +
  "`lwtool.command` to how to start it, e.g. [\".venv/bin/lwtool\", \"lsp\"].";

const UNTRUSTED =
  "lwtool is off in this folder: you have not trusted it, and lwtool would run a " +
  "program of the folder's";
const UNTRUSTED_WAYS =
  "Trust the folder, or set `lwtool.command` in your user settings to an lwtool you " +
  "installed.";
const TRUST = "Manage Workspace Trust";

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

// The server command with its program resolved ({server}), or why there is none
// ({withheld}: a program of an untrusted folder's, not started; else nothing found).
// `lwtool.command` has the scope "application": VS Code reads it from the user's own
// settings only, so a folder never chooses the program it runs. The extension host's PATH is the login
// shell's, not the terminal's that opened the window, so a trusted folder's own .venv
// is looked in too (unless a command is set).
function serverCommand() {
  const config = vscode.workspace.getConfiguration("lwtool");
  const fallback = (config.inspect("command") || {}).defaultValue || ["lwtool", "lsp"];
  const [command, ...args] = config.get("command", fallback);
  const chosen = JSON.stringify([command, ...args]) !== JSON.stringify(fallback);
  const trusted = vscode.workspace.isTrusted;
  let program;
  let withheld;
  if (command.includes("/") || command.includes("\\")) {
    if (path.isAbsolute(command)) {
      program = found(command);
    } else if (trusted) {
      program = workspaceDirs().map((dir) => found(path.join(dir, command))).find(Boolean);
    } else {
      withheld = `lwtool.command names ${command}, a program inside the folder`;
    }
  } else {
    // a relative PATH entry (".") would be the folder itself
    program = (process.env.PATH || "").split(path.delimiter).filter(path.isAbsolute)
      .map((dir) => found(path.join(dir, command))).find(Boolean);
    if (!program && !chosen) {
      const own = workspaceDirs().map((dir) => found(
        path.join(dir, ".venv", WINDOWS ? "Scripts" : "bin", command))).find(Boolean);
      if (own && trusted) {
        program = own;
      } else if (own) {
        withheld = `its own ${own}`;
      }
    }
  }
  return { server: program ? { command: program, args: [...args, "--stdio"] } : undefined,
    withheld };
}

// `lwtool lsp --stdio` (the transport it speaks) started; `started` settles once the
// process runs, or rejects with the spawn error (never thrown in the extension host).
function spawned(server) {
  const child = childProcess.spawn(server.command, server.args, { stdio: "pipe" });
  child.started = new Promise((resolve, reject) => {
    child.once("spawn", () => resolve(child));
    child.once("error", reject);
  });
  return child;
}

// Said without waiting for an answer: activation and restarts must not hang on it.
function notStarted(message, ...more) {
  vscode.window.showErrorMessage(message, ...more, "Open settings").then((choice) => {
    if (choice === "Open settings") {
      vscode.commands.executeCommand("workbench.action.openSettings", "lwtool.command");
    } else if (choice === TRUST) {
      vscode.commands.executeCommand("workbench.trust.manage");
    }
  });
}

async function start() {
  const { server, withheld } = serverCommand();
  if (!server && withheld) {
    notStarted(`${UNTRUSTED} (${withheld}). ${UNTRUSTED_WAYS}`, TRUST);
    return;
  }
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
    // lwtool.portable: every use of an lwtool extension is a warning (portable.extension)
    initializationOptions: {
      portable: vscode.workspace.getConfiguration("lwtool").get("portable", false) === true,
    },
  };
  // The server is spawned first, the language client loaded and set up while it starts
  // (both take a few hundred milliseconds); a restart after a crash spawns anew.
  let first = spawned(server);
  const launch = () => {
    const child = first || spawned(server);
    first = undefined;
    return child.started;
  };
  const { LanguageClient } = require("vscode-languageclient/node");
  client = new LanguageClient("lwtool", "lwtool", launch, clientOptions);
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
      if (event.affectsConfiguration("lwtool.command")
          || event.affectsConfiguration("lwtool.portable")) {
        restart(); // a changed command or setting takes effect without a reload
      }
    }),
    // a folder trusted now may run its own lwtool (its .venv)
    vscode.workspace.onDidGrantWorkspaceTrust(() => restart()),
    { dispose: () => client && client.stop() });
  return start();
}

function deactivate() {
  return client ? client.stop() : undefined;
}

module.exports = { activate, deactivate };
