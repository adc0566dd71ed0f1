"""End-to-end tests of the TauWorkspace controller and `tau workspace` against kube-sim.

Each test starts kube-sim (harness/workspace.py Env) with `--authz rbac`, the Kueue CRDs and
taugrid's CRDs, applies the RBAC the project ships (charts/tau-aggregator/rbac/*.yaml, charts/tau-node-agent/rbac/*.yaml) with the admin kubeconfig, binds the
tau-aggregator ClusterRole to the ServiceAccount system:serviceaccount:tau-system:tau-aggregator
and runs the controller (tests/e2e/ws_controller_main.c) with a kubeconfig carrying only that
ServiceAccount's token, so the controller has exactly the rights the chart grants.

Binaries come from the environment (cmake/workspace-tests.cmake sets them):
  TAU_WS_CONTROLLER  the ws_controller driver
  TAU_WS_CLI         the tau binary (`tau workspace ...`, `tau storage ...`)
Waits are wait-for-condition loops (harness.waits.wait_for), never fixed sleeps.
Standard library only.
"""
import json
import os
import shutil
import tempfile
import unittest

import yaml

from harness import paths
from harness.kubesim import WatchStream
from harness.waits import wait_for
from harness.workspace import (KUEUE, TIMEOUT, WS_API, Env, cluster_queue, cond,
                               workspace)

PUBLISHED = os.path.join(paths.ROOT, "tests", "fixtures", "taugrid")
EXTRA_CRDS = os.path.join(paths.E2E, "workspace")


class WorkspaceTestBase(unittest.TestCase):
    controller_args = ()
    extra_crds = ()

    def setUp(self):
        self.env = Env(self.controller_args, self.extra_crds)
        self.addCleanup(self.env.stop)

    def ready_workspace(self, name="alpha", ns="ml-alpha", queue="alpha", **kw):
        self.env.create(cluster_queue(queue if not kw.get("team") else "tau-ws-" + name))
        self.env.create(workspace(name, ns=ns, queue=queue, **kw))
        return self.env.wait_phase(name, "Ready")


class HappyPathTest(WorkspaceTestBase):
    def test_ready_and_owned_objects(self):
        e = self.env
        obj = self.ready_workspace(wi={"serviceAccountName": "alpha-wl", "clientId": "cid-1"})
        st = obj["status"]
        self.assertEqual(st["target"]["resolvedNamespace"], "ml-alpha")
        self.assertEqual(st["queue"], {"localQueue": "alpha", "clusterQueue": "alpha"})
        for t in ("RBACReady", "QueueReady", "WorkloadIdentityReady"):
            self.assertEqual(cond(obj, t)["status"], "True", t)
        self.assertEqual(cond(obj, "DriftDetected")["status"], "False")
        self.assertIn("tau.azure.com/workspace-cleanup", obj["metadata"]["finalizers"])
        ns = e.get("/api/v1/namespaces/ml-alpha")
        self.assertEqual(ns["metadata"]["labels"]["tau.azure.com/workspace"], "alpha")
        rb = e.get("/apis/rbac.authorization.k8s.io/v1/namespaces/ml-alpha/rolebindings/"
                   "tau-workspace-alpha")
        self.assertEqual(rb["roleRef"]["name"], "tau-researcher")
        lq = e.get(KUEUE + "/namespaces/ml-alpha/localqueues/alpha")
        self.assertEqual(lq["spec"]["clusterQueue"], "alpha")
        sa = e.get("/api/v1/namespaces/ml-alpha/serviceaccounts/alpha-wl")
        self.assertEqual(sa["metadata"]["annotations"]["azure.workload.identity/client-id"],
                         "cid-1")

    def test_steady_state_makes_no_writes(self):
        e = self.env
        e.stop_controller()
        e.start(["--resync-seconds", "1"])
        self.ready_workspace()
        # Let DriftCorrected/first-status churn settle, then count writes over several resyncs.
        e.wait_cond("alpha", "DriftDetected", "False", "NoDrift")
        # The Event announcing NoDrift follows that status write: let it land first.
        wait_for(lambda: any(ev.get("reason") == "NoDrift" and
                             ev["involvedObject"].get("name") == "alpha"
                             for ev in e.sim.ok("GET", "/api/v1/namespaces/tau-system/events")
                             ["items"]), timeout=TIMEOUT, what="the NoDrift Event")
        e.reset_stats()
        wait_for(lambda: e.stats().get("get/workspaces", 0) >= 4, timeout=TIMEOUT,
                 what="several resync passes")
        self.assertEqual(e.writes(), {})

    def test_researcher_can_create_jobs_only_in_workspace_namespace(self):
        e = self.env
        self.ready_workspace(subject=("Group", "alpha-researchers"))
        self.assertTrue(e.sar("alice", ["alpha-researchers"], "ml-alpha"))
        self.assertFalse(e.sar("alice", ["alpha-researchers"], "default"))
        self.assertFalse(e.sar("alice", ["alpha-researchers"], "tau-system"))
        self.assertFalse(e.sar("bob", ["others"], "ml-alpha"))

    def test_deletion_with_finalizer(self):
        e = self.env
        self.ready_workspace()
        e.sim.ok("DELETE", WS_API + "/alpha")
        e.wait_gone(WS_API + "/alpha")
        e.wait_gone(KUEUE + "/namespaces/ml-alpha/localqueues/alpha")
        e.wait_gone("/api/v1/namespaces/ml-alpha")


