// The Kubernetes CEL libraries kube-sim adds to @bufbuild/cel's standard environment and its
// strings extension: lists (isSorted, sum, min, max, indexOf, lastIndexOf), regex (find,
// findAll) and quantity (quantity, isQuantity and the Quantity methods), as the Kubernetes CEL
// documentation defines them.
//
// The one idea: a Quantity is a CEL map holding one key, QUANTITY_KEY, whose value is the exact
// rational value "numerator/denominator" in lowest terms. So two quantities of the same value
// (`quantity('1')` and `quantity('1000m')`) are equal under CEL's map equality, and the methods
// below recognise their receiver by that key.
"use strict";

const cel = require("@bufbuild/cel");
const { RE2JS } = require("@bufbuild/re2");

const { CelScalar, celMethod, celFunc, listType, mapType, isCelMap, isCelList } = cel;
const DYN = CelScalar.DYN;
const LIST = listType(DYN);
const MAP = mapType(CelScalar.STRING, DYN);
const QUANTITY_KEY = "@kube-sim/quantity";

// ---- lists -------------------------------------------------------------------------------

function items(list) {
  return isCelList(list) ? Array.from(list) : Array.from(list || []);
}

function compare(a, b) {
  if (typeof a !== typeof b) throw new Error("no such overload");
  if (a < b) return -1;
  if (a > b) return 1;
  return 0;
}

function sameValue(a, b) {
  if (typeof a === "bigint" && typeof b === "bigint") return a === b;
  if (typeof a === "number" || typeof b === "number") return Number(a) === Number(b);
  if (typeof a === "string" || typeof a === "boolean") return a === b;
  return JSON.stringify(a, (k, v) => (typeof v === "bigint" ? String(v) : v)) ===
    JSON.stringify(b, (k, v) => (typeof v === "bigint" ? String(v) : v));
}

const lists = [
  celMethod("isSorted", LIST, [], CelScalar.BOOL, function () {
    const xs = items(this);
    for (let i = 1; i < xs.length; i++) if (compare(xs[i - 1], xs[i]) > 0) return false;
    return true;
  }),
  celMethod("sum", LIST, [], DYN, function () {
    const xs = items(this);
    if (xs.length === 0) return 0n;
    return xs.reduce((a, b) => a + b);
  }),
  celMethod("min", LIST, [], DYN, function () {
    const xs = items(this);
    if (xs.length === 0) throw new Error("min called on empty list");
    return xs.reduce((a, b) => (compare(b, a) < 0 ? b : a));
  }),
  celMethod("max", LIST, [], DYN, function () {
    const xs = items(this);
    if (xs.length === 0) throw new Error("max called on empty list");
    return xs.reduce((a, b) => (compare(b, a) > 0 ? b : a));
  }),
  celMethod("indexOf", LIST, [DYN], CelScalar.INT, function (x) {
    const xs = items(this);
    for (let i = 0; i < xs.length; i++) if (sameValue(xs[i], x)) return BigInt(i);
    return -1n;
  }),
  celMethod("lastIndexOf", LIST, [DYN], CelScalar.INT, function (x) {
    const xs = items(this);
    for (let i = xs.length - 1; i >= 0; i--) if (sameValue(xs[i], x)) return BigInt(i);
    return -1n;
  }),
];

// ---- regex -------------------------------------------------------------------------------

function jsRegex(pattern) {
  RE2JS.compile(pattern); // refuses what RE2 refuses, with RE2's message
  return new RegExp(pattern, "gu");
}

const regex = [
  celMethod("find", CelScalar.STRING, [CelScalar.STRING], CelScalar.STRING, function (p) {
    const m = jsRegex(p).exec(this);
    return m ? m[0] : "";
  }),
  celMethod("findAll", CelScalar.STRING, [CelScalar.STRING], listType(CelScalar.STRING),
    function (p) {
      return Array.from(this.matchAll(jsRegex(p)), (m) => m[0]);
    }),
  celMethod("findAll", CelScalar.STRING, [CelScalar.STRING, CelScalar.INT],
    listType(CelScalar.STRING), function (p, n) {
      const all = Array.from(this.matchAll(jsRegex(p)), (m) => m[0]);
      return n < 0n ? all : all.slice(0, Number(n));
    }),
];

// ---- quantity ----------------------------------------------------------------------------

