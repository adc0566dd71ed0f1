// How a custom resource's JSON becomes CEL values, as kube-apiserver's UnstructuredToVal does it.
//
// The one idea: the schema decides the CEL type, not the JSON. An `integer` is a CEL int even
// when the JSON has 5.0, a `number` is a double even when the JSON has 5, a string with format
// date-time is a timestamp, int-or-string is whichever the value is. An object with properties
// is seen through its declared (escaped) property names, null-valued fields are absent, and at
// the root of a resource (or an embedded resource) only apiVersion, kind and metadata.name /
// metadata.generateName are visible.
"use strict";

const { timestampFromDate } = require("@bufbuild/protobuf/wkt");
const { create } = require("@bufbuild/protobuf");
const { DurationSchema } = require("@bufbuild/protobuf/wkt");

// CEL reserved words that a property name is escaped from (k8s.io/apiserver/pkg/cel Escape).
const RESERVED = new Set([
  "true", "false", "null", "in", "as", "break", "const", "continue", "else", "for", "function",
  "if", "import", "let", "loop", "package", "namespace", "return", "var", "void", "while",
]);

// escape returns the CEL field name of a property, or null when the name cannot be expressed
// (then the property is not accessible from CEL, as in the API server).
function escape(name) {
  if (RESERVED.has(name)) return "__" + name + "__";
  if (!/^[_a-zA-Z][_a-zA-Z0-9.\-/]*$/.test(name)) return null;
  let out = "";
  for (let i = 0; i < name.length; i++) {
    const c = name[i];
    if (c === "_" && name[i + 1] === "_") {
      out += "__underscores__";
      i++;
    } else if (c === ".") out += "__dot__";
    else if (c === "-") out += "__dash__";
    else if (c === "/") out += "__slash__";
    else out += c;
  }
  return out;
}

// The schema as CEL sees it at the root of a resource: only these metadata fields exist.
function resourceRoot(schema) {
  const props = Object.assign({}, schema.properties || {});
  props.apiVersion = { type: "string" };
  props.kind = { type: "string" };
  props.metadata = {
    type: "object",
    properties: { name: { type: "string" }, generateName: { type: "string" } },
  };
  return Object.assign({}, schema, { type: "object", properties: props });
}

function isObjectWithProperties(s) {
  return s && s.properties && Object.keys(s.properties).length > 0;
}

// Go's time.ParseDuration units, in nanoseconds.
const DURATION_UNITS = { ns: 1n, us: 1000n, "µs": 1000n, ms: 1000000n, s: 1000000000n,
  m: 60000000000n, h: 3600000000000n };

function parseDuration(text) {
  const m = /^([-+]?)((?:\d+(?:\.\d*)?|\.\d+)(?:ns|us|µs|ms|s|m|h))+$/.exec(text);
  if (!m && text !== "0") throw new Error("invalid duration " + JSON.stringify(text));
  let total = 0n;
  const re = /(\d+(?:\.\d*)?|\.\d+)(ns|us|µs|ms|s|m|h)/g;
  let part;
  while ((part = re.exec(text)) !== null) {
    const [whole, frac = ""] = part[1].split(".");
    const unit = DURATION_UNITS[part[2]];
    total += BigInt(whole || "0") * unit;
    if (frac) total += (BigInt(frac) * unit) / 10n ** BigInt(frac.length);
  }
  if (m && m[1] === "-") total = -total;
  const seconds = total / 1000000000n;
  return create(DurationSchema, { seconds, nanos: Number(total - seconds * 1000000000n) });
}

// Untyped JSON (x-kubernetes-preserve-unknown-fields without a schema): integers are ints.
function untyped(v) {
  if (v === null) return null;
  if (Array.isArray(v)) return v.map(untyped);
  if (typeof v === "object") {
    const m = new Map();
    for (const [k, x] of Object.entries(v)) if (x !== null) m.set(k, untyped(x));
    return m;
  }
  if (typeof v === "number" && Number.isInteger(v)) return BigInt(v);
  return v;
}

// toCel converts `value` (parsed JSON) under `schema` (an openAPIV3Schema node).
// `root` marks the root of a resource (or an x-kubernetes-embedded-resource object).
function toCel(value, schema, root) {
  if (value === null || value === undefined) return null;
  schema = schema || {};
  if (root || schema["x-kubernetes-embedded-resource"]) schema = resourceRoot(schema);
  if (schema["x-kubernetes-int-or-string"]) {
    return typeof value === "number" ? BigInt(Math.trunc(value)) : value;
  }
  switch (schema.type) {
    case "integer":
      return typeof value === "number" ? BigInt(Math.trunc(value)) : value;
    case "number":
      return typeof value === "number" ? value : value;
    case "boolean":
      return value;
    case "string":
      if (typeof value !== "string") return value;
      if (schema.format === "byte") return Uint8Array.from(Buffer.from(value, "base64"));
      if (schema.format === "date-time" || schema.format === "date") {
        return timestampFromDate(new Date(value));
      }
      if (schema.format === "duration") return parseDuration(value);
      return value;
    case "array":
      if (!Array.isArray(value)) return value;
      return value.map((x) => toCel(x, schema.items, false));
    case "object":
    default:
      break;
  }
  if (Array.isArray(value)) return value.map((x) => toCel(x, schema.items, false));
  if (typeof value !== "object") return untyped(value);
  const out = new Map();
  if (isObjectWithProperties(schema)) {
    for (const [k, sub] of Object.entries(schema.properties)) {
      if (!(k in value) || value[k] === null) continue;
      const name = escape(k);
      if (name !== null) out.set(name, toCel(value[k], sub, false));
    }
    return out;
  }
  const ap = schema.additionalProperties;
  for (const [k, x] of Object.entries(value)) {
    if (x === null) continue;
    out.set(k, ap && typeof ap === "object" ? toCel(x, ap, false) : untyped(x));
  }
  return out;
}

module.exports = { escape, resourceRoot, toCel, isObjectWithProperties };
