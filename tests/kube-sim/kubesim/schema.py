"""CRD structural-schema handling for kube-sim: prune, default, validate.

Design note
-----------
A custom resource goes through the same four steps as in kube-apiserver
(apiextensions-apiserver, Kubernetes 1.32):

  1. decode: unknown fields are dropped (pruning) and their paths recorded;
     ObjectMeta fields that ObjectMeta does not know are dropped too;
     properties holding JSON null are dropped when the schema is not
     nullable and has no default;
  2. default: ``default`` values are applied, recursively, on the copy;
  3. validate: the OpenAPI value checks of kube-openapi (type, enum,
     pattern, lengths, bounds, items, properties, required, anyOf/allOf/
     oneOf/not, formats), turned into field errors the way
     ``kubeOpenAPIResultToFieldErrors`` does;
  4. list-type check: ``x-kubernetes-list-type`` set/map uniqueness.

CEL rules (``x-kubernetes-validations``) are compiled and evaluated by
``celrules.py``, after these checks.

The one idea to know: every error message here is produced from the same
parts the Go code uses (a kube-openapi message wrapped in a
``field.Error``), so texts match a real 1.32 server, for example::

    spec.queueingStrategy: Unsupported value: "x": supported values: "StrictFIFO", "BestEffortFIFO"
    spec.cohortName: Invalid value: "A": spec.cohortName in body should match '^[a-z0-9]...$'
    spec.resourceGroups: Too many: 17: must have at most 16 items
    spec.cohortName: Too long: may not be more than 253 bytes
    spec.x: Invalid value: "string": spec.x in body must be of type integer: "string"
    spec.resourceGroups[0].flavors[1]: Duplicate value: map[string]interface {}{"name":"f"}

Unknown fields
--------------
A real server does not turn unknown fields into 422 causes.  They are
found while *decoding* the body, so they come out as

* ``fieldValidation=Strict``: a **400 BadRequest** whose message is
  ``<Kind> in version "<v>" cannot be handled as a <Kind>: strict decoding
  error: unknown field "spec.foo", unknown field "spec.bar"`` (see
  ``strict_decoding_message``).  Decoding fails first, so no 422 is sent;
* ``Warn`` (the server default when the parameter is absent): the object is
  stored pruned, and each ``unknown field "spec.foo"`` becomes a
  ``Warning: 299 - "..."`` response header;
* ``Ignore``: silently pruned.

``validate`` therefore returns a 4-tuple (a NamedTuple)::

    obj, causes, warnings, strict_errors = validate(schema, obj, "Strict")

``strict_errors`` is non-empty only under Strict; the caller must then answer
400 and skip the 422 path.  Server-side apply reports unknown fields in its
own words (``.spec.foo: field not declared in schema``); that is not done here.
"""

import base64
import copy
import datetime
import decimal
import ipaddress
import json
import re
from typing import NamedTuple

__all__ = [
    "ValidationResult", "validate", "apply_defaults", "strict_decoding_message", "go_value",
    "go_quote",
]


class ValidationResult(NamedTuple):
    obj: dict            # pruned + defaulted copy of the input
    causes: list         # [{"reason", "message", "field"}], 422 causes
    warnings: list       # warning texts (unknown fields under Warn)
    strict_errors: list  # 'unknown field "spec.foo"' texts under Strict


# ---------------------------------------------------------------------------
# Go value rendering (fmt %v / %#v / %q and encoding/json), as used in the
# messages of field.Error.ErrorBody.
# ---------------------------------------------------------------------------

def go_quote(s):
    """strconv.Quote: a Go double-quoted string literal."""
    out = ['"']
    for ch in s:
        o = ord(ch)
        if ch == '"':
            out.append('\\"')
        elif ch == "\\":
            out.append("\\\\")
        elif ch == "\a":
            out.append("\\a")
        elif ch == "\b":
            out.append("\\b")
        elif ch == "\f":
            out.append("\\f")
        elif ch == "\n":
            out.append("\\n")
        elif ch == "\r":
            out.append("\\r")
        elif ch == "\t":
            out.append("\\t")
        elif ch == "\v":
            out.append("\\v")
        elif ch == " " or (ch.isprintable() and o != 0xFEFF):
            out.append(ch)
        elif o < 0x80:
            out.append("\\x%02x" % o)
        elif o < 0x10000:
            out.append("\\u%04x" % o)
        else:
            out.append("\\U%08x" % o)
    out.append('"')
    return "".join(out)


def _float_digits(f):
    """Shortest round-trip digits of a finite float: (sign, digits, exp10)
    where value = 0.d1d2d3... * 10**exp10 (exp10 is Go's digs.dp)."""
    d = decimal.Decimal(repr(f))
    sign, digits, exponent = d.as_tuple()
    digits = "".join(str(x) for x in digits).lstrip("0") or "0"
    # strip trailing zeros, adjusting the exponent
    stripped = digits.rstrip("0") or "0"
    exponent += len(digits) - len(stripped)
    digits = stripped
    if digits == "0":
        return sign, "0", 1
    return sign, digits, len(digits) + exponent


def _go_float_g(f):
    """fmt %v of a float64 (strconv 'g', shortest, exponent threshold 6)."""
    if f != f:
        return "NaN"
    if f in (float("inf"), float("-inf")):
        return "+Inf" if f > 0 else "-Inf"
    sign, digits, dp = _float_digits(f)
    neg = "-" if sign else ""
    if digits == "0":
        return neg + "0"
    exp = dp - 1
    if exp < -4 or exp >= 6:
        mant = digits[0] + ("." + digits[1:] if len(digits) > 1 else "")
        es = "-" if exp < 0 else "+"
        ea = abs(exp)
        return "%s%se%s%02d" % (neg, mant, es, ea)
    if dp <= 0:
        return neg + "0." + "0" * (-dp) + digits
    if dp >= len(digits):
        return neg + digits + "0" * (dp - len(digits))
    return neg + digits[:dp] + "." + digits[dp:]


