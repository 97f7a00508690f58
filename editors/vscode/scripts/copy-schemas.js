// vscode:prepublish (vsce runs it before packing): the LWIR, definition and pipeline editor
// schemas from the repository's schemas/editor/ folder into this extension, so the .vsix holds
// them. They give VS Code's JSON and YAML services completion and hover and report nothing:
// every structural finding comes once, from lwtool lsp (lwir.invalid_field).
const fs = require("fs");
const path = require("path");

const from = path.join(__dirname, "..", "..", "..", "schemas", "editor");
const to = path.join(__dirname, "..", "schemas");
fs.mkdirSync(to, { recursive: true });
for (const name of ["lwir.schema.json", "definition.schema.json", "pipeline.schema.json"]) {
  fs.copyFileSync(path.join(from, name), path.join(to, name));
}