class AuthorizationModeSwitchTest(WorkspaceTestBase):
    def test_switch_to_cluster_wide_deletes_the_binding(self):
        e = self.env
        self.ready_workspace(subject=("Group", "alpha-researchers"))
        rb_path = ("/apis/rbac.authorization.k8s.io/v1/namespaces/ml-alpha/rolebindings/"
                   "tau-workspace-alpha")
        self.assertIsNotNone(e.get(rb_path))
        self.assertTrue(e.sar("alice", ["alpha-researchers"], "ml-alpha"))
        obj = e.ws("alpha")
        obj["spec"]["authorization"] = {"mode": "cluster-wide"}
        del obj["spec"]["principalRef"]
        del obj["spec"]["kubernetesSubject"]
        del obj["spec"]["role"]
        e.sim.ok("PUT", WS_API + "/alpha", obj)
        e.wait_gone(rb_path)
        o = e.wait_cond("alpha", "RBACReady", "True", "ClusterWideAuthorization")
        self.assertEqual(o["status"]["phase"], "Ready")
        # Access the spec no longer grants is gone.
        self.assertFalse(e.sar("alice", ["alpha-researchers"], "ml-alpha"))
        self.assertIn("cluster-wide authorization: no researcher binding", e.log())
        # Back to workspace-rbac: the binding returns.
        obj = e.ws("alpha")
        obj["spec"]["authorization"] = {"mode": "workspace-rbac"}
        obj["spec"]["principalRef"] = {"provider": "entra", "name": "alpha-researchers"}
        obj["spec"]["kubernetesSubject"] = {"kind": "Group", "name": "alpha-researchers"}
        obj["spec"]["role"] = "researcher"
        e.sim.ok("PUT", WS_API + "/alpha", obj)
        e.wait_cond("alpha", "RBACReady", "True", "RoleBindingReady")
        self.assertTrue(e.sar("alice", ["alpha-researchers"], "ml-alpha"))