def _go_json_float(f):
    """encoding/json rendering of a float64."""
    a = abs(f)
    if a != 0 and (a < 1e-6 or a >= 1e21):
        sign, digits, dp = _float_digits(f)
        exp = dp - 1
        mant = digits[0] + ("." + digits[1:] if len(digits) > 1 else "")
        return "%s%se%s%d" % ("-" if sign else "", mant, "-" if exp < 0 else "+", abs(exp))
    sign, digits, dp = _float_digits(f)
    neg = "-" if sign and digits != "0" else ""
    if digits == "0":
        return "0"
    if dp <= 0:
        return neg + "0." + "0" * (-dp) + digits
    if dp >= len(digits):
        return neg + digits + "0" * (dp - len(digits))
    return neg + digits[:dp] + "." + digits[dp:]


def _go_json(v):
    """encoding/json.Marshal of an unstructured value (map keys sorted)."""
    if v is None:
        return "null"
    if v is True:
        return "true"
    if v is False:
        return "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        return _go_json_float(v)
    if isinstance(v, str):
        return json.dumps(v, ensure_ascii=False).replace("<", "\\u003c") \
            .replace(">", "\\u003e").replace("&", "\\u0026")
    if isinstance(v, dict):
        return "{" + ",".join(_go_json(str(k)) + ":" + _go_json(v[k])
                              for k in sorted(v)) + "}"
    if isinstance(v, (list, tuple)):
        return "[" + ",".join(_go_json(x) for x in v) + "]"
    return json.dumps(v)


def _go_sharp_v(v):
    """fmt %#v of an unstructured value held in an interface{}."""
    if v is None:
        return "interface {}(nil)"
    if v is True:
        return "true"
    if v is False:
        return "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        return _go_float_g(v)
    if isinstance(v, str):
        return go_quote(v)
    if isinstance(v, dict):
        return "map[string]interface {}{" + ", ".join(
            go_quote(str(k)) + ":" + _go_sharp_v(v[k]) for k in sorted(v)) + "}"
    if isinstance(v, (list, tuple)):
        return "[]interface {}{" + ", ".join(_go_sharp_v(x) for x in v) + "}"
    return repr(v)


def go_value(v):
    """How field.Error.ErrorBody (Kubernetes 1.32) prints a bad value:
    %v for numbers and booleans, %q for strings, %#v otherwise; nil as "null"."""
    if v is None:
        return '"null"'
    if v is True:
        return "true"
    if v is False:
        return "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        return _go_float_g(v)
    if isinstance(v, str):
        return go_quote(v)
    return _go_sharp_v(v)


# field.ErrorType -> (CauseType, String())
_TYPES = {
    "required": ("FieldValueRequired", "Required value"),
    "invalid": ("FieldValueInvalid", "Invalid value"),
    "typeinvalid": ("FieldValueTypeInvalid", "Invalid value"),
    "notsupported": ("FieldValueNotSupported", "Unsupported value"),
    "duplicate": ("FieldValueDuplicate", "Duplicate value"),
    "toolong": ("FieldValueTooLong", "Too long"),
    "toomany": ("FieldValueTooMany", "Too many"),
    "forbidden": ("FieldValueForbidden", "Forbidden"),
}

_OMIT = object()  # field.omitValue


def _cause(kind, field, bad_value=_OMIT, detail=""):
    reason, label = _TYPES[kind]
    if kind in ("required", "forbidden", "toolong") or bad_value is _OMIT:
        body = label
    else:
        body = "%s: %s" % (label, go_value(bad_value))
    if detail:
        body += ": " + detail
    return {"reason": reason, "message": body, "field": field}


# ---------------------------------------------------------------------------
# Go RE2 pattern -> Python re
# ---------------------------------------------------------------------------

_POSIX = {
    "alnum": "0-9A-Za-z", "alpha": "A-Za-z", "ascii": "\\x00-\\x7f",
    "blank": "\\t ", "cntrl": "\\x00-\\x1f\\x7f", "digit": "0-9",
    "graph": "!-~", "lower": "a-z", "print": " -~",
    "punct": "!-/:-@\\[-`{-~", "space": "\\t\\n\\v\\f\\r ", "upper": "A-Z",
    "word": "0-9A-Za-z_", "xdigit": "0-9A-Fa-f",
}


class _Unsupported(Exception):
    pass


