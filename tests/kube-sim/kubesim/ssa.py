"""Field ownership (metadata.managedFields) and server-side apply, after the rules of
Kubernetes' structured-merge-diff as kube-apiserver uses them.

A field set is a Python set of paths; a path is a tuple of path elements spelled as in
fieldsV1: ``f:<field>``, ``k:<json of the key fields>`` (an item of an associative list),
``v:<json value>`` (an item of a set list).  A path in the set is a member: the manager owns
that field (for a leaf) or that node itself (``.`` in fieldsV1: a list item, an empty map, a
map that the manager created).

Types come from the CRD's openAPIV3Schema for custom resources (``x-kubernetes-list-type``,
``x-kubernetes-list-map-keys``, ``x-kubernetes-map-type``, ``properties`` versus
``additionalProperties``, preserved unknown fields as "deduced"), and for built-in kinds from
the list merge keys kube-apiserver's OpenAPI declares (containers by name, container ports
by containerPort+protocol, Service ports by port+protocol, env by name, conditions by type,
finalizers as a set, ...).  Other built-in lists are atomic, as in the real schema.

What is modelled: Apply (merge into the live object, ownership of every field in the applied
configuration, removal of fields the manager applied before and no longer applies when no
other manager owns them, conflicts with other managers and ``force``), Update (PUT, POST and
non-apply patches: the manager takes the fields it changed, other managers lose them), the
manager identifiers (Apply entries keyed without apiVersion), "before-first-apply", the
skip of Update tracking on objects without managedFields, managedFields sent by the client
(used as the base; ``[]`` or ``[{}]`` clears them), and the entry order of the real server.
"""
import json

from . import patch as patchmod
from . import util
from .util import ApiError

APPLY, UPDATE = "Apply", "Update"
BEFORE_FIRST_APPLY = "before-first-apply"
MAX_FIELD_MANAGER = 128

# Paths the API server never records (StripMetaManager).
_STRIP = {("f:apiVersion",), ("f:kind",), ("f:metadata",)} | {
    ("f:metadata", "f:" + k) for k in ("name", "namespace", "creationTimestamp", "selfLink", "uid",
                                        "clusterName", "generation", "managedFields",
                                        "resourceVersion")}


def _js(v):
    return json.dumps(v, separators=(",", ":"), sort_keys=True, ensure_ascii=False)


def _same(a, b):
    return _js(a) == _js(b)


# --- types -------------------------------------------------------------------------------

LEAF, MAP, LIST_MAP, LIST_SET = "leaf", "map", "list_map", "list_set"

# Built-in structs and maps the real schema marks atomic (+structType/+mapType=atomic).
_B_ATOMIC = {"selector", "labelSelector", "namespaceSelector", "podSelector", "fieldRef",
             "resourceFieldRef", "configMapKeyRef", "secretKeyRef", "nodeSelector"}
_KEY_DEFAULTS = {"protocol": "TCP"}


class BuiltinType:
    """A node of a built-in kind, named by its field path from the root."""
    __slots__ = ("names",)

    def __init__(self, names=()):
        self.names = names

    def shape(self, value):
        if isinstance(value, dict):
            if self.names and self.names[-1] in _B_ATOMIC and not (
                    self.names[-1] == "nodeSelector" and len(self.names) > 1
                    and self.names[-2] == "requiredDuringSchedulingIgnoredDuringExecution"):
                return LEAF
            return MAP
        if isinstance(value, list):
            keys = self.keys()
            if keys is None:
                return LEAF
            return LIST_SET if keys == () else LIST_MAP
        return LEAF

    def keys(self):
        """Merge keys of this list: a tuple, () for a set, None for atomic."""
        rule = patchmod.merge_rule(self.names) if self.names else None
        if rule is None:
            return None
        if rule == patchmod.PRIMITIVE:
            return ()
        if rule == "containerPort":
            return ("containerPort", "protocol")
        if rule == "port":
            return ("port", "protocol")
        if rule == "topologyKey":
            return ("topologyKey", "whenUnsatisfiable")
        return (rule,)

    def child(self, name):
        return BuiltinType(self.names + (name,))

    def declares(self, name):
        return True

    def item(self):
        return self


