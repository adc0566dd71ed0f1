"""Object storage, resourceVersions, the watch-event log, and the generic
create/update/patch/delete/list semantics of the API server."""
import base64
import bisect
import collections
import json
import time
import threading

from . import celrules
from . import kinds
from . import patch as patchmod
from . import ssa
from . import util
from .util import ApiError

ADDED, MODIFIED, DELETED = "ADDED", "MODIFIED", "DELETED"

try:  # written by another engineer; optional at runtime
    from . import schema as _schema
except ImportError:  # pragma: no cover
    _schema = None
from . import kueue as _kueue


class Entry:
    """One stored object version. obj must never be mutated once stored."""
    __slots__ = ("obj", "_full", "_item")

    def __init__(self, obj):
        self.obj = obj
        self._full = {}
        self._item = {}

    @property
    def rv(self):
        return self.obj["metadata"]["resourceVersion"]

    def _versioned(self, api_version):
        o = self.obj
        if api_version and o.get("apiVersion") != api_version:
            o = {"kind": o.get("kind"), "apiVersion": api_version}
            for k, v in self.obj.items():
                if k not in o:
                    o[k] = v
        return o

    def full_bytes(self, api_version=None):
        b = self._full.get(api_version)
        if b is None:
            b = util.dumpb(self._versioned(api_version))
            self._full[api_version] = b
        return b

    def item_bytes(self, api_version, builtin):
        if not builtin:
            return self.full_bytes(api_version)
        b = self._item.get(api_version)
        if b is None:
            full = self.full_bytes(api_version)
            o = self.obj
            prefix = ('{"kind":%s,"apiVersion":%s,' % (util.dumps(o.get("kind")),
                                                       util.dumps(api_version or o.get("apiVersion")))).encode()
            if full.startswith(prefix):
                b = b"{" + full[len(prefix):]
            else:
                b = util.dumpb({k: v for k, v in o.items() if k not in ("kind", "apiVersion")})
            self._item[api_version] = b
        return b

    def copy_obj(self):
        return json.loads(self.full_bytes())


class Event:
    __slots__ = ("type", "rv", "rt", "ns", "name", "new", "old", "_bytes")

    def __init__(self, etype, rv, rt, ns, name, new, old):
        self.type = etype
        self.rv = rv
        self.rt = rt
        self.ns = ns
        self.name = name
        self.new = new
        self.old = old
        self._bytes = {}

    def encoded(self, api_version=None, etype=None):
        t = etype or self.type
        k = (api_version, t)
        b = self._bytes.get(k)
        if b is None:
            b = b'{"type":"' + t.encode() + b'","object":' + self.new.full_bytes(api_version) + b"}\n"
            self._bytes[k] = b
        return b


def _content(obj, drop_status):
    return {k: v for k, v in obj.items()
            if k not in ("metadata", "kind", "apiVersion") and not (drop_status and k == "status")}


def _cmp_meta(m):
    return {k: v for k, v in m.items() if k not in ("resourceVersion", "managedFields")}