class ConditionReasonsTest(WorkspaceTestBase):
    def test_cluster_queue_missing_then_created(self):
        e = self.env
        e.create(workspace("alpha", ns="ml-alpha", queue="alpha"))
        o = e.wait_cond("alpha", "QueueReady", "False", "ClusterQueueNotFound")
        self.assertEqual(o["status"]["phase"], "Pending")
        e.create(cluster_queue("alpha"))
        e.wait_phase("alpha", "Ready")

    def test_namespace_not_found_without_create(self):
        e = self.env
        e.create(cluster_queue("alpha"))
        e.create(workspace("alpha", ns="ml-alpha", queue="alpha", create_ns=False))
        e.wait_cond("alpha", "RBACReady", "False", "NamespaceNotFound")
        e.wait_cond("alpha", "QueueReady", "False", "NamespaceNotFound")
        e.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "ml-alpha"}})
        e.wait_phase("alpha", "Ready")

    def test_rolebinding_not_owned(self):
        e = self.env
        e.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "ml-alpha"}})
        e.create({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
                  "metadata": {"name": "tau-workspace-alpha", "namespace": "ml-alpha"},
                  "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                              "name": "tau-researcher"},
                  "subjects": [{"kind": "User", "name": "mallory",
                                "apiGroup": "rbac.authorization.k8s.io"}]})
        e.create(cluster_queue("alpha"))
        e.create(workspace("alpha", ns="ml-alpha", queue="alpha", create_ns=False))
        e.wait_cond("alpha", "RBACReady", "False", "RoleBindingNotOwned")
        rb = e.get("/apis/rbac.authorization.k8s.io/v1/namespaces/ml-alpha/rolebindings/"
                   "tau-workspace-alpha")
        self.assertEqual(rb["subjects"][0]["name"], "mallory")  # left alone

    def test_invalid_spec(self):
        # The shipped CRD rejects this spec; an older CRD without the schema (as after a
        # partial upgrade) lets it through, and the controller must refuse it itself.
        e = self.env
        bad = workspace("alpha", ns="ml-alpha", queue="alpha")
        bad["spec"]["workloadIdentity"] = {"serviceAccountName": "Bad_Name", "clientId": "x"}
        st, _ = e.sim.req("POST", WS_API, bad)
        self.assertEqual(st, 422, "the shipped CRD schema should reject the spec")
        crd_path = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/workspaces.tau.azure.com"
        crd = e.get(crd_path)
        for v in crd["spec"]["versions"]:
            v["schema"] = {"openAPIV3Schema": {"type": "object",
                                               "x-kubernetes-preserve-unknown-fields": True}}
        e.sim.ok("PUT", crd_path, crd)
        wait_for(lambda: e.sim.req("POST", WS_API, bad)[0] in (200, 201), timeout=TIMEOUT,
                 what="the schema-less CRD accepts the spec")
        o = e.wait_cond("alpha", "RBACReady", "False", "InvalidSpec")
        self.assertIn("serviceAccountName", cond(o, "RBACReady")["message"])
        self.assertEqual(cond(o, "QueueReady")["reason"], "InvalidSpec")
        self.assertIsNone(e.get("/api/v1/namespaces/ml-alpha"))

    def test_reserved_and_foreign_namespaces_refused(self):
        e = self.env
        e.create(cluster_queue("jobqueue"))
        # The API refuses a reserved target namespace (the CRD's rule) ...
        st, body = e.sim.req("POST", WS_API, workspace("alpha", ns="kube-system"))
        self.assertEqual(st, 422, body)
        self.assertIn('spec.target.namespace: Invalid value: "string": default and kube-* '
                      "namespaces cannot host a workspace", body["message"])
        # ... but not a workspace whose name, the default target, is one: the controller does.
        e.create(workspace("kube-system"))
        e.wait_cond("kube-system", "QueueReady", "False", "NamespaceReserved")
        e.sim.ok("DELETE", WS_API + "/kube-system")
        e.wait_gone(WS_API + "/kube-system")
        e.create({"apiVersion": "v1", "kind": "Namespace",
                  "metadata": {"name": "ml-x", "labels": {
                      "app.kubernetes.io/managed-by": "taugrid",
                      "tau.azure.com/workspace": "other"}}})
        e.create(workspace("beta", ns="ml-x"))
        o = e.wait_cond("beta", "QueueReady", "False", "NamespaceOwnedByOtherWorkspace")
        self.assertIn("other", cond(o, "QueueReady")["message"])
        e.create(workspace("gamma", ns="tau-system"))