class SchemaType:
    """A node of a custom resource, from its openAPIV3Schema (None: deduced)."""
    __slots__ = ("s",)

    def __init__(self, s):
        self.s = s if isinstance(s, dict) else None

    def _deduced(self):
        s = self.s
        return s is None or (not s.get("properties") and not isinstance(
            s.get("additionalProperties"), dict) and not s.get("items") and
            (s.get("x-kubernetes-preserve-unknown-fields") or not s.get("type")))

    def shape(self, value):
        s = self.s
        if self._deduced():
            return MAP if isinstance(value, dict) else LEAF
        if s.get("x-kubernetes-int-or-string"):
            return LEAF
        if isinstance(value, dict):
            if s.get("x-kubernetes-map-type") == "atomic" or s.get("type") not in (None, "object"):
                return LEAF
            return MAP
        if isinstance(value, list):
            lt = s.get("x-kubernetes-list-type")
            if s.get("type") not in (None, "array") or lt not in ("map", "set"):
                return LEAF
            return LIST_SET if lt == "set" else LIST_MAP
        return LEAF

    def keys(self):
        s = self.s or {}
        if s.get("x-kubernetes-list-type") == "set":
            return ()
        if s.get("x-kubernetes-list-type") == "map":
            return tuple(s.get("x-kubernetes-list-map-keys") or ())
        return None

    def key_default(self, k):
        items = (self.s or {}).get("items") or {}
        d = ((items.get("properties") or {}).get(k) or {}).get("default")
        return d

    def child(self, name):
        s = self.s
        if s is None:
            return SchemaType(None)
        props = s.get("properties") or {}
        if name in props:
            return SchemaType(props[name])
        ap = s.get("additionalProperties")
        if isinstance(ap, dict):
            return SchemaType(ap)
        return SchemaType(None)

    def declares(self, name):
        return self.s is not None and name in (self.s.get("properties") or {})

    def item(self):
        return SchemaType((self.s or {}).get("items"))


class RootType:
    """The object root: metadata always follows ObjectMeta; the rest per kind."""
    __slots__ = ("body",)

    def __init__(self, body):
        self.body = body

    def shape(self, value):
        return MAP if isinstance(value, dict) else LEAF

    def keys(self):
        return None

    def child(self, name):
        if name == "metadata":
            return BuiltinType(("metadata",))
        return self.body.child(name)

    def declares(self, name):
        return True

    def item(self):
        return self


def type_for(rt, version=None):
    if rt.builtin:
        return RootType(BuiltinType())
    sch = (rt.schemas.get(version) if version else None) or rt.schemas.get(rt.version)
    return RootType(SchemaType(sch if sch else None))


def _item_keys(t):
    return t.keys() or ()


def _item_pe(t, item, keys):
    """Path element of one item of an associative or set list; None if it has no key."""
    if keys == ():
        return "v:" + _js(item)
    if not isinstance(item, dict):
        return None
    kv = {}
    for k in keys:
        if k in item:
            kv[k] = item[k]
        else:
            d = t.key_default(k) if isinstance(t, SchemaType) else _KEY_DEFAULTS.get(k)
            if d is None:
                return None
            kv[k] = d
    return "k:" + _js(kv)


class _KeyError(Exception):
    pass


def _items_by_pe(t, lst, side, path=None):
    keys = _item_keys(t)
    out = []
    seen = set()
    where = (path_string(path) + ": ") if path else ""
    for i, it in enumerate(lst):
        pe = _item_pe(t, it, keys)
        if pe is None:
            missing = [k for k in keys if not isinstance(it, dict) or k not in it][:1] or ["?"]
            raise _KeyError('%selement %d: associative list with keys has an element that omits '
                            'key field "%s" (and doesn\'t have default value)'
                            % (where, i, missing[0]))
        if pe in seen:
            raise _KeyError("%sduplicate entries for key %s" % (where, path_string((pe,))))
        seen.add(pe)
        out.append((pe, it))
    return out


# --- field sets -------------------------------------------------------------------------------