class Store:
    def __init__(self, window=1000):
        self.lock = threading.RLock()
        self.rv = 0
        self.types = {}          # (group, plural) -> ResourceType
        self.data = {}           # (group, plural) -> {(ns, name): Entry}
        self._sorted = {}        # (group, plural) -> sorted list of (ns, name)
        self._views = {}         # (group, plural) -> (rv, seen up to rv, {key: Entry at rv})
        self.events = collections.deque(maxlen=max(1, window))
        self.floor = 0           # all events with rv > floor are in self.events
        self.cleared = 0         # rv of the last compaction
        self.type_floor = {}     # (group, plural) -> rv of its newest event the window dropped
        self.type_rv = {}        # (group, plural) -> rv of its newest event
        self.watch_conds = {}    # (group, plural) -> Condition (on self.lock) its watchers wait on
        self.history = None      # (unix time, Event) of every commit, apart from the watch
        self.history_floor = 0   # cache and its compaction (--history-events); rv > floor kept
        self.uid_index = {}      # uid -> (key, ns, name)
        self.dependents = {}     # owner uid -> set of dependent uids
        self.listeners = []      # callables(event) run under the lock
        self.watch_epoch = 0     # bumped to close every watch
        self.type_listeners = []  # callables() when the set of types changes
        self.crd_hook = None     # set by server: crd lifecycle (register types)
        self.logger = None

    # -- types ------------------------------------------------------------
    def add_type(self, rt):
        with self.lock:
            self.types[rt.key] = rt
            self.data.setdefault(rt.key, {})
        for cb in self.type_listeners:
            cb()

    def remove_type(self, key):
        with self.lock:
            self.types.pop(key, None)
            for ek, e in list(self.data.get(key, {}).items()):
                self._unindex(key, e)
            self.data.pop(key, None)
            self._sorted.pop(key, None)
            self._views.pop(key, None)
        for cb in self.type_listeners:
            cb()

    def type_by_kind(self, api_version, kind):
        g, _, v = api_version.rpartition("/")
        for rt in self.types.values():
            if rt.group == g and rt.kind == kind and v in rt.versions:
                return rt
        return None

    # -- low level ------------------------------------------------------------
    def get_entry(self, key, ns, name):
        return self.data.get(key, {}).get((ns or "", name))

    def _index(self, key, entry):
        m = entry.obj["metadata"]
        uid = m.get("uid")
        if uid:
            self.uid_index[uid] = (key, m.get("namespace", ""), m["name"])
            for ref in m.get("ownerReferences") or []:
                ou = ref.get("uid")
                if ou:
                    self.dependents.setdefault(ou, set()).add(uid)

    def _unindex(self, key, entry):
        m = entry.obj["metadata"]
        uid = m.get("uid")
        if uid:
            if self.uid_index.get(uid, (None,))[0] == key:
                self.uid_index.pop(uid, None)
            for ref in m.get("ownerReferences") or []:
                s = self.dependents.get(ref.get("uid"))
                if s is not None:
                    s.discard(uid)
                    if not s:
                        self.dependents.pop(ref.get("uid"), None)

    def commit(self, rt, etype, obj, old_entry):
        """Store obj (already fully prepared) with a new resourceVersion."""
        self.rv += 1
        m = obj["metadata"]
        m["resourceVersion"] = str(self.rv)
        ns = m.get("namespace", "") if rt.namespaced else ""
        name = m["name"]
        # kind and apiVersion first: list items are the same bytes minus that prefix.
        ordered = {"kind": rt.kind, "apiVersion": obj.get("apiVersion") or rt.api_version()}
        for k, v in obj.items():
            if k not in ordered:
                ordered[k] = v
        obj = ordered
        entry = Entry(obj)
        entry.item_bytes(None, rt.builtin)
        bucket = self.data.setdefault(rt.key, {})
        if old_entry is not None:
            self._unindex(rt.key, old_entry)
        # The sorted key list of a resource is kept up to date (a bisect, not a sort of every
        # key on the next list).
        if etype == DELETED:
            if bucket.pop((ns, name), None) is not None:
                self._sort_remove(rt.key, (ns, name))
        else:
            if (ns, name) not in bucket:
                self._sort_insert(rt.key, (ns, name))
            bucket[(ns, name)] = entry
            self._index(rt.key, entry)
        ev = Event(etype, self.rv, rt, ns, name, entry, old_entry)
        if len(self.events) == self.events.maxlen:
            dropped = self.events[0]
            self.floor = dropped.rv
            self.type_floor[dropped.rt.key] = dropped.rv
        self.events.append(ev)
        self.type_rv[rt.key] = self.rv
        if self.history is not None:
            if len(self.history) == self.history.maxlen:
                self.history_floor = self.history[0][1].rv
            self.history.append((time.time(), ev))
        woken = self.watch_conds.get(rt.key)
        if woken is not None:
            woken.notify_all()
        for cb in self.listeners:
            try:
                cb(ev)
            except Exception as e:  # pragma: no cover
                if self.logger:
                    self.logger("listener error: %r" % e)
        return entry

    def keep_history(self, n):
        """Keep the last n committed events for /sim/history (n <= 0: none)."""
        with self.lock:
            self.history = collections.deque(maxlen=n) if n > 0 else None
            self.history_floor = self.rv

    def compact(self):
        with self.lock:
            self.events.clear()
            self._views.clear()
            self.floor = self.cleared = self.rv
            self._wake_watches()

    def close_watches(self):
        with self.lock:
            self.watch_epoch += 1
            self._wake_watches()

    def _wake_watches(self):
        for c in self.watch_conds.values():
            c.notify_all()

    # -- the watch cache, per resource as in the API server --------------------
    def watch_cond(self, key):
        """The condition a watch of resource `key` waits on (call under the lock)."""
        c = self.watch_conds.get(key)
        if c is None:
            c = self.watch_conds[key] = threading.Condition(self.lock)
        return c

    def last_rv(self, key):
        """resourceVersion of the newest event of resource `key` (0: none kept)."""
        return self.type_rv.get(key, 0)

    def watch_floor(self, key):
        """Every event of resource `key` newer than this is still in self.events: a watch from
        an older resourceVersion is 410 Gone.  Per resource, like the API server's watch cache:
        a storm of Node writes does not expire a watch of Cohorts."""
        return max(self.cleared, self.type_floor.get(key, 0))

    def sorted_keys(self, key):
        """The (ns, name) keys of a resource in order: read it under the lock, never change it."""
        s = self._sorted.get(key)
        if s is None:
            s = sorted(self.data.get(key, {}).keys())
            self._sorted[key] = s
        return s

    def _sort_insert(self, key, k):
        s = self._sorted.get(key)
        if s is not None:
            bisect.insort(s, k)

    def _sort_remove(self, key, k):
        s = self._sorted.get(key)
        if s is not None:
            i = bisect.bisect_left(s, k)
            if i < len(s) and s[i] == k:
                del s[i]

    # -- create ---------------------------------------------------------------
    def create(self, rt, ns, obj, opts=None, seeding=False):
        opts = opts or {}
        if not isinstance(obj, dict):
            raise util.bad_request("the body of the request was in an unknown format")
        with self.lock:
            obj = self._prepare_create(rt, ns, obj, opts, seeding)
            if opts.get("dry_run"):
                obj["metadata"].setdefault("resourceVersion", "")
                return obj
            entry = self.commit(rt, ADDED, obj, None)
            if self.crd_hook and rt.key == kinds.CRD_KEY:
                self.crd_hook(entry.obj, None)
            return entry.obj

    def _prepare_create(self, rt, ns, obj, opts, seeding):
        meta = obj.get("metadata")
        if meta is None:
            meta = obj["metadata"] = {}
        if not isinstance(meta, dict):
            raise util.bad_request("metadata must be an object")
        self._check_type_header(rt, obj, opts.get("version"))
        obj["apiVersion"] = rt.api_version()
        obj["kind"] = rt.kind
        if rt.namespaced:
            bns = meta.get("namespace")
            if bns and ns and bns != ns:
                raise util.bad_request("the namespace of the provided object does not match "
                                       "the namespace sent on the request")
            meta["namespace"] = ns or bns or "default"
            ns = meta["namespace"]
        else:
            if meta.get("namespace"):
                meta.pop("namespace")
            ns = ""
        name = meta.get("name")
        if not name and meta.get("generateName"):
            base = meta["generateName"][:58]
            for _ in range(10):
                cand = base + "".join(__import__("random").choice("bcdfghjklmnpqrstvwxz2456789")
                                      for _ in range(5))
                if self.get_entry(rt.key, ns, cand) is None:
                    break
            name = meta["name"] = cand
        causes = kinds.validate_meta(rt, obj, create=True)
        if causes:
            raise util.invalid(rt.kind, rt.group, name or "", causes)
        # namespace lifecycle
        if rt.namespaced:
            nse = self.get_entry(kinds.NS_KEY, "", ns)
            if nse is None:
                raise util.not_found("namespaces", "", ns)
            if nse.obj["metadata"].get("deletionTimestamp"):
                raise util.forbidden(
                    rt.plural, rt.group, name,
                    "unable to create new content in namespace %s because it is being terminated" % ns,
                    [util.cause("NamespaceTerminating", "namespace %s is being terminated" % ns,
                                "metadata.namespace")])
        if self.get_entry(rt.key, ns, name) is not None:
            raise util.already_exists(rt.plural, rt.group, name)
        seed_uid, seed_ts = meta.get("uid"), meta.get("creationTimestamp")
        req_managed = meta.get("managedFields")
        for k in ("deletionTimestamp", "deletionGracePeriodSeconds", "resourceVersion",
                  "selfLink", "managedFields"):
            meta.pop(k, None)
        # Seeds keep their uid/creationTimestamp so fixture ownerReferences line up.
        meta["uid"] = (seeding and seed_uid) or util.new_uid()
        meta["creationTimestamp"] = (seeding and seed_ts) or util.now_rfc3339()
        if rt.generation:
            meta["generation"] = 1
        else:
            meta.pop("generation", None)
        kinds.prepare_create(rt, obj, seeding)
        if rt.status and not seeding and not kinds.keeps_status_on_create(rt):
            obj.pop("status", None)
            kinds.default_status(rt, obj)
        _kueue.admit_decode(rt, obj, create=True)
        obj = self._schema_check(rt, obj, opts, create=True)
        causes = kinds.validate(rt, obj, None, self)
        if causes:
            raise util.invalid(rt.kind, rt.group, name, causes)
        # Field ownership: a seed keeps what it says (a snapshot); an apply that creates
        # brings its Apply entry; any other create is an Update by its manager.
        if seeding:
            managed = req_managed if isinstance(req_managed, list) else None
        elif opts.get("_managed") is not None:
            managed = opts["_managed"]
        else:
            managed = ssa.record_update(rt, None, obj, opts.get("manager"), opts.get("version"),
                                        None, req_managed)
        if managed:
            obj["metadata"]["managedFields"] = managed
        _kueue.admit(rt, obj, None, opts.get("version"))
        if self.crd_hook and rt.key == kinds.CRD_KEY:
            kinds.crd_status(obj, self)
        return obj

    def _check_type_header(self, rt, obj, version):
        av = obj.get("apiVersion")
        k = obj.get("kind")
        want = rt.api_version(version) if version else None
        if av and want and av not in [rt.api_version(v) for v in rt.versions]:
            raise util.bad_request("the API version in the data (%s) does not match the expected "
                                   "API version (%s)" % (av, want))
        if k and k != rt.kind:
            raise util.bad_request("%s in version \"%s\" cannot be handled as a %s: the kind "
                                   "\"%s\" does not match the expected kind \"%s\""
                                   % (rt.kind, version or rt.version, rt.kind, k, rt.kind))

    def _schema_check(self, rt, obj, opts, create, old=None):
        if rt.builtin or _schema is None:
            return obj
        version = opts.get("version") or rt.version
        sch = rt.schemas.get(version) or rt.schemas.get(rt.version)
        if not sch:
            return obj
        fv = opts.get("field_validation") or None
        if fv not in (None, "Strict", "Warn", "Ignore"):
            raise util.bad_request('fieldValidation: Unsupported value: "%s": supported values: '
                                   '"Ignore", "Strict", "Warn"' % fv)
        meta = obj.get("metadata")
        res = _schema.validate(sch, obj, fv)
        pruned, causes, warnings = res[0], res[1], res[2]
        cel_causes, cel_warnings = celrules.validate(
            (getattr(rt, "cel_trees", None) or {}).get(version if version in rt.schemas
                                                      else rt.version), pruned, old, causes)
        causes = list(causes) + cel_causes
        warnings = list(warnings) + cel_warnings
        strict = res[3] if len(res) > 3 else []
        if strict:
            fn = getattr(_schema, "strict_decoding_message", None)
            msg = fn(rt.kind, version, strict) if fn else (
                '%s in version "%s" cannot be handled as a %s: strict decoding error: %s'
                % (rt.kind, version, rt.kind, ", ".join(strict)))
            raise ApiError(400, "BadRequest", msg)
        if isinstance(pruned, dict):
            if isinstance(pruned.get("metadata"), dict):
                meta = pruned["metadata"]
            pruned["metadata"] = meta
            pruned["apiVersion"] = obj["apiVersion"]
            pruned["kind"] = obj["kind"]
            obj = pruned
        if warnings:
            opts.setdefault("warnings", []).extend(warnings)
        if causes:
            raise util.invalid(rt.kind, rt.group, (meta or {}).get("name", ""), causes)
        return obj

    # -- update -------------------------------------------------------------
    def update(self, rt, ns, name, obj, sub=None, opts=None):
        opts = opts or {}
        if not isinstance(obj, dict) or not isinstance(obj.get("metadata", {}), dict):
            raise util.bad_request("the body of the request was in an unknown format")
        with self.lock:
            cur = self.get_entry(rt.key, ns if rt.namespaced else "", name)
            if cur is None:
                if rt.create_on_update and not sub:
                    meta = obj.setdefault("metadata", {})
                    meta.setdefault("name", name)
                    return self.create(rt, ns, obj, opts), True
                raise util.not_found(rt.plural, rt.group, name)
            rv = (obj.get("metadata") or {}).get("resourceVersion")
            if rv:
                if rv != cur.rv:
                    raise util.conflict(rt.plural, rt.group, name)
            elif not rt.unconditional_update:
                raise util.invalid(rt.kind, rt.group, name, [util.field_invalid(
                    "metadata.resourceVersion", 0, "must be specified for an update")],
                    qualifier=rt.qualified())
            return self._update_locked(rt, ns, name, obj, sub, cur, opts), False

    def patch(self, rt, ns, name, content_type, body, sub=None, opts=None):
        opts = opts or {}
        ct = (content_type or "").split(";")[0].strip().lower()
        if ct == "application/strategic-merge-patch+json" and not rt.builtin:
            raise ApiError(415, "UnsupportedMediaType",
                           "the body of the request was in an unknown format - accepted media types "
                           "include: application/json-patch+json, application/merge-patch+json, "
                           "application/apply-patch+yaml")
        applying = ct == "application/apply-patch+yaml"
        if applying and not opts.get("field_manager"):
            raise util.invalid("PatchOptions", "meta.k8s.io", "", [util.field_required(
                "fieldManager", "is required for apply patch")])
        with self.lock:
            cur = self.get_entry(rt.key, ns if rt.namespaced else "", name)
            if cur is None:
                if applying and not sub:
                    new, managed = ssa.apply(rt, None, body, opts["field_manager"],
                                             opts.get("force"), opts.get("version"), None)
                    new.setdefault("metadata", {}).setdefault("name", name)
                    opts["_managed"] = managed
                    return self.create(rt, ns, new, opts), True
                raise util.not_found(rt.plural, rt.group, name)
            base = cur.copy_obj()
            if opts.get("version"):
                base["apiVersion"] = rt.api_version(opts["version"])
            if applying:
                new, opts["_managed"] = ssa.apply(rt, base, body, opts["field_manager"],
                                                  opts.get("force"), opts.get("version"), sub)
                if not isinstance(new.get("metadata"), dict):
                    raise util.bad_request("the patched object is not a valid object")
                rv = new["metadata"].get("resourceVersion")
                if rv and rv != cur.rv:
                    raise util.conflict(rt.plural, rt.group, name)
                return self._update_locked(rt, ns, name, new, sub, cur, opts), False
            try:
                new = patchmod.apply_patch(ct, base, body, rt.builtin)
            except patchmod.PatchError as e:
                if e.bad_request:
                    raise util.bad_request(str(e))
                raise ApiError(422, "Invalid",
                               "the server rejected our request due to an error in our request",
                               {"causes": [{"reason": "FieldValueInvalid", "message": str(e),
                                            "field": "patch"}]})
            if not isinstance(new, dict) or not isinstance(new.get("metadata"), dict):
                raise util.bad_request("the patched object is not a valid object")
            rv = new["metadata"].get("resourceVersion")
            if rv and rv != cur.rv:
                raise util.conflict(rt.plural, rt.group, name)
            return self._update_locked(rt, ns, name, new, sub, cur, opts), False

    def _update_locked(self, rt, ns, name, new, sub, cur, opts):
        old = cur.obj
        ometa = old["metadata"]
        meta = new.setdefault("metadata", {})
        if meta.get("name") and meta["name"] != name:
            raise util.bad_request("the name of the object (%s) does not match the name on the URL (%s)"
                                   % (meta["name"], name))
        if rt.namespaced and meta.get("namespace") and meta["namespace"] != ns:
            raise util.bad_request("the namespace of the provided object does not match the "
                                   "namespace sent on the request")
        self._check_type_header(rt, new, opts.get("version"))
        if meta.get("uid") and meta["uid"] != ometa.get("uid"):
            raise util.conflict(rt.plural, rt.group, name,
                                "Precondition failed: UID in precondition: %s, UID in object meta: %s"
                                % (meta["uid"], ometa.get("uid")))
        req_managed = None
        if sub == "status":
            result = util.clone(old)
            if "status" in new:
                result["status"] = new["status"]
            else:
                result.pop("status", None)
        elif sub == "finalize":
            result = util.clone(old)
            result.setdefault("spec", {})["finalizers"] = (new.get("spec") or {}).get("finalizers") or []
            if not result["spec"]["finalizers"]:
                result["spec"].pop("finalizers")
        else:
            result = new
            rmeta = result["metadata"]
            for k in ("uid", "creationTimestamp", "deletionTimestamp", "deletionGracePeriodSeconds",
                      "generation"):
                if k in ometa:
                    rmeta[k] = ometa[k]
                else:
                    rmeta.pop(k, None)
            rmeta["name"] = name
            if rt.namespaced:
                rmeta["namespace"] = ometa.get("namespace")
            else:
                rmeta.pop("namespace", None)
            req_managed = rmeta.pop("managedFields", None)
            rmeta.pop("selfLink", None)
            if rt.status:
                if "status" in old:
                    result["status"] = old["status"]
                else:
                    result.pop("status", None)
            kinds.prepare_update(rt, result, old)
        result["apiVersion"] = rt.api_version()
        result["kind"] = rt.kind
        causes = kinds.validate_meta(rt, result, create=False)
        if ometa.get("deletionTimestamp"):
            newf = [f for f in (result["metadata"].get("finalizers") or [])
                    if f not in (ometa.get("finalizers") or [])]
            if newf:
                causes.append(util.field_forbidden(
                    "metadata.finalizers",
                    "no new finalizers can be added if the object is being deleted, found new "
                    "finalizers []string{%s}" % ", ".join(json.dumps(f) for f in newf)))
        if causes:
            raise util.invalid(rt.kind, rt.group, name, causes)
        result = self._schema_check(rt, result, opts, create=False, old=old)
        causes = kinds.validate(rt, result, old, self)
        if causes:
            raise util.invalid(rt.kind, rt.group, name, causes)
        if opts.get("_managed") is not None:
            managed = opts["_managed"]
        else:
            managed = ssa.record_update(rt, old, result, opts.get("manager"), opts.get("version"),
                                        sub, req_managed)
        if managed:
            result["metadata"]["managedFields"] = managed
        else:
            result["metadata"].pop("managedFields", None)
        _kueue.admit(rt, result, old, opts.get("version"), sub)
        if rt.key == kinds.CRD_KEY and self.crd_hook:
            kinds.crd_status(result, self)
        if rt.generation and sub is None:
            if _content(result, rt.status) != _content(old, rt.status):
                result["metadata"]["generation"] = int(ometa.get("generation") or 0) + 1
        # no-op?
        if _cmp_meta(result["metadata"]) == _cmp_meta(ometa) and \
                result["metadata"].get("managedFields") == ometa.get("managedFields") and \
                _content(result, False) == _content(old, False):
            return old
        if opts.get("dry_run"):
            result["metadata"]["resourceVersion"] = cur.rv
            return result
        if ometa.get("deletionTimestamp") and not result["metadata"].get("finalizers") and \
                not kinds.has_blocker(rt, result):
            entry = self.commit(rt, DELETED, result, cur)
            self._after_delete(rt, entry.obj)
            return entry.obj
        entry = self.commit(rt, MODIFIED, result, cur)
        if self.crd_hook and rt.key == kinds.CRD_KEY:
            self.crd_hook(entry.obj, old)
        return entry.obj

    # -- delete ---------------------------------------------------------------
    def delete(self, rt, ns, name, opts=None):
        """Returns (object_dict, deleted_now: bool)."""
        opts = opts or {}
        with self.lock:
            cur = self.get_entry(rt.key, ns if rt.namespaced else "", name)
            if cur is None:
                raise util.not_found(rt.plural, rt.group, name)
            meta = cur.obj["metadata"]
            pre = opts.get("preconditions") or {}
            if pre.get("uid") and pre["uid"] != meta.get("uid"):
                raise util.conflict(rt.plural, rt.group, name, _precond_msg(
                    rt, ns, name, "UID in precondition: %s, UID in object meta: %s"
                    % (pre["uid"], meta.get("uid"))))
            if pre.get("resourceVersion") and pre["resourceVersion"] != meta.get("resourceVersion"):
                raise util.conflict(rt.plural, rt.group, name, _precond_msg(
                    rt, ns, name, "ResourceVersion in precondition: %s, ResourceVersion in object "
                    "meta: %s" % (pre["resourceVersion"], meta.get("resourceVersion"))))
            kinds.check_delete(rt, cur.obj)
            policy = opts.get("propagationPolicy")
            if not policy:
                od = opts.get("orphanDependents")
                if od is True:
                    policy = "Orphan"
                elif od is False:
                    policy = "Background"
                else:
                    policy = rt.default_propagation
            if policy not in ("Orphan", "Foreground", "Background"):
                raise util.invalid("DeleteOptions", "meta.k8s.io", "", [util.cause(
                    "FieldValueNotSupported",
                    'Unsupported value: "%s": supported values: "Foreground", "Background", "Orphan"'
                    % policy, "propagationPolicy")])
            obj = cur.copy_obj()
            m = obj["metadata"]
            fins = list(m.get("finalizers") or [])
            if policy == "Orphan" and "orphan" not in fins:
                fins.append("orphan")
            if policy == "Foreground" and "foregroundDeletion" not in fins:
                fins.append("foregroundDeletion")
            if rt.key == kinds.CRD_KEY and "customresourcecleanup.apiextensions.k8s.io" not in fins:
                fins.append("customresourcecleanup.apiextensions.k8s.io")
            if meta.get("deletionTimestamp"):
                if fins != (meta.get("finalizers") or []) and not opts.get("dry_run"):
                    m["finalizers"] = fins
                    return self.commit(rt, MODIFIED, obj, cur).obj, False
                return cur.obj, False
            if fins or kinds.has_blocker(rt, obj):
                m["finalizers"] = fins
                if not fins:
                    m.pop("finalizers")
                m["deletionTimestamp"] = util.now_rfc3339()
                m["deletionGracePeriodSeconds"] = 0
                if rt.generation and m.get("generation"):
                    m["generation"] = int(m["generation"]) + 1
                kinds.prepare_delete(rt, obj)
                if opts.get("dry_run"):
                    return obj, False
                return self.commit(rt, MODIFIED, obj, cur).obj, False
            if opts.get("dry_run"):
                return obj, True
            entry = self.commit(rt, DELETED, obj, cur)
            self._after_delete(rt, entry.obj)
            return entry.obj, True

    def _after_delete(self, rt, obj):
        if rt.key == kinds.CRD_KEY and self.crd_hook:
            self.crd_hook(None, obj)

    # -- read -----------------------------------------------------------------
    def get(self, rt, ns, name):
        with self.lock:
            e = self.get_entry(rt.key, ns if rt.namespaced else "", name)
            if e is None:
                raise util.not_found(rt.plural, rt.group, name)
            return e

    def list(self, rt, ns, lsel=None, fsel=None, limit=0, cont=None, rv=None, rv_match=None,
             match_fn=None):
        """Returns (list_rv:int, entries, continue_token, remaining_count_or_None)."""
        with self.lock:
            key = rt.key
            start = None
            list_rv = self.rv
            if cont:
                try:
                    tok = json.loads(base64.urlsafe_b64decode(cont + "=" * (-len(cont) % 4)))
                    list_rv = int(tok["rv"])
                    start = tuple(tok["start"])
                except Exception:
                    raise util.bad_request("invalid continue token: %s" % cont)
                if list_rv < self.floor:
                    raise ApiError(410, "Expired",
                                   "The provided continue parameter is too old to display a "
                                   "consistent list result. You can start a new list without the "
                                   "continue parameter, or use the continue token in this response "
                                   "to retrieve the remainder of the results. Continuing with the "
                                   "provided token results in an inconsistent list - objects that "
                                   "were created, modified, or deleted between the time the first "
                                   "chunk was returned and now may show up in the list.")
                bucket, keys = self._view(key, list_rv)
            elif rv not in (None, "", "0") and rv_match == "Exact":
                r = int(rv)
                if r > self.rv:
                    raise _too_large(r, self.rv)
                if r < self.floor:
                    raise ApiError(410, "Expired", "The resourceVersion for the provided list is too old.")
                bucket, keys = self._view(key, r)
                list_rv = r
            else:
                if rv not in (None, "", "0"):
                    r = int(rv)
                    if r > self.rv:
                        raise _too_large(r, self.rv)
                bucket = self.data.get(key, {})
                keys = self.sorted_keys(key)
            if rt.namespaced and ns:
                lo = bisect.bisect_left(keys, (ns, ""))
                hi = bisect.bisect_left(keys, (ns + "\x00", ""))
            else:
                lo, hi = 0, len(keys)
            if start is not None:
                lo = max(lo, bisect.bisect_right(keys, start))
            out = []
            selecting = bool((lsel and not lsel.empty()) or (fsel and not fsel.empty()) or match_fn)
            i = lo
            token = None
            remaining = None
            while i < hi:
                k = keys[i]
                e = bucket.get(k)
                i += 1
                if e is None:
                    continue
                if selecting and not _matches(rt, e.obj, lsel, fsel, match_fn):
                    continue
                out.append(e)
                if limit and len(out) >= limit:
                    break
            if limit and len(out) >= limit and i < hi:
                # Are there more matching items?
                more = False
                if selecting:
                    for j in range(i, hi):
                        e = bucket.get(keys[j])
                        if e is not None and _matches(rt, e.obj, lsel, fsel, match_fn):
                            more = True
                            break
                else:
                    more = True
                    remaining = hi - i
                if more:
                    last = keys[i - 1]
                    token = base64.urlsafe_b64encode(util.dumpb(
                        {"rv": list_rv, "start": list(last)})).decode().rstrip("=")
            return list_rv, out, token, remaining

    def _view(self, key, r):
        """One resource as it was at resourceVersion r: (bucket, sorted keys), where bucket has
        .get((ns, name)) -> Entry or None.  The objects changed since r are found in the event
        log and the rest is the live bucket: no copy of every object, no sort of every key, so
        each page of a paged list costs its page and the changes since its first one (a paged
        relist of 50,000 Nodes during writes was a copy and a sort of all of them per page).
        The last view is kept and extended, since every page of one list asks for the same r."""
        live = self.data.get(key, {})
        if r == self.rv:
            return live, self.sorted_keys(key)
        cached = self._views.get(key)
        if cached is not None and cached[0] == r and cached[1] <= self.rv:
            over, upto = cached[2], cached[1]
        else:
            over, upto = {}, r
        if upto < self.rv:
            # Events after `upto`, oldest first: a key's first change after r holds its state
            # at r (None: it did not exist yet).
            newer = []
            for ev in reversed(self.events):
                if ev.rv <= upto:
                    break
                if ev.rt.key == key:
                    newer.append(ev)
            for ev in reversed(newer):
                k = (ev.ns, ev.name)
                if k not in over:
                    over[k] = None if ev.type == ADDED else ev.old
            self._views[key] = (r, self.rv, over)
        keys = self.sorted_keys(key)
        gone = [k for k, e in over.items() if e is not None and k not in live]
        if gone:  # deleted since r: back into the order, in a copy
            if len(gone) > 64:
                keys = sorted(keys + gone)
            else:
                keys = list(keys)
                for k in gone:
                    bisect.insort(keys, k)
        return _View(live, over), keys


