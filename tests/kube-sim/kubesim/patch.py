"""Patch flavours: JSON merge patch (RFC 7386), JSON patch (RFC 6902) and
strategic merge patch for built-in kinds."""
import copy

from . import util


class PatchError(Exception):
    """A patch that cannot be applied (becomes 422 or 400)."""

    def __init__(self, msg, bad_request=False):
        super().__init__(msg)
        self.bad_request = bad_request


# --- JSON merge patch ------------------------------------------------------

def merge_patch(target, patch):
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    if not isinstance(target, dict):
        target = {}
    out = dict(target)
    for k, v in patch.items():
        if v is None:
            out.pop(k, None)
        else:
            out[k] = merge_patch(target.get(k), v)
    return out


# --- JSON patch --------------------------------------------------------------

def _unescape_token(t):
    return t.replace("~1", "/").replace("~0", "~")


def _split_pointer(p):
    if p == "":
        return []
    if not p.startswith("/"):
        raise PatchError("invalid JSON pointer %r" % p)
    return [_unescape_token(t) for t in p[1:].split("/")]


def _resolve_parent(doc, tokens, create=False):
    cur = doc
    for t in tokens[:-1]:
        if isinstance(cur, dict):
            if t not in cur:
                raise PatchError("doc is missing path: %s" % "/" + "/".join(tokens))
            cur = cur[t]
        elif isinstance(cur, list):
            try:
                i = int(t)
            except ValueError:
                raise PatchError("invalid array index %r" % t)
            if i < 0 or i >= len(cur):
                raise PatchError("doc is missing path: /%s" % "/".join(tokens))
            cur = cur[i]
        else:
            raise PatchError("doc is missing path: /%s" % "/".join(tokens))
    return cur


def _get(doc, tokens, path):
    cur = doc
    for t in tokens:
        if isinstance(cur, dict) and t in cur:
            cur = cur[t]
        elif isinstance(cur, list):
            try:
                i = int(t)
            except ValueError:
                raise PatchError("invalid array index %r" % t)
            if i < 0 or i >= len(cur):
                raise PatchError("doc is missing path: %s" % path)
            cur = cur[i]
        else:
            raise PatchError("doc is missing path: %s" % path)
    return cur


def _add(doc, tokens, value, path):
    if not tokens:
        return value
    parent = _resolve_parent(doc, tokens)
    last = tokens[-1]
    if isinstance(parent, dict):
        parent[last] = value
    elif isinstance(parent, list):
        if last == "-":
            parent.append(value)
        else:
            try:
                i = int(last)
            except ValueError:
                raise PatchError("invalid array index %r" % last)
            if i < 0 or i > len(parent):
                raise PatchError("Unable to access invalid index: %d" % i)
            parent.insert(i, value)
    else:
        raise PatchError("doc is missing path: %s" % path)
    return doc


def _remove(doc, tokens, path):
    if not tokens:
        raise PatchError("cannot remove the whole document")
    parent = _resolve_parent(doc, tokens)
    last = tokens[-1]
    if isinstance(parent, dict):
        if last not in parent:
            raise PatchError("Unable to remove nonexistent key: %s: missing value" % last)
        return parent.pop(last)
    if isinstance(parent, list):
        try:
            i = int(last)
        except ValueError:
            raise PatchError("invalid array index %r" % last)
        if i < 0 or i >= len(parent):
            raise PatchError("Unable to remove invalid index: %d" % i)
        return parent.pop(i)
    raise PatchError("doc is missing path: %s" % path)