def field_set(value, t, path=(), out=None):
    """The set of fields a value holds (structured-merge-diff ToFieldSet)."""
    if out is None:
        out = set()
    shape = t.shape(value)
    if shape == LEAF:
        out.add(path)
    elif shape == MAP:
        for k, v in value.items():
            p = path + ("f:" + k,)
            ct = t.child(k)
            if v is None or (isinstance(v, dict) and not v):
                out.add(p)
            else:
                field_set(v, ct, p, out)
                if not t.declares(k):
                    out.add(p)
    else:
                        # LIST_MAP / LIST_SET
        it = t.item()
        for pe, item in _items_by_pe(t, value, "rhs", path):
            p = path + (pe,)
            if shape == LIST_MAP:
                field_set(item, it, p, out)
            out.add(p)
    return out


def ensure_named(s, t):
    """Add the struct fields that are parents of members (EnsureNamedFieldsAreMembers)."""
    out = set(s)
    trie = {}
    for p in s:
        node = trie
        for pe in p:
            node = node.setdefault(pe, {})

    def walk(node, ty, path):
        for pe, child in node.items():
            if not child:
                continue
            p = path + (pe,)
            if pe.startswith("f:"):
                if ty.declares(pe[2:]):
                    out.add(p)
                walk(child, ty.child(pe[2:]), p)
            else:
                walk(child, ty.item(), p)
    walk(trie, t, ())
    return out


# --- compare, merge, remove --------------------------------------------------------------------

def compare(lhs, rhs, t, path=(), res=None, lpresent=None):
    """(added, modified, removed) between two values. lpresent: lhs is an explicit null
    (a Go zero value such as PodSpec.containers), which is not "added" when filled."""
    if res is None:
        res = (set(), set(), set())
    added, modified, removed = res
    if lpresent is None:
        lpresent = lhs is not None
    sl = t.shape(lhs) if lhs is not None else None
    sr = t.shape(rhs) if rhs is not None else None
    empty_l = lhs is None or (isinstance(lhs, (dict, list)) and not lhs)
    empty_r = rhs is None or (isinstance(rhs, (dict, list)) and not rhs)
    leaf = (LEAF in (sl, sr)) or (sl is not None and sr is not None and sl != sr) or \
        (empty_l and empty_r)
    if leaf:
        if lhs is None and not lpresent:
            added.add(path)
        elif lhs is None:
            modified.add(path)
        elif rhs is None:
            removed.add(path)
        elif not _same(lhs, rhs):
            modified.add(path)
        return res
    shape = sl or sr
    if shape == MAP:
        lm = lhs or {}
        rm = rhs or {}
        for k in list(lm.keys()) + [k for k in rm if k not in lm]:
            lv, rv = lm.get(k), rm.get(k)
            if lv is None and rv is None:
                if k in lm and k in rm:
                    continue
                (added if k in rm else removed).add(path + ("f:" + k,))
                continue
            compare(lv, rv, t.child(k), path + ("f:" + k,), res, k in lm)
    else:
        it = t.item()
        li = dict(_items_by_pe(t, lhs or [], "lhs"))
        ri = dict(_items_by_pe(t, rhs or [], "rhs"))
        for pe in list(li.keys()) + [pe for pe in ri if pe not in li]:
            p = path + (pe,)
            lv, rv = li.get(pe), ri.get(pe)
            if shape == LIST_SET:
                if lv is None and pe in ri:
                    added.add(p)
                elif pe not in ri:
                    removed.add(p)
                continue
            compare(lv, rv, it, p, res)
    if not lpresent:
        added.add(path)
    elif rhs is None:
        removed.add(path)
    return res


def merge(lhs, rhs, t):
    """Merge an applied configuration (rhs) into the live value (lhs)."""
    if rhs is None:
        return lhs
    if lhs is None:
        return util.clone(rhs)
    sl, sr = t.shape(lhs), t.shape(rhs)
    if sl != sr or sr == LEAF or (not lhs and not rhs):
        return util.clone(rhs)
    if sr == MAP:
        out = dict(lhs)
        for k, v in rhs.items():
            if v is None:
                out[k] = None
            else:
                out[k] = merge(lhs.get(k), v, t.child(k))
        return {k: v for k, v in out.items() if not (v is None and k in rhs)}
    it = t.item()
    ri = _items_by_pe(t, rhs, "rhs")
    rmap = dict(ri)
    li = _items_by_pe(t, lhs, "lhs")
    out = []
    seen = set()
    for pe, item in li:
        seen.add(pe)
        out.append(merge(item, rmap[pe], it) if pe in rmap and sr == LIST_MAP else item)
    for pe, item in ri:
        if pe not in seen:
            out.append(util.clone(item))
    return out