def _translate_re2(p):
    """Rewrite the RE2 features whose meaning differs in Python re."""
    out = []
    i, n = 0, len(p)
    in_class = False
    multiline = False
    while i < n:
        c = p[i]
        if c == "\\" and i + 1 < n:
            e = p[i + 1]
            if e == "z":
                out.append("\\Z")
                i += 2
                continue
            if e in "pP":
                raise _Unsupported("unicode classes")
            if e == "Q":
                end = p.find("\\E", i + 2)
                lit = p[i + 2:] if end < 0 else p[i + 2:end]
                out.append(re.escape(lit))
                i = n if end < 0 else end + 2
                continue
            if e == "s":
                out.append("\\t\\n\\f\\r " if in_class else "[\\t\\n\\f\\r ]")
                i += 2
                continue
            if e == "S" and not in_class:
                out.append("[^\\t\\n\\f\\r ]")
                i += 2
                continue
            out.append(p[i:i + 2])
            i += 2
            continue
        if in_class:
            if c == "[" and p.startswith("[:", i):
                end = p.find(":]", i + 2)
                name = p[i + 2:end] if end > 0 else ""
                if name in _POSIX:
                    out.append(_POSIX[name])
                    i = end + 2
                    continue
                if name.startswith("^"):
                    raise _Unsupported("negated POSIX class")
                out.append("\\[")
                i += 1
                continue
            if c == "[":
                out.append("\\[")
                i += 1
                continue
            if c == "]":
                in_class = False
            out.append(c)
            i += 1
            continue
        if c == "[":
            in_class = True
            out.append(c)
            i += 1
            # a leading ']' (or '^]') is a literal in both dialects
            if i < n and p[i] == "^":
                out.append("^")
                i += 1
            if i < n and p[i] == "]":
                out.append("\\]")
                i += 1
            continue
        if c == "(" and p.startswith("(?", i):
            if p.startswith("(?<", i) and not p.startswith("(?<=", i) \
                    and not p.startswith("(?<!", i):
                out.append("(?P<")
                i += 3
                continue
            m = re.match(r"\(\?([imsU-]*)[:)]", p[i:])
            if m:
                if "U" in m.group(1):
                    raise _Unsupported("ungreedy flag")
                if "m" in m.group(1).split("-")[0]:
                    multiline = True
        if c == "$" and not multiline:
            out.append("\\Z")
            i += 1
            continue
        out.append(c)
        i += 1
    return "".join(out)


_RE_CACHE = {}


def _compile_pattern(p):
    """Compiled Python regex for a CRD pattern, or None when it cannot be
    translated faithfully (the pattern is then not enforced)."""
    if p in _RE_CACHE:
        return _RE_CACHE[p]
    try:
        # RE2's \d, \w and \b are ASCII-only
        rx = re.compile(_translate_re2(p), re.ASCII)
    except (_Unsupported, re.error):
        rx = None
    _RE_CACHE[p] = rx
    return rx


# ---------------------------------------------------------------------------
# formats (the set a 1.32 apiserver keeps; others are stripped)
# ---------------------------------------------------------------------------

_STRING_FORMATS = {
    "bsonobjectid", "uri", "email", "hostname", "ipv4", "ipv6", "cidr", "mac",
    "uuid", "uuid3", "uuid4", "uuid5", "isbn", "isbn10", "isbn13",
    "creditcard", "ssn", "hexcolor", "rgbcolor", "byte", "password", "date",
    "duration", "datetime", "quantity",
}

_QUANTITY_RE = re.compile(
    r"^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)\Z")
_UUID_RES = {
    "uuid": re.compile(r"(?i)^[0-9a-f]{8}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{12}\Z"),
    "uuid3": re.compile(r"(?i)^[0-9a-f]{8}-?[0-9a-f]{4}-?3[0-9a-f]{3}-?[0-9a-f]{4}-?[0-9a-f]{12}\Z"),
    "uuid4": re.compile(r"(?i)^[0-9a-f]{8}-?[0-9a-f]{4}-?4[0-9a-f]{3}-?[89ab][0-9a-f]{3}-?[0-9a-f]{12}\Z"),
    "uuid5": re.compile(r"(?i)^[0-9a-f]{8}-?[0-9a-f]{4}-?5[0-9a-f]{3}-?[89ab][0-9a-f]{3}-?[0-9a-f]{12}\Z"),
}
# strfmt.IsDateTime: a valid date, 't', hh:mm:ss, optional fraction, a zone
_DATETIME_RE = re.compile(
    r"^(\d{4})-(\d{2})-(\d{2})[Tt](\d{2}):(\d{2}):(\d{2})(.\d+)?"
    r"([Zz]|[+-]\d{2}:\d{2})\Z")
_DATE_RE = re.compile(r"^(\d{4})-(\d{2})-(\d{2})\Z")
_HOSTNAME_RE = re.compile(
    r"^([a-zA-Z0-9]([a-zA-Z0-9-]{0,61}[a-zA-Z0-9])?)"
    r"(\.([a-zA-Z0-9]([a-zA-Z0-9-]{0,61}[a-zA-Z0-9])?))*\.?\Z")
_MAC_RE = re.compile(r"^([0-9A-Fa-f]{2}[:-]){5}[0-9A-Fa-f]{2}\Z|"
                     r"^([0-9A-Fa-f]{4}\.){2}[0-9A-Fa-f]{4}\Z")
_DURATION_RE = re.compile(
    r"^[-+]?((\d+(\.\d*)?|\.\d+)(ns|us|µs|ms|s|m|h))+\Z|"
    r"^\d+\s?(ns|us|ms|s|m|h|d|w|nanoseconds?|microseconds?|milliseconds?"
    r"|seconds?|minutes?|hours?|days?|weeks?)\Z")
_HEXCOLOR_RE = re.compile(r"^#?([0-9a-fA-F]{3}|[0-9a-fA-F]{6})\Z")
_RGB_RE = re.compile(r"^rgb\(\s*(\d{1,3})\s*,\s*(\d{1,3})\s*,\s*(\d{1,3})\s*\)\Z")
_SSN_RE = re.compile(r"^\d{3}[- ]?\d{2}[- ]?\d{4}\Z")
_EMAIL_RE = re.compile(r"^[^@\s<>]+@[^@\s<>]+\Z")
_BSON_RE = re.compile(r"^[0-9a-fA-F]{24}\Z")