def json_patch(doc, ops):
    if not isinstance(ops, list):
        raise PatchError("json: cannot unmarshal object into Go value of type jsonpatch.Patch",
                         bad_request=True)
    if len(ops) > 10000:
        raise PatchError("The allowed maximum operations in a JSON patch is 10000, got %d" % len(ops))
    doc = copy.deepcopy(doc)
    for op in ops:
        if not isinstance(op, dict):
            raise PatchError("invalid JSON patch operation", bad_request=True)
        kind = op.get("op")
        path = op.get("path")
        if not isinstance(path, str):
            raise PatchError("missing 'path' in JSON patch operation")
        tokens = _split_pointer(path)
        if kind == "add":
            if "value" not in op:
                raise PatchError("missing value for add operation")
            doc = _add(doc, tokens, copy.deepcopy(op["value"]), path)
        elif kind == "remove":
            _remove(doc, tokens, path)
        elif kind == "replace":
            if "value" not in op:
                raise PatchError("missing value for replace operation")
            if not tokens:
                doc = copy.deepcopy(op["value"])
                continue
            parent = _resolve_parent(doc, tokens)
            last = tokens[-1]
            if isinstance(parent, dict):
                if last not in parent:
                    raise PatchError("replace operation does not apply: doc is missing key: %s: missing value" % path)
                parent[last] = copy.deepcopy(op["value"])
            elif isinstance(parent, list):
                try:
                    i = int(last)
                except ValueError:
                    raise PatchError("invalid array index %r" % last)
                if i < 0 or i >= len(parent):
                    raise PatchError("replace operation does not apply: doc is missing key: %s: missing value" % path)
                parent[i] = copy.deepcopy(op["value"])
            else:
                raise PatchError("doc is missing path: %s" % path)
        elif kind in ("move", "copy"):
            frm = op.get("from")
            if not isinstance(frm, str):
                raise PatchError("missing 'from' in %s operation" % kind)
            ftok = _split_pointer(frm)
            if kind == "move":
                val = _remove(doc, ftok, frm)
            else:
                val = copy.deepcopy(_get(doc, ftok, frm))
            doc = _add(doc, tokens, val, path)
        elif kind == "test":
            try:
                cur = _get(doc, tokens, path)
            except PatchError:
                cur = None
            if cur != op.get("value") or (isinstance(cur, bool) != isinstance(op.get("value"), bool)):
                raise PatchError("testing value %s failed: test failed" % path)
        else:
            raise PatchError("Unexpected kind: %s" % kind)
    return doc


# --- strategic merge patch -------------------------------------------------

# (field name) -> merge key, or PRIMITIVE for merge lists of scalars.
PRIMITIVE = "<primitive>"
_CONTAINER_LISTS = ("containers", "initContainers", "ephemeralContainers")
_MERGE_KEYS = {
    "containers": "name", "initContainers": "name", "ephemeralContainers": "name",
    "volumes": "name", "env": "name", "volumeMounts": "mountPath",
    "volumeDevices": "devicePath", "conditions": "type", "imagePullSecrets": "name",
    "hostAliases": "ip", "ownerReferences": "uid", "podIPs": "ip", "hostIPs": "ip",
    "resourceClaims": "name", "topologySpreadConstraints": "topologyKey",
}


def merge_rule(path):
    """path: tuple of field names from the object root."""
    if not path:
        return None
    last = path[-1]
    parent = path[-2] if len(path) > 1 else None
    if last == "finalizers":
        return PRIMITIVE if parent == "metadata" else None
    if last == "ports":
        if parent in _CONTAINER_LISTS:
            return "containerPort"
        if path[:2] == ("spec", "ports"):
            return "port"
        return None
    if last == "addresses" and parent == "status":
        return "type"
    if last == "podCIDRs" and parent == "spec":
        return PRIMITIVE
    if last == "drivers" and parent == "spec":
        return "name"
    if last == "secrets" and len(path) == 1:
        return "name"
    if last == "resourceClaims" and parent in _CONTAINER_LISTS + ("resources",):
        return "name"
    return _MERGE_KEYS.get(last)


def strategic_merge_patch(original, patch, path=()):
    if not isinstance(patch, dict):
        raise PatchError("strategic merge patch must be a JSON object", bad_request=True)
    return _smp_map(original if isinstance(original, dict) else {}, patch, path)


