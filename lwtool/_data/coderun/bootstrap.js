// lwtool's code.run bootstrap: the main module of a sandboxed Deno process.
//
// Protocol (lwtool/coderun/runner.py is the other end):
//   host -> here, stdin, one JSON document per line: first {secret, input, entry},
//     then tool replies {id, ok, result | error}.
//   here -> host, stderr, frames "\n<secret> <json>\n": {t: "call", id, tool, args},
//     {t: "result", value} or {t: "error", name, message, stack}.
// The secret arrives before any user code is loaded and lives only in this module's
// closure; user output (console.*, Deno.stdout/stderr) cannot make a frame the host
// accepts. Everything used after user code loads is captured here first, so user
// code that replaces globals cannot see a frame being made.
const stringify = JSON.stringify;
const parse = JSON.parse;
const encoder = new TextEncoder();
const decoder = new TextDecoder();
const encode = encoder.encode.bind(encoder);
const decode = (bytes) => decoder.decode(bytes);
const stdinRead = Deno.stdin.read.bind(Deno.stdin);
const errWrite = Deno.stderr.writeSync.bind(Deno.stderr);
const exit = Deno.exit;
const call = Function.prototype.call;
const bind = (fn) => call.bind(fn);
const subarray = bind(Uint8Array.prototype.subarray);
const indexOf = bind(Uint8Array.prototype.indexOf);
const mapGet = bind(Map.prototype.get);
const mapSet = bind(Map.prototype.set);
const mapDelete = bind(Map.prototype.delete);
const isArray = Array.isArray;
const getPrototypeOf = Object.getPrototypeOf;
const keys = Object.keys;
const push = bind(Array.prototype.push);
const join = bind(Array.prototype.join);
const ObjectPrototype = Object.prototype;
const isFinite = Number.isFinite;
const freeze = Object.freeze;
const create = Object.create;
const SafeMap = Map;
const SafeSet = Set;
const setHas = bind(Set.prototype.has);
const setAdd = bind(Set.prototype.add);
const setDelete = bind(Set.prototype.delete);
const SafeTypeError = TypeError;
const SafeString = String;
const SafeError = Error;
const SafePromise = Promise;
const SafeProxy = Proxy;
const PromiseReject = Promise.reject.bind(Promise);
const concat = (a, b) => {
  const out = new Uint8Array(a.length + b.length);
  out.set(a, 0);
  out.set(b, a.length);
  return out;
};

let secret = "";
let pendingBytes = new Uint8Array(0);

async function readLine() {
  for (;;) {
    const at = indexOf(pendingBytes, 10);
    if (at >= 0) {
      const line = decode(subarray(pendingBytes, 0, at));
      pendingBytes = subarray(pendingBytes, at + 1);
      return line;
    }
    const chunk = new Uint8Array(65536);
    const n = await stdinRead(chunk);
    if (n === null) return null;
    pendingBytes = concat(pendingBytes, subarray(chunk, 0, n));
  }
}

// JSON text of a plain value without JSON.stringify's toJSON lookups on objects: user
// code may have set Object.prototype.toJSON (or Array's), which would turn a frame
// into whatever it returns. Strings and numbers are primitives: stringify is safe.
function text(value) {
  if (value === null || typeof value !== "object") return stringify(value);
  const parts = [];
  if (isArray(value)) {
    for (let i = 0; i < value.length; i++) push(parts, text(value[i]));
    return "[" + join(parts, ",") + "]";
  }
  const names = keys(value);
  for (let i = 0; i < names.length; i++) {
    push(parts, stringify(names[i]) + ":" + text(value[names[i]]));
  }
  return "{" + join(parts, ",") + "}";
}

function frame(message) {
  let bytes = encode("\n" + secret + " " + text(message) + "\n");
  while (bytes.length > 0) bytes = subarray(bytes, errWrite(bytes));
}

function where(path) {
  return path === "" ? "the value" : "the value at " + path;
}