class DriftTest(WorkspaceTestBase):
    def test_deleted_rolebinding_restored(self):
        e = self.env
        self.ready_workspace()
        e.reset_stats()
        # DriftCorrected lasts only until the next pass settles it into NoDrift (it may be
        # milliseconds), so it is looked for in every status write, from a watch opened first.
        rv = e.ws("alpha")["metadata"]["resourceVersion"]
        watch = WatchStream(e.sim, WS_API + "?watch=true&fieldSelector=metadata.name%3Dalpha"
                            "&resourceVersion=" + rv, timeout=TIMEOUT)
        self.addCleanup(watch.close)
        e.sim.kubectl("delete", "rolebinding", "-n", "ml-alpha", "tau-workspace-alpha")

        def corrected(ev):
            c = cond(ev.get("object") or {}, "DriftDetected")
            return c is not None and c["status"] == "False" and c["reason"] == "DriftCorrected"
        watch.until(corrected)
        self.assertIsNotNone(e.get("/apis/rbac.authorization.k8s.io/v1/namespaces/ml-alpha/"
                                   "rolebindings/tau-workspace-alpha"))
        e.wait_cond("alpha", "DriftDetected", "False", "NoDrift")

    def test_local_queue_cluster_queue_is_replaced_not_updated(self):
        e = self.env
        self.ready_workspace()
        lq_path = KUEUE + "/namespaces/ml-alpha/localqueues/alpha"
        uid = e.get(lq_path)["metadata"]["uid"]
        # Kueue makes spec.clusterQueue immutable (CEL self == oldSelf): nobody can edit it ...
        r = e.sim.kubectl("patch", "localqueue.kueue.x-k8s.io", "-n", "ml-alpha", "alpha",
                          "--type=merge", "-p", '{"spec":{"clusterQueue":"elsewhere"}}',
                          check=False)
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("field is immutable", r.stderr)
        # ... so when the desired ClusterQueue changes (the workspace joins a team), the
        # controller replaces the LocalQueue (UID precondition) instead of updating it.
        e.create(cluster_queue("tau-ws-alpha"))
        e.sim.ok("PATCH", WS_API + "/alpha", {"spec": {"teamRef": {"name": "research"}}},
                 ctype="application/merge-patch+json")
        wait_for(lambda: (e.get(lq_path) or {}).get("spec", {}).get("clusterQueue") ==
                 "tau-ws-alpha", timeout=TIMEOUT, what="LocalQueue replaced")
        self.assertNotEqual(e.get(lq_path)["metadata"]["uid"], uid)
        e.wait_phase("alpha", "Ready")


class V0Test(WorkspaceTestBase):
    def test_second_blocked_then_promoted(self):
        e = self.env
        self.ready_workspace()
        e.create(cluster_queue("beta"))
        e.create(workspace("beta", ns="ml-beta", queue="beta"))
        o = e.wait_cond("beta", "QueueReady", "False", "BlockedByActiveWorkspace")
        self.assertIn("alpha", cond(o, "QueueReady")["message"])
        self.assertIsNone(e.get("/api/v1/namespaces/ml-beta"))
        e.sim.ok("DELETE", WS_API + "/alpha")
        e.wait_gone(WS_API + "/alpha")
        e.wait_phase("beta", "Ready")


class OperatorSelectorTest(WorkspaceTestBase):
    controller_args = ("--namespace-mode", "Operator", "--allowlist-selector",
                       "tau.azure.com/allowed=true")

    def test_namespace_appears_on_allowlist_later(self):
        e = self.env
        e.create(cluster_queue("alpha"))
        e.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "ml-alpha"}})
        e.create(workspace("alpha", ns="ml-alpha", queue="alpha", create_ns=True))
        o = e.wait_cond("alpha", "QueueReady", "False", "NamespaceNotAllowed")
        self.assertEqual(cond(o, "RBACReady")["reason"], "NamespaceNotAllowed")
        e.sim.kubectl("label", "namespace", "ml-alpha", "tau.azure.com/allowed=true")
        e.wait_phase("alpha", "Ready")
        ns = e.get("/api/v1/namespaces/ml-alpha")
        self.assertNotIn("tau.azure.com/workspace", ns["metadata"].get("labels") or {})