def _smp_map(orig, patch, path):
    directive = patch.get("$patch")
    if directive == "replace":
        out = {k: v for k, v in patch.items() if k != "$patch"}
        return _strip_directives(out)
    if directive == "delete":
        return None
    if directive not in (None, "merge"):
        raise PatchError("Unknown patch type: %s" % directive)
    out = dict(orig)
    retain = patch.get("$retainKeys")
    if isinstance(retain, list):
        for k in list(out.keys()):
            if k not in retain:
                del out[k]
    orders = {}
    deletes = {}
    for k, v in patch.items():
        if k.startswith("$setElementOrder/"):
            orders[k[len("$setElementOrder/"):]] = v
        elif k.startswith("$deleteFromPrimitiveList/"):
            deletes[k[len("$deleteFromPrimitiveList/"):]] = v
    for k, v in patch.items():
        if k.startswith("$"):
            continue
        sub = path + (k,)
        if v is None:
            out.pop(k, None)
            continue
        cur = out.get(k)
        if isinstance(v, dict):
            if v.get("$patch") == "delete":
                out.pop(k, None)
                continue
            merged = _smp_map(cur if isinstance(cur, dict) else {}, v, sub)
            if merged is None:
                out.pop(k, None)
            else:
                out[k] = merged
        elif isinstance(v, list):
            out[k] = _smp_list(cur if isinstance(cur, list) else [], v, sub)
        else:
            out[k] = copy.deepcopy(v)
    for k, vals in deletes.items():
        if isinstance(out.get(k), list):
            out[k] = [x for x in out[k] if x not in vals]
    for k, order in orders.items():
        if isinstance(out.get(k), list) and isinstance(order, list):
            out[k] = _apply_order(out[k], order, merge_rule(path + (k,)))
    return out


def _smp_list(orig, patch, path):
    rule = merge_rule(path)
    if any(isinstance(x, dict) and x.get("$patch") == "replace" for x in patch):
        return [_strip_directives(x) for x in patch
                if not (isinstance(x, dict) and x.get("$patch") == "replace")]
    if rule is None:
        return [_strip_directives(x) for x in patch]
    if rule == PRIMITIVE:
        out = list(orig)
        for x in patch:
            if x not in out:
                out.append(x)
        return out
    out = [copy.deepcopy(x) for x in orig]
    for item in patch:
        if not isinstance(item, dict):
            raise PatchError("unable to find api field in struct for the merge key %s" % rule)
        keyv = item.get(rule)
        idx = None
        for i, o in enumerate(out):
            if isinstance(o, dict) and o.get(rule) == keyv:
                idx = i
                break
        if item.get("$patch") == "delete":
            if idx is not None:
                out.pop(idx)
            continue
        if idx is None:
            out.append(_strip_directives({k: v for k, v in item.items() if v is not None}))
        else:
            out[idx] = _smp_map(out[idx], item, path)
    return out


def _apply_order(items, order, rule):
    if rule is None:
        return items
    if rule == PRIMITIVE:
        keyf = lambda x: x  # noqa: E731
        okeys = order
    else:
        keyf = lambda x: x.get(rule) if isinstance(x, dict) else None  # noqa: E731
        okeys = [o.get(rule) if isinstance(o, dict) else o for o in order]
    pos = {k: i for i, k in enumerate(okeys)}
    in_order = sorted([x for x in items if keyf(x) in pos], key=lambda x: pos[keyf(x)])
    rest = [x for x in items if keyf(x) not in pos]
    return in_order + rest


def _strip_directives(v):
    if isinstance(v, dict):
        return {k: _strip_directives(x) for k, x in v.items() if not k.startswith("$")}
    if isinstance(v, list):
        return [_strip_directives(x) for x in v]
    return v


def apply_patch(content_type, original, body, builtin):
    """Dispatch on Content-Type. Returns the patched object."""
    ct = (content_type or "").split(";")[0].strip().lower()
    if ct == "application/json-patch+json":
        return json_patch(original, body)
    if ct == "application/merge-patch+json":
        if not isinstance(body, dict):
            raise PatchError("merge patch must be a JSON object", bad_request=True)
        return merge_patch(original, body)
    if ct == "application/strategic-merge-patch+json":
        return strategic_merge_patch(original, body)
    raise PatchError("unsupported media type %s" % ct)


def clone(v):
    return util.clone(v)
