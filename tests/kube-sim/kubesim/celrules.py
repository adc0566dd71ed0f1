"""CRD validation rules (``x-kubernetes-validations``): compiled when a CRD is written,
evaluated on every custom resource write, as kube-apiserver 1.32 does.

Design note
-----------
``compile_crd`` walks each version's schema, has the CEL engine (``cel.py``) compile every
rule, and returns the 422 causes of the rules that do not compile (a real API server refuses
that CRD) and the rules kube-sim cannot evaluate (kube-sim then refuses to serve the CRD, so a
gap is always visible). ``rule_tree`` gives a served version's compiled rules in the shape of
its schema; ``validate`` walks an object with it, as apiextensions-apiserver's
``cel.Validator`` does:

* a rule runs only where the object has a non-null value; a transition rule (one that uses
  ``oldSelf``) only where the old object has a value there too, correlated through
  properties, map keys and ``x-kubernetes-list-type: map`` items (never atomic or set lists);
* a rule that fails gives ``<path>: Invalid value: "<schema type>": <message>`` (or the
  messageExpression's text, or ``failed rule: <rule>``; ``reason`` and ``fieldPath`` apply);
  the root's path is ``<nil>``; an evaluation error gives ``<error> evaluating rule: <rule>``;
* on update, a failing rule that does not use ``oldSelf`` on a value equal to its correlated
  old value is a warning, not an error (CRD validation ratcheting, on by default since 1.30);
* a blocking schema error (type, required, enum, too long/many) skips every rule and adds the
  API server's note instead.

The one idea: everything is batched. One compile request per CRD, one evaluation request per
write; the walk collects tasks first and turns results into causes afterwards.
"""

import json

from . import cel
from .schema import go_quote

__all__ = ["compile_crd", "rule_tree", "validate", "BLOCKING_NOTE"]

# The schema keys that decide CEL types and names (descriptions etc. are not sent).
_TYPE_KEYS = ("type", "format", "x-kubernetes-int-or-string", "x-kubernetes-embedded-resource",
              "x-kubernetes-preserve-unknown-fields")

_BLOCKING = ("FieldValueNotSupported", "FieldValueRequired", "FieldValueTooLong",
             "FieldValueTooMany", "FieldValueTypeInvalid")
BLOCKING_NOTE = {"reason": "FieldValueInvalid", "field": "<nil>",
                 "message": 'Invalid value: "null": some validation rules were not checked '
                            'because the object was invalid; correct the existing errors to '
                            'complete validation'}

_REASONS = {None: ("FieldValueInvalid", "Invalid value"),
            "FieldValueInvalid": ("FieldValueInvalid", "Invalid value"),
            "FieldValueForbidden": ("FieldValueForbidden", "Forbidden"),
            "FieldValueRequired": ("FieldValueRequired", "Required value"),
            "FieldValueDuplicate": ("FieldValueDuplicate", "Duplicate value")}


def _type_schema(s):
    """The part of a schema node the engine needs to type and convert values."""
    if not isinstance(s, dict):
        return {}
    out = {k: s[k] for k in _TYPE_KEYS if k in s}
    if isinstance(s.get("properties"), dict):
        out["properties"] = {k: _type_schema(v) for k, v in s["properties"].items()}
    if isinstance(s.get("items"), dict):
        out["items"] = _type_schema(s["items"])
    if isinstance(s.get("additionalProperties"), dict):
        out["additionalProperties"] = _type_schema(s["additionalProperties"])
    return out


class _Node:
    __slots__ = ("schema", "rules", "properties", "items", "additional")

    def __init__(self, schema):
        self.schema = schema
        self.rules = []        # [(rule dict, compile result)]
        self.properties = {}
        self.items = None
        self.additional = None

    def empty(self):
        return not (self.rules or self.properties or self.items or self.additional)