def _with_prefix(s, pe):
    return {p[1:] for p in s if p and p[0] == pe and len(p) > 1}


def remove_items(value, s, t):
    """The value without the paths in s (a member removes its whole subtree); None when a map
    or list ends up empty (kube-apiserver stores that as an absent field)."""
    if not s or value is None:
        return value
    shape = t.shape(value)
    if shape == LEAF:
        return None
    if shape == MAP:
        out = {}
        for k, v in value.items():
            pe = "f:" + k
            if (pe,) in s:
                continue
            sub = _with_prefix(s, pe)
            if sub:
                v = remove_items(v, sub, t.child(k))
                if v is None:
                    continue
            out[k] = v
        return out or None
    it = t.item()
    out = []
    for pe, item in _items_by_pe(t, value, "lhs"):
        if (pe,) in s:
            continue
        sub = _with_prefix(s, pe)
        if sub and shape == LIST_MAP:
            item = remove_items(item, sub, it)
            if item is None:
                continue
        out.append(item)
    return out or None


# --- managedFields encoding ------------------------------------------------------------------

def fields_v1(s):
    tree = {}
    for p in sorted(s, key=len):
        node = tree
        for pe in p:
            node = node.setdefault(pe, {})
    for p in s:
        if not p:
            continue
        node = tree
        for pe in p:
            node = node[pe]
        if node and "." not in node:
            node["."] = {}

    def order(n):
        keys = sorted(n.keys(), key=lambda k: ({".": 0, "f": 1, "k": 2, "v": 3, "i": 4}.get(k[0], 5), k))
        return {k: order(n[k]) for k in keys}
    return order(tree)


def parse_fields_v1(tree, path=(), out=None):
    if out is None:
        out = set()
    if not isinstance(tree, dict):
        raise ValueError("fieldsV1 must be an object")
    if not tree and path:
        out.add(path)
    for k, v in tree.items():
        if k == ".":
            out.add(path)
            continue
        if k[:2] not in ("f:", "k:", "v:", "i:"):
            raise ValueError("unexpected key %r in fieldsV1" % k)
        if k[:2] in ("k:", "v:"):
            json.loads(k[2:])
        parse_fields_v1(v, path + (k,), out)
    return out


def path_string(p):
    out = []
    for pe in p:
        kind, rest = pe[:2], pe[2:]
        if kind == "f:":
            out.append("." + rest)
        elif kind == "k:":
            kv = json.loads(rest)
            out.append("[" + ",".join("%s=%s" % (k, _js(kv[k])) for k in sorted(kv)) + "]")
        elif kind == "v:":
            out.append("[=%s]" % rest)
        else:
            out.append("[%s]" % rest)
    return "".join(out)


class Managers:
    """Managers of one object: key (manager, operation, apiVersion or "" for Apply,
    subresource) -> {"set", "apiVersion", "time"}."""

    def __init__(self):
        self.m = {}

    @staticmethod
    def decode(entries):
        """Managers from metadata.managedFields; raises ValueError when malformed."""
        ms = Managers()
        if entries is None:
            return ms
        if not isinstance(entries, list):
            raise ValueError("managedFields must be a list")
        for e in entries:
            if not isinstance(e, dict):
                raise ValueError("managedFields entry must be an object")
            op = e.get("operation")
            if op not in (APPLY, UPDATE):
                raise ValueError("invalid operation %r" % op)
            if e.get("fieldsType", "FieldsV1") != "FieldsV1":
                raise ValueError("invalid fieldsType %r" % e.get("fieldsType"))
            s = parse_fields_v1(e.get("fieldsV1") or {})
            key = (e.get("manager") or "", op, "" if op == APPLY else (e.get("apiVersion") or ""),
                   e.get("subresource") or "")
            if key in ms.m:
                raise ValueError("duplicate entry for manager %r" % key[0])
            ms.m[key] = {"set": s, "apiVersion": e.get("apiVersion") or "", "time": e.get("time")}
        return ms

    def encode(self):
        out = []
        for (mgr, op, _, sub), v in self.m.items():
            if not v["set"]:
                continue
            e = {"manager": mgr, "operation": op, "apiVersion": v["apiVersion"]}
            if v.get("time"):
                e["time"] = v["time"]
            e["fieldsType"] = "FieldsV1"
            e["fieldsV1"] = fields_v1(v["set"])
            if sub:
                e["subresource"] = sub
            out.append(e)
        out.sort(key=lambda e: (e["operation"], e.get("time") or "", e["manager"], e["apiVersion"],
                                e.get("subresource") or ""))
        return out