const BINARY = { Ki: 10n, Mi: 20n, Gi: 30n, Ti: 40n, Pi: 50n, Ei: 60n };
const DECIMAL = { n: -9, u: -6, m: -3, "": 0, k: 3, M: 6, G: 9, T: 12, P: 15, E: 18 };
const QUANTITY_RE = /^([+-]?)([0-9]+(?:\.[0-9]*)?|\.[0-9]+)(Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE]|[eE][+-]?[0-9]+)?$/;

function gcd(a, b) {
  a = a < 0n ? -a : a;
  b = b < 0n ? -b : b;
  while (b) [a, b] = [b, a % b];
  return a;
}

function rational(num, den) {
  if (den < 0n) [num, den] = [-num, -den];
  const g = gcd(num, den) || 1n;
  return [num / g, den / g];
}

// parseQuantity: the value of a Kubernetes quantity string as [num, den], or null.
function parseQuantity(text) {
  if (typeof text !== "string") return null;
  const m = QUANTITY_RE.exec(text);
  if (!m) return null;
  const [whole, frac = ""] = m[2].split(".");
  let num = BigInt((whole || "0") + frac);
  let den = 10n ** BigInt(frac.length);
  const suffix = m[3] || "";
  if (suffix in BINARY) num *= 2n ** BINARY[suffix];
  else {
    const exp = suffix in DECIMAL ? DECIMAL[suffix] : Number(suffix.slice(1));
    if (Math.abs(exp) > 1000) return null;
    if (exp >= 0) num *= 10n ** BigInt(exp);
    else den *= 10n ** BigInt(-exp);
  }
  if (m[1] === "-") num = -num;
  return rational(num, den);
}

function makeQuantity([num, den]) {
  return new Map([[QUANTITY_KEY, num + "/" + den]]);
}

function quantityOf(v) {
  if (!isCelMap(v) && !(v instanceof Map)) return null;
  const s = v.get(QUANTITY_KEY);
  if (typeof s !== "string") return null;
  const [n, d] = s.split("/");
  return [BigInt(n), BigInt(d)];
}

function qMethod(name, args, result, fn) {
  return celMethod(name, MAP, args, result, function (...xs) {
    const q = quantityOf(this);
    if (q === null) return undefined; // not a Quantity: no such overload
    const operands = [];
    for (const x of xs) {
      if (typeof x === "bigint") operands.push([x, 1n]);
      else {
        const o = quantityOf(x);
        if (o === null) return undefined;
        operands.push(o);
      }
    }
    return fn(q, ...operands);
  });
}

function cmp([an, ad], [bn, bd]) {
  const l = an * bd;
  const r = bn * ad;
  return l < r ? -1 : l > r ? 1 : 0;
}

const INT64_MAX = 2n ** 63n - 1n;
const INT64_MIN = -(2n ** 63n);

const quantity = [
  celFunc("quantity", [CelScalar.STRING], MAP, function (s) {
    const q = parseQuantity(s);
    if (q === null) {
      throw new Error("quantities must match the regular expression " +
        "'^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'");
    }
    return makeQuantity(q);
  }),
  celFunc("isQuantity", [CelScalar.STRING], CelScalar.BOOL, (s) => parseQuantity(s) !== null),
  qMethod("sign", [], CelScalar.INT, ([n]) => (n < 0n ? -1n : n > 0n ? 1n : 0n)),
  qMethod("isInteger", [], CelScalar.BOOL, ([n, d]) => d === 1n && n >= INT64_MIN &&
    n <= INT64_MAX),
  qMethod("asInteger", [], CelScalar.INT, ([n, d]) => {
    if (d !== 1n || n < INT64_MIN || n > INT64_MAX) {
      throw new Error("cannot convert value to integer");
    }
    return n;
  }),
  qMethod("asApproximateFloat", [], CelScalar.DOUBLE, ([n, d]) => Number(n) / Number(d)),
  qMethod("add", [DYN], MAP, ([an, ad], [bn, bd]) => makeQuantity(rational(an * bd + bn * ad,
    ad * bd))),
  qMethod("sub", [DYN], MAP, ([an, ad], [bn, bd]) => makeQuantity(rational(an * bd - bn * ad,
    ad * bd))),
  qMethod("isGreaterThan", [DYN], CelScalar.BOOL, (a, b) => cmp(a, b) > 0),
  qMethod("isLessThan", [DYN], CelScalar.BOOL, (a, b) => cmp(a, b) < 0),
  qMethod("compareTo", [DYN], CelScalar.INT, (a, b) => BigInt(cmp(a, b))),
];

module.exports = { funcs: [...lists, ...regex, ...quantity], parseQuantity, QUANTITY_KEY };