def _go_rule(r):
    """%#v of an apiextensions.ValidationRule, as the API server prints the bad value."""
    reason = "(*apiextensions.FieldValueErrorReason)(nil)"
    if r.get("reason"):
        reason = "(*apiextensions.FieldValueErrorReason)(0xc000a1b2c0)"
    oos = "(*bool)(nil)" if r.get("optionalOldSelf") is None else "(*bool)(0xc000a1b2c8)"
    return ("apiextensions.ValidationRule{Rule:%s, Message:%s, MessageExpression:%s, Reason:%s, "
            "FieldPath:%s, OptionalOldSelf:%s}" % (
                go_quote(str(r.get("rule") or "")), go_quote(str(r.get("message") or "")),
                go_quote(str(r.get("messageExpression") or "")), reason,
                go_quote(str(r.get("fieldPath") or "")), oos))


def _collect(s, fpath, root, out, steps=()):
    """Every rule under schema node s: (crd field path, schema node, root?, index, rule, steps
    from the version's schema to the node)."""
    if not isinstance(s, dict):
        return
    for i, r in enumerate(s.get("x-kubernetes-validations") or []):
        if isinstance(r, dict):
            out.append((fpath, s, root, i, r, steps))

    def embedded(x):
        return bool(x.get("x-kubernetes-embedded-resource")) if isinstance(x, dict) else False
    for k, p in (s.get("properties") or {}).items():
        _collect(p, "%s.properties[%s]" % (fpath, k), embedded(p), out,
                 steps + ("properties", k))
    if isinstance(s.get("items"), dict):
        _collect(s["items"], fpath + ".items", embedded(s["items"]), out, steps + ("items",))
    if isinstance(s.get("additionalProperties"), dict):
        ap = s["additionalProperties"]
        _collect(ap, fpath + ".additionalProperties", embedded(ap), out,
                 steps + ("additionalProperties",))
    for j, sub in enumerate(s.get("allOf") or []):
        # a rule under allOf sees the node's own schema (as the API server compiles it)
        _collect(sub, "%s.allOf[%d]" % (fpath, j), root, out, steps)


def _compile(schema, found):
    """One compile request for the rules in ``found``; the version's schema is sent once and
    each rule names its node by the steps to it."""
    rules = []
    for _fpath, _s, root, _i, r, steps in found:
        req = {"rule": str(r.get("rule") or ""), "schema": 0, "path": list(steps), "root": root}
        if r.get("messageExpression"):
            req["messageExpression"] = str(r["messageExpression"])
        rules.append(req)
    return cel.engine().compile([_type_schema(schema)], rules)


def _key(schema):
    return json.dumps(schema, sort_keys=True)


def _compiled(schema, prefix, key):
    """(found, results) for every rule under one version's schema, cached by its content."""
    hit = _tree_cache.get(("found", key))
    if hit is None:
        found = []
        _collect(schema, "", True, found)
        hit = _remember(_tree_cache, ("found", key),
                        (found, _compile(schema, found) if found else []))
    found, results = hit
    return [(prefix + x[0],) + x[1:] for x in found], results


def _version_schemas(crd):
    spec = crd.get("spec") or {}
    out = []
    for i, v in enumerate(spec.get("versions") or []):
        if isinstance(v, dict):
            out.append((i, v.get("name"), ((v.get("schema") or {}).get("openAPIV3Schema")) or {}))
    return out


_CACHE_SIZE = 64
_crd_cache = {}    # JSON of the versions' schemas -> compile_crd result
_tree_cache = {}   # JSON of a schema -> rule_tree result


def _remember(cache, key, value):
    if len(cache) >= _CACHE_SIZE:
        cache.pop(next(iter(cache)))
    cache[key] = value
    return value


def compile_crd(crd):
    """Compile every rule of a CRD. Returns (causes, unsupported): 422 causes for rules that do
    not compile (fields as the API server names them) and "version path: rule: why" texts for
    rules kube-sim cannot evaluate."""
    versions = [(i, name, schema, _key(schema)) for i, name, schema in _version_schemas(crd)]
    key = tuple((name, k) for _, name, _, k in versions)
    if key not in _crd_cache:
        _remember(_crd_cache, key, _compile_versions(versions))
    causes, unsupported = _crd_cache[key]
    return [dict(c) for c in causes], list(unsupported)