def _format_ok(fmt, v):
    if fmt in ("datetime", "date") and not v.isascii():
        return False
    if fmt == "datetime":
        m = _DATETIME_RE.match(v)
        if not m:
            return False
        try:
            datetime.datetime(*(int(m.group(k)) for k in range(1, 7)))
        except ValueError:
            return False
        return True
    if fmt == "date":
        m = _DATE_RE.match(v)
        if not m:
            return False
        try:
            datetime.date(int(m.group(1)), int(m.group(2)), int(m.group(3)))
        except ValueError:
            return False
        return True
    if fmt in _UUID_RES:
        return bool(_UUID_RES[fmt].match(v))
    if fmt == "ipv4":
        try:
            return isinstance(ipaddress.ip_address(v), ipaddress.IPv4Address)
        except ValueError:
            return False
    if fmt == "ipv6":
        try:
            ipaddress.ip_address(v)
            return ":" in v
        except ValueError:
            return False
    if fmt == "cidr":
        try:
            ipaddress.ip_network(v, strict=False)
            return "/" in v
        except ValueError:
            return False
    if fmt == "hostname":
        return len(v) <= 255 and bool(_HOSTNAME_RE.match(v))
    if fmt == "mac":
        return bool(_MAC_RE.match(v))
    if fmt == "byte":
        try:
            base64.b64decode(v, validate=True)
            return True
        except (ValueError, TypeError):
            return False
    if fmt == "duration":
        return bool(_DURATION_RE.match(v))
    if fmt == "hexcolor":
        return bool(_HEXCOLOR_RE.match(v))
    if fmt == "rgbcolor":
        m = _RGB_RE.match(v)
        return bool(m) and all(int(m.group(k)) <= 255 for k in (1, 2, 3))
    if fmt == "ssn":
        return bool(_SSN_RE.match(v))
    if fmt == "email":
        return bool(_EMAIL_RE.match(v))
    if fmt == "bsonobjectid":
        return bool(_BSON_RE.match(v))
    if fmt == "uri":
        return "://" in v or v.startswith("/")
    if fmt == "quantity":
        return bool(_QUANTITY_RE.match(v))
    return True  # password, isbn*, creditcard: accepted


def _effective_format(s):
    """The format kube-apiserver keeps after StripUnsupportedFormatsPostProcess."""
    fmt = s.get("format")
    if not fmt:
        return ""
    types = _types_of(s)
    t = types[0] if len(types) == 1 else ""
    if t in ("", "string"):
        return fmt if fmt.replace("-", "") in _STRING_FORMATS else ""
    if t == "integer":
        return fmt if fmt in ("int32", "int64") else ""
    if t == "number":
        return fmt if fmt in ("float", "double") else ""
    return ""


# ---------------------------------------------------------------------------
# helpers on schemas and values
# ---------------------------------------------------------------------------

def _types_of(s):
    if s.get("x-kubernetes-int-or-string"):
        return ["integer", "string"]
    t = s.get("type")
    if not t:
        return []
    return [t] if isinstance(t, str) else list(t)


def _json_type(v):
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "boolean"
    if isinstance(v, int):
        return "integer"
    if isinstance(v, float):
        return "number"
    if isinstance(v, str):
        return "string"
    if isinstance(v, list):
        return "array"
    if isinstance(v, dict):
        return "object"
    return "unknown"


def _is_number(v):
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _enum_equal(data, e):
    """reflect.DeepEqual after Go's ConvertibleTo conversion, for JSON values."""
    if isinstance(data, bool) or isinstance(e, bool):
        return isinstance(data, bool) and isinstance(e, bool) and data == e
    if _is_number(data) and _is_number(e):
        if isinstance(data, float) and isinstance(e, int):
            return data == data and abs(data) < 2 ** 63 and int(data) == e
        return float(data) == float(e)
    if isinstance(data, str) and isinstance(e, str):
        return data == e
    if isinstance(data, dict) and isinstance(e, dict):
        return data.keys() == e.keys() and all(_enum_equal(data[k], e[k]) for k in data)
    if isinstance(data, list) and isinstance(e, list):
        return len(data) == len(e) and all(_enum_equal(a, b) for a, b in zip(data, e))
    return data is None and e is None


def _additional(s):
    """additionalProperties as (present, schema-or-None)."""
    ap = s.get("additionalProperties")
    if ap is None or ap is False:
        return False, None
    if ap is True:
        return True, None
    return True, ap


_META_FIELDS = ("apiVersion", "kind", "metadata")

_OBJECT_META = {
    "name", "generateName", "namespace", "selfLink", "uid", "resourceVersion",
    "generation", "creationTimestamp", "deletionTimestamp",
    "deletionGracePeriodSeconds", "labels", "annotations", "ownerReferences",
    "finalizers", "managedFields",
}
_OWNER_REF = {"apiVersion", "kind", "name", "uid", "controller", "blockOwnerDeletion"}
_MANAGED_FIELDS = {"manager", "operation", "apiVersion", "time", "fieldsType",
                   "fieldsV1", "subresource"}


def _scrub_object_meta(meta, prefix, unknown):
    """Drop fields ObjectMeta does not have, recording 'metadata.x' paths."""
    for k in list(meta):
        if k not in _OBJECT_META:
            unknown.append(prefix + "." + k)
            del meta[k]
    for key, known in (("ownerReferences", _OWNER_REF), ("managedFields", _MANAGED_FIELDS)):
        items = meta.get(key)
        if isinstance(items, list):
            for i, it in enumerate(items):
                if isinstance(it, dict):
                    for k in list(it):
                        if k not in known:
                            unknown.append("%s.%s[%d].%s" % (prefix, key, i, k))
                            del it[k]