def is_reset(entries):
    return isinstance(entries, list) and (entries == [] or entries == [{}])


def _manager_name(key):
    mgr, op, av, sub = key
    s = '"%s"' % mgr.replace("\\", "\\\\").replace('"', '\\"')
    if sub:
        s += ' with subresource "%s"' % sub
    if op == UPDATE:
        s += " using " + av
    return s


def conflict_error(conflicts):
    """409 for [(manager key, path)], with the real message and causes."""
    conflicts = sorted(conflicts, key=lambda c: (_manager_name(c[0]), path_string(c[1])))
    causes = [{"reason": "FieldManagerConflict", "message": "conflict with %s" % _manager_name(k),
               "field": path_string(p)} for k, p in conflicts]
    if len(conflicts) == 1:
        k, p = conflicts[0]
        msg = "Apply failed with 1 conflict: conflict with %s: %s" % (_manager_name(k), path_string(p))
    else:
        lines = []
        last = None
        for k, p in conflicts:
            if k != last:
                lines.append("conflicts with %s:" % _manager_name(k))
                last = k
            lines.append("- %s" % path_string(p))
        msg = "Apply failed with %d conflicts: %s" % (len(conflicts), "\n".join(lines))
    return ApiError(409, "Conflict", msg, {"causes": causes})


# --- the field manager -----------------------------------------------------------------------

def _scope(s, sub, rt):
    """Drop what the server never records, and the reset fields of the endpoint: status on
    the main resource of a kind with a status subresource, everything but status on /status."""
    out = set()
    for p in s:
        if p in _STRIP:
            continue
        if sub == "status":
            if not p or p[0] != "f:status":
                continue
        elif rt.status and p and p[0] == "f:status":
            continue
        out.add(p)
    return out


def _content(obj):
    return obj if isinstance(obj, dict) else {}


def _update_sets(ms, key, live, new, t, rt, sub, force):
    """structured-merge-diff's update step: other managers lose what changed (conflicts unless
    force) and what was removed. Returns the comparison."""
    added, modified, removed = compare(_content(live), _content(new), t)
    changed = _scope(added | modified, sub, rt)
    removed = _scope(removed, sub, rt)
    conflicts = []
    for k, v in ms.m.items():
        if k == key:
            continue
        c = v["set"] & changed
        if c:
            conflicts.extend((k, p) for p in c)
    if conflicts and not force:
        raise conflict_error(conflicts)
    for k in list(ms.m.keys()):
        if k == key:
            continue
        ms.m[k]["set"] = ms.m[k]["set"] - changed - removed
        if not ms.m[k]["set"]:
            del ms.m[k]
    return changed, removed


def validate_manager(name, what):
    if name is None:
        return
    causes = []
    if len(name.encode("utf-8")) > MAX_FIELD_MANAGER:
        causes.append(util.cause("FieldValueTooLong",
                                 "Too long: may not be more than %d bytes" % MAX_FIELD_MANAGER,
                                 "fieldManager"))
    for i, ch in enumerate(name):
        if not ch.isprintable():
            causes.append(util.field_invalid(
                "fieldManager", name, "invalid character %s (at position %d)"
                % ("U+%04X" % ord(ch), i)))
            break
    if causes:
        raise util.invalid(what, "meta.k8s.io", "", causes)


def manager_for(field_manager, user_agent):
    """managerOrUserAgent: the fieldManager parameter, else the User-Agent up to its first '/'."""
    if field_manager:
        return field_manager
    ua = (user_agent or "").split("/")[0]
    return ua[:MAX_FIELD_MANAGER]