def _compile_versions(versions):
    same = len({k for _, _, _, k in versions}) <= 1
    causes, unsupported, seen = [], [], set()
    for i, name, schema, key in versions:
        prefix = "spec.validation.openAPIV3Schema" if same else \
            "spec.versions[%d].schema.openAPIV3Schema" % i
        if same and prefix in seen:
            continue
        seen.add(prefix)
        found, results = _compiled(schema, prefix, key)
        for (fpath, _s, _root, idx, r, _steps), res in zip(found, results):
            field = "%s.x-kubernetes-validations[%d]" % (fpath, idx)
            if not r.get("rule"):
                causes.append({"reason": "FieldValueRequired", "message": "Required value: rule "
                               "is not specified", "field": field + ".rule"})
            elif res.get("error"):
                causes.append({"reason": "FieldValueInvalid", "field": field + ".rule",
                               "message": "Invalid value: %s: compilation failed: %s"
                                          % (_go_rule(r), res["error"])})
            elif res.get("messageError"):
                causes.append({"reason": "FieldValueInvalid", "field": field + ".messageExpression",
                               "message": "Invalid value: %s: messageExpression compilation "
                                          "failed: %s" % (_go_rule(r), res["messageError"])})
            elif r.get("optionalOldSelf"):
                unsupported.append("version %s %s: %s: optionalOldSelf (kube-sim has no CEL "
                                   "optional types)" % (name, fpath, r.get("rule")))
            elif res.get("unsupported"):
                unsupported.append("version %s %s: %s: %s" % (name, fpath, r.get("rule"),
                                                               res["unsupported"]))
    return causes, unsupported


def rule_tree(schema):
    """The compiled rules of one served version's schema, shaped like the schema (None when
    it has no rules). Compile errors were refused at CRD creation; a rule that fails here
    anyway is kept with its error and reported on every write."""
    key = _key(schema)
    if key in _tree_cache:
        return _tree_cache[key]
    found, results = _compiled(schema, "", key)
    if not found:
        return _remember(_tree_cache, key, None)
    by_node = {}
    # found may hold another copy of an equal schema: nodes are matched by their steps
    for (_fp, _s, _root, _i, r, steps), res in zip(found, results):
        by_node.setdefault(steps, []).append((r, res))

    def build(s, steps):
        if not isinstance(s, dict):
            return None
        n = _Node(s)
        n.rules = by_node.get(steps, [])   # allOf rules included (same steps)
        for k, p in (s.get("properties") or {}).items():
            c = build(p, steps + ("properties", k))
            if c is not None:
                n.properties[k] = c
        n.items = build(s["items"], steps + ("items",)) if isinstance(s.get("items"), dict) \
            else None
        ap = s.get("additionalProperties")
        n.additional = build(ap, steps + ("additionalProperties",)) if isinstance(ap, dict) \
            else None
        return None if n.empty() else n

    return _remember(_tree_cache, key, build(schema, ()))


# ---------------------------------------------------------------------------
# evaluation
# ---------------------------------------------------------------------------

def _child(path, k):
    return k if path is None else path + "." + k


def _index(path, i):
    return ("%s[%s]" % (path, i)) if path is not None else "[%s]" % i


def _map_key(item, keys):
    if not isinstance(item, dict):
        return None
    return tuple(json.dumps(item.get(k), sort_keys=True) for k in keys)


def _rule_text(r):
    return (r.get("message") or "").strip() or str(r.get("rule") or "").strip()


def _field_path(path, fp):
    """The error's field: the rule's path, extended by its normalized fieldPath."""
    if not fp:
        return path
    norm = fp.lstrip(".").replace("['", "[").replace("']", "]")
    return norm if path is None else path + "." + norm