# ---------------------------------------------------------------------------
# step 1: pruning (apiextensions pruning.PruneWithOptions)
# ---------------------------------------------------------------------------

def _join(path, key):
    return key if not path else path + "." + key


def _prune(x, s, path, unknown, embedded=False):
    if s is not None and s.get("x-kubernetes-preserve-unknown-fields"):
        _skip_prune(x, s, path, unknown, embedded)
        return
    if isinstance(x, dict):
        if s is None:
            for k in list(x):
                unknown.append(_join(path, k))
                del x[k]
            return
        embedded = embedded or bool(s.get("x-kubernetes-embedded-resource"))
        props = s.get("properties") or {}
        has_ap, ap = _additional(s)
        for k in list(x):
            v = x[k]
            if embedded and k in ("apiVersion", "kind") and isinstance(v, str):
                continue
            if embedded and k == "metadata" and isinstance(v, dict):
                _scrub_object_meta(v, _join(path, "metadata"), unknown)
                continue
            if k in props:
                _prune(v, props[k], _join(path, k), unknown)
            elif has_ap:
                _prune(v, ap, _join(path, k), unknown)
            else:
                unknown.append(_join(path, k))
                del x[k]
    elif isinstance(x, list):
        items = None if s is None else s.get("items")
        for i, v in enumerate(x):
            _prune(v, items, "%s[%d]" % (path, i), unknown)


def _skip_prune(x, s, path, unknown, embedded=False):
    if isinstance(x, dict):
        embedded = embedded or bool(s.get("x-kubernetes-embedded-resource"))
        props = s.get("properties") or {}
        has_ap, ap = _additional(s)
        for k in list(x):
            if embedded and k in _META_FIELDS:
                if k == "metadata" and isinstance(x[k], dict):
                    _scrub_object_meta(x[k], _join(path, "metadata"), unknown)
                continue
            if k in props:
                _prune(x[k], props[k], _join(path, k), unknown)
            elif has_ap and ap is not None:
                _prune(x[k], ap, _join(path, k), unknown)
    elif isinstance(x, list):
        items = s.get("items")
        if items is not None:
            for i, v in enumerate(x):
                _skip_prune(v, items, "%s[%d]" % (path, i), unknown)


# ---------------------------------------------------------------------------
# step 2: null pruning and defaulting (structuraldefaulting)
# ---------------------------------------------------------------------------

def _has_default(s):
    return s is not None and s.get("default") is not None


def _prune_nulls(x, s):
    if s is None:
        return
    if isinstance(x, dict):
        props = s.get("properties") or {}
        for k in list(x):
            p = props.get(k)
            if p is not None and x[k] is None and not _has_default(p) \
                    and not p.get("nullable"):
                del x[k]
        has_ap, ap = _additional(s)
        for k, v in x.items():
            if k in props:
                _prune_nulls(v, props[k])
            elif has_ap:
                _prune_nulls(v, ap)
    elif isinstance(x, list):
        for v in x:
            _prune_nulls(v, s.get("items"))


def _non_nullable_null(v, s):
    return v is None and not (s or {}).get("nullable")


def _default(x, s):
    if s is None:
        return
    if isinstance(x, dict):
        props = s.get("properties") or {}
        for k, p in props.items():
            if not _has_default(p):
                continue
            if k not in x or _non_nullable_null(x[k], p):
                x[k] = copy.deepcopy(p["default"])
        has_ap, ap = _additional(s)
        for k in list(x):
            if k in props:
                _default(x[k], props[k])
            elif has_ap and ap is not None:
                if _non_nullable_null(x[k], ap):
                    if _has_default(ap):
                        x[k] = copy.deepcopy(ap["default"])
                    else:
                        continue
                _default(x[k], ap)
    elif isinstance(x, list):
        items = s.get("items")
        if items is None:
            return
        for i in range(len(x)):
            if _non_nullable_null(x[i], items):
                if _has_default(items):
                    x[i] = copy.deepcopy(items["default"])
                else:
                    continue
            _default(x[i], items)


def apply_defaults(schema, obj):
    """Default a copy of ``obj`` as the apiserver does when it reads an object
    back from storage (null pruning + defaulting, no pruning of unknowns)."""
    out = copy.deepcopy(obj)
    _prune_nulls(out, schema)
    _default(out, schema)
    return out


# ---------------------------------------------------------------------------
# step 3: kube-openapi value validation
# ---------------------------------------------------------------------------

class _Err(object):
    """A kube-openapi error before conversion to a field.Error."""
    __slots__ = ("code", "name", "value", "valid", "message")

    def __init__(self, code, name, message, value=None, valid=None):
        self.code = code
        self.name = name
        self.value = value
        self.valid = valid
        self.message = message


def _loc(name):
    """'<name> in body' (kube-openapi message prefix)."""
    return "%s in body" % name


def _type_msg(name, type_name, data_desc):
    return "%s must be of type %s: %s" % (_loc(name), type_name, go_quote(data_desc))


def _go_num(v):
    return _go_float_g(v) if isinstance(v, float) else str(v)


def _json_integer(f):
    """swag.IsFloat64AJSONInteger: integral within a relative 1e-9."""
    if f != f or f in (float("inf"), float("-inf")):
        return False
    if float(f).is_integer():
        return True
    g = float(int(f))
    diff = abs(f - g)
    return diff / (abs(f) + abs(g)) < 1e-9


