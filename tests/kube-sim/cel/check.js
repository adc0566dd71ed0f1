// The compile step kube-sim runs on a CRD's rule after @bufbuild/cel has parsed it: every name
// must resolve (variables, functions, fields of the schema), as cel-go's checker demands when
// kube-apiserver compiles the rule against the schema's declared types.
//
// The one idea: types are followed only as far as the schema says them. `self` has the rule's
// schema node; selecting a property moves to that property's schema, an index or a
// comprehension over a list moves to `items`, over a map to `additionalProperties`; anything
// computed by a function is `dyn`, on which any field may be selected (checked at run time).
// A name that Kubernetes defines but kube-sim does not implement is reported as unsupported,
// never as a compile error a real API server would not give.
"use strict";

const { escape, resourceRoot, isObjectWithProperties } = require("./values.js");

// Kubernetes CEL identifiers and functions that kube-sim's environment lacks.
const UNSUPPORTED_IDENTS = new Set(["optional", "sets", "format", "math", "lists", "base64",
  "strings", "authorizer", "semver"]);
const UNSUPPORTED_FUNCS = new Set(["ip", "isIP", "cidr", "isCIDR", "url", "isURL", "isSemver",
  "semver", "getScheme", "getHost", "getHostname", "getPort", "getEscapedPath", "getQuery",
  "family", "isUnspecified", "isLoopback", "isLinkLocalMulticast", "isLinkLocalUnicast",
  "isGlobalUnicast", "containsIP", "containsCIDR", "prefixLength", "masked", "reverse",
  "hasValue", "value", "orValue", "optMap", "optFlatMap", "or", "validate", "dns1123Label",
  "dns1123Subdomain", "named", "ip.isCanonical", "isCanonical", "authorizer", "serviceAccount",
  "resource", "subresource", "check", "allowed", "reason", "errored", "error", "path", "group",
  "namespace", "name", "major", "minor", "patch", "isGreaterThanOrEqual", "isLessThanOrEqual"]);
const TYPE_NAMES = new Set(["int", "uint", "double", "bool", "string", "bytes", "list", "map",
  "null_type", "type", "dyn", "google.protobuf.Timestamp", "google.protobuf.Duration"]);

class CompileError extends Error {}
class Unsupported extends Error {}

function celTypeName(schema) {
  if (!schema) return "dyn";
  if (schema["x-kubernetes-int-or-string"]) return "dyn";
  switch (schema.type) {
    case "string":
      if (schema.format === "byte") return "bytes";
      if (schema.format === "date-time" || schema.format === "date") {
        return "google.protobuf.Timestamp";
      }
      if (schema.format === "duration") return "google.protobuf.Duration";
      return "string";
    case "integer":
      return "int";
    case "number":
      return "double";
    case "boolean":
      return "bool";
    case "array":
      return "list(" + celTypeName(schema.items) + ")";
    default:
      return "object";
  }
}

// position of an expression id as [line, column] (1-based line, 0-based column).
function location(source, offset) {
  let line = 1;
  let start = 0;
  for (let i = 0; i < offset && i < source.length; i++) {
    if (source[i] === "\n") {
      line++;
      start = i + 1;
    }
  }
  return [line, offset - start, start];
}

// cel-go's error text: ERROR: <input>:L:C: msg, then the source line and a caret under C.
function formatError(source, offset, msg) {
  const [line, col, start] = location(source, offset);
  let end = source.indexOf("\n", start);
  if (end < 0) end = source.length;
  return "ERROR: <input>:" + line + ":" + (col + 1) + ": " + msg + "\n | " +
    source.slice(start, end) + "\n | " + ".".repeat(col) + "^";
}

function checkExpr(env, parsed, source, schema, root) {
  const positions = (parsed.sourceInfo && parsed.sourceInfo.positions) || {};
  let usesOldSelf = false;
  const fail = (e, msg) => {
    throw new CompileError(formatError(source, positions[String(e.id)] || 0, msg));
  };
  const rootSchema = root ? resourceRoot(schema || {}) : schema || {};

  function field(e, t, name) {
    if (!t) return null;
    if (t["x-kubernetes-int-or-string"]) return null;
    if (isObjectWithProperties(t)) {
      for (const [k, sub] of Object.entries(t.properties)) {
        if (escape(k) === name) {
          return sub["x-kubernetes-embedded-resource"] ? resourceRoot(sub) : sub;
        }
      }
      fail(e, "undefined field '" + name + "'");
    }
    if (t.additionalProperties && typeof t.additionalProperties === "object") {
      return t.additionalProperties;
    }
    if (t.type && t.type !== "object") {
      fail(e, "type '" + celTypeName(t) + "' does not support field selection");
    }
    return null;
  }

  function element(t) {
    if (!t) return null;
    if (t.type === "array") return t.items || null;
    if (t.additionalProperties && typeof t.additionalProperties === "object") {
      return t.additionalProperties;
    }
    return null;
  }

  function walk(e, scope) {
    const k = e.exprKind;
    switch (k.case) {
      case "constExpr":
        return null;
      case "identExpr": {
        const name = k.value.name;
        if (scope.has(name)) return scope.get(name);
        if (name === "self") return rootSchema;
        if (name === "oldSelf") {
          usesOldSelf = true;
          return rootSchema;
        }
        if (TYPE_NAMES.has(name)) return null;
        if (UNSUPPORTED_IDENTS.has(name)) {
          throw new Unsupported("'" + name + "' (kube-sim's CEL environment does not have it)");
        }
        fail(e, "undeclared reference to '" + name + "' (in container '')");
        return null;
      }
      case "selectExpr": {
        const t = walk(k.value.operand, scope);
        return field(e, t, k.value.field);
      }
      case "callExpr": {
        const fn = k.value.function;
        const target = k.value.target ? walk(k.value.target, scope) : undefined;
        const args = k.value.args.map((a) => walk(a, scope));
        if (fn === "_[_]") return element(args[0]);
        if (/^[_@!-]/.test(fn) || env.funcs.find(fn)) return null;
        if (UNSUPPORTED_FUNCS.has(fn)) {
          throw new Unsupported("function '" + fn + "' (kube-sim's CEL environment does not " +
            "have it)");
        }
        fail(e, "undeclared reference to '" + fn + "' (in container '')");
        return null;
      }
      case "listExpr":
        k.value.elements.forEach((x) => walk(x, scope));
        return null;
      case "structExpr":
        for (const entry of k.value.entries) {
          if (entry.keyKind.case === "mapKey") walk(entry.keyKind.value, scope);
          walk(entry.value, scope);
        }
        return null;
      case "comprehensionExpr": {
        const c = k.value;
        if (c.iterVar2) throw new Unsupported("two-variable comprehensions");
        const range = walk(c.iterRange, scope);
        walk(c.accuInit, scope);
        const inner = new Map(scope);
        let iter = null;
        if (range && range.type === "array") iter = range.items || null;
        else if (range && (range.additionalProperties || isObjectWithProperties(range))) {
          iter = { type: "string" };
        }
        inner.set(c.iterVar, iter);
        inner.set(c.accuVar, null);
        walk(c.loopCondition, inner);
        walk(c.loopStep, inner);
        const after = new Map(scope);
        after.set(c.accuVar, null);
        walk(c.result, after);
        return null;
      }
      default:
        throw new Unsupported("expression kind " + k.case);
    }
  }

  walk(parsed.expr, new Map());
  return { usesOldSelf };
}

module.exports = { checkExpr, formatError, CompileError, Unsupported };