def _walk(node, value, old, path, ratchet, tasks):
    """Collect (node, rule, result, path, ratchet, task) for every rule that applies."""
    if node is None or value is None:
        return
    for r, res in node.rules:
        if res.get("error") or res.get("unsupported") or "key" not in res:
            tasks.append((node, r, res, path, False, None))
            continue
        if res.get("usesOldSelf") and old is None:
            continue
        task = {"key": res["key"], "self": value}
        if res.get("usesOldSelf"):
            task["oldSelf"] = old
        tasks.append((node, r, res, path, ratchet(), task))
    if isinstance(value, list) and node.items is not None:
        s = node.schema
        olds = {}
        keys = s.get("x-kubernetes-list-map-keys") or []
        if s.get("x-kubernetes-list-type") == "map" and isinstance(old, list):
            for o in old:
                olds.setdefault(_map_key(o, keys), o)
        for i, x in enumerate(value):
            o = olds.get(_map_key(x, keys)) if olds else None
            _walk(node.items, x, o, _index(path, i), _ratchet_for(x, o, ratchet), tasks)
    elif isinstance(value, dict):
        odict = old if isinstance(old, dict) else {}
        if node.additional is not None:
            for k in sorted(value):
                if k in node.schema.get("properties", {}):
                    continue
                o = odict.get(k)
                _walk(node.additional, value[k], o, _index(path, k),
                      _ratchet_for(value[k], o, ratchet), tasks)
        for k in sorted(node.properties):
            if k in value:
                o = odict.get(k)
                _walk(node.properties[k], value[k], o, _child(path, k),
                      _ratchet_for(value[k], o, ratchet), tasks)


def _ratchet_for(value, old, parent):
    """Errors at a node ratchet when its correlated old value equals it, or, where it has none,
    when its nearest correlated ancestor is unchanged."""
    if old is None:
        return parent
    return lambda: value == old


def _cause(r, node, path, detail):
    reason, label = _REASONS.get(r.get("reason"), _REASONS[None])
    field = _field_path(path, r.get("fieldPath"))
    shown = node.schema.get("type") or ""
    if reason in ("FieldValueForbidden", "FieldValueRequired"):
        body = "%s: %s" % (label, detail)
    elif reason == "FieldValueDuplicate":
        body = "%s: %s" % (label, go_quote(shown))
    else:
        body = "%s: %s: %s" % (label, go_quote(shown), detail)
    return {"reason": reason, "message": body, "field": "<nil>" if field is None else field}


def _message(r, result):
    msg = result.get("message")
    if isinstance(msg, str):
        msg = msg.strip()
        if msg and "\n" not in msg and len(msg) <= 5 * 1024:
            return msg
    if r.get("message"):
        return str(r["message"]).strip()
    return "failed rule: %s" % _rule_text(r)


def validate(tree, obj, old, schema_causes):
    """Causes and warnings from the rules in ``tree`` (``rule_tree``) for a write of ``obj``
    (``old``: the stored object on update, else None). ``schema_causes`` are the OpenAPI
    causes found before: a blocking one skips every rule and adds BLOCKING_NOTE."""
    if tree is None:
        return [], []
    if any(c.get("reason") in _BLOCKING for c in schema_causes):
        return [dict(BLOCKING_NOTE)], []
    tasks = []
    updating = old is not None
    _walk(tree, obj, old, None, (lambda: obj == old) if updating else (lambda: False), tasks)
    results = cel.engine().evaluate([t[5] for t in tasks if t[5] is not None])
    it = iter(results)
    causes, warnings = [], []
    for node, r, res, path, ratchet, task in tasks:
        shown = go_quote(node.schema.get("type") or "")
        spath = "<nil>" if path is None else path
        if task is None:
            why = res.get("error") or res.get("unsupported") or "not compiled"
            causes.append({"reason": "FieldValueInvalid", "field": spath,
                           "message": "Invalid value: %s: rule compile error: %s" % (shown, why)})
            continue
        result = next(it)
        if result.get("ok"):
            continue
        if "error" in result:
            err = result["error"]
            if err.startswith("no such overload"):
                detail = "'%s': call arguments did not match a supported operator, function or " \
                         "macro signature for rule: %s" % (err, _rule_text(r))
            else:
                detail = "%s evaluating rule: %s" % (err, _rule_text(r))
            causes.append({"reason": "FieldValueInvalid", "field": spath,
                           "message": "Invalid value: %s: %s" % (shown, detail)})
            continue
        c = _cause(r, node, path, _message(r, result))
        if updating and ratchet and not res.get("usesOldSelf"):
            warnings.append("%s: %s" % (c["field"], c["message"]))
        else:
            causes.append(c)
    return causes, warnings