class _Validator(object):
    def __init__(self):
        self.errs = []

    def add(self, e):
        self.errs.append(e)

    # The order of the checks follows SchemaValidator.validators:
    # type, schemaProps (anyOf/oneOf/allOf/not), string, format, number,
    # slice, common (enum), object.
    def validate(self, data, s, path):
        """Validate; return the number of checks that ran (MatchCount-ish)."""
        count = 1
        if data is None:
            self._type(data, s, path)
            self._enum(data, s, path)
            return count
        if self._type_applies(s):
            self._type(data, s, path)
            count += 1
        if any(k in s for k in ("anyOf", "oneOf", "allOf", "not")):
            self._props(data, s, path)
            count += 1
        if isinstance(data, str):
            self._string(data, s, path)
            count += 1
            fmt = _effective_format(s)
            if fmt and fmt.replace("-", "") in _STRING_FORMATS:
                if not _format_ok(fmt.replace("-", ""), data):
                    self.add(_Err("type", path, _type_msg(path, fmt, data), value=data))
                count += 1
        if _is_number(data):
            self._number(data, s, path)
            count += 1
        if isinstance(data, list):
            self._slice(data, s, path)
            count += 1
        self._enum(data, s, path)
        count += 1
        if isinstance(data, dict):
            self._object(data, s, path)
            count += 1
        return count

    @staticmethod
    def _type_applies(s):
        return bool(_types_of(s)) or bool(_effective_format(s))

    def _type(self, data, s, path):
        types = _types_of(s)
        if data is None:
            if types and "null" not in types and not s.get("nullable"):
                self.add(_Err("type", path, _type_msg(path, ",".join(types), "null"),
                              value="null"))
            return
        fmt = _effective_format(s)
        sch = _json_type(data)
        data_fmt = {"integer": "int64", "number": "float64"}.get(sch, "")
        float_int = sch == "number" and float(data).is_integer() and "integer" in types
        int_float = sch == "integer" and "number" in types
        if sch not in ("string", "array") and fmt and not (
                sch in types or data_fmt == fmt or float_int or int_float):
            self.add(_Err("type", path, _type_msg(path, fmt, data_fmt), value=data_fmt))
            return
        if not ("number" in types or "integer" in types) and fmt \
                and sch in ("string", "array"):
            return
        if not types:
            return
        if not (sch in types or float_int or int_float):
            self.add(_Err("type", path, _type_msg(path, ",".join(types), sch), value=sch))

    def _props(self, data, s, path):
        q = go_quote(path)
        if s.get("anyOf"):
            best, best_count, ok = None, -1, False
            for sub in s["anyOf"]:
                v = _Validator()
                c = v.validate(data, sub, path)
                if not v.errs:
                    ok = True
                    best = None
                    break
                if best is None or c > best_count:
                    best, best_count = v.errs, c
            if not ok:
                self.add(_Err("composite", "",
                              "%s must validate at least one schema (anyOf)" % q))
            if best:
                self.errs.extend(best)
        if s.get("oneOf"):
            best, best_count, valid = None, -1, 0
            for sub in s["oneOf"]:
                v = _Validator()
                c = v.validate(data, sub, path)
                if not v.errs:
                    valid += 1
                    best = None
                    continue
                if valid == 0 and (best is None or c > best_count):
                    best, best_count = v.errs, c
            if valid != 1:
                extra = "Found none valid" if valid == 0 else \
                    "Found %d valid alternatives" % valid
                self.add(_Err("composite", "",
                              "%s must validate one and only one schema (oneOf). %s"
                              % (q, extra)))
                if best:
                    self.errs.extend(best)
        if s.get("allOf"):
            valid = 0
            for sub in s["allOf"]:
                v = _Validator()
                v.validate(data, sub, path)
                if not v.errs:
                    valid += 1
                self.errs.extend(v.errs)
            if valid != len(s["allOf"]):
                extra = ". None validated" if valid == 0 else ""
                self.add(_Err("composite", "",
                              "%s must validate all the schemas (allOf)%s" % (q, extra)))
        if isinstance(s.get("not"), dict):
            v = _Validator()
            v.validate(data, s["not"], path)
            if not v.errs:
                self.add(_Err("composite", "",
                              "%s must not validate the schema (not)" % q))

    def _string(self, data, s, path):
        # stringValidator stops at its first failure
        if s.get("maxLength") is not None and len(data) > s["maxLength"]:
            self.add(_Err("toolong", path, "%s should be at most %d chars long"
                          % (_loc(path), s["maxLength"]), value=data, valid=s["maxLength"]))
            return
        if s.get("minLength") is not None and len(data) < s["minLength"]:
            self.add(_Err("invalid", path, "%s should be at least %d chars long"
                          % (_loc(path), s["minLength"]), value=data))
            return
        p = s.get("pattern")
        if p:
            rx = _compile_pattern(p)
            if rx is not None and not rx.search(data):
                self.add(_Err("invalid", path, "%s should match '%s'" % (_loc(path), p),
                              value=data))

    def _number(self, data, s, path):
        # numberValidator: multipleOf, then minimum, then maximum.  Integers
        # are compared with the bound truncated to int64, as in Go.
        m = s.get("multipleOf")
        if _is_number(m):
            if m < 0:
                self.add(_Err("invalid", path,
                              "factor MultipleOf declared for %s must be positive: %s"
                              % (path, _go_num(m)), value=m))
            elif isinstance(data, int):
                fi = int(m)
                if fi != 0 and data % fi != 0:
                    self.add(_Err("invalid", path, "%s should be a multiple of %d"
                                  % (_loc(path), fi), value=data))
            elif m != 0:
                q = (1.0 / m) * data if m < 1 else data / float(m)
                if not _json_integer(q):
                    self.add(_Err("invalid", path, "%s should be a multiple of %s"
                                  % (_loc(path), _go_float_g(float(m))), value=data))
        mn = s.get("minimum")
        if _is_number(mn):
            exc = bool(s.get("exclusiveMinimum"))
            bound = int(mn) if isinstance(data, int) else float(mn)
            if (not exc and data < bound) or (exc and data <= bound):
                word = "greater than" if exc else "greater than or equal to"
                self.add(_Err("invalid", path, "%s should be %s %s"
                              % (_loc(path), word, _go_num(bound)), value=data))
        mx = s.get("maximum")
        if _is_number(mx):
            exc = bool(s.get("exclusiveMaximum"))
            bound = int(mx) if isinstance(data, int) else float(mx)
            if (not exc and data > bound) or (exc and data >= bound):
                word = "less than" if exc else "less than or equal to"
                self.add(_Err("invalid", path, "%s should be %s %s"
                              % (_loc(path), word, _go_num(bound)), value=data))

    def _slice(self, data, s, path):
        items = s.get("items")
        if isinstance(items, dict):
            for i, v in enumerate(data):
                self.validate(v, items, "%s[%d]" % (path, i))
        elif isinstance(items, list):
            for i, sub in enumerate(items):
                if i >= len(data):
                    break
                self.validate(data[i], sub, "%s[%d]" % (path, i))
        size = len(data)
        if s.get("minItems") is not None and size < s["minItems"]:
            self.add(_Err("invalid", path, "%s should have at least %d items"
                          % (_loc(path), s["minItems"]), value=size))
        if s.get("maxItems") is not None and size > s["maxItems"]:
            self.add(_Err("toomany", path, "%s should have at most %d items"
                          % (_loc(path), s["maxItems"]), value=size, valid=s["maxItems"]))
        if s.get("uniqueItems"):
            seen = []
            for v in data:
                if any(_enum_equal(v, u) for u in seen):
                    self.add(_Err("invalid", path, "%s shouldn't contain duplicates"
                                  % _loc(path)))
                    break
                seen.append(v)

    def _enum(self, data, s, path):
        enum = s.get("enum")
        if not enum:
            return
        if data is not None and any(_enum_equal(data, e) for e in enum):
            return
        shown = "[" + " ".join(e if isinstance(e, str) else _go_json(e) for e in enum) + "]"
        self.add(_Err("enum", path, "%s should be one of %s" % (_loc(path), shown),
                      value=data, valid=list(enum)))

    def _object(self, data, s, path):
        # objectValidator: property counts, additionalProperties, properties,
        # then required (the counts no longer stop the rest since 1.28)
        n = len(data)
        if s.get("minProperties") is not None and n < s["minProperties"]:
            self.add(_Err("invalid", path, "%s should have at least %d properties"
                          % (_loc(path), s["minProperties"]), value=n))
        if s.get("maxProperties") is not None and n > s["maxProperties"]:
            self.add(_Err("toomany", path, "%s should have at most %d properties"
                          % (_loc(path), s["maxProperties"]), value=n,
                          valid=s["maxProperties"]))
        props = s.get("properties") or {}
        ap = s.get("additionalProperties")
        if ap is False:
            for k in data:
                if k not in props:
                    self.add(_Err("invalid", path, "%s.%s in body is a forbidden property"
                                  % (path, k), value=k))
        elif isinstance(ap, dict):
            for k, v in data.items():
                if k not in props:
                    self.validate(v, ap, path + "." + k)
        for k, p in props.items():
            if k in data:
                self.validate(data[k], p, _join(path, k))
        for k in s.get("required") or []:
            if k not in data:
                self.add(_Err("required", path + "." + k, "%s is required"
                              % _loc(path + "." + k)))


