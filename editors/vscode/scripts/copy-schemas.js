// vscode:prepublish (vsce runs it before packing): the LWIR, definition and pipeline JSON Schemas
// from the repository's schemas/ folder into this extension, so the .vsix holds them.
const fs = require("fs");
const path = require("path");

const from = path.join(__dirname, "..", "..", "..", "schemas");
const to = path.join(__dirname, "..", "schemas");
fs.mkdirSync(to, { recursive: true });
for (const name of ["lwir.schema.json", "definition.schema.json", "pipeline.schema.json"]) {
  fs.copyFileSync(path.join(from, name), path.join(to, name));
}
