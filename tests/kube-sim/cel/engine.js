// kube-sim's CEL engine: one long-lived node process that compiles and evaluates CRD
// x-kubernetes-validations rules with @bufbuild/cel, speaking JSON lines on stdin/stdout.
//
// The one idea: compiling hands back a key per rule (the same rule, schema and options always
// get the same key), and evaluation names rules only by key, so a request carries values, never
// schemas. Requests and answers, one JSON object a line:
//
//   {"id": 1, "op": "compile", "schemas": [schema node, ...],
//    "rules": [{"rule", "messageExpression"?, "schema": index into schemas,
//               "path": steps from that schema to the rule's node, "root"}]}
//   -> {"id": 1, "results": [{"key", "usesOldSelf"} | {"error"} | {"unsupported"}]}
//      ("messageError" where only the messageExpression failed to compile)
//   {"id": 2, "op": "eval", "tasks": [{"key", "self", "oldSelf"?}]}
//   -> {"id": 2, "results": [{"ok": true} | {"ok": false, "message"?, "messageError"?} |
//      {"error"}]}
//   {"id": 3, "op": "parse", "expressions": ["..."]}
//   -> {"id": 3, "results": [{"ok": true} | {"error"}]}  (syntax only: DRA device selectors)
//
// kube-sim (tests/kube-sim/kubesim/cel.py) starts it with NODE_PATH at the installed runtime.
"use strict";

const readline = require("node:readline");
const cel = require("@bufbuild/cel");
const { strings } = require("@bufbuild/cel/ext");
const library = require("./library.js");
const { toCel } = require("./values.js");
const { checkExpr, formatError, CompileError, Unsupported } = require("./check.js");

const env = cel.celEnv({ funcs: [...strings, ...library.funcs] });

const programs = new Map(); // key -> {rule, message, schema, root}
const keys = new Map(); // canonical request text -> key

// The API server's texts for the runtime errors whose wording the engine does not share.
function runtimeError(err) {
  const msg = String((err && err.message) || err);
  let m = /^field not found: (.*)$/.exec(msg);
  if (m) return "no such key: " + m[1];
  if (/divide by zero/.test(msg)) return "division by zero";
  m = /^index (-?\d+) out of bounds/.exec(msg);
  if (m) return "index out of bounds: " + m[1];
  m = /^found no matching overload for '([^']*)'/.exec(msg);
  if (m) return "no such overload";
  return msg;
}

function parseError(source, err) {
  const msg = String(err.message || err);
  const m = /^<input>:(\d+):(\d+): (.*)$/s.exec(msg);
  if (!m) return "ERROR: <input>:1:1: Syntax error: " + msg;
  const lines = source.split("\n");
  let offset = 0;
  for (let i = 0; i < Number(m[1]) - 1 && i < lines.length; i++) offset += lines[i].length + 1;
  return formatError(source, offset + Number(m[2]) - 1, "Syntax error: " + m[3]);
}