class OperatorFileTest(unittest.TestCase):
    def test_allowlist_file_hot_reload(self):
        tmp = tempfile.mkdtemp(prefix="ws-allow-")
        path = os.path.join(tmp, "allowlist.json")
        with open(path, "w") as f:
            f.write("[]")
        env = Env(("--namespace-mode", "Operator", "--allowlist-file", path))
        self.addCleanup(env.stop)
        env.create(cluster_queue("alpha"))
        env.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "ml-alpha"}})
        env.create(workspace("alpha", ns="ml-alpha", queue="alpha", create_ns=False))
        env.wait_cond("alpha", "QueueReady", "False", "NamespaceNotAllowed")
        with open(path + ".tmp", "w") as f:
            f.write("not json")
        os.replace(path + ".tmp", path)  # a broken update keeps the previous list
        wait_for(lambda: "reload failed" in env.log(), timeout=TIMEOUT, what="reload failure")
        with open(path + ".tmp", "w") as f:
            f.write('["ml-alpha"]')
        os.replace(path + ".tmp", path)
        env.wait_phase("alpha", "Ready")


def tau_cluster(workspaces):
    return {"apiVersion": "tau.azure.com/v1alpha1", "kind": "TauCluster",
            "metadata": {"name": "cluster"}, "spec": {"workspaces": workspaces}}


class TauClusterAllowlistTest(unittest.TestCase):
    def write(self, path, text):
        with open(path + ".tmp", "w") as f:
            f.write(text)
        os.replace(path + ".tmp", path)

    def test_allowlist_file_from_taucluster_followed_like_the_flag(self):
        tmp = tempfile.mkdtemp(prefix="ws-allow-")
        self.addCleanup(shutil.rmtree, tmp, True)
        path = os.path.join(tmp, "allowlist.json")
        self.write(path, "[]")
        env = Env()
        self.addCleanup(env.stop)
        env.create(tau_cluster({"namespaceMode": "Operator",
                                "namespaceAllowlist": {"file": path}}))
        env.create(cluster_queue("alpha"))
        env.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "ml-alpha"}})
        env.create(workspace("alpha", ns="ml-alpha", queue="alpha", create_ns=False))
        env.wait_cond("alpha", "QueueReady", "False", "NamespaceNotAllowed")
        self.write(path, '["ml-alpha"]')
        env.wait_phase("alpha", "Ready")
        self.assertIn("namespace allowlist: following a file", env.log())
        self.write(path, '["ml-other"]')
        env.wait_cond("alpha", "QueueReady", "False", "NamespaceNotAllowed")

    def test_flag_and_taucluster_sources_at_once_refused(self):
        env = Env(("--namespace-mode", "Operator",
                   "--allowlist-selector", "tau.azure.com/allowed=true"))
        self.addCleanup(env.stop)
        env.create(tau_cluster({"namespaceMode": "Operator",
                                "namespaceAllowlist": {"file": "/nonexistent/allow.json"}}))
        env.create(cluster_queue("alpha"))
        env.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {
            "name": "ml-alpha", "labels": {"tau.azure.com/allowed": "true"}}})
        env.create(workspace("alpha", ns="ml-alpha", queue="alpha", create_ns=False))
        o = env.wait_cond("alpha", "QueueReady", "False", "AllowlistSourceConflict")
        msg = cond(o, "QueueReady")["message"]
        self.assertIn("--allowlist-selector", msg)
        self.assertIn("namespaceAllowlist.file", msg)
        self.assertIsNone(env.get(KUEUE + "/namespaces/ml-alpha/localqueues/alpha"))
        # Removing the TauCluster's source resolves it: the flags alone decide.
        c = env.get("/apis/tau.azure.com/v1alpha1/clusters/cluster")
        c["spec"]["workspaces"] = {}
        env.sim.ok("PUT", "/apis/tau.azure.com/v1alpha1/clusters/cluster", c)
        env.wait_phase("alpha", "Ready")


