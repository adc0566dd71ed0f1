"""Background controllers that a real control plane runs: garbage collector
(ownerReferences; background/foreground/orphan), namespace deletion, CRD
instance cleanup, the node "unschedulable" taint, and Kueue's finalizer
handling on ClusterQueues and ResourceFlavors (kubesim/kueue.py)."""
import queue
import threading
import time

from . import kinds
from . import kueue
from . import util
from .store import DELETED
from .util import ApiError

UNSCHED_TAINT = "node.kubernetes.io/unschedulable"


class Controllers:
    def __init__(self, store, log=None):
        self.store = store
        self.q = queue.Queue()
        self.log = log or (lambda m: None)
        self.stop = threading.Event()
        self.kueue_pending = False
        store.listeners.append(self.on_event)
        self.thread = threading.Thread(target=self.run, name="controllers", daemon=True)

    def start(self):
        self.thread.start()

    # Called under the store lock: only enqueue.
    def on_event(self, ev):
        m = ev.new.obj.get("metadata") or {}
        uid = m.get("uid")
        key = ev.rt.key
        if kueue.watches(ev.rt):
            self._kueue_wake()
        if ev.type == DELETED:
            if uid and uid in self.store.dependents:
                self.q.put(("owner_gone", uid))
            for ref in m.get("ownerReferences") or []:
                if ref.get("uid"):
                    self.q.put(("owner_wait", ref["uid"]))
            if ev.rt.namespaced:
                self.q.put(("ns", ev.ns))
            if not ev.rt.builtin and ev.rt.crd:
                self.q.put(("crd", ev.rt.crd))
            return
        if m.get("deletionTimestamp"):
            fins = m.get("finalizers") or []
            if "foregroundDeletion" in fins:
                self.q.put(("owner_wait", uid))
            if "orphan" in fins:
                self.q.put(("orphan", uid))
            if key == kinds.NS_KEY:
                self.q.put(("ns", m.get("name")))
            if key == kinds.CRD_KEY:
                self.q.put(("crd", m.get("name")))
        if m.get("ownerReferences"):
            self.q.put(("dependent", uid))
        if key == kinds.NODE_KEY:
            self.q.put(("node", m.get("name")))

    def _kueue_wake(self):
        # one queued pass covers any number of events (it looks at everything)
        if not self.kueue_pending:
            self.kueue_pending = True
            self.q.put(("kueue", None))

    def run(self):
        last_tick = 0.0
        while not self.stop.is_set():
            try:
                item = self.q.get(timeout=0.5)
            except queue.Empty:
                item = None
            try:
                if item is not None:
                    self.handle(item)
                if time.monotonic() - last_tick > 1.0:
                    last_tick = time.monotonic()
                    self.tick()
            except Exception as e:  # pragma: no cover - keep the loop alive
                self.log("controller error on %r: %r" % (item, e))

    def tick(self):
        st = self.store
        with st.lock:
            for (ns, name), e in list(st.data.get(kinds.NS_KEY, {}).items()):
                if e.obj["metadata"].get("deletionTimestamp"):
                    self.q.put(("ns", name))
            for (ns, name), e in list(st.data.get(kinds.CRD_KEY, {}).items()):
                if e.obj["metadata"].get("deletionTimestamp"):
                    self.q.put(("crd", name))
            for uid, deps in list(st.dependents.items()):
                if uid not in st.uid_index:
                    self.q.put(("owner_gone", uid))
            if any(kueue.watches(rt) for rt in st.types.values()):
                self._kueue_wake()

    def handle(self, item):
        kind, arg = item
        if kind == "owner_gone":
            self.owner_gone(arg)
        elif kind == "owner_wait":
            self.owner_wait(arg)
        elif kind == "orphan":
            self.orphan(arg)
        elif kind == "dependent":
            self.dependent(arg)
        elif kind == "ns":
            self.namespace(arg)
        elif kind == "crd":
            self.crd(arg)
        elif kind == "node":
            self.node(arg)
        elif kind == "kueue":
            self.kueue_pending = False
            kueue.reconcile(self.store, self._safe)

    # -- helpers --------------------------------------------------------------
    def _lookup(self, uid):
        st = self.store
        loc = st.uid_index.get(uid)
        if loc is None:
            return None, None
        key, ns, name = loc
        rt = st.types.get(key)
        if rt is None:
            return None, None
        e = st.get_entry(key, ns, name)
        if e is None or e.obj["metadata"].get("uid") != uid:
            return None, None
        return rt, e

    def _safe(self, fn, *a, **kw):
        try:
            return fn(*a, **kw)
        except ApiError as e:
            if e.code not in (404, 409):
                self.log("controller: %s" % e.message)
            return None

    def _drop_owner_ref(self, rt, e, owner_uid):
        obj = e.obj
        m = obj["metadata"]
        refs = [r for r in m.get("ownerReferences") or [] if r.get("uid") != owner_uid]
        body = {"metadata": {"ownerReferences": refs or None,
                             "resourceVersion": m["resourceVersion"]}}
        self._safe(self.store.patch, rt, m.get("namespace", ""), m["name"],
                   "application/merge-patch+json", body)

    def _remove_finalizer(self, rt, e, fin):
        m = e.obj["metadata"]
        fins = [f for f in m.get("finalizers") or [] if f != fin]
        body = {"metadata": {"finalizers": fins or None, "resourceVersion": m["resourceVersion"]}}
        self._safe(self.store.patch, rt, m.get("namespace", ""), m["name"],
                   "application/merge-patch+json", body)

    # -- garbage collector ------------------------------------------------------
    def owner_gone(self, owner_uid):
        st = self.store
        with st.lock:
            if owner_uid in st.uid_index:
                return
            for dep_uid in list(st.dependents.get(owner_uid, ())):
                rt, e = self._lookup(dep_uid)
                if e is None:
                    continue
                self._collect(rt, e)

    def _collect(self, rt, e):
        """Delete a dependent whose owners are all gone, else drop dangling refs."""
        st = self.store
        m = e.obj["metadata"]
        refs = m.get("ownerReferences") or []
        alive = [r for r in refs if self._owner_alive(r, m)]
        if not alive:
            if not m.get("deletionTimestamp"):
                self._safe(st.delete, rt, m.get("namespace", ""), m["name"],
                           {"propagationPolicy": "Background"})
        elif len(alive) != len(refs):
            dead = [r.get("uid") for r in refs if r not in alive]
            for du in dead:
                e2 = st.get_entry(rt.key, m.get("namespace", "") if rt.namespaced else "", m["name"])
                if e2 is not None:
                    self._drop_owner_ref(rt, e2, du)

    def _owner_alive(self, ref, dep_meta):
        st = self.store
        loc = st.uid_index.get(ref.get("uid"))
        if loc is None:
            return False
        key, ns, name = loc
        if ns and ns != dep_meta.get("namespace", ""):
            return False
        return True

    def dependent(self, uid):
        st = self.store
        with st.lock:
            rt, e = self._lookup(uid)
            if e is None:
                return
            refs = e.obj["metadata"].get("ownerReferences") or []
            if refs and not any(self._owner_alive(r, e.obj["metadata"]) for r in refs):
                self._collect(rt, e)
            # owners being deleted in the foreground must be woken
            for r in refs:
                ort, oe = self._lookup(r.get("uid"))
                if oe is not None and oe.obj["metadata"].get("deletionTimestamp"):
                    self.q.put(("owner_wait", r.get("uid")))

    def owner_wait(self, owner_uid):
        """Foreground deletion: delete dependents, drop the finalizer when none
        blocking remain."""
        st = self.store
        with st.lock:
            rt, e = self._lookup(owner_uid)
            if e is None:
                return
            m = e.obj["metadata"]
            if not m.get("deletionTimestamp") or "foregroundDeletion" not in (m.get("finalizers") or []):
                return
            for dep_uid in list(st.dependents.get(owner_uid, ())):
                drt, de = self._lookup(dep_uid)
                if de is not None and not de.obj["metadata"].get("deletionTimestamp"):
                    dm = de.obj["metadata"]
                    self._safe(st.delete, drt, dm.get("namespace", ""), dm["name"],
                               {"propagationPolicy": "Foreground"})
            for dep_uid in list(st.dependents.get(owner_uid, ())):
                drt, de = self._lookup(dep_uid)
                if de is None:
                    continue
                for r in de.obj["metadata"].get("ownerReferences") or []:
                    if r.get("uid") == owner_uid and r.get("blockOwnerDeletion"):
                        return  # still waiting; woken again when it goes
            e = st.get_entry(rt.key, m.get("namespace", "") if rt.namespaced else "", m["name"])
            if e is not None:
                self._remove_finalizer(rt, e, "foregroundDeletion")

    def orphan(self, owner_uid):
        st = self.store
        with st.lock:
            rt, e = self._lookup(owner_uid)
            if e is None:
                return
            m = e.obj["metadata"]
            if not m.get("deletionTimestamp") or "orphan" not in (m.get("finalizers") or []):
                return
            for dep_uid in list(st.dependents.get(owner_uid, ())):
                drt, de = self._lookup(dep_uid)
                if de is not None:
                    self._drop_owner_ref(drt, de, owner_uid)
            e = st.get_entry(rt.key, m.get("namespace", "") if rt.namespaced else "", m["name"])
            if e is not None:
                self._remove_finalizer(rt, e, "orphan")

    # -- namespaces ---------------------------------------------------------------
    def namespace(self, name):
        st = self.store
        with st.lock:
            e = st.get_entry(kinds.NS_KEY, "", name)
            if e is None or not e.obj["metadata"].get("deletionTimestamp"):
                return
            nsrt = st.types[kinds.NS_KEY]
            remaining = {}
            finalizers = {}
            for key, bucket in list(st.data.items()):
                rt = st.types.get(key)
                if rt is None or not rt.namespaced:
                    continue
                for (ns, n), de in list(bucket.items()):
                    if ns != name:
                        continue
                    dm = de.obj["metadata"]
                    if not dm.get("deletionTimestamp"):
                        self._safe(st.delete, rt, ns, n, {"propagationPolicy": "Background"})
                    de2 = st.get_entry(key, ns, n)
                    if de2 is not None:
                        remaining[rt.qualified()] = remaining.get(rt.qualified(), 0) + 1
                        for f in de2.obj["metadata"].get("finalizers") or []:
                            finalizers[f] = finalizers.get(f, 0) + 1
            e = st.get_entry(kinds.NS_KEY, "", name)
            if e is None:
                return
            obj = e.copy_obj()
            conds = obj.setdefault("status", {}).setdefault("conditions", [])
            kinds._set_cond(conds, "NamespaceDeletionDiscoveryFailure", "False",
                            "ResourcesDiscovered", "All resources successfully discovered")
            kinds._set_cond(conds, "NamespaceDeletionGroupVersionParsingFailure", "False",
                            "ParsedGroupVersions", "All legacy kube types successfully parsed")
            kinds._set_cond(conds, "NamespaceDeletionContentFailure", "False",
                            "ContentDeleted", "All content successfully deleted, may be waiting on finalization")
            if remaining:
                kinds._set_cond(conds, "NamespaceContentRemaining", "True", "SomeResourcesRemain",
                                "Some resources are remaining: " + ", ".join(
                                    "%s has %d resource instances" % (k, v)
                                    for k, v in sorted(remaining.items())))
            else:
                kinds._set_cond(conds, "NamespaceContentRemaining", "False", "ContentRemoved",
                                "All content successfully removed")
            if finalizers:
                kinds._set_cond(conds, "NamespaceFinalizersRemaining", "True", "SomeFinalizersRemain",
                                "Some content in the namespace has finalizers remaining: " + ", ".join(
                                    "%s in %d resource instances" % (k, v)
                                    for k, v in sorted(finalizers.items())))
            else:
                kinds._set_cond(conds, "NamespaceFinalizersRemaining", "False", "ContentHasNoFinalizers",
                                "All content-preserving finalizers have been removed")
            obj["metadata"].pop("resourceVersion", None)
            self._safe(st.update, nsrt, "", name, obj, "status")
            if not remaining:
                e = st.get_entry(kinds.NS_KEY, "", name)
                if e is None:
                    return
                obj = e.copy_obj()
                obj.setdefault("spec", {})["finalizers"] = [
                    f for f in obj["spec"].get("finalizers") or [] if f != "kubernetes"]
                self._safe(st.update, nsrt, "", name, obj, "finalize")

    # -- CRDs -------------------------------------------------------------------------
    def crd(self, crd_name):
        st = self.store
        with st.lock:
            e = st.get_entry(kinds.CRD_KEY, "", crd_name)
            if e is None or not e.obj["metadata"].get("deletionTimestamp"):
                return
            spec = e.obj.get("spec") or {}
            key = (spec.get("group"), (spec.get("names") or {}).get("plural"))
            rt = st.types.get(key)
            left = 0
            if rt is not None:
                for (ns, n), ce in list(st.data.get(key, {}).items()):
                    if not ce.obj["metadata"].get("deletionTimestamp"):
                        self._safe(st.delete, rt, ns, n, {"propagationPolicy": "Background"})
                    if st.get_entry(key, ns, n) is not None:
                        left += 1
            if left == 0:
                e = st.get_entry(kinds.CRD_KEY, "", crd_name)
                if e is not None:
                    self._remove_finalizer(st.types[kinds.CRD_KEY], e, kinds.CRD_FINALIZER)

    # -- nodes --------------------------------------------------------------------------
    def node(self, name):
        st = self.store
        with st.lock:
            e = st.get_entry(kinds.NODE_KEY, "", name)
            if e is None or e.obj["metadata"].get("deletionTimestamp"):
                return
            spec = e.obj.get("spec") or {}
            taints = spec.get("taints") or []
            has = any(t.get("key") == UNSCHED_TAINT and t.get("effect") == "NoSchedule" for t in taints)
            want = bool(spec.get("unschedulable"))
            if has == want:
                return
            if want:
                taints = taints + [{"key": UNSCHED_TAINT, "effect": "NoSchedule",
                                    "timeAdded": util.now_rfc3339()}]
            else:
                taints = [t for t in taints if not (t.get("key") == UNSCHED_TAINT and
                                                    t.get("effect") == "NoSchedule")]
            body = {"spec": {"taints": taints or None},
                    "metadata": {"resourceVersion": e.obj["metadata"]["resourceVersion"]}}
            self._safe(st.patch, st.types[kinds.NODE_KEY], "", name,
                       "application/merge-patch+json", body)
