"""End-to-end test of the workspace controller inside the real tau-aggregator.

Run with the system interpreter (python3-grpcio lives there), from tests/e2e:
    TAU_AGGREGATOR_BIN=build/tau-aggregator TAU_CLI=build/tau \
    /usr/bin/python3 -m unittest -v test_aggregator_workspaces

Each case starts kube-sim (`--authz rbac`, the Kueue and taugrid CRDs, the RBAC the chart
ships; harness/workspace.py Env) and tau-aggregator with a kubeconfig holding only its
ServiceAccount's token, creates a ClusterQueue and a TauWorkspace, waits until the real `tau`
binary says `tau workspace check NAME` (exit 0), and reads ListWorkspaces/GetWorkspace over
gRPC with message classes protoc generates from proto/.  Also covered: --leader-elect (only
the leader runs the controller; a follower answers UNAVAILABLE and takes over when the leader
stops), --no-workspace-controller, an invalid configuration refused at start-up (exit 2), and
`tau workspace check --data-pvc PVC --aggregator ADDR`: fake agents (harness/agents.py) report
the CSI drivers of two counted nodes, and the check fails naming the node whose agent lacks the
PVC's driver, then passes once it reports it; then fails again naming the node whose agent's live
CSI Identity Probe says the driver is not ready, as does `tau storage check --aggregator` (which
says "live Probe not checked" without an aggregator).
Waits are wait-for-condition loops with deadlines, never fixed sleeps.
"""
import json
import os
import re
import subprocess
import time
import unittest

import grpc

from harness import paths, proto, require
from harness import workspace as wst
from harness.agents import FakeAgent, inventory_from_node
from harness.tokens import agent_token
from harness.waits import wait_for

CLI_BIN = paths.CLI_BIN
CSI_NODES = ("gpu-a", "gpu-b")
BLOB = "blob.csi.azure.com"

qpb = ipb = None


def setUpModule():
    global qpb, ipb
    require.binary(paths.AGG_BIN, "TAU_AGGREGATOR_BIN")
    require.binary(CLI_BIN, "TAU_CLI")
    qpb, ipb = proto.query(), proto.inventory()