class MapTest(unittest.TestCase):
    def test_explicit_map_and_unmapped_fails_closed(self):
        tmp = tempfile.mkdtemp(prefix="ws-map-")
        path = os.path.join(tmp, "map.json")
        with open(path, "w") as f:
            json.dump({"alpha": "team-a-prod"}, f)
        env = Env(("--namespace-map-file", path))
        self.addCleanup(env.stop)
        env.create(cluster_queue("alpha"))
        env.create(workspace("alpha", queue="alpha"))
        o = env.wait_phase("alpha", "Ready")
        self.assertEqual(o["status"]["target"]["resolvedNamespace"], "team-a-prod")
        env.sim.ok("DELETE", WS_API + "/alpha")
        env.wait_gone(WS_API + "/alpha")
        env.create(workspace("beta", queue="alpha"))
        env.wait_cond("beta", "QueueReady", "False", "WorkspaceNotMapped")
        self.assertIsNone(env.get("/api/v1/namespaces/beta"))


def _job(name, ns, queue, finished=False):
    j = {"apiVersion": "batch/v1", "kind": "Job",
         "metadata": {"name": name, "namespace": ns,
                      "labels": {"kueue.x-k8s.io/queue-name": queue}},
         "spec": {"template": {"spec": {"restartPolicy": "Never", "containers": [
             {"name": "c", "image": "busybox"}]}}}}
    return j


def _deployment(name, ns, queue):
    labels = {"app": name, "kueue.x-k8s.io/queue-name": queue, "kueue.x-k8s.io/managed": "true"}
    return {"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": name, "namespace": ns},
            "spec": {"replicas": 0, "selector": {"matchLabels": {"app": name}},
                     "template": {"metadata": {"labels": labels},
                                  "spec": {"containers": [{"name": "c", "image": "x"}]}}}}


def _workload(name, ns, queue):
    return {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Workload",
            "metadata": {"name": name, "namespace": ns},
            "spec": {"queueName": queue, "podSets": [{"name": "main", "count": 1, "template": {
                "spec": {"containers": [{"name": "c", "image": "x"}]}}}]}}


class RetargetDrainTest(WorkspaceTestBase):
    def _retarget(self, make_source, finish):
        e = self.env
        self.ready_workspace()
        src = make_source()
        e.create(src)
        o = e.ws("alpha")
        o["spec"]["target"]["namespace"] = "ml-alpha2"
        e.sim.ok("PUT", WS_API + "/alpha", o)
        # The new namespace is set up; the old route is retained while the source runs.
        wait_for(lambda: e.get(KUEUE + "/namespaces/ml-alpha2/localqueues/alpha"),
                 timeout=TIMEOUT, what="new LocalQueue")
        wait_for(lambda: "workspace cleanup waits" in e.log(), timeout=TIMEOUT, what="drain wait")
        self.assertIsNotNone(e.get(KUEUE + "/namespaces/ml-alpha/localqueues/alpha"))
        self.assertEqual(e.ws("alpha")["status"]["target"]["resolvedNamespace"], "ml-alpha")
        finish(src)
        e.wait_gone(KUEUE + "/namespaces/ml-alpha/localqueues/alpha")
        o = e.wait_ws("alpha", lambda o: (o.get("status") or {}).get("target", {}).get(
            "resolvedNamespace") == "ml-alpha2", "resolvedNamespace ml-alpha2")
        ns = e.get("/api/v1/namespaces/ml-alpha")
        self.assertIsNotNone(ns, "a retarget releases the namespace, it never deletes it")
        self.assertNotIn("tau.azure.com/workspace", ns["metadata"].get("labels") or {})
        e.wait_phase("alpha", "Ready")

    def test_job_holds_until_complete(self):
        e = self.env

        def finish(src):
            j = e.get(e.path_of(src, name=True))
            j["status"] = {"conditions": [{"type": "Complete", "status": "True"}]}
            e.sim.ok("PUT", e.path_of(src, name=True) + "/status", j)
        self._retarget(lambda: _job("train", "ml-alpha", "alpha"), finish)

    def test_deployment_holds_until_deleted(self):
        e = self.env
        self._retarget(lambda: _deployment("serve", "ml-alpha", "alpha"),
                       lambda src: e.sim.ok("DELETE", e.path_of(src, name=True)))

    def test_workload_holds_until_finished(self):
        e = self.env

        def finish(src):
            w = e.get(e.path_of(src, name=True))
            w["status"] = {"conditions": [{"type": "Finished", "status": "True",
                                           "reason": "Succeeded", "message": "done",
                                           "lastTransitionTime": "2024-01-01T00:00:00Z"}]}
            e.sim.ok("PUT", e.path_of(src, name=True) + "/status", w)
        self._retarget(lambda: _workload("wl", "ml-alpha", "alpha"), finish)