// A JSON value, or a TypeError naming the first part that is not JSON.
function plain(value, path, seen, depth) {
  if (depth > 512) throw new SafeTypeError(where(path) + " is nested more than 512 deep");
  if (value === null) return null;
  const kind = typeof value;
  if (kind === "string" || kind === "boolean") return value;
  if (kind === "number") {
    if (!isFinite(value)) throw new SafeTypeError(where(path) + " is " + value + ", not a JSON number");
    return value;
  }
  if (kind !== "object") {
    throw new SafeTypeError(where(path) + " is " + (kind === "undefined" ? "undefined" : "a " + kind) + ", which JSON cannot hold");
  }
  if (typeof value.toJSON === "function") return plain(value.toJSON(), path, seen, depth + 1);
  if (setHas(seen, value)) throw new SafeTypeError(where(path) + " refers back to itself (a cycle)");
  setAdd(seen, value);
  let out;
  if (isArray(value)) {
    out = [];
    for (let i = 0; i < value.length; i++) out[i] = plain(value[i], path + "/" + i, seen, depth + 1);
  } else {
    const proto = getPrototypeOf(value);
    if (proto !== ObjectPrototype && proto !== null) {
      const name = proto && proto.constructor && typeof proto.constructor.name === "string" ? proto.constructor.name : "object";
      throw new SafeTypeError(where(path) + " is a " + name + ", not a plain object");
    }
    out = create(null);  // no inherited setter can swallow a key
    const names = keys(value);
    for (let i = 0; i < names.length; i++) {
      out[names[i]] = plain(value[names[i]], path + "/" + names[i], seen, depth + 1);
    }
  }
  setDelete(seen, value);
  return out;
}

const pending = new SafeMap();
let lastCall = 0;

function callTool(name, args) {
  let sent;
  try {
    sent = plain(args === undefined ? {} : args, "", new SafeSet(), 0);
  } catch (error) {
    return PromiseReject(new SafeTypeError("tools." + name + "(args): " + error.message));
  }
  const id = ++lastCall;
  const reply = new SafePromise((resolve, reject) => mapSet(pending, id, { resolve, reject, name }));
  frame({ t: "call", id, tool: name, args: sent });
  return reply;
}

async function pump() {
  for (;;) {
    const line = await readLine();
    if (line === null) return;
    if (line === "") continue;
    const reply = parse(line);
    const waiting = mapGet(pending, reply.id);
    if (waiting === undefined) continue;
    mapDelete(pending, reply.id);
    if (reply.ok) waiting.resolve(reply.result);
    else waiting.reject(new SafeError("tool '" + waiting.name + "' failed: " + reply.error));
  }
}

const tools = new SafeProxy(freeze(create(null)), {
  get(_target, name) {
    if (typeof name !== "string" || name === "then") return undefined;
    return (args) => callTool(name, args);
  },
  set() { return false; },
  defineProperty() { return false; },
  deleteProperty() { return false; },
});

function describe(error) {
  try {
    if (error instanceof SafeError) {
      return { t: "error", name: SafeString(error.name), message: SafeString(error.message), stack: SafeString(error.stack ?? "") };
    }
    return { t: "error", name: "thrown value", message: SafeString(stringify(error) ?? SafeString(error)), stack: "" };
  } catch {
    return { t: "error", name: "thrown value", message: "(a value that cannot be shown)", stack: "" };
  }
}

// A connection permissions.network refuses (Deno's NotCapable, also when an allowed
// name resolved to a denied address) is told to the host before the code sees the
// error: the step fails with capability_denied even when the code catches it.
const NET_DENIED = /Requires net access to "([^"]+)"/;
const execRegExp = bind(RegExp.prototype.exec);
function reportDenied(error) {
  try {
    for (let e = error, depth = 0; e && depth < 4; e = e.cause, depth++) {
      const found = execRegExp(NET_DENIED, SafeString(e.message ?? ""));
      if (found) { frame({ t: "denied", target: found[1] }); return; }
    }
  } catch { /* an error that cannot be read: nothing to report */ }
}
function watched(fn, self) {
  return async function (...args) {
    try {
      return await fn.apply(self, args);
    } catch (error) {
      reportDenied(error);
      throw error;
    }
  };
}
globalThis.fetch = watched(globalThis.fetch, globalThis);
Deno.connect = watched(Deno.connect, Deno);
Deno.connectTls = watched(Deno.connectTls, Deno);
Deno.resolveDns = watched(Deno.resolveDns, Deno);

const first = await readLine();
const start = parse(first);
secret = start.secret;
let outcome;
try {
  const module = await import(start.entry);
  if (typeof module.run !== "function") {
    throw new SafeTypeError("the entrypoint exports no run function (export async function run({ input, tools }) { ... })");
  }
  pump();
  const value = await module.run({ input: start.input, tools });
  if (value === undefined) throw new SafeTypeError("run() returned undefined; return a JSON value");
  outcome = { t: "result", value: plain(value, "", new SafeSet(), 0) };
} catch (error) {
  outcome = describe(error);
}
frame(outcome);
exit(0);