class AggregatorWorkspacesTest(unittest.TestCase):
    def setUp(self):
        self.env = wst.Env(start=False)
        self.addCleanup(self.env.stop)
        self.aggs = []

    def tearDown(self):
        for a in self.aggs:
            if a.p.poll() is None:
                a.stop()

    def start(self, name="aggregator", extra=(), expect_ready=True):
        a = self.env.aggregator(name, extra, expect_ready)
        self.aggs.append(a)
        return a

    def tau(self, *args):
        r = subprocess.run([CLI_BIN, "--kubeconfig", self.env.sim.kubeconfig,
                            "--system-namespace", "tau-system"] + list(args),
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           universal_newlines=True, timeout=60)
        return r.returncode, r.stdout, r.stderr

    def create_workspace(self, name="alpha", ns="ml-alpha", queue="alpha"):
        self.env.create(wst.cluster_queue(queue))
        self.env.create(wst.workspace(name, ns=ns, queue=queue))

    def wait_checked(self, name, agg):
        last = []

        def checked():
            last[:] = [self.tau("workspace", "check", name)]
            return last[0][0] == 0
        try:
            wait_for(checked, what="`tau workspace check %s` exits 0" % name)
        except AssertionError as e:
            raise AssertionError("%s\nlast check: %r\naggregator log:\n%s" % (
                e, last, agg.log()[-6000:]))

    def wait_served(self, agg):
        """ListWorkspaces answers once the controller's cache has synced."""
        def served():
            try:
                return agg.list_workspaces() is not None
            except grpc.RpcError as e:
                if e.code() != grpc.StatusCode.UNAVAILABLE:
                    raise
                return False
        wait_for(served, what="ListWorkspaces served")

    def assert_alpha(self, ws):
        self.assertEqual(ws.name, "alpha")
        self.assertEqual(ws.phase, "Ready")
        self.assertEqual(getattr(ws, "namespace"), "ml-alpha")
        self.assertEqual(ws.queue, "alpha")
        conds = {c.type: c for c in ws.conditions}
        self.assertIn("QueueReady", conds)
        self.assertEqual(conds["QueueReady"].status, "True")
        self.assertTrue(all(c.status == "True" for c in conds.values()
                            if c.type.endswith("Ready")), conds)
        # lastTransitionTime travels: written during this test, so within the last 10 minutes.
        now_ms = int(time.time() * 1000)
        for c in conds.values():
            self.assertGreater(c.last_transition_unix_ms, now_ms - 600000, c)
            self.assertLessEqual(c.last_transition_unix_ms, now_ms + 5000, c)

    def test_workspace_reconciled_and_served(self):
        agg = self.start()
        self.wait_served(agg)
        err = agg.rpc_error(agg.get_workspace, "alpha")
        self.assertIsNotNone(err)
        self.assertEqual(err.code(), grpc.StatusCode.NOT_FOUND)
        self.assertIn("alpha", err.details())
        self.create_workspace()
        self.wait_checked("alpha", agg)
        # The cache follows the status the controller wrote; the check read the API.
        ws = wait_for(lambda: [w for w in agg.list_workspaces() if w.phase == "Ready"],
                      what="alpha Ready in ListWorkspaces")
        self.assertEqual(len(ws), 1)
        self.assert_alpha(ws[0])
        self.assert_alpha(agg.get_workspace("alpha"))
        err = agg.rpc_error(agg.get_workspace, "nope")
        self.assertEqual(err.code(), grpc.StatusCode.NOT_FOUND)
        self.assertIn("nope", err.details())
        log = agg.log()
        self.assertEqual(log.count("workspace controller started"), 1, log)
        self.assertIn("tau-system", log)
        self.assertEqual(agg.stop(), 0, agg.log()[-3000:])

    def workspace_events(self, name="alpha"):
        """Events about TauWorkspace `name`, as (type, reason, message)."""
        items = self.env.sim.ok("GET", "/api/v1/namespaces/tau-system/events")["items"]
        return [(e["type"], e["reason"], e["message"]) for e in items
                if (e.get("involvedObject") or {}).get("kind") == "TauWorkspace"
                and e["involvedObject"].get("name") == name]

    def reconciles(self, agg):
        body = agg.metrics()
        m = re.search(r'^tau_controller_reconcile_total\{controller="workspace"\} (\d+)$', body,
                      re.M)
        self.assertIsNotNone(m, body)
        return int(m.group(1))

    def test_events_on_writes_and_condition_changes_only(self):
        """The workspace controller says what it wrote and which condition moved, with the
        condition's reason, once: a pass that changes nothing records no Event; a RoleBinding
        deleted out of band is restored with a Warning; its passes show on /metrics."""
        agg = self.start()
        self.wait_served(agg)
        self.create_workspace()
        self.wait_checked("alpha", agg)
        ws = self.env.ws("alpha")
        conds = {c["type"]: c for c in ws["status"]["conditions"]}
        # Conditions: each of the four is announced with its reason (and its message, or what
        # moved when it has none), Normal as none is bad news.  Writes: what was created.
        want = [("Normal", c["reason"], c.get("message") or
                 "%s is %s (%s)" % (t, c["status"], c["reason"]))
                for t, c in sorted(conds.items())
                if t in ("RBACReady", "QueueReady", "WorkloadIdentityReady", "DriftDetected")]
        self.assertEqual(len(want), 4, conds)
        want += [("Normal", "ObjectCreated", "rolebindings ml-alpha/tau-workspace-alpha created"),
                 ("Normal", "ObjectCreated", "localqueues ml-alpha/alpha created")]
        evs = wait_for(lambda: (lambda e: e if all(w in e for w in want) else None)(
            self.workspace_events()), what="the Events of alpha's first passes: %s" % want)
        # Once each: the passes that found nothing new (and the status write's own echo)
        # recorded nothing twice.
        self.assertEqual(len(evs), len(set(evs)), evs)
        before = self.reconciles(agg)
        self.assertGreaterEqual(before, 1)
        seen = set(evs)
        # A change that is no news: an annotation, reconciled, no Event.
        obj = self.env.ws("alpha")
        obj["metadata"].setdefault("annotations", {})["example.com/touched"] = "1"
        self.env.sim.ok("PUT", wst.WS_API + "/alpha", obj)
        wait_for(lambda: self.reconciles(agg) > before, what="a pass after the annotation")
        self.assertEqual([e for e in self.workspace_events() if e not in seen], [])
        # Drift: the RoleBinding deleted behind the controller's back comes back, with a Warning
        # for the write, and DriftDetected's move to DriftCorrected is announced.
        self.env.sim.ok("DELETE", "/apis/rbac.authorization.k8s.io/v1/namespaces/ml-alpha/"
                        "rolebindings/tau-workspace-alpha", expect=(200, 202))
        evs = wait_for(lambda: (lambda e: e if any(r == "ObjectRestored" for _, r, _ in e)
                                else None)([e for e in self.workspace_events() if e not in seen]),
                       what="the RoleBinding restored, with an Event")
        self.assertIn(("Warning", "ObjectRestored",
                       "rolebindings ml-alpha/tau-workspace-alpha restored: it was deleted out "
                       "of band"), evs)
        drift = self.env.wait_cond("alpha", "DriftDetected", "False", "DriftCorrected")
        dc = [c for c in drift["status"]["conditions"] if c["type"] == "DriftDetected"][0]
        self.assertIn("tau-workspace-alpha", dc["message"])
        wait_for(lambda: ("Normal", "DriftCorrected", dc["message"]) in self.workspace_events(),
                 what="an Event for DriftDetected DriftCorrected")
        self.assertEqual(agg.stop(), 0, agg.log()[-3000:])

    def test_leader_runs_the_controller_follower_answers_from_its_cache(self):
        self.env.create({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
                         "metadata": {"name": "tau-aggregator-leader-election",
                                      "namespace": "tau-system"},
                         "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role",
                                     "name": "tau-aggregator-leader-election"},
                         "subjects": [{"kind": "ServiceAccount", "name": "tau-aggregator",
                                       "namespace": "tau-system"}]})
        a1 = self.start("agg1", ("--leader-elect",))
        a2 = self.start("agg2", ("--leader-elect",))
        leaders = wait_for(lambda: [a for a in (a1, a2) if a.is_leader()], what="a leader")
        self.assertEqual(len(leaders), 1)
        leader, follower = leaders[0], (a2 if leaders[0] is a1 else a1)
        self.create_workspace()
        self.wait_checked("alpha", leader)
        self.wait_served(leader)
        self.assert_alpha(leader.get_workspace("alpha"))
        # The follower reconciles nothing but answers from its own informer cache.
        ws = wait_for(lambda: [w for w in follower.list_workspaces() if w.phase == "Ready"],
                      what="alpha Ready in the follower's ListWorkspaces")
        self.assertEqual(len(ws), 1)
        self.assert_alpha(ws[0])
        self.assert_alpha(follower.get_workspace("alpha"))
        err = follower.rpc_error(follower.get_workspace, "nope")
        self.assertEqual(err.code(), grpc.StatusCode.NOT_FOUND)
        self.assertNotIn("workspace controller started", follower.log())
        # The leader releases the Lease on SIGTERM; the follower starts its controller.
        self.assertEqual(leader.stop(), 0, leader.log()[-3000:])
        wait_for(follower.is_leader, timeout=60, what="follower takes over")
        self.wait_served(follower)
        self.assert_alpha(follower.get_workspace("alpha"))
        self.assertEqual(follower.log().count("workspace controller started"), 1)
        self.assertEqual(follower.stop(), 0, follower.log()[-3000:])

    def test_no_workspace_controller(self):
        agg = self.start(extra=("--no-workspace-controller",))
        for call in (agg.list_workspaces, lambda: agg.get_workspace("alpha")):
            err = agg.rpc_error(call)
            self.assertIsNotNone(err)
            self.assertEqual(err.code(), grpc.StatusCode.UNAVAILABLE)
        self.assertNotIn("workspace controller started", agg.log())
        self.assertEqual(agg.stop(), 0)

    def test_invalid_configuration_refused_at_start(self):
        agg = self.start(extra=("--allowlist-selector", "team=a", "--allowlist-file",
                                os.path.join(self.env.tmp, "allow.json")),
                         expect_ready=False)
        self.assertEqual(agg.p.wait(30), 2)
        self.assertIn("allowlist", agg.log())
        agg = self.start("bad-mode", extra=("--namespace-mode", "Sometimes"), expect_ready=False)
        self.assertEqual(agg.p.wait(30), 2)