def record_update(rt, live, new, manager, version, sub, request_managed, now=None):
    """managedFields after a create (live None), update or non-apply patch by `manager`
    (None: an internal write, which only drops ownership of what it changed)."""
    t = type_for(rt, version)
    live_managed = (live or {}).get("metadata", {}).get("managedFields") if live else None
    if sub:
        base = live_managed
    elif is_reset(request_managed):
        return []
    else:
        base = request_managed if request_managed else live_managed
        try:
            if not Managers.decode(base).m:
                base = live_managed
        except ValueError:
            base = live_managed
    try:
        ms = Managers.decode(base)
    except ValueError:
        ms = Managers()
    if not ms.m and live is not None:
        # No managedFields on an existing object: the server does not start tracking on an
        # update (it does on a create and on the first apply).
        return ms.encode()
    lhs = _content(live) if live is not None else _create_baseline(rt, new)
    api_version = rt.api_version(version) if version else rt.api_version()
    key = (manager or "\0internal", UPDATE, api_version, sub or "")
    try:
        changed, removed = _update_sets(ms, key, lhs, new, t, rt, sub, True)
    except _KeyError:
        return []  # as the real server: managedFields dropped rather than the write refused
    if manager is None:
        return ms.encode()
    prev = ms.m.get(key)
    took = changed
    s = ((prev["set"] if prev else set()) - removed) | took
    if took:
        ms.m[key] = {"set": s, "apiVersion": api_version, "time": now or util.now_rfc3339()}
    elif prev is not None:
        prev["set"] = s
    _cap_updaters(ms)
    return ms.encode()


MAX_UPDATE_MANAGERS = 10
ANCIENT = "ancient-changes"


def _cap_updaters(ms):
    """At most 10 Update entries: the oldest are merged, per apiVersion, into one
    "ancient-changes" entry (the server's capManagersManager)."""
    ups = [k for k in ms.m if k[1] == UPDATE]
    if len(ups) <= MAX_UPDATE_MANAGERS:
        return
    ups.sort(key=lambda k: (ms.m[k].get("time") or "", k[0]))
    first = {}
    length = len(ups)
    for k in ups:
        if length <= MAX_UPDATE_MANAGERS:
            break
        v = ms.m[k]
        ver = v["apiVersion"]
        bucket = (ANCIENT, UPDATE, ver, "")
        if ver not in first:
            first[ver] = k
            continue
        if bucket not in ms.m:
            ms.m[bucket] = ms.m.pop(first[ver])
        ms.m[bucket] = {"set": v["set"] | ms.m[bucket]["set"], "apiVersion": ver,
                        "time": v.get("time")}
        if k != bucket:
            del ms.m[k]
        length -= 1


def _create_baseline(rt, new):
    # The zero value of a built-in Go type has its non-pointer structs (metadata, spec, status).
    # Of the nested ones, those on the way to the pod template matter (json without omitempty
    # or non-pointer: template, its metadata and spec, strategy, and containers as null).
    base = {"metadata": {}}
    if not rt.builtin:
        return base
    for k in ("spec", "status"):
        if isinstance(new.get(k), dict):
            base[k] = {}
    spec = base.get("spec")
    if spec is not None and rt.kind in _TEMPLATE_KINDS:
        spec["template"] = {"metadata": {}, "spec": {"containers": None}}
        if _TEMPLATE_KINDS[rt.kind]:
            spec[_TEMPLATE_KINDS[rt.kind]] = {}
    elif spec is not None and rt.kind == "Pod":
        spec["containers"] = None
    return base


_TEMPLATE_KINDS = {"Deployment": "strategy", "DaemonSet": "updateStrategy",
                   "StatefulSet": "updateStrategy", "ReplicaSet": None, "Job": None}