class _View:
    """A resource's bucket at an older resourceVersion: `over` (changed since) before `live`."""
    __slots__ = ("live", "over")

    def __init__(self, live, over):
        self.live = live
        self.over = over

    def get(self, k):
        if k in self.over:
            return self.over[k]
        return self.live.get(k)


def _precond_msg(rt, ns, name, detail):
    key = "/%s/%s" % (rt.qualified() if rt.group else rt.plural,
                      (ns + "/" + name) if rt.namespaced else name)
    return ("StorageError: invalid object, Code: 4, Key: /registry%s, ResourceVersion: 0, "
            "AdditionalErrorMsg: Precondition failed: %s" % (key, detail))


def _too_large(r, cur):
    return ApiError(504, "Timeout", "Too large resource version: %d, current: %d" % (r, cur),
                    {"causes": [{"reason": "ResourceVersionTooLarge",
                                 "message": "Too large resource version"}],
                     "retryAfterSeconds": 1})


def field_values(rt, obj, fields):
    from .selectors import field_value
    vals = {}
    meta = obj.get("metadata") or {}
    for f in fields:
        if f == "metadata.name":
            vals[f] = meta.get("name", "")
        elif f == "metadata.namespace":
            vals[f] = meta.get("namespace", "")
        elif f == "spec.host":
            vals[f] = field_value(obj, "spec.nodeName")
        elif f == "spec.unschedulable":
            vals[f] = "true" if (obj.get("spec") or {}).get("unschedulable") else "false"
        elif f == "spec.hostNetwork":
            vals[f] = "true" if (obj.get("spec") or {}).get("hostNetwork") else "false"
        elif f == "source":
            vals[f] = ((obj.get("source") or {}).get("component") or "")
        else:
            vals[f] = field_value(obj, f)
    return vals


def _matches(rt, obj, lsel, fsel, match_fn=None):
    if lsel is not None and not lsel.empty():
        if not lsel.match((obj.get("metadata") or {}).get("labels")):
            return False
    if fsel is not None and not fsel.empty():
        if not fsel.match(field_values(rt, obj, fsel.fields())):
            return False
    if match_fn is not None and not match_fn(obj):
        return False
    return True


matches = _matches
