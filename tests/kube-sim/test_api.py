"""Raw HTTP tests of kube-sim semantics (no kubectl needed)."""
import json
import os
import shutil
import ssl
import subprocess
import sys
import tempfile
import time
import unittest

from simtest import KUBE_SIM, SimProcess, WatchStream, wait_for

CM = "/api/v1/namespaces/default/configmaps"


def cm(name, **meta):
    m = {"name": name}
    m.update(meta)
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": m, "data": {"k": "v"}}


class ApiTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="kube-sim-api-")
        tokens = {
            "agent-tok": {"username": "system:serviceaccount:tau-system:tau-agent", "uid": "u-1",
                          "extra": {"authentication.kubernetes.io/pod-name": ["agent-x"],
                                    "authentication.kubernetes.io/node-name": ["node-a"]},
                          "audiences": ["tau-aggregator", "https://kubernetes.default.svc"]},
        }
        cls.tokens_path = os.path.join(cls.tmp, "tokens.json")
        with open(cls.tokens_path, "w") as f:
            json.dump(tokens, f)
        cls.sim = SimProcess(["--tokens", cls.tokens_path, "--watch-cache-events", "50",
                              "--bookmark-interval", "0.3"])

    @classmethod
    def tearDownClass(cls):
        cls.sim.stop()
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def req(self, *a, **kw):
        return self.sim.req(*a, **kw)

    def ok(self, *a, **kw):
        return self.sim.ok(*a, **kw)

    # -- basics -----------------------------------------------------------------
    def test_create_get_list_metadata(self):
        o = self.ok("POST", CM, cm("basic"))
        m = o["metadata"]
        self.assertTrue(m["uid"])
        self.assertRegex(m["creationTimestamp"], r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$")
        self.assertIsInstance(m["resourceVersion"], str)
        st, lst = self.req("GET", CM)
        self.assertEqual(st, 200)
        self.assertEqual(lst["kind"], "ConfigMapList")
        item = [i for i in lst["items"] if i["metadata"]["name"] == "basic"][0]
        self.assertNotIn("kind", item)                # built-in list items carry no kind
        self.assertGreaterEqual(int(lst["metadata"]["resourceVersion"]), int(m["resourceVersion"]))
        st, err = self.req("POST", CM, cm("basic"))
        self.assertEqual((st, err["reason"]), (409, "AlreadyExists"))
        self.assertEqual(err["message"], 'configmaps "basic" already exists')
        st, err = self.req("GET", CM + "/nope")
        self.assertEqual((st, err["reason"], err["details"]["kind"]), (404, "NotFound", "configmaps"))
        st, err = self.req("POST", "/api/v1/namespaces/nosuchns/configmaps", cm("x"))
        self.assertEqual((st, err["message"]), (404, 'namespaces "nosuchns" not found'))
        st, err = self.req("POST", CM, cm("Bad_Name"))
        self.assertEqual(st, 422)
        self.assertEqual(err["details"]["causes"][0]["field"], "metadata.name")
        self.assertTrue(err["message"].startswith('ConfigMap "Bad_Name" is invalid: metadata.name: Invalid value: "Bad_Name"'))
        st, err = self.req("POST", "/api/v1/namespaces", {"metadata": {"name": "a.b"}})
        self.assertIn("a lowercase RFC 1123 label", err["message"])

    def test_conflict_and_unconditional_update(self):
        node = self.ok("POST", "/api/v1/nodes", {"metadata": {"name": "conf-node"}})
        node["metadata"]["labels"] = {"a": "1"}
        self.ok("PUT", "/api/v1/nodes/conf-node", node)
        node["metadata"]["labels"] = {"a": "2"}      # stale resourceVersion
        st, err = self.req("PUT", "/api/v1/nodes/conf-node", node)
        self.assertEqual(st, 409)
        self.assertEqual(err["message"], 'Operation cannot be fulfilled on nodes "conf-node": the object '
                         'has been modified; please apply your changes to the latest version and try again')
        # nodes allow unconditional update; leases do not
        del node["metadata"]["resourceVersion"]
        self.ok("PUT", "/api/v1/nodes/conf-node", node)
        lease = {"metadata": {"name": "l"}, "spec": {"holderIdentity": "a", "leaseDurationSeconds": 15}}
        self.assertEqual(self.req("PUT", "/apis/coordination.k8s.io/v1/namespaces/default/leases/l", lease)[0], 201)
        st, err = self.req("PUT", "/apis/coordination.k8s.io/v1/namespaces/default/leases/l", lease)
        self.assertEqual(st, 422)
        self.assertIn('leases.coordination.k8s.io "l" is invalid: metadata.resourceVersion: Invalid value: 0: '
                      'must be specified for an update', err["message"])
        # no-op update keeps the resourceVersion
        cur = self.ok("GET", "/api/v1/nodes/conf-node")
        again = self.ok("PUT", "/api/v1/nodes/conf-node", cur)
        self.assertEqual(cur["metadata"]["resourceVersion"], again["metadata"]["resourceVersion"])

    def test_status_subresource_and_generation(self):
        base = "/apis/apps/v1/namespaces/default/deployments"
        d = {"metadata": {"name": "gen"}, "spec": {"replicas": 1, "selector": {"matchLabels": {"a": "b"}},
             "template": {"metadata": {"labels": {"a": "b"}}, "spec": {"containers": [{"name": "c", "image": "i"}]}}},
             "status": {"replicas": 9}}
        o = self.ok("POST", base, d)
        self.assertEqual(o["metadata"]["generation"], 1)
        self.assertNotIn("replicas", o.get("status", {}))
        o = self.ok("PATCH", base + "/gen", {"status": {"replicas": 5}}, "application/merge-patch+json")
        self.assertNotIn("replicas", o.get("status", {}))      # main endpoint ignores status
        self.assertEqual(o["metadata"]["generation"], 1)
        o = self.ok("PATCH", base + "/gen/status", {"status": {"replicas": 5}, "spec": {"replicas": 3}},
                    "application/merge-patch+json")
        self.assertEqual((o["status"]["replicas"], o["spec"]["replicas"], o["metadata"]["generation"]), (5, 1, 1))
        o = self.ok("PATCH", base + "/gen", {"metadata": {"labels": {"x": "y"}}}, "application/merge-patch+json")
        self.assertEqual(o["metadata"]["generation"], 1)        # metadata-only change
        o = self.ok("PATCH", base + "/gen", {"spec": {"replicas": 2}}, "application/merge-patch+json")
        self.assertEqual(o["metadata"]["generation"], 2)

    # -- watch ------------------------------------------------------------------
    def test_watch_events_and_selectors(self):
        rv = self.ok("GET", CM)["metadata"]["resourceVersion"]
        w = WatchStream(self.sim, CM + "?watch=true&resourceVersion=%s&labelSelector=w%%3Dyes" % rv)
        try:
            self.assertEqual(w.status, 200)
            self.ok("POST", CM, cm("w-out"))
            self.ok("POST", CM, cm("w-in", labels={"w": "yes"}))
            ev = w.next()
            self.assertEqual((ev["type"], ev["object"]["metadata"]["name"]), ("ADDED", "w-in"))
            self.assertEqual(ev["object"]["kind"], "ConfigMap")
            self.ok("PATCH", CM + "/w-out", {"metadata": {"labels": {"w": "yes"}}}, "application/merge-patch+json")
            ev = w.next()
            self.assertEqual((ev["type"], ev["object"]["metadata"]["name"]), ("ADDED", "w-out"))
            self.ok("PATCH", CM + "/w-in", {"metadata": {"labels": {"w": "no"}}}, "application/merge-patch+json")
            ev = w.next()
            self.assertEqual((ev["type"], ev["object"]["metadata"]["name"]), ("DELETED", "w-in"))
            self.ok("DELETE", CM + "/w-out")
            ev = w.next()
            self.assertEqual((ev["type"], ev["object"]["metadata"]["name"]), ("DELETED", "w-out"))
        finally:
            w.close()

    def test_watch_initial_events_bookmarks_and_timeout(self):
        self.ok("POST", CM, cm("bm-1"))
        t0 = time.monotonic()
        w = WatchStream(self.sim, CM + "?watch=1&allowWatchBookmarks=true&timeoutSeconds=2"
                        "&fieldSelector=metadata.name%3Dbm-1")
        try:
            ev = w.next()
            self.assertEqual((ev["type"], ev["object"]["metadata"]["name"]), ("ADDED", "bm-1"))
            bm = w.until(lambda e: e["type"] == "BOOKMARK")
            self.assertEqual(bm["object"]["kind"], "ConfigMap")
            self.assertEqual(set(bm["object"]["metadata"]), {"resourceVersion"})
            while w.next() is not None:
                pass
            self.assertLess(time.monotonic() - t0, 30)
        finally:
            w.close()

    def test_watch_too_old_410_and_compact(self):
        first = self.ok("POST", CM, cm("old-1"))["metadata"]["resourceVersion"]
        for i in range(60):     # window is 50 events
            self.ok("PATCH", CM + "/old-1", {"data": {"i": str(i)}}, "application/merge-patch+json")
        w = WatchStream(self.sim, CM + "?watch=true&resourceVersion=%s" % first)
        try:
            self.assertEqual(w.status, 200)
            ev = w.next()
            self.assertEqual(ev["type"], "ERROR")
            self.assertEqual((ev["object"]["code"], ev["object"]["reason"]), (410, "Expired"))
            self.assertTrue(ev["object"]["message"].startswith("too old resource version: %s (" % first))
            self.assertIsNone(w.next())
        finally:
            w.close()
        st, err = self.req("GET", CM + "?resourceVersion=%s&resourceVersionMatch=Exact" % first)
        self.assertEqual((st, err["reason"]), (410, "Expired"))
        # compact makes the current RV too old as well
        rv = self.ok("GET", CM)["metadata"]["resourceVersion"]
        self.ok("PATCH", CM + "/old-1", {"data": {"z": "1"}}, "application/merge-patch+json")
        self.ok("POST", "/sim/faults", {"compact": True})
        w = WatchStream(self.sim, CM + "?watch=true&resourceVersion=%s" % rv)
        try:
            self.assertEqual(w.next()["type"], "ERROR")
        finally:
            w.close()

    def test_watch_window_is_per_resource(self):
        """Events of another resource that push the window past a watch's resourceVersion
        neither wake nor expire it; its own resource's events still do (410 above)."""
        self.ok("POST", "/api/v1/namespaces", {"metadata": {"name": "per-res"}})
        base = "/api/v1/namespaces/per-res/configmaps"
        rv = self.ok("POST", base, cm("mine"))["metadata"]["resourceVersion"]
        w = WatchStream(self.sim, base + "?watch=true&resourceVersion=%s" % rv)
        try:
            self.ok("POST", "/api/v1/namespaces/per-res/secrets",
                    {"metadata": {"name": "other"}, "data": {}})
            for i in range(60):     # window is 50 events
                self.ok("PATCH", "/api/v1/namespaces/per-res/secrets/other",
                        {"metadata": {"labels": {"i": str(i)}}}, "application/merge-patch+json")
            self.ok("PATCH", base + "/mine", {"data": {"k": "2"}}, "application/merge-patch+json")
            ev = w.next()
            self.assertEqual((ev["type"], ev["object"]["metadata"]["name"]), ("MODIFIED", "mine"))
        finally:
            w.close()
        # a new watch from the same old resourceVersion: everything after it is still there
        w = WatchStream(self.sim, base + "?watch=true&resourceVersion=%s" % rv)
        try:
            ev = w.next()
            self.assertEqual((ev["type"], ev["object"]["data"]["k"]), ("MODIFIED", "2"))
        finally:
            w.close()
        # but a list at that resourceVersion is beyond the (shared) window
        st, err = self.req("GET", base + "?resourceVersion=%s&resourceVersionMatch=Exact" % rv)
        self.assertEqual((st, err["reason"]), (410, "Expired"))

    def test_close_watches(self):
        w = WatchStream(self.sim, CM + "?watch=true&resourceVersion=0&timeoutSeconds=300")
        try:
            self.ok("POST", "/sim/faults", {"closeWatches": True})
            t0 = time.monotonic()
            while w.next() is not None:
                pass
            self.assertLess(time.monotonic() - t0, 30)
        finally:
            w.close()

    def test_watch_send_initial_events_rejected(self):
        st, err = self.req("GET", CM + "?watch=true&sendInitialEvents=true&resourceVersionMatch=NotOlderThan")
        self.assertEqual(st, 422)
        self.assertIn("sendInitialEvents is forbidden for watch unless the WatchList feature gate is enabled",
                      err["message"])

    # -- list ---------------------------------------------------------------------
    def test_paging_and_selectors(self):
        self.ok("POST", "/api/v1/namespaces", {"metadata": {"name": "paging"}})
        base = "/api/v1/namespaces/paging/configmaps"
        for i in range(7):
            self.ok("POST", base, cm("p%d" % i, labels={"odd": str(i % 2)}))
        seen, cont, rvs = [], None, set()
        while True:
            q = "?limit=3" + ("&continue=" + cont if cont else "")
            lst = self.ok("GET", base + q)
            seen += [i["metadata"]["name"] for i in lst["items"]]
            rvs.add(lst["metadata"]["resourceVersion"])
            cont = lst["metadata"].get("continue")
            if cont:
                self.assertIn("remainingItemCount", lst["metadata"])
            if not cont:
                break
        self.assertEqual(seen, ["p%d" % i for i in range(7)])
        self.assertEqual(len(rvs), 1)
        lst = self.ok("GET", base + "?labelSelector=odd%3D1")
        self.assertEqual([i["metadata"]["name"] for i in lst["items"]], ["p1", "p3", "p5"])
        lst = self.ok("GET", base + "?labelSelector=odd%20in%20(0),odd!%3D1")
        self.assertEqual(len(lst["items"]), 4)
        lst = self.ok("GET", base + "?fieldSelector=metadata.name%3Dp2")
        self.assertEqual([i["metadata"]["name"] for i in lst["items"]], ["p2"])
        st, err = self.req("GET", base + "?fieldSelector=spec.foo%3Dx")
        self.assertEqual(st, 400)
        self.assertEqual(err["message"], '"spec.foo" is not a known field selector: only "metadata.name", "metadata.namespace"')
        st, err = self.req("GET", "/api/v1/pods?fieldSelector=spec.foo%3Dx")
        self.assertEqual(err["message"], "field label not supported: spec.foo")
        st, err = self.req("GET", base + "?limit=2&continue=abc&resourceVersion=5")
        self.assertEqual(st, 400)
        # continue token older than the watch window -> 410
        lst = self.ok("GET", base + "?limit=2")
        tok = lst["metadata"]["continue"]
        self.ok("POST", base, cm("p-new"))
        self.ok("POST", "/sim/faults", {"compact": True})
        st, err = self.req("GET", base + "?limit=2&continue=" + tok)
        self.assertEqual((st, err["reason"]), (410, "Expired"))
        # pods by spec.nodeName
        pods = "/api/v1/namespaces/paging/pods"
        for n, node in (("a", "n1"), ("b", "n2")):
            self.ok("POST", pods, {"metadata": {"name": n}, "spec": {"nodeName": node,
                                                                      "containers": [{"name": "c", "image": "i"}]}})
        lst = self.ok("GET", "/api/v1/pods?fieldSelector=spec.nodeName%3Dn2")
        self.assertEqual([i["metadata"]["name"] for i in lst["items"]], ["b"])
        lst = self.ok("GET", "/api/v1/pods?fieldSelector=status.phase%3DPending,spec.nodeName!%3Dn2")
        self.assertEqual([i["metadata"]["name"] for i in lst["items"]], ["a"])

    def test_paged_list_across_writes_is_one_version(self):
        """Pages after writes still show the collection at the first page's resourceVersion:
        objects changed, deleted (before and after their page) and created meanwhile; the
        same for resourceVersionMatch=Exact; and a write to another resource changes nothing."""
        self.ok("POST", "/api/v1/namespaces", {"metadata": {"name": "paging-rv"}})
        base = "/api/v1/namespaces/paging-rv/configmaps"
        for i in range(10):
            self.ok("POST", base, cm("q%d" % i))
        first = self.ok("GET", base + "?limit=4")
        rv = first["metadata"]["resourceVersion"]
        want = {i["metadata"]["name"]: i["metadata"]["resourceVersion"] for i in
                self.ok("GET", base)["items"]}
        self.ok("PATCH", base + "/q5", {"data": {"k": "changed"}}, "application/merge-patch+json")
        self.ok("DELETE", base + "/q1")   # on the page already read
        self.ok("DELETE", base + "/q7")   # on a page still to come
        self.ok("POST", base, cm("q45"))  # sorts into a later page
        self.ok("POST", "/api/v1/namespaces/default/configmaps", cm("elsewhere-%s" % rv))
        got, cont = list(first["items"]), first["metadata"]["continue"]
        while cont:
            page = self.ok("GET", base + "?limit=4&continue=" + cont)
            self.assertEqual(page["metadata"]["resourceVersion"], rv)
            got += page["items"]
            cont = page["metadata"].get("continue")
            # a write between two pages as well
            self.ok("PATCH", base + "/q9", {"data": {"k": cont or "last"}},
                    "application/merge-patch+json")
        self.assertEqual({i["metadata"]["name"]: i["metadata"]["resourceVersion"] for i in got},
                         want)
        self.assertEqual([i["metadata"]["name"] for i in got], sorted(want))
        self.assertEqual([i["data"]["k"] for i in got if i["metadata"]["name"] == "q5"], ["v"])
        exact = self.ok("GET", base + "?resourceVersion=%s&resourceVersionMatch=Exact" % rv)
        self.assertEqual([(i["metadata"]["name"], i["metadata"]["resourceVersion"])
                          for i in exact["items"]], sorted(want.items()))
        now = self.ok("GET", base)
        self.assertEqual([i["metadata"]["name"] for i in now["items"]],
                         sorted(set(want) - {"q1", "q7"} | {"q45"}))

    # -- deletion ---------------------------------------------------------------------
    def test_finalizers_and_preconditions(self):
        o = self.ok("POST", CM, cm("fz", finalizers=["example.com/a", "example.com/b"]))
        st, err = self.req("DELETE", CM + "/fz", {"preconditions": {"uid": "wrong"}})
        self.assertEqual(st, 409)
        self.assertIn("Precondition failed: UID in precondition: wrong, UID in object meta: %s"
                      % o["metadata"]["uid"], err["message"])
        st, err = self.req("DELETE", CM + "/fz", {"preconditions": {"resourceVersion": "1"}})
        self.assertEqual(st, 409)
        d = self.ok("DELETE", CM + "/fz", {"preconditions": {"uid": o["metadata"]["uid"]}})
        self.assertTrue(d["metadata"]["deletionTimestamp"])
        st, err = self.req("PATCH", CM + "/fz", {"metadata": {"finalizers": ["example.com/a", "example.com/c"]}},
                           ctype="application/merge-patch+json")
        self.assertEqual(st, 422)
        self.assertIn("no new finalizers can be added if the object is being deleted", err["message"])
        self.ok("PATCH", CM + "/fz", {"metadata": {"finalizers": ["example.com/b"]}}, "application/merge-patch+json")
        self.assertEqual(self.req("GET", CM + "/fz")[0], 200)
        self.ok("PATCH", CM + "/fz", {"metadata": {"finalizers": None}}, "application/merge-patch+json")
        self.assertEqual(self.req("GET", CM + "/fz")[0], 404)

    def test_namespace_deletion(self):
        self.ok("POST", "/api/v1/namespaces", {"metadata": {"name": "nsdel"}})
        base = "/api/v1/namespaces/nsdel/configmaps"
        self.ok("POST", base, cm("held", finalizers=["example.com/x"]))
        self.ok("POST", base, cm("free"))
        ns = self.ok("DELETE", "/api/v1/namespaces/nsdel")
        self.assertEqual(ns["status"]["phase"], "Terminating")
        st, err = self.req("POST", base, cm("late"))
        self.assertEqual((st, err["reason"]), (403, "Forbidden"))
        self.assertIn("unable to create new content in namespace nsdel because it is being terminated", err["message"])
        self.assertEqual(err["details"]["causes"][0]["reason"], "NamespaceTerminating")
        wait_for(lambda: self.req("GET", base + "/free")[0] == 404, msg="free cm deleted")
        wait_for(lambda: any(c["type"] == "NamespaceFinalizersRemaining" and c["status"] == "True"
                             for c in self.ok("GET", "/api/v1/namespaces/nsdel")["status"].get("conditions", [])),
                 msg="finalizers-remaining condition")
        self.ok("PATCH", base + "/held", {"metadata": {"finalizers": None}}, "application/merge-patch+json")
        wait_for(lambda: self.req("GET", "/api/v1/namespaces/nsdel")[0] == 404, msg="namespace gone")
        st, err = self.req("DELETE", "/api/v1/namespaces/default")
        self.assertEqual(st, 403)

    def test_garbage_collection(self):
        owner = self.ok("POST", CM, cm("gc-owner"))
        ref = {"apiVersion": "v1", "kind": "ConfigMap", "name": "gc-owner", "uid": owner["metadata"]["uid"]}
        # background
        self.ok("POST", CM, cm("gc-dep", ownerReferences=[ref]))
        self.ok("DELETE", CM + "/gc-owner", {"propagationPolicy": "Background"})
        wait_for(lambda: self.req("GET", CM + "/gc-dep")[0] == 404, msg="dependent collected")
        # orphan
        owner = self.ok("POST", CM, cm("gc-owner2"))
        ref = dict(ref, name="gc-owner2", uid=owner["metadata"]["uid"])
        self.ok("POST", CM, cm("gc-dep2", ownerReferences=[ref]))
        self.ok("DELETE", CM + "/gc-owner2", {"propagationPolicy": "Orphan"})
        wait_for(lambda: self.req("GET", CM + "/gc-owner2")[0] == 404, msg="owner gone")
        dep = self.ok("GET", CM + "/gc-dep2")
        self.assertNotIn("ownerReferences", dep["metadata"])
        # foreground: owner stays until blocking dependents are gone
        owner = self.ok("POST", CM, cm("gc-owner3"))
        ref = dict(ref, name="gc-owner3", uid=owner["metadata"]["uid"], blockOwnerDeletion=True)
        self.ok("POST", CM, cm("gc-dep3", ownerReferences=[ref], finalizers=["example.com/slow"]))
        o = self.ok("DELETE", CM + "/gc-owner3", {"propagationPolicy": "Foreground"})
        self.assertIn("foregroundDeletion", o["metadata"]["finalizers"])
        wait_for(lambda: self.ok("GET", CM + "/gc-dep3")["metadata"].get("deletionTimestamp"), msg="dep deleting")
        self.assertEqual(self.req("GET", CM + "/gc-owner3")[0], 200)
        self.ok("PATCH", CM + "/gc-dep3", {"metadata": {"finalizers": None}}, "application/merge-patch+json")
        wait_for(lambda: self.req("GET", CM + "/gc-owner3")[0] == 404, msg="foreground owner gone")
        # dangling owner reference
        self.ok("POST", CM, cm("gc-dangling", ownerReferences=[dict(ref, uid="no-such-uid", name="x")]))
        wait_for(lambda: self.req("GET", CM + "/gc-dangling")[0] == 404, msg="dangling collected")

    # -- patch ----------------------------------------------------------------------------
    def test_patch_types(self):
        pods = "/api/v1/namespaces/default/pods"
        self.ok("POST", pods, {"metadata": {"name": "smp"}, "spec": {"containers": [
            {"name": "a", "image": "x:1", "env": [{"name": "A", "value": "1"}]},
            {"name": "b", "image": "y:1"}]}})
        o = self.ok("PATCH", pods + "/smp", {"spec": {"containers": [{"name": "b", "image": "y:2"}]}},
                    "application/strategic-merge-patch+json")
        self.assertEqual([(c["name"], c["image"]) for c in o["spec"]["containers"]], [("a", "x:1"), ("b", "y:2")])
        o = self.ok("PATCH", pods + "/smp/status", {"status": {"conditions": [{"type": "Ready", "status": "True"}]}},
                    "application/strategic-merge-patch+json")
        o = self.ok("PATCH", pods + "/smp/status", {"status": {"conditions": [{"type": "PodScheduled", "status": "True"}]}},
                    "application/strategic-merge-patch+json")
        self.assertEqual(sorted(c["type"] for c in o["status"]["conditions"]), ["PodScheduled", "Ready"])
        o = self.ok("PATCH", pods + "/smp", [{"op": "test", "path": "/metadata/name", "value": "smp"},
                                             {"op": "add", "path": "/metadata/labels", "value": {"a": "b"}}],
                    "application/json-patch+json")
        self.assertEqual(o["metadata"]["labels"], {"a": "b"})
        st, err = self.req("PATCH", pods + "/smp", [{"op": "test", "path": "/metadata/name", "value": "no"}],
                           ctype="application/json-patch+json")
        self.assertEqual(st, 422)
        # patch carrying a stale resourceVersion conflicts
        st, err = self.req("PATCH", pods + "/smp", {"metadata": {"resourceVersion": "1", "labels": {"c": "d"}}},
                           ctype="application/merge-patch+json")
        self.assertEqual(st, 409)
        # server-side apply creates
        st, o = self.req("PATCH", CM + "/ssa?fieldManager=test", {"apiVersion": "v1", "kind": "ConfigMap",
                                                                  "metadata": {"name": "ssa"}, "data": {"a": "1"}},
                         ctype="application/apply-patch+yaml")
        self.assertEqual(st, 201)
        st, err = self.req("PATCH", CM + "/ssa", {"data": {}}, ctype="application/apply-patch+yaml")
        self.assertEqual(st, 422)

    # -- auth -------------------------------------------------------------------------------
    def test_tokens_and_tokenreview(self):
        st, err = self.req("GET", "/api/v1/namespaces", token="bogus")
        self.assertEqual((st, err["reason"], err["message"]), (401, "Unauthorized", "Unauthorized"))
        st, _ = self.req("GET", "/api/v1/namespaces", token="agent-tok")
        self.assertEqual(st, 200)
        tr = "/apis/authentication.k8s.io/v1/tokenreviews"
        st, r = self.req("POST", tr, {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview",
                                      "spec": {"token": "agent-tok", "audiences": ["tau-aggregator"]}})
        self.assertEqual(st, 201)
        self.assertTrue(r["status"]["authenticated"])
        u = r["status"]["user"]
        self.assertEqual(u["username"], "system:serviceaccount:tau-system:tau-agent")
        self.assertIn("system:serviceaccounts:tau-system", u["groups"])
        self.assertIn("system:authenticated", u["groups"])
        self.assertEqual(u["extra"]["authentication.kubernetes.io/node-name"], ["node-a"])
        self.assertEqual(r["status"]["audiences"], ["tau-aggregator"])
        st, r = self.req("POST", tr, {"spec": {"token": "agent-tok", "audiences": ["other"]}})
        self.assertNotIn("authenticated", r["status"])
        self.assertTrue(r["status"]["error"])
        st, r = self.req("POST", tr, {"spec": {"token": "nope"}})
        self.assertFalse(r["status"].get("authenticated", False))
        st, r = self.req("POST", "/apis/authorization.k8s.io/v1/subjectaccessreviews",
                         {"spec": {"user": "bob", "resourceAttributes": {"verb": "get", "resource": "pods"}}})
        self.assertEqual((st, r["status"]["allowed"]), (201, True))   # allow-all

    def test_early_answer_drains_request_body(self):
        # A 401 is answered before the handler reads the body; the connection is kept alive
        # and the next request on it must still be parsed correctly.
        c = self.sim.conn()
        body = json.dumps({"metadata": {"name": "drained"}, "data": {"k": "v" * 5000}})
        c.request("POST", "/api/v1/namespaces/default/configmaps", body=body,
                  headers={"Authorization": "Bearer bogus", "Content-Type": "application/json"})
        r = c.getresponse()
        r.read()
        self.assertEqual(r.status, 401)
        c.request("GET", "/api/v1/namespaces/default",
                  headers={"Authorization": "Bearer " + self.sim.token})
        r = c.getresponse()
        self.assertEqual(r.status, 200)
        self.assertEqual(json.loads(r.read())["metadata"]["name"], "default")
        c.close()

    # -- faults & stats -------------------------------------------------------------------
    def test_faults_and_stats(self):
        self.ok("POST", "/sim/stats/reset")
        self.ok("PUT", "/sim/faults", {"rules": [
            {"verb": "create", "resource": "configmaps", "status": 500, "count": 2},
            {"verb": "list", "resource": "secrets", "status": 429, "retryAfter": 3, "count": 1},
            {"verb": "get", "resource": "configmaps", "status": 503, "count": 1}]})
        try:
            for _ in range(2):
                st, err = self.req("POST", CM, cm("faulty"))
                self.assertEqual((st, err["reason"]), (500, "InternalError"))
            self.assertEqual(self.req("POST", CM, cm("faulty"))[0], 201)
            st, body, hdrs = self.req("GET", "/api/v1/namespaces/default/secrets", raw=True)
            self.assertEqual(st, 429)
            self.assertEqual(body, "Too many requests, please try again later.\n")
            self.assertEqual(hdrs.get("Retry-After"), "3")
            self.assertTrue(hdrs.get("Content-Type", "").startswith("text/plain"))
            self.assertEqual(self.req("GET", "/api/v1/namespaces/default/secrets")[0], 200)
            self.assertEqual(self.req("GET", CM + "/faulty")[0], 503)
            self.assertEqual(self.req("GET", CM + "/faulty")[0], 200)
            self.ok("PUT", "/sim/faults", {"verb": "get", "resource": "configmaps", "latencyMs": 300})
            t0 = time.monotonic()
            self.ok("GET", CM + "/faulty")
            self.assertGreaterEqual(time.monotonic() - t0, 0.29)
        finally:
            self.ok("DELETE", "/sim/faults")
        stats = self.ok("GET", "/sim/stats")
        self.assertEqual(stats["create/configmaps"], 3)
        self.assertEqual(stats["list/secrets"], 2)
        self.ok("POST", "/sim/stats/reset")
        self.assertEqual(self.ok("GET", "/sim/stats"), {})

    def test_discovery_and_openapi(self):
        st, d = self.req("GET", "/apis")
        names = [g["name"] for g in d["groups"]]
        for g in ("apps", "coordination.k8s.io", "rbac.authorization.k8s.io", "apiextensions.k8s.io"):
            self.assertIn(g, names)
        rl = self.ok("GET", "/api/v1")
        nodes = [r for r in rl["resources"] if r["name"] == "nodes"][0]
        self.assertEqual((nodes["kind"], nodes["namespaced"], nodes["shortNames"]), ("Node", False, ["no"]))
        self.assertTrue(any(r["name"] == "nodes/status" for r in rl["resources"]))
        v = self.ok("GET", "/version")
        self.assertEqual((v["major"], v["minor"]), ("1", "32"))
        paths = self.ok("GET", "/openapi/v3")["paths"]
        self.assertIn("api/v1", paths)
        doc = self.ok("GET", paths["apis/apps/v1"]["serverRelativeURL"])
        self.assertIn("/apis/apps/v1/namespaces/{namespace}/deployments/{name}", doc["paths"])

    def test_crd_lifecycle(self):
        crd = {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
               "metadata": {"name": "gadgets.test.example.com"},
               "spec": {"group": "test.example.com", "scope": "Cluster",
                        "names": {"plural": "gadgets", "singular": "gadget", "kind": "Gadget", "shortNames": ["gd"]},
                        "versions": [
                            {"name": "v1beta1", "served": True, "storage": False,
                             "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}}},
                            {"name": "v1", "served": True, "storage": True,
                             "subresources": {"status": {}},
                             "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}}}]}}
        o = self.ok("POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", crd)
        conds = {c["type"]: c["status"] for c in o["status"]["conditions"]}
        self.assertEqual((conds["Established"], conds["NamesAccepted"]), ("True", "True"))
        self.assertEqual(o["status"]["acceptedNames"]["kind"], "Gadget")
        g = self.ok("POST", "/apis/test.example.com/v1beta1/gadgets", {"apiVersion": "test.example.com/v1beta1",
                    "kind": "Gadget", "metadata": {"name": "g1"}, "spec": {"x": 1}, "status": {"s": 1}})
        self.assertEqual(g["apiVersion"], "test.example.com/v1beta1")
        self.assertNotIn("status", g)
        g1 = self.ok("GET", "/apis/test.example.com/v1/gadgets/g1")
        self.assertEqual(g1["apiVersion"], "test.example.com/v1")
        lst = self.ok("GET", "/apis/test.example.com/v1/gadgets")
        self.assertEqual(lst["items"][0]["kind"], "Gadget")    # CR list items keep kind
        st, err = self.req("PUT", "/apis/test.example.com/v1/gadgets/g1", {"metadata": {"name": "g1"}, "spec": {}})
        self.assertEqual(st, 422)
        st, s = self.req("DELETE", "/apis/test.example.com/v1/gadgets/g1")
        self.assertEqual((st, s["kind"], s["status"]), (200, "Status", "Success"))
        self.ok("POST", "/apis/test.example.com/v1/gadgets", {"metadata": {"name": "g2"}})
        self.ok("DELETE", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/gadgets.test.example.com")
        wait_for(lambda: self.req("GET", "/apis/test.example.com/v1/gadgets")[0] == 404, msg="CRD gone")


class HistoryTest(unittest.TestCase):
    """--history-events: every committed write, kept apart from the watch cache."""

    def test_history_survives_compaction_and_filters(self):
        with SimProcess(["--history-events", "6", "--watch-cache-events", "50"]) as sim:
            t0 = time.time()
            a = sim.ok("POST", CM, cm("h1"))
            b = sim.ok("PUT", CM + "/h1", dict(a, data={"k": "v2"}))
            sim.ok("POST", "/api/v1/namespaces/default/secrets",
                   {"metadata": {"name": "s1"}, "data": {}})
            sim.ok("DELETE", CM + "/h1")
            sim.ok("POST", "/sim/faults", {"compact": True})
            # The watch cache is empty now; the history is not.
            self.assertEqual(sim.req("GET", CM + "?watch=1&resourceVersion=%s"
                                     % a["metadata"]["resourceVersion"])[0], 200)
            h = sim.ok("GET", "/sim/history?resource=configmaps&since=%s"
                       % (int(a["metadata"]["resourceVersion"]) - 1))
            self.assertTrue(h["complete"])
            self.assertEqual([(i["type"], i["name"], i["namespace"], i["resource"])
                              for i in h["items"]],
                             [("ADDED", "h1", "default", "configmaps"),
                              ("MODIFIED", "h1", "default", "configmaps"),
                              ("DELETED", "h1", "default", "configmaps")])
            self.assertEqual(h["items"][1]["object"]["data"], {"k": "v2"})
            self.assertEqual(h["items"][1]["resourceVersion"],
                             b["metadata"]["resourceVersion"])
            self.assertEqual(h["items"][1]["object"]["metadata"]["resourceVersion"],
                             b["metadata"]["resourceVersion"])
            rvs = [int(i["resourceVersion"]) for i in h["items"]]
            self.assertEqual(rvs, sorted(rvs))
            self.assertTrue(all(t0 - 1 <= i["time"] <= time.time() + 1 for i in h["items"]))
            # since: only later events; every resource when none is named.
            h2 = sim.ok("GET", "/sim/history?since=%s" % b["metadata"]["resourceVersion"])
            self.assertEqual([(i["type"], i["resource"]) for i in h2["items"]],
                             [("ADDED", "secrets"), ("DELETED", "configmaps")])
            # Past the window the oldest go, and `complete` says so.
            for i in range(6):
                sim.ok("POST", CM, cm("more%d" % i))
            h3 = sim.ok("GET", "/sim/history?resource=configmaps&since=%s"
                        % a["metadata"]["resourceVersion"])
            self.assertFalse(h3["complete"])
            self.assertEqual([i["name"] for i in h3["items"]], ["more%d" % i for i in range(6)])
            self.assertEqual(h3["floor"], str(int(h3["items"][0]["resourceVersion"]) - 1))
            self.assertTrue(sim.ok("GET", "/sim/history?since=" + h3["floor"])["complete"])
            self.assertEqual(sim.req("GET", "/sim/history?since=x")[0], 400)

    def test_history_off_by_default(self):
        with SimProcess() as sim:
            st, err = sim.req("GET", "/sim/history")
            self.assertEqual(st, 400)
            self.assertIn("--history-events", err["message"])


class TlsTest(unittest.TestCase):
    def test_tls_and_client_certificates(self):
        with SimProcess(["--authz", "allow-all"], tls=True) as sim:
            self.assertTrue(sim.server.startswith("https://"))
            st, _ = sim.req("GET", "/api/v1/namespaces")
            self.assertEqual(st, 200)
            # anonymous over TLS still works under allow-all; a client cert names the user
            out = os.path.join(sim.tmp, "alice")
            subprocess.run([sys.executable, KUBE_SIM, "mint-client-cert", "--kubeconfig", sim.kubeconfig,
                            "--cn", "alice", "--org", "team-a", "--out", out], check=True,
                           stdout=subprocess.DEVNULL)
            ctx = ssl.create_default_context(cafile=sim.kubeconfig + ".ca.crt")
            ctx.load_cert_chain(out + ".crt", out + ".key")
            import http.client
            c = http.client.HTTPSConnection("127.0.0.1", sim.port, context=ctx, timeout=30)
            body = json.dumps({"spec": {"resourceAttributes": {"verb": "get", "resource": "pods"}}})
            c.request("POST", "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews", body=body,
                      headers={"Content-Type": "application/json"})
            r = c.getresponse()
            data = json.loads(r.read())
            self.assertEqual(r.status, 201)
            self.assertTrue(data["status"]["allowed"])
            c.close()


try:
    import kubesim.rbac  # noqa: F401  (written separately)
    HAVE_RBAC = True
except Exception:
    HAVE_RBAC = False


@unittest.skipUnless(HAVE_RBAC, "kubesim/rbac.py not present")
class RbacTest(unittest.TestCase):
    def rbac_sim(self, tokens):
        """kube-sim under --authz rbac that knows `tokens` (token -> user)."""
        tmp = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, tmp, True)
        path = os.path.join(tmp, "t.json")
        with open(path, "w") as f:
            json.dump(tokens, f)
        return SimProcess(["--authz", "rbac", "--tokens", path])

    @staticmethod
    def grant(sim, user, role, rules, binding=None):
        """ClusterRole `role` with `rules`, bound cluster-wide to the User `user`."""
        rbac_api = "/apis/rbac.authorization.k8s.io/v1"
        sim.ok("POST", rbac_api + "/clusterroles", {"metadata": {"name": role}, "rules": rules})
        sim.ok("POST", rbac_api + "/clusterrolebindings",
               {"metadata": {"name": binding or "%s-%s" % (user, role)},
                "roleRef": {"apiGroup": "rbac.authorization.k8s.io",
                            "kind": "ClusterRole", "name": role},
                "subjects": [{"kind": "User", "name": user,
                              "apiGroup": "rbac.authorization.k8s.io"}]})

    def test_rbac_authorization(self):
        with self.rbac_sim({"bob-tok": {"username": "bob", "groups": ["devs"]}}) as sim:
            st, err = sim.req("GET", "/api/v1/namespaces/default/pods", token="bob-tok")
            self.assertEqual(st, 403)
            self.assertEqual(err["message"], 'pods is forbidden: User "bob" cannot list resource "pods" '
                             'in API group "" in the namespace "default"')
            self.assertEqual(sim.req("GET", "/api", token="bob-tok")[0], 200)
            sim.ok("POST", "/apis/rbac.authorization.k8s.io/v1/namespaces/default/roles",
                   {"metadata": {"name": "pod-reader"},
                    "rules": [{"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "list"]}]})
            sim.ok("POST", "/apis/rbac.authorization.k8s.io/v1/namespaces/default/rolebindings",
                   {"metadata": {"name": "devs-read"},
                    "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "pod-reader"},
                    "subjects": [{"kind": "Group", "name": "devs", "apiGroup": "rbac.authorization.k8s.io"}]})
            self.assertEqual(sim.req("GET", "/api/v1/namespaces/default/pods", token="bob-tok")[0], 200)
            st, r = sim.req("POST", "/apis/authorization.k8s.io/v1/subjectaccessreviews",
                            {"spec": {"user": "bob", "groups": ["devs"], "resourceAttributes":
                                      {"verb": "delete", "resource": "pods", "namespace": "default"}}})
            self.assertFalse(r["status"]["allowed"])

    def test_resource_names_grant_list_and_watch_only_with_the_name_selector(self):
        """A list/watch grant restricted by resourceNames covers a request only when its
        fieldSelector requires metadata.name to be that name (kube-apiserver's request info
        takes the name from the selector); a namespace that does not exist lists empty."""
        path = "/api/v1/namespaces/kueue-system/configmaps"
        sel = "fieldSelector=metadata.name%3Dkueue-manager-config"
        with self.rbac_sim({"bob-tok": {"username": "bob"}}) as sim:
            self.grant(sim, "bob", "kueue-config-reader",
                       [{"apiGroups": [""], "resources": ["configmaps"],
                         "resourceNames": ["kueue-manager-config"], "verbs": ["list", "watch"]}])
            for verb, q in (("list", ""), ("watch", "?watch=1&timeoutSeconds=1")):
                st, err = sim.req("GET", path + q, token="bob-tok")
                self.assertEqual(st, 403, err)
                self.assertEqual(err["message"],
                                 'configmaps is forbidden: User "bob" cannot %s resource '
                                 '"configmaps" in API group "" in the namespace '
                                 '"kueue-system"' % verb)
            st, err = sim.req("GET", path + "?fieldSelector=metadata.name%3Dother",
                              token="bob-tok")
            self.assertEqual(st, 403, err)
            self.assertEqual(err["message"],
                             'configmaps "other" is forbidden: User "bob" cannot list '
                             'resource "configmaps" in API group "" in the namespace '
                             '"kueue-system"')
            self.assertEqual(err["details"]["name"], "other")
            # metadata.name!=X requires no exact name: still the whole collection.
            self.assertEqual(sim.req("GET", path + "?fieldSelector=metadata.name%21%3D"
                                     "kueue-manager-config", token="bob-tok")[0], 403)
            # The grant covers the named list and watch; the namespace does not exist yet.
            st, lst = sim.req("GET", path + "?" + sel, token="bob-tok")
            self.assertEqual((st, lst["items"]), (200, []), lst)
            self.assertEqual(sim.req("GET", path + "?watch=1&timeoutSeconds=1&" + sel,
                                     token="bob-tok")[0], 200)
            # get is not granted: resourceNames does not widen the verbs.
            self.assertEqual(sim.req("GET", path + "/kueue-manager-config",
                                     token="bob-tok")[0], 403)
            sim.ok("POST", "/api/v1/namespaces",
                   {"metadata": {"name": "kueue-system"}})
            for name in ("kueue-manager-config", "other"):
                sim.ok("POST", path, cm(name))
            st, lst = sim.req("GET", path + "?" + sel, token="bob-tok")
            self.assertEqual([i["metadata"]["name"] for i in lst["items"]],
                             ["kueue-manager-config"])

    def test_binding_escalation_check(self):
        """A RoleBinding write needs `bind` on its role, or every right the role grants."""
        rbac_api = "/apis/rbac.authorization.k8s.io/v1"
        rb = {"metadata": {"name": "r"},
              "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                          "name": "job-runner"},
              "subjects": [{"kind": "User", "name": "alice",
                            "apiGroup": "rbac.authorization.k8s.io"}]}
        with self.rbac_sim({"ctl-tok": {"username": "ctl"}}) as sim:
            sim.ok("POST", rbac_api + "/clusterroles",
                   {"metadata": {"name": "job-runner"},
                    "rules": [{"apiGroups": ["batch"], "resources": ["jobs"],
                               "verbs": ["create"]}]})
            self.grant(sim, "ctl", "binder",
                       [{"apiGroups": ["rbac.authorization.k8s.io"],
                         "resources": ["rolebindings"], "verbs": ["create"]}], "ctl-binder")
            path = rbac_api + "/namespaces/default/rolebindings"
            st, err = sim.req("POST", path, rb, token="ctl-tok")
            self.assertEqual(st, 403, err)
            self.assertEqual(err["message"],
                             'rolebindings.rbac.authorization.k8s.io "r" is forbidden: user '
                             '"ctl" (groups=["system:authenticated"]) is attempting to grant '
                             'RBAC permissions not currently held:\n{APIGroups:["batch"], '
                             'Resources:["jobs"], Verbs:["create"]}')
            # bind on that one ClusterRole (resourceNames) is enough.
            sim.ok("PUT", rbac_api + "/clusterroles/binder",
                   {"metadata": {"name": "binder"},
                    "rules": [{"apiGroups": ["rbac.authorization.k8s.io"],
                               "resources": ["rolebindings"], "verbs": ["create"]},
                              {"apiGroups": ["rbac.authorization.k8s.io"],
                               "resources": ["clusterroles"], "verbs": ["bind"],
                               "resourceNames": ["job-runner"]}]})
            self.assertEqual(sim.req("POST", path, rb, token="ctl-tok")[0], 201)
            # Holding every right of the role is enough too (no bind on "binder").
            rb2 = dict(rb, metadata={"name": "r2"},
                       roleRef=dict(rb["roleRef"], name="binder"))
            self.assertEqual(sim.req("POST", path, rb2, token="ctl-tok")[0], 201)


if __name__ == "__main__":
    unittest.main()