class RayDrainTest(WorkspaceTestBase):
    extra_crds = (EXTRA_CRDS,)

    def test_rayjob_and_rayservice_hold(self):
        e = self.env
        self.ready_workspace()
        rj = {"apiVersion": "ray.io/v1", "kind": "RayJob",
              "metadata": {"name": "rj", "namespace": "ml-alpha",
                           "labels": {"kueue.x-k8s.io/queue-name": "alpha"}}, "spec": {}}
        rs = {"apiVersion": "ray.io/v1", "kind": "RayService",
              "metadata": {"name": "rs", "namespace": "ml-alpha",
                           "labels": {"kueue.x-k8s.io/queue-name": "alpha"}}, "spec": {}}
        e.create(rj)
        e.create(rs)
        e.sim.ok("DELETE", WS_API + "/alpha")
        wait_for(lambda: "workspace cleanup waits" in e.log(), timeout=TIMEOUT, what="drain wait")
        self.assertIsNotNone(e.ws("alpha"))
        obj = e.get(e.path_of(rj, name=True))
        obj["status"] = {"jobDeploymentStatus": "Complete"}
        e.sim.ok("PUT", e.path_of(rj, name=True) + "/status", obj)
        e.sim.ok("DELETE", e.path_of(rs, name=True))
        e.wait_gone(WS_API + "/alpha")


class IdentityChangeTest(WorkspaceTestBase):
    def test_obsolete_service_account_revoked_before_access(self):
        e = self.env
        self.ready_workspace(wi={"serviceAccountName": "old-sa", "clientId": "c-1"})
        e.create(_job("train", "ml-alpha", "alpha"))
        o = e.ws("alpha")
        o["spec"]["target"]["namespace"] = "ml-alpha2"
        o["spec"]["workloadIdentity"] = {"serviceAccountName": "new-sa", "clientId": "c-2"}
        e.sim.ok("PUT", WS_API + "/alpha", o)
        # Revoked first, even though the Job keeps the old route draining.
        e.wait_gone("/api/v1/namespaces/ml-alpha/serviceaccounts/old-sa")
        self.assertIsNotNone(e.get(KUEUE + "/namespaces/ml-alpha/localqueues/alpha"))
        wait_for(lambda: e.get("/api/v1/namespaces/ml-alpha2/serviceaccounts/new-sa"),
                 timeout=TIMEOUT, what="new ServiceAccount")
        log = e.log()
        self.assertIn("obsolete workload identity", log)