function compileOne(src, schema, root) {
  if (/\.\?|\[\?/.test(src)) throw new Unsupported("optional field selection (.? / [?])");
  let parsed;
  try {
    parsed = cel.parse(src);
  } catch (e) {
    throw new CompileError(parseError(src, e));
  }
  const info = checkExpr(env, parsed, src, schema, root);
  return { plan: cel.plan(env, parsed), usesOldSelf: info.usesOldSelf };
}

function compile(r, schemaText) {
  const text = JSON.stringify([r.rule, r.messageExpression || "", !!r.root]) + schemaText;
  if (keys.has(text)) return programs.get(keys.get(text)).result;
  let result;
  try {
    const rule = compileOne(r.rule, r.schema, r.root);
    let message = null;
    let messageError = null;
    if (r.messageExpression) {
      try {
        message = compileOne(r.messageExpression, r.schema, r.root);
      } catch (e) {
        if (!(e instanceof CompileError)) throw e;
        messageError = e.message;
      }
    }
    const key = programs.size + 1;
    result = { key, usesOldSelf: rule.usesOldSelf };
    if (messageError) result.messageError = messageError;
    programs.set(key, { rule, message, schema: r.schema, root: !!r.root, result });
    keys.set(text, key);
    return result;
  } catch (e) {
    if (e instanceof CompileError) result = { error: e.message };
    else if (e instanceof Unsupported) result = { unsupported: e.message };
    else result = { unsupported: "engine failure: " + (e && e.stack ? e.stack : e) };
  }
  return result;
}

function run(plan, bindings) {
  try {
    return plan(bindings);
  } catch (e) {
    return cel.celError(runtimeError(e), 0);
  }
}

function evaluate(task) {
  const p = programs.get(task.key);
  if (!p) return { error: "kube-sim: unknown rule key " + task.key };
  const bindings = { self: toCel(task.self, p.schema, p.root) };
  if ("oldSelf" in task) bindings.oldSelf = toCel(task.oldSelf, p.schema, p.root);
  const v = run(p.rule.plan, bindings);
  if (cel.isCelError(v)) return { error: runtimeError(v) };
  if (v !== true && v !== false) return { error: "rule did not evaluate to a bool" };
  if (v) return { ok: true };
  const out = { ok: false };
  if (p.message) {
    const m = run(p.message.plan, bindings);
    if (cel.isCelError(m)) out.messageError = "messageExpression evaluation failed due to: " +
      runtimeError(m);
    else if (typeof m !== "string") out.messageError = "messageExpression failed to convert to string";
    else out.message = m;
  }
  return out;
}

function celVersion() {
  const path = require("node:path");
  const fs = require("node:fs");
  let dir = path.dirname(require.resolve("@bufbuild/cel"));
  while (!fs.existsSync(path.join(dir, "package.json")) ||
    JSON.parse(fs.readFileSync(path.join(dir, "package.json"), "utf8")).name !== "@bufbuild/cel") {
    dir = path.dirname(dir);
  }
  return JSON.parse(fs.readFileSync(path.join(dir, "package.json"), "utf8")).version;
}

function handle(req) {
  if (req.op === "compile") {
    const texts = req.schemas.map((x) => JSON.stringify(x));
    return {
      id: req.id,
      results: req.rules.map((r) => {
        let node = req.schemas[r.schema];
        for (const step of r.path || []) node = node && node[step];
        const text = texts[r.schema] + JSON.stringify(r.path || []);
        return compile(Object.assign({}, r, { schema: node || {} }), text);
      }),
    };
  }
  if (req.op === "eval") return { id: req.id, results: req.tasks.map(evaluate) };
  if (req.op === "parse") {
    return {
      id: req.id,
      results: req.expressions.map((src) => {
        try {
          cel.parse(src);
          return { ok: true };
        } catch (e) {
          return { error: parseError(src, e) };
        }
      }),
    };
  }
  if (req.op === "ping") return { id: req.id, version: celVersion() };
  return { id: req.id, fatal: "unknown op " + req.op };
}

// Warm the parser up while kube-sim is still reading its CRDs (the first parses are the slow ones).
for (let i = 0; i < 20; i++) {
  cel.parse("has(self.a) && self.a.all(x, !has(x.b) || x.b in ['c', 'd']) ? size(self.e) == 1 : " +
    "self.f.exists(c, c.type == 'T' && c.status == 'True') || string(self.g).startsWith('-')");
}

const rl = readline.createInterface({ input: process.stdin, crlfDelay: Infinity });
rl.on("line", (line) => {
  let reply;
  try {
    reply = handle(JSON.parse(line));
  } catch (e) {
    reply = { id: null, fatal: String(e && e.stack ? e.stack : e) };
  }
  process.stdout.write(JSON.stringify(reply) + "\n");
});
rl.on("close", () => process.exit(0));