def _to_causes(errs):
    """kubeOpenAPIResultToFieldErrors."""
    out = []
    for e in errs:
        if e.code == "composite":
            out.append(_cause("invalid", "<nil>", "", e.message))
            continue
        name = e.name
        field = name[1:] if name.startswith(".") else name
        if not field or field == ".":
            field = "<nil>"
        if e.code == "required":
            out.append(_cause("required", field))
        elif e.code == "enum":
            values = [v if isinstance(v, str) else _go_json(v) for v in e.valid]
            detail = "supported values: " + ", ".join(go_quote(v) for v in values) \
                if values else ""
            out.append(_cause("notsupported", field, e.value, detail))
        elif e.code == "toolong":
            mx = e.valid
            detail = ("may not be more than %d %s" % (mx, "byte" if mx == 1 else "bytes")) \
                if mx is not None and mx >= 0 else "value is too long"
            out.append(_cause("toolong", field, _OMIT, detail))
        elif e.code == "toomany":
            mx = e.valid
            detail = ("must have at most %d %s" % (mx, "item" if mx == 1 else "items")) \
                if mx is not None and mx >= 0 else "has too many items"
            out.append(_cause("toomany", field, e.value, detail))
        elif e.code == "type":
            out.append(_cause("typeinvalid", field,
                              "" if e.value is None else e.value, e.message))
        else:
            out.append(_cause("invalid", field, "" if e.value is None else e.value,
                              e.message))
    return out


# ---------------------------------------------------------------------------
# step 4: x-kubernetes-list-type (listtype.ValidateListSetsAndMaps)
# ---------------------------------------------------------------------------

class _Unspecified(object):
    pass


_UNSPECIFIED = _Unspecified()