def apply(rt, live, config, manager, force, version, sub, now=None):
    """Server-side apply of `config` on `live` (None: create). Returns (object, managedFields).
    Raises ApiError (409 conflicts, 400/422 bad configurations)."""
    if not isinstance(config, dict):
        raise util.bad_request("invalid apply configuration")
    cmeta = config.get("metadata")
    if cmeta is not None and not isinstance(cmeta, dict):
        raise util.bad_request("metadata must be an object")
    if isinstance(cmeta, dict) and cmeta.get("managedFields") is not None:
        raise util.bad_request("metadata.managedFields must be nil")
    t = type_for(rt, version)
    api_version = rt.api_version(version) if version else rt.api_version()
    if config.get("apiVersion") != api_version:
        av = config.get("apiVersion")
        raise util.bad_request("Incorrect version specified in apply patch. Specified patch "
                               "version: %s, expected: %s" % (av if isinstance(av, str) else "",
                                                              api_version))
    now = now or util.now_rfc3339()
    if live is None:
        live_obj = {}
        ms = Managers()
    else:
        live_obj = util.clone(live)
        try:
            ms = Managers.decode(live_obj.get("metadata", {}).get("managedFields"))
        except ValueError:
            ms = Managers()
        live_obj.get("metadata", {}).pop("managedFields", None)
        if not ms.m:
            # An object nobody applied yet: what exists belongs to "before-first-apply".
            added, modified, _ = compare(_create_baseline(rt, live_obj), live_obj, t)
            bs = _scope(added | modified, sub, rt)
            if bs:
                ms.m[(BEFORE_FIRST_APPLY, UPDATE, api_version, sub or "")] = {
                    "set": bs, "apiVersion": api_version, "time": now}
    cfg = util.clone(config)
    gvk = "%s, Kind=%s" % (api_version if "/" in api_version else "/" + api_version, rt.kind)
    try:
        cfg_set = field_set(cfg, t)
    except _KeyError as e:
        raise ApiError(500, "InternalError", "Internal error occurred: failed to create typed "
                       "patch object (%s): %s" % (gvk, e))
    key = (manager, APPLY, "", sub or "")
    last = ms.m.get(key)
    last_set = last["set"] if last else set()
    scoped = _scope(cfg_set, sub, rt)
    try:
        merged = merge(live_obj, cfg, t)
        # Prune what this manager applied last time, no longer applies, and nobody else owns.
        if last_set:
            merged = _prune(merged, ms, key, cfg_set, last_set, t)
        ms.m[key] = {"set": scoped, "apiVersion": api_version,
                     "time": last["time"] if last else None}
        _update_sets(ms, key, live_obj, merged, t, rt, sub, force)
    except _KeyError as e:
        raise ApiError(500, "InternalError", "Internal error occurred: failed to create typed "
                       "live object (%s): %s" % (gvk, e))
    if not scoped:
        ms.m.pop(key, None)
    changed_obj = not _same(_strip_meta(live_obj), _strip_meta(merged))
    if key in ms.m and (changed_obj or last is None or last["set"] != scoped or
                        not ms.m[key]["time"]):
        ms.m[key]["time"] = now
    merged.setdefault("metadata", {})
    _sync_last_applied(manager, merged, config)
    return merged, ms.encode()


LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration"


def _sync_last_applied(manager, obj, config):
    """kubectl's server-side apply keeps an existing client-side apply annotation in step
    with what it applies (the server's lastAppliedUpdater); other managers do not."""
    ann = (obj.get("metadata") or {}).get("annotations")
    if manager != "kubectl" or not isinstance(ann, dict) or LAST_APPLIED not in ann:
        return
    cfg = util.clone(config)
    cann = (cfg.get("metadata") or {}).get("annotations")
    if isinstance(cann, dict):
        cann.pop(LAST_APPLIED, None)
    text = json.dumps(cfg, separators=(",", ":"), sort_keys=True, ensure_ascii=False)
    text = text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")
    ann[LAST_APPLIED] = text + "\n"


def _strip_meta(o):
    o = dict(o)
    m = dict(o.get("metadata") or {})
    m.pop("managedFields", None)
    o["metadata"] = m
    return o


def _prune(merged, ms, key, cfg_set, last_set, t):
    managed = set(cfg_set)
    for k, v in ms.m.items():
        if k != key:
            managed |= v["set"]
    merged_e = ensure_named(field_set(merged, t), t)
    last_e = ensure_named(last_set, t)
    managed_e = ensure_named(managed, t)
    pruned = remove_items(merged, last_e, t) or {}
    pruned_e = ensure_named(field_set(pruned, t), t)
    pruned = remove_items(merged, merged_e - (pruned_e | managed_e), t) or {}
    pruned_e = ensure_named(field_set(pruned, t), t)
    return remove_items(merged, (merged_e - pruned_e) & last_e, t) or {}