def _gpu_node(name):
    alloc = {"cpu": "32", "memory": "256Gi", "nvidia.com/gpu": "8", "pods": "110"}
    return {"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": name,
                         "labels": {"kubernetes.io/os": "linux", "kubernetes.io/hostname": name,
                                    "tau.azure.com/gpu-class": "h100"}},
            "spec": {},
            "status": {"allocatable": alloc, "capacity": alloc,
                       "conditions": [{"type": "Ready", "status": "True"}]}}


def _with_csi(node, drivers, probe=None):
    """An inventory listing `drivers` registered; with `probe` (a TriState), the agent's live
    Identity Probe of each answered that (FALSE with an error)."""
    inv = inventory_from_node(ipb, node)
    for d in sorted(drivers):
        c = inv.csi_drivers.add(name=d, in_csi_node=True, socket_present=True, supported=True)
        if probe is not None:
            c.probed = True
            c.probe_ready = probe
            if probe != ipb.TRI_STATE_TRUE:
                c.probe_error = "Probe: the driver answered not ready"
    # A different inventory carries a different digest.
    inv.digest = inv.digest[:48] + "%016x" % (len(drivers) * 4 + (probe or 0))
    return inv


class WorkspaceCsiCheckTest(unittest.TestCase):
    def setUp(self):
        self.env = wst.Env(start=False, agent_nodes=CSI_NODES)
        self.addCleanup(self.env.stop)
        self.agg = self.env.aggregator("aggregator")
        self.addCleanup(self.agg.stop)
        self.agents = []

    def tearDown(self):
        for a in self.agents:
            if not a.done:
                a.cancel()

    def tau(self, *args):
        r = subprocess.run([CLI_BIN, "--kubeconfig", self.env.sim.kubeconfig,
                            "--system-namespace", "tau-system"] + list(args),
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           universal_newlines=True, timeout=60)
        return r.returncode, r.stdout, r.stderr

    def check(self, *extra):
        return self.tau("workspace", "check", "alpha", "--data-pvc", "data", *extra)

    def counted(self):
        resp = self.agg.unary("ListNodes", qpb.ListNodesRequest(counted_only=True),
                              qpb.ListNodesResponse)
        return sorted(n.name for n in resp.nodes)

    def test_check_reports_csi_registration_per_counted_node(self):
        e = self.env
        e.create(wst.cluster_queue("alpha"))
        e.create(wst.workspace("alpha", ns="ml-alpha", queue="alpha"))
        wait_for(lambda: self.tau("workspace", "check", "alpha")[0] == 0,
                 what="workspace alpha Ready")
        e.create({"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass",
                  "metadata": {"name": "azureblob"}, "provisioner": BLOB},
                 "/apis/storage.k8s.io/v1/storageclasses")
        e.create({"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass",
                  "metadata": {"name": "intree"}, "provisioner": "kubernetes.io/azure-disk"},
                 "/apis/storage.k8s.io/v1/storageclasses")
        pvcs = "/api/v1/namespaces/ml-alpha/persistentvolumeclaims"
        for name, cls in (("data", "azureblob"), ("legacy", "intree")):
            pvc = e.create({"apiVersion": "v1", "kind": "PersistentVolumeClaim",
                            "metadata": {"name": name, "namespace": "ml-alpha"},
                            "spec": {"accessModes": ["ReadWriteMany"], "storageClassName": cls,
                                     "resources": {"requests": {"storage": "1Gi"}}}}, pvcs)
            pvc["status"] = {"phase": "Bound"}
            e.sim.ok("PUT", "%s/%s/status" % (pvcs, name), pvc)
        nodes = {n: _gpu_node(n) for n in CSI_NODES}
        for n in nodes.values():
            e.create(n, "/api/v1/nodes")
        have = {"gpu-a": [BLOB], "gpu-b": ["disk.csi.azure.com"]}
        for n in CSI_NODES:
            a = FakeAgent(ipb, self.agg.channel, agent_token(n), _with_csi(nodes[n], have[n]))
            self.agents.append(a)
            self.assertEqual(a.wait_ack(1).status, ipb.ACK_STATUS_OK)
        wait_for(lambda: self.counted() == list(CSI_NODES), what="both nodes counted")

        # gpu-b's agent does not report the driver: exit 1 naming it.
        rc, out, err = self.check("--aggregator", self.agg.addr, "--insecure")
        self.assertEqual(rc, 1, out + err)
        self.assertIn("NODE", out)
        self.assertIn("missing on 1 of 2 eligible nodes: gpu-b", out)
        rc, out, err = self.check("--aggregator", self.agg.addr, "-o", "json")
        self.assertEqual(rc, 1, out + err)
        csi = json.loads(out)["csi"]
        self.assertEqual(csi["driver"], BLOB)
        self.assertEqual(csi["eligible"], 2)
        self.assertEqual(csi["missing"], 1)
        self.assertFalse(csi["ok"])
        self.assertEqual([(x["name"], x["inCSINode"], x["socketPresent"]) for x in csi["nodes"]],
                         [("gpu-a", True, True), ("gpu-b", False, False)])

        # An in-tree provisioner has no CSI driver to look for: the check fails saying so.
        rc, out, err = self.tau("workspace", "check", "alpha", "--data-pvc", "legacy",
                                "--aggregator", self.agg.addr)
        self.assertEqual(rc, 1, out + err)
        self.assertIn("in-tree", out)

        # Usage errors exit 2; an aggregator nobody listens on fails the check (exit 1).
        self.assertEqual(self.check("--aggregator", self.agg.addr, "--insecure",
                                    "--ca-file", "/nonexistent")[0], 2)
        self.assertEqual(self.check("--aggregator", self.agg.addr, "--ca-file",
                                    "/nonexistent")[0], 2)
        rc, out, err = self.check("--aggregator", "127.0.0.1:1")
        self.assertEqual(rc, 1, out + err)
        self.assertIn("127.0.0.1:1", err)
        self.assertIn("cannot answer", err)

        # gpu-b's agent now reports the driver: every counted node has it, exit 0.
        self.agents[1].send_inventory(_with_csi(nodes["gpu-b"], [BLOB, "disk.csi.azure.com"]))
        self.assertEqual(self.agents[1].wait_ack(2).status, ipb.ACK_STATUS_OK)
        last = []

        def passes():
            last[:] = [self.check("--aggregator", self.agg.addr, "--insecure")]
            return last[0][0] == 0
        wait_for(passes, what="check passes once gpu-b reports " + BLOB)
        self.assertIn("registered on all 2 eligible nodes", last[0][1])
        # These fake agents made no live check: unknown, said, not a silent pass.
        self.assertIn("live Probe unknown on 2 of 2 nodes: gpu-a gpu-b", last[0][1])

        # The live check (issue 25): gpu-b's driver is registered but does not answer Probe.
        for n, probe in (("gpu-a", ipb.TRI_STATE_TRUE), ("gpu-b", ipb.TRI_STATE_FALSE)):
            a = self.agents[CSI_NODES.index(n)]
            drivers = [BLOB] if n == "gpu-a" else [BLOB, "disk.csi.azure.com"]
            self.assertEqual(a.wait_ack(a.send_inventory(_with_csi(nodes[n], drivers,
                                                                   probe))).status,
                             ipb.ACK_STATUS_OK)

        def fails():
            last[:] = [self.check("--aggregator", self.agg.addr, "--insecure")]
            return last[0][0] == 1
        wait_for(fails, what="check fails once gpu-b's driver does not answer Probe")
        self.assertIn("CSI driver %s: node gpu-b: %s registered in CSINode but not answering "
                      "Probe: Probe: the driver answered not ready" % (BLOB, BLOB), last[0][1])
        rc, out, err = self.check("--aggregator", self.agg.addr, "-o", "json")
        csi = json.loads(out)["csi"]
        self.assertEqual([(x["name"], x["probe"]) for x in csi["nodes"]],
                         [("gpu-a", "ready"), ("gpu-b", "notReady")])
        self.assertEqual((csi["probeFailed"], csi["ok"]), (1, False))

        # tau storage check reads registration from CSINode and the live Probe through the
        # same aggregator: the same verdict, naming gpu-b.
        for n in CSI_NODES:
            e.create({"apiVersion": "storage.k8s.io/v1", "kind": "CSINode",
                      "metadata": {"name": n},
                      "spec": {"drivers": [{"name": BLOB, "nodeID": n}]}},
                     "/apis/storage.k8s.io/v1/csinodes")
        rc, out, err = self.tau("storage", "check", "--driver", BLOB, "--aggregator",
                                self.agg.addr, "--insecure")
        self.assertEqual(rc, 1, out + err)
        self.assertIn("node gpu-b: %s registered in CSINode but not answering Probe" % BLOB, out)
        self.assertIn("but not answering Probe on every one", out)
        # Without an aggregator (none named, TAU_AGGREGATOR unset) it says the live Probe was
        # not checked, and registration alone decides.
        r = subprocess.run([CLI_BIN, "--kubeconfig", e.sim.kubeconfig, "storage", "check",
                            "--driver", BLOB], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           universal_newlines=True, timeout=60,
                           env={k: v for k, v in os.environ.items() if k != "TAU_AGGREGATOR"})
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertIn("live Probe not checked", r.stdout)


if __name__ == "__main__":
    unittest.main()