def _scalar_key(v):
    """A hashable identity for a scalar with Go interface{} equality
    (int64(1) != float64(1), true != 1)."""
    if v is _UNSPECIFIED:
        return ("unspecified",)
    if isinstance(v, (dict, list)):
        return ("compound", _go_json(v))
    return (_json_type(v), v)


def _non_unique(items):
    seen = {}
    dup = []
    for i, x in enumerate(items):
        k = _scalar_key(x)
        times = seen.get(k, 0)
        seen[k] = times + 1
        if times == 1:
            dup.append(i)
    return dup


def _fp_child(path, k):
    return k if not path else path + "." + k


def _fp_key(path, k):
    return "%s[%s]" % (path, k) if path else "[%s]" % k


def _list_types_obj(path, s, obj, out):
    if s is None or obj is None:
        return
    has_ap, ap = _additional(s)
    if has_ap and ap is not None:
        for k, v in obj.items():
            _list_types_value(_fp_key(path, k), ap, v, out)
    props = s.get("properties")
    if props:
        for k, v in obj.items():
            if k in props:
                _list_types_value(_fp_child(path, k), props[k], v, out)


def _list_types_value(path, s, obj, out):
    if isinstance(obj, list):
        _list_types_array(path, s, obj, out)
    elif isinstance(obj, dict):
        _list_types_obj(path, s, obj, out)


def _list_types_array(path, s, obj, out):
    lt = s.get("x-kubernetes-list-type")
    if lt == "set":
        for i in _non_unique(obj):
            out.append(_cause("duplicate", "%s[%d]" % (path, i), obj[i]))
    elif lt == "map":
        _list_map(path, s, obj, out)
    items = s.get("items")
    if isinstance(items, dict):
        for i, v in enumerate(obj):
            _list_types_value("%s[%d]" % (path, i), items, v, out)


def _list_map(path, s, obj, out):
    for i, x in enumerate(obj):
        if x is not None and not isinstance(x, dict):
            out.append(_cause("invalid", "%s[%d]" % (path, i), x,
                              "must be an object for an array of list-type map"))
            return
    if len(obj) <= 1:
        return
    keys_fields = s.get("x-kubernetes-list-map-keys") or []
    if len(keys_fields) == 1:
        kf = keys_fields[0]
        keys = []
        for x in obj:
            if x is None or kf not in x:
                keys.append(_UNSPECIFIED)
            else:
                keys.append(x[kf])
        for i in _non_unique(keys):
            bad = {} if keys[i] is _UNSPECIFIED else {kf: keys[i]}
            out.append(_cause("duplicate", "%s[%d]" % (path, i), bad))
        return
    keys = []
    for x in obj:
        key = {}
        if x is not None:
            for kf in keys_fields:
                if kf in x:
                    key[kf] = x[kf]
        keys.append(key)
    for i in _non_unique(keys):
        out.append(_cause("duplicate", "%s[%d]" % (path, i), keys[i]))


# ---------------------------------------------------------------------------
# public entry points
# ---------------------------------------------------------------------------

def validate(schema, obj, field_validation="Strict"):
    """Prune, default and validate a custom resource against a CRD version's
    ``schema.openAPIV3Schema``.

    ``field_validation`` is the request's ``fieldValidation`` parameter:
    "Strict", "Warn" or "Ignore" (None or "" mean "Warn", the server default).

    Returns ``ValidationResult(obj, causes, warnings, strict_errors)``:

    * ``obj``: a pruned and defaulted deep copy of ``obj`` (what would be
      stored); the input is never modified;
    * ``causes``: 422 causes ``{"reason", "message", "field"}`` in the order a
      real server reports them (schema checks, then list-type checks);
      composite anyOf/allOf/oneOf/not errors carry field ``"<nil>"`` as the
      real server does;
    * ``warnings``: ``unknown field "spec.foo"`` texts when Warn;
    * ``strict_errors``: the same texts when Strict.  When non-empty the
      request must fail with 400 BadRequest (see ``strict_decoding_message``)
      before any 422.

    ``metadata`` at the root (and under x-kubernetes-embedded-resource) is not
    pruned by the schema; fields ObjectMeta does not have are dropped and
    reported as ``metadata.<field>``.  Validation of metadata beyond what the
    schema declares (names, labels, ...) is left to the caller.
    """
    if not isinstance(obj, dict):
        raise TypeError("object must be a JSON object")
    mode = field_validation or "Warn"
    out = copy.deepcopy(obj)
    schema = schema or {}

    # ObjectMeta is decoded (and its unknown fields found) before the schema
    # pruning runs, so its paths come first.
    meta_unknown = []
    if isinstance(out.get("metadata"), dict):
        _scrub_object_meta(out["metadata"], "metadata", meta_unknown)
    unknown = []
    _prune(out, schema, "", unknown, embedded=True)
    unknown = meta_unknown + sorted(unknown)

    _prune_nulls(out, schema)
    _default(out, schema)

    v = _Validator()
    v.validate(out, schema, "")
    causes = _to_causes(v.errs)
    _list_types_obj("", schema, out, causes)

    texts = ['unknown field "%s"' % u for u in unknown]
    warnings, strict = [], []
    if mode == "Strict":
        strict = texts
    elif mode == "Warn":
        warnings = texts
    return ValidationResult(out, causes, warnings, strict)


def strict_decoding_message(kind, version, strict_errors):
    """The message of the 400 BadRequest for a create/update whose body has
    unknown fields under fieldValidation=Strict."""
    return '%s in version %s cannot be handled as a %s: strict decoding error: %s' % (
        kind, go_quote(version), kind, ", ".join(strict_errors))