class SamplesTest(WorkspaceTestBase):
    def test_published_samples_reconcile_to_ready(self):
        e = self.env
        for f in sorted(os.listdir(PUBLISHED)):
            if f.endswith(".yaml"):
                e.sim.kubectl("apply", "-f", os.path.join(PUBLISHED, f))
        ws = e.sim.kubectl("get", "tw", "-n", "tau-system", "-o", "json")
        names = [i["metadata"]["name"] for i in json.loads(ws.stdout)["items"]]
        self.assertEqual(names, ["aurora"])
        o = e.wait_cond("aurora", "QueueReady", "False", "ClusterQueueNotFound")
        cq = o["status"]["queue"]["clusterQueue"]
        e.create(cluster_queue(cq))
        e.wait_phase("aurora", "Ready")


class CliTest(WorkspaceTestBase):
    def test_list_status_check(self):
        e = self.env
        self.ready_workspace()
        e.create(workspace("beta", ns="ml-beta", queue="beta"))
        e.wait_cond("beta", "QueueReady", "False", "BlockedByActiveWorkspace")
        rc, out, err = e.cli("workspace", "list")
        self.assertEqual(rc, 0, err)
        lines = out.splitlines()
        self.assertEqual(lines[0].split(), ["NAME", "PHASE", "NAMESPACE", "QUEUE"])
        self.assertEqual(lines[1].split(), ["alpha", "Ready", "ml-alpha", "alpha"])
        self.assertEqual(lines[2].split()[:2], ["beta", "Pending"])
        self.assertEqual(lines[0].index("PHASE"), lines[1].index("Ready"))
        rc, out, err = e.cli("workspace", "list", "-o", "json")
        self.assertEqual(rc, 0, err)
        doc = json.loads(out)
        self.assertEqual([w["name"] for w in doc["items"]], ["alpha", "beta"])
        rc, out, err = e.cli("workspace", "status", "alpha")
        self.assertEqual(rc, 0, err)
        self.assertIn("Phase:", out)
        self.assertIn("RoleBindingReady", out)
        rc, out, err = e.cli("workspace", "status", "alpha", "-o", "json")
        self.assertEqual(json.loads(out)["phase"], "Ready")
        self.assertEqual(e.cli("workspace", "check", "alpha")[0], 0)
        rc, out, _ = e.cli("workspace", "check", "beta")
        self.assertEqual(rc, 1)
        self.assertIn("BlockedByActiveWorkspace", out)
        rc, out, _ = e.cli("workspace", "check", "beta", "-o", "json")
        self.assertEqual(rc, 1)
        self.assertFalse(json.loads(out)["ready"])
        # -o yaml is the same document as -o json, read back by a YAML 1.1 reader (PyYAML).
        for args in (["list"], ["status", "alpha"], ["check", "alpha"], ["check", "beta"]):
            rc, js, _ = e.cli("workspace", *args, "-o", "json")
            rc2, ym, _ = e.cli("workspace", *args, "-o", "yaml")
            self.assertEqual(rc2, rc, args)
            self.assertEqual(yaml.safe_load(ym), json.loads(js), args)
        self.assertEqual(e.cli("workspace", "check", "nope")[0], 1)
        self.assertEqual(e.cli("workspace", "bogus")[0], 2)
        self.assertEqual(e.cli("workspace", "check")[0], 2)

    def test_check_data_pvc(self):
        e = self.env
        self.ready_workspace()
        e.create({"apiVersion": "v1", "kind": "PersistentVolumeClaim",
                  "metadata": {"name": "blob-training", "namespace": "ml-alpha"},
                  "spec": {"accessModes": ["ReadWriteMany"], "storageClassName": "azureblob",
                           "resources": {"requests": {"storage": "1Gi"}}}},
                 "/api/v1/namespaces/ml-alpha/persistentvolumeclaims")
        rc, out, err = e.cli("workspace", "check", "alpha", "--data-pvc", "blob-training")
        self.assertIn("blob-training", out)
        self.assertIn("azureblob", out)
        rc, out, err = e.cli("workspace", "check", "alpha", "--data-pvc", "missing")
        self.assertEqual(rc, 1)


if __name__ == "__main__":
    unittest.main()
