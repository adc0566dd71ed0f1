"""End-to-end scenarios of the team capacity budget (docs/budget.md, rules P1-P8).

Run with the system interpreter (python3-grpcio lives there), from tests/e2e:
    TAU_AGGREGATOR_BIN=build/tau-aggregator TAU_CLI=build/tau \
    /usr/bin/python3 -m unittest -v test_budget

What runs: kube-sim with `--authz rbac`, the real Kueue CRDs (and kube-sim's Kueue admission
rules, so every object the controller writes must pass them), the taugrid CRDs and the chart's
RBAC; the real tau-aggregator with only its ServiceAccount's token; fake agents over grpcio
where a scenario needs reports (harness/budget.py says where each piece comes from).

  SharedClusterTest  one kube-sim + one aggregator (MultipleWorkspaces=true, --budget-resync
                     3600s so that every change below is picked up by its event, P8; the sync
                     gate opens on its 1 s timeout, nodes count with their Node's allocatable):
                     P1/P2 exact Cohort, ResourceFlavors and status; P3 workspace ClusterQueues;
                     P8 triggers; P4 conflicts; P5 an unusable selector; kube-sim faults; P6
                     shrink; P7 leaving and another team taking the pool.  In order: each case
                     leaves the cluster as the next one expects it.
  GateObserveV0Test  agents and a 600 s gate: nothing written before the pool is established
                     (P5), Observe mode, a retained flavor whose name was cleaned up keeps
                     its class (issue 24, finding 5), v0 (one active workspace), a steady cluster makes zero
                     writes in 15 budget passes (--budget-resync 2s).
  LeaderStormTest    two aggregators with --leader-elect; the leader is SIGKILLed during a node
                     storm; every Cohort version seen on a watch holds at least the true pool,
                     and the new leader writes the exact pool once its own inventory is
                     established.

Expected objects are exact (quantities compared by value); waits are wait-for-condition loops
with deadlines, never fixed sleeps.
"""
import threading
import unittest

from harness import budget as h
from harness import proto
from harness import workspace as wst
from harness.agents import FakeAgent, inventory_from_node
from harness.budget import (CLUSTER, COHORTS, CQS, KUEUE, NODES, RFS, TAU, TEAMS, WORKSPACES,
                            OneCluster, cohort_diffs, cond_diffs, cq_diffs, quota, rf_diffs)
from harness.tokens import agent_token
from harness.waits import wait_for

STEADY_PASSES = 15  # budget passes a steady cluster makes without writing (test_03)
STEADY_DEADLINE_S = 120.0  # for those passes: about 30 s at --budget-resync 2s


def setUpModule():
    h.require_all()


def fixture_nodes():
    """P1/P2: two GPU classes plus every kind of node that must not count."""
    return [
        h.node("h100-1", "h100", h.H100, labels={"tau.test/rack": "r1"}),
        h.node("h100-2", "h100", h.H100_B, labels={"tau.test/rack": "r2"}),
        h.node("a100-1", "a100", h.A100, labels={"tau.test/rack": "r1"}),
        h.node("cpu-1", None, h.CPU, labels={"tau.test/rack": "cpu"}),
        h.node("win-1", "h100", h.H100, os_name="windows"),
        h.node("notready-1", "h100", h.H100, ready=False),
        h.node("cordoned-1", "h100", h.H100, cordoned=True),
        h.node("deleting-1", "h100", h.H100, finalizers=["tau.test/hold"]),
    ]


class SharedClusterTest(OneCluster, unittest.TestCase):
    # The workspace every later case keeps; test_02 adds a second one and removes it again.
    WS = {"alpha": "ml-alpha"}
    AGG_ARGS = ("--feature-gates", "MultipleWorkspaces=true", "--budget-resync", "3600s")

    @classmethod
    def populate(cls, c):
        for n in fixture_nodes():
            c.create(n, NODES)
        c.delete(NODES + "/deleting-1")  # held by its finalizer: deletionTimestamp set

    # -- helpers --

    def uid(self, path):
        return self.c.get(path)["metadata"]["uid"]

    def want(self, selector=None, zero=False):
        return self.shape.groups(self.c.pool(selector), zero=zero)

    def wait_budget(self, msg, selector=None, zero=False):
        """Wait until the research Cohort holds exactly the pool (or zeros on its shape)."""
        team_uid = self.uid(TEAMS + "/research")
        want = self.want(selector, zero)
        self.c.wait_ok(lambda: cohort_diffs(self.c.cohort("research"), "research", team_uid,
                                            want), msg)
        return self.c.cohort("research")

    def queue_diffs(self, workspaces=None):
        """Every team workspace's ClusterQueue against the Cohort's current shape."""
        cohort = self.c.cohort("research")
        groups = h.norm_groups((cohort or {}).get("spec", {}).get("resourceGroups"))
        d = []
        for ws, ns in sorted((workspaces or self.WS).items()):
            obj = self.c.get(WORKSPACES + "/" + ws)
            if obj is None:
                d.append("TauWorkspace %s does not exist" % ws)
                continue
            d += cq_diffs(self.c.get(CQS + "/" + h.cq_name(ws)), ws, obj["metadata"]["uid"],
                          "research", ns, groups)
        return d

    def wait_conflict(self, names, team_text=None):
        """P4: TauCluster ConflictDetected and TauTeam QuotaReady ConflictDetected name the
        objects, the team is Degraded and the Cohort keeps its shape at zero (P5)."""
        team_uid = self.uid(TEAMS + "/research")
        want = self.want(zero=True)
        c = self.c

        def check():
            t = c.team("research")
            d = cond_diffs(c.cluster(), "ConflictDetected", "True", None, names)
            d += cond_diffs(t, "QuotaReady", "False", "ConflictDetected", team_text or names)
            if ((t or {}).get("status") or {}).get("phase") != "Degraded":
                d.append("TauTeam phase %r, want Degraded" % ((t or {}).get("status") or {}).get(
                    "phase"))
            return d + cohort_diffs(c.cohort("research"), "research", team_uid, want)
        c.wait_ok(check, "conflict %s reported and the budget zeroed" % names)

    def wait_restored(self, msg):
        self.wait_budget(msg)
        self.c.wait_ok(lambda: self.c.team_ready_diffs("research") +
                       cond_diffs(self.c.cluster(), "ConflictDetected", "False"),
                       msg + ": team Ready, no conflict")

    def undo_merge(self, path, patch):
        """When the case ends, pass or fail, apply `patch` (so one failure does not cascade)."""
        self.addCleanup(self.c.sim.req, "PATCH", path, patch, "application/merge-patch+json")

    def undo_create(self, path):
        """When the case ends, delete `path` if it still exists."""
        self.addCleanup(self.c.sim.req, "DELETE", path)

    def assert_untouched(self, path, created):
        now = self.c.get(path)
        self.assertIsNotNone(now, path)
        for k in ("resourceVersion", "labels", "annotations", "finalizers"):
            self.assertEqual(now["metadata"].get(k), created["metadata"].get(k),
                             "%s metadata.%s changed" % (path, k))
        self.assertEqual(now.get("spec"), created.get("spec"), path + " spec changed")

    # -- P1, P2 --

    def test_01_pool_is_the_budget(self):
        c = self.c
        pool = c.pool()
        # The oracle counts the two Ready, schedulable Linux h100 nodes and the a100 node; the
        # CPU-only, Windows, NotReady, cordoned and deleting nodes are out.
        self.assertEqual({k: v["nodes"] for k, v in pool.items()},
                         {"a100": ["a100-1"], "h100": ["h100-1", "h100-2"]})
        cohort = self.wait_budget("Cohort tau-team-research holds the pool")
        self.assertEqual(h.qty("191500m"), quota(cohort, "h100", "cpu"))
        self.assertEqual(h.qty("3786Gi"), quota(cohort, "h100", "memory"))
        self.assertEqual(h.qty("16"), quota(cohort, "h100", "nvidia.com/gpu"))
        self.assertEqual(h.qty("1536Mi"), quota(cohort, "h100", "hugepages-2Mi"))
        self.assertEqual(0, quota(cohort, "a100", "rdma/ib"))
        self.assertEqual(0, quota(cohort, "a100", "hugepages-2Mi"))
        cluster_uid = self.uid(CLUSTER)
        c.wait_ok(lambda: rf_diffs(c.get(RFS + "/taugrid-gpu-a100"), "a100", cluster_uid) +
                  rf_diffs(c.get(RFS + "/taugrid-gpu-h100"), "h100", cluster_uid),
                  "one ResourceFlavor per class")
        self.assertEqual(c.ours(RFS), ["taugrid-gpu-a100", "taugrid-gpu-h100"])
        self.assertEqual(c.names(COHORTS), ["tau-team-research"])
        self.assertEqual(c.items(CQS), [])
        c.wait_ok(lambda: c.team_ready_diffs("research"), "TauTeam research Ready")
        managed = [("Cohort", "tau-team-research"), ("ResourceFlavor", "taugrid-gpu-a100"),
                   ("ResourceFlavor", "taugrid-gpu-h100")]
        c.wait_ok(lambda: c.cluster_ready_diffs(pool, managed), "TauCluster status")

    # -- P3 --

    def test_02_workspace_queues_borrow_from_the_cohort(self):
        """MultipleWorkspaces=true: two workspaces, two queues sharing the one Cohort."""
        c = self.c
        both = dict(self.WS, beta="ml-beta")
        self.undo_create(WORKSPACES + "/beta")
        for ws, ns in sorted(both.items()):
            c.create(wst.workspace(ws, ns=ns, team="research"), WORKSPACES)
        for ws in sorted(both):
            c.env.wait_phase(ws, "Ready")
        self.wait_budget("the Cohort still holds the pool")
        c.wait_ok(lambda: self.queue_diffs(both), "a zero-quota ClusterQueue per workspace")
        self.assertEqual(c.ours(CQS), ["tau-ws-alpha", "tau-ws-beta"])
        for ws, ns in sorted(both.items()):
            st = c.get(WORKSPACES + "/" + ws)["status"]
            self.assertEqual(st["target"]["resolvedNamespace"], ns)
            self.assertEqual(st["queue"]["clusterQueue"], h.cq_name(ws))
            self.assertEqual(wst.cond(c.get(WORKSPACES + "/" + ws), "QueueReady")["status"],
                             "True")
            lq = c.get("%s/namespaces/%s/localqueues/%s" % (KUEUE, ns, st["queue"]["localQueue"]))
            self.assertEqual(lq["spec"]["clusterQueue"], h.cq_name(ws))
        managed = [("Cohort", "tau-team-research"), ("ResourceFlavor", "taugrid-gpu-a100"),
                   ("ResourceFlavor", "taugrid-gpu-h100"), ("ClusterQueue", "tau-ws-alpha"),
                   ("ClusterQueue", "tau-ws-beta")]
        c.wait_ok(lambda: c.team_ready_diffs("research") +
                  c.cluster_ready_diffs(c.pool(), managed), "team and cluster status")
        # A workspace that goes takes its queue with it; the other one stays.
        c.delete(WORKSPACES + "/beta")
        c.wait_gone(WORKSPACES + "/beta")
        c.wait_gone(CQS + "/tau-ws-beta")
        c.wait_ok(self.queue_diffs, "alpha's queue stays")
        self.wait_budget("the Cohort still holds the pool")

    # -- P8 --

    def test_03_each_change_triggers_a_reconcile(self):
        """The aggregator runs with --budget-resync 3600s: each change is seen by its event."""
        c = self.c
        self.undo_merge(NODES + "/cpu-1", {"metadata": {"labels": {h.GPU_CLASS: None}}})
        self.undo_merge(NODES + "/a100-1/status",
                        {"status": {"allocatable": {"nvidia.com/gpu": "4"}}})
        self.undo_merge(CLUSTER, {"spec": {"nodes": None}})
        self.undo_merge(TEAMS + "/research", {"spec": {"quota": None}})
        # A node label change: cpu-1 becomes an a100 node, then not again.
        c.merge(NODES + "/cpu-1", {"metadata": {"labels": {h.GPU_CLASS: "a100"}}})
        cohort = self.wait_budget("label change: cpu-1 counts in a100")
        self.assertEqual(quota(cohort, "a100", "cpu"), 80)
        c.merge(NODES + "/cpu-1", {"metadata": {"labels": {h.GPU_CLASS: None}}})
        self.wait_budget("label removed: cpu-1 out again")
        # An allocatable change.
        c.merge(NODES + "/a100-1/status", {"status": {"allocatable": {"nvidia.com/gpu": "6"}}})
        cohort = self.wait_budget("allocatable change")
        self.assertEqual(quota(cohort, "a100", "nvidia.com/gpu"), 6)
        c.merge(NODES + "/a100-1/status", {"status": {"allocatable": {"nvidia.com/gpu": "4"}}})
        self.wait_budget("allocatable back")
        # A TauCluster change: the node selector keeps rack r1 only.
        sel = {"tau.test/rack": "r1"}
        c.merge(CLUSTER, {"spec": {"nodes": {"selector": sel}}})
        cohort = self.wait_budget("TauCluster selector narrows the pool", selector=sel)
        self.assertEqual(quota(cohort, "h100", "nvidia.com/gpu"), 8)
        # Our flavors carry the selector, so Kueue's pods land only on counted nodes (issue
        # 24, finding 3); without it they lose it again.
        cluster_uid = self.uid(CLUSTER)
        c.wait_ok(lambda: rf_diffs(c.get(RFS + "/taugrid-gpu-a100"), "a100", cluster_uid, sel) +
                  rf_diffs(c.get(RFS + "/taugrid-gpu-h100"), "h100", cluster_uid, sel),
                  "flavors carry the node selector")
        c.merge(CLUSTER, {"spec": {"nodes": None}})
        self.wait_budget("selector removed")
        c.wait_ok(lambda: rf_diffs(c.get(RFS + "/taugrid-gpu-a100"), "a100", cluster_uid) +
                  rf_diffs(c.get(RFS + "/taugrid-gpu-h100"), "h100", cluster_uid),
                  "flavors lose the node selector with it")
        # A team change: spec.quota on the capacity team zeroes the budget, removing it restores.
        c.merge(TEAMS + "/research", {"spec": {"quota": [
            {"flavor": "taugrid-gpu-h100", "resource": "nvidia.com/gpu", "nominalQuota": "4"}]}})
        self.wait_budget("team change: spec.quota zeroes the budget", zero=True)
        c.merge(TEAMS + "/research", {"spec": {"quota": None}})
        self.wait_budget("spec.quota removed")
        # Our Cohort deleted by someone: written again, and the team follows the new UID.
        old_uid = self.uid(COHORTS + "/tau-team-research")
        c.delete(COHORTS + "/tau-team-research")
        self.wait_budget("Cohort re-created")
        self.assertNotEqual(self.uid(COHORTS + "/tau-team-research"), old_uid)
        c.wait_ok(lambda: c.team_ready_diffs("research"), "team cohortUID follows")
        # Our ClusterQueue and ResourceFlavor edited by hand: put back.
        c.merge(CQS + "/tau-ws-alpha", {"spec": {"namespaceSelector": {
            "matchLabels": {"kubernetes.io/metadata.name": "elsewhere"}}}})
        c.wait_ok(self.queue_diffs, "ClusterQueue drift corrected")
        c.merge(RFS + "/taugrid-gpu-a100", {"spec": {"nodeLabels": {"tau.test/extra": "x"}}})
        cluster_uid = self.uid(CLUSTER)
        c.wait_ok(lambda: rf_diffs(c.get(RFS + "/taugrid-gpu-a100"), "a100", cluster_uid),
                  "ResourceFlavor drift corrected")
        c.wait_ok(lambda: c.team_ready_diffs("research") + c.cluster_ready_diffs(c.pool()),
                  "status settles")

    # -- P4 --

    def test_04_conflicts_zero_the_budget_and_touch_nothing(self):
        c = self.c
        for path in (RFS + "/other-h100", RFS + "/other-nowhere", RFS + "/other-cpu",
                     CQS + "/other-cq", CQS + "/legacy-cq", CQS + "/quota-cq",
                     COHORTS + "/other-cohort"):
            self.undo_create(path)
        self.undo_merge(WORKSPACES + "/alpha", {"spec": {"quota": None}})
        self.undo_merge(CQS + "/other-cq/status", {"status": {"flavorsReservation": None}})
        self.undo_merge(NODES + "/cpu-1", {"metadata": {"labels": {h.GPU_CLASS: None}}})
        self.undo_merge(NODES + "/a100-1/status",
                        {"status": {"allocatable": {"nvidia.com/gpu": "4"}}})
        self.undo_merge(TEAMS + "/research", {"spec": {"quota": None}})
        rf = lambda name, labels: {"apiVersion": "kueue.x-k8s.io/v1beta2",  # noqa: E731
                                   "kind": "ResourceFlavor", "metadata": {"name": name},
                                   "spec": {"nodeLabels": labels}}
        # A foreign ResourceFlavor whose nodeLabels select counted pool nodes (rack r1).
        created = c.create(rf("other-h100", {"tau.test/rack": "r1"}), RFS)
        self.wait_conflict(["other-h100"])
        self.assert_untouched(RFS + "/other-h100", created)
        c.delete(RFS + "/other-h100")
        c.wait_gone(RFS + "/other-h100")
        self.wait_restored("foreign ResourceFlavor removed")

        # Foreign flavors selecting no node, or only a node that does not count: no conflict.
        # A later pool change is applied, so the controller has looked at them.
        nowhere = c.create(rf("other-nowhere", {"tau.test/rack": "nowhere"}), RFS)
        cpu = c.create(rf("other-cpu", {"tau.test/rack": "cpu"}), RFS)
        c.merge(NODES + "/a100-1/status", {"status": {"allocatable": {"nvidia.com/gpu": "5"}}})
        self.wait_restored("flavors that select no counted node are no conflict")
        # Evaluated against the nodes, not the names: cpu-1 becomes a counted a100 node.
        c.merge(NODES + "/cpu-1", {"metadata": {"labels": {h.GPU_CLASS: "a100"}}})
        self.wait_conflict(["other-cpu"])
        c.merge(NODES + "/cpu-1", {"metadata": {"labels": {h.GPU_CLASS: None}}})
        c.merge(NODES + "/a100-1/status", {"status": {"allocatable": {"nvidia.com/gpu": "4"}}})
        self.wait_restored("cpu-1 out of the pool again")
        self.assert_untouched(RFS + "/other-nowhere", nowhere)
        self.assert_untouched(RFS + "/other-cpu", cpu)
        for name in ("other-nowhere", "other-cpu"):
            c.delete(RFS + "/" + name)
            c.wait_gone(RFS + "/" + name)

        # A foreign ClusterQueue holding a reservation on a pool flavor (status as Kueue sets it).
        c.create({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ClusterQueue",
                  "metadata": {"name": "other-cq"},
                  "spec": {"namespaceSelector": {}, "resourceGroups": [{
                      "coveredResources": ["nvidia.com/gpu"],
                      "flavors": [{"name": "taugrid-gpu-h100", "resources": [
                          {"name": "nvidia.com/gpu", "nominalQuota": "0"}]}]}]}}, CQS)
        created = c.merge(CQS + "/other-cq/status", {"status": {"flavorsReservation": [
            {"name": "taugrid-gpu-h100", "resources": [
                {"name": "nvidia.com/gpu", "total": "4", "borrowed": "0"}]}]}})
        self.wait_conflict(["other-cq"])
        self.assert_untouched(CQS + "/other-cq", created)
        self.assertEqual(c.get(CQS + "/other-cq")["status"], created["status"])
        c.merge(CQS + "/other-cq/status", {"status": {"flavorsReservation": None}})
        self.wait_restored("the reservation is released")
        c.delete(CQS + "/other-cq")
        c.wait_gone(CQS + "/other-cq")

        # A foreign ClusterQueue and a foreign Cohort with non-zero quota on pool flavors.
        groups = lambda fl, res, q: [{"coveredResources": [res], "flavors": [  # noqa: E731
            {"name": fl, "resources": [{"name": res, "nominalQuota": q}]}]}]
        for path, obj in (
                (CQS, {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ClusterQueue",
                       "metadata": {"name": "quota-cq"},
                       "spec": {"namespaceSelector": {},
                                "resourceGroups": groups("taugrid-gpu-h100", "nvidia.com/gpu",
                                                         "2")}}),
                (COHORTS, {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Cohort",
                           "metadata": {"name": "other-cohort"},
                           "spec": {"resourceGroups": groups("taugrid-gpu-a100", "cpu", "1")}})):
            name = obj["metadata"]["name"]
            created = c.create(obj, path)
            self.wait_conflict([name])
            self.assert_untouched(path + "/" + name, created)
            c.delete(path + "/" + name)
            c.wait_gone(path + "/" + name)
            self.wait_restored("%s removed" % name)

        # Legacy GPU discovery on a ClusterQueue.
        created = c.create({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ClusterQueue",
                            "metadata": {"name": "legacy-cq", "labels": {h.LEGACY_LABEL: "true"}},
                            "spec": {"namespaceSelector": {}}}, CQS)
        self.wait_conflict(["legacy-cq"])
        self.assert_untouched(CQS + "/legacy-cq", created)
        c.delete(CQS + "/legacy-cq")
        c.wait_gone(CQS + "/legacy-cq")
        self.wait_restored("legacy discovery removed")

        # spec.quota on the capacity team.
        created = c.merge(TEAMS + "/research", {"spec": {"quota": [
            {"flavor": "taugrid-gpu-h100", "resource": "nvidia.com/gpu", "nominalQuota": "4"}]}})
        self.wait_conflict(["research"], team_text=["quota"])
        self.assertEqual(c.get(TEAMS + "/research")["spec"], created["spec"])
        c.merge(TEAMS + "/research", {"spec": {"quota": None}})
        self.wait_restored("spec.quota removed")

        # spec.quota on a workspace of the capacity team.
        created = c.merge(WORKSPACES + "/alpha", {"spec": {"quota": [
            {"flavor": "taugrid-gpu-h100", "resource": "nvidia.com/gpu", "nominalQuota": "1"}]}})
        self.wait_conflict(["alpha"])
        self.assertEqual(c.get(WORKSPACES + "/alpha")["spec"], created["spec"])
        c.merge(WORKSPACES + "/alpha", {"spec": {"quota": None}})
        self.wait_restored("the workspace's spec.quota removed")
        c.wait_ok(self.queue_diffs, "alpha's queue unchanged")

        for reason in ("ConflictDetected", "ConflictCleared"):
            self.assertTrue(c.events(reason), "no %s Event on the TauCluster or TauTeam; "
                            "events: %s" % (reason, c.events()))

    # -- P5 --

    # -- one ledger per pass (issue 24, finding 2) --

    def owned_gpu_sums(self, rec):
        """Replay the recorded Cohort events: after each, the h100 GPUs over every Cohort we
        own and team ml's share; returns the list of (sum, ml)."""
        live, out = {}, []
        for _, typ, obj in rec.snapshot():
            name = obj["metadata"]["name"]
            if typ == "DELETED":
                live.pop(name, None)
            elif (obj["metadata"].get("labels") or {}).get(h.MANAGED_BY) == "taugrid":
                live[name] = obj
            out.append((sum(h.qty(quota(o, "h100", "nvidia.com/gpu") or "0")
                            for o in live.values()),
                        h.qty(quota(live.get("tau-team-ml"), "h100", "nvidia.com/gpu") or "0")))
        return out

    def test_04b_one_ledger_explicit_team_never_takes_the_pool(self):
        c = self.c
        pool_gpus = h.qty(quota(self.wait_budget("start"), "h100", "nvidia.com/gpu"))
        self.assertEqual(pool_gpus, 16)
        self.undo_create(COHORTS + "/other-budget")
        self.undo_create(TEAMS + "/ml")
        self.undo_merge(CLUSTER, {"spec": {"nodes": None}})
        rec = h.Recorder(c.sim, COHORTS)
        self.addCleanup(rec.close)
        # A foreign Cohort with quota on our flavor zeroes the automatic budget (P4, P5) ...
        c.create({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Cohort",
                  "metadata": {"name": "other-budget"},
                  "spec": {"resourceGroups": [{"coveredResources": ["nvidia.com/gpu"],
                                               "flavors": [{"name": "taugrid-gpu-h100",
                                                            "resources": [{
                                                                "name": "nvidia.com/gpu",
                                                                "nominalQuota": "1"}]}]}]}},
                 COHORTS)
        self.wait_conflict(["other-budget"])
        # ... and meanwhile an explicit team asks for the whole pool on it: refused, because
        # the zeroed automatic budget still claims the pool (no ratchet).
        refusal = ('flavor taugrid-gpu-h100 is in the automatic pool of capacity team '
                   '"research" (TauCluster spec.queues.capacityTeamRef), which holds all of '
                   'its discovered capacity 16 for resource nvidia.com/gpu even while its '
                   'budget is zeroed; team "ml" keeps its applied allocation: quote a flavor '
                   'outside the pool')
        c.create(h.team("ml", quota=[{"flavor": "taugrid-gpu-h100", "resource": "nvidia.com/gpu",
                                      "nominalQuota": "16"}]), TEAMS)
        c.wait_ok(lambda: cond_diffs(c.team("ml"), "QuotaReady", "False", "CapacityExceeded",
                                     refusal), "team ml refused on the pool flavor")
        self.assertEqual(wst.cond(c.team("ml"), "QuotaReady")["message"], refusal)
        c.wait_ok(lambda: [] if ("TauTeam", "ml", "CapacityExceeded", refusal) in
                  c.events("CapacityExceeded") else
                  ["no CapacityExceeded Event on ml: %s" % c.events("CapacityExceeded")],
                  "team ml's CapacityExceeded Event recorded")
        # The foreign budget goes: the automatic budget comes back in full, ml stays refused.
        c.delete(COHORTS + "/other-budget")
        self.wait_restored("foreign Cohort removed")
        self.assertEqual(cond_diffs(c.team("ml"), "QuotaReady", "False", "CapacityExceeded",
                                    refusal), [])
        # The issue's reproduction: a bad selector zeroes the budget, then one apply fixes the
        # selector and asks for the pool again (ml's quota edited in the same moment).
        c.merge(CLUSTER, {"spec": {"nodes": {"selector": {"Bad Key!": "x"}}}})
        self.c.wait_ok(lambda: cond_diffs(c.team("research"), "QuotaReady", "False",
                                          "BudgetZeroed"), "bad selector zeroes")
        c.merge(CLUSTER, {"spec": {"nodes": None}})
        c.merge(TEAMS + "/ml", {"spec": {"quota": [{"flavor": "taugrid-gpu-h100",
                                                    "resource": "nvidia.com/gpu",
                                                    "nominalQuota": "15"}]}})
        self.wait_restored("selector fixed")
        c.wait_ok(lambda: cond_diffs(c.team("ml"), "QuotaReady", "False", "CapacityExceeded",
                                     refusal),
                  "team ml still refused")
        # Never two budgets over the same GPUs, at any write in between.
        sums = self.owned_gpu_sums(rec)
        self.assertTrue(sums, "no Cohort event recorded")
        self.assertEqual([s for s in sums if s[0] > pool_gpus or s[1] != 0], [],
                         "a write gave ml GPUs or the owned Cohorts more than the pool")
        c.delete(TEAMS + "/ml")
        c.wait_gone(TEAMS + "/ml")
        c.wait_gone(COHORTS + "/tau-team-ml")

    def test_05_unusable_selector_zeroes_then_restores(self):
        c = self.c
        self.undo_merge(CLUSTER, {"spec": {"nodes": None}})
        # The CRD takes any string keys; "Bad Key!" is no label key, so no node can match it.
        c.merge(CLUSTER, {"spec": {"nodes": {"selector": {"Bad Key!": "x"}}}})
        team_uid = self.uid(TEAMS + "/research")
        want = self.want(zero=True)

        def zeroed():
            t = c.team("research")
            return (cohort_diffs(c.cohort("research"), "research", team_uid, want) +
                    cond_diffs(c.cluster(), "NodeSelectorValid", "False", None, "Bad Key!") +
                    cond_diffs(t, "QuotaReady", "False", "BudgetZeroed") +
                    cond_diffs(c.cluster(), "BudgetReady", "False", "BudgetZeroed") +
                    ([] if ((t or {}).get("status") or {}).get("phase") == "Degraded"
                     else ["TauTeam not Degraded"]))
        c.wait_ok(zeroed, "an unusable selector zeroes the budget, saying why")
        msg = wst.cond(c.team("research"), "QuotaReady")["message"]
        self.assertIn("selector", msg)
        c.merge(CLUSTER, {"spec": {"nodes": None}})
        self.wait_restored("selector removed")
        c.wait_ok(lambda: c.cluster_ready_diffs(c.pool()), "TauCluster Ready again")
        for reason in ("BudgetZeroed", "BudgetRestored"):
            self.assertTrue(c.events(reason), "no %s Event; events: %s" % (reason, c.events()))

    # -- flavors reach only the pool (issue 24, finding 3) --

    def test_05b_flavors_reach_only_the_pool(self):
        c = self.c
        cluster_uid = self.uid(CLUSTER)
        team_uid = self.uid(TEAMS + "/research")
        self.undo_merge(CLUSTER, {"spec": {"nodes": None}})
        self.undo_create(RFS + "/other-r2")
        self.undo_merge(NODES + "/a100-1/status",
                        {"status": {"allocatable": {"nvidia.com/gpu": "4"}}})
        sel = {"tau.test/rack": "r1"}
        c.merge(CLUSTER, {"spec": {"nodes": {"selector": sel}}})
        self.wait_budget("rack r1 only", selector=sel)
        c.wait_ok(lambda: rf_diffs(c.get(RFS + "/taugrid-gpu-h100"), "h100", cluster_uid, sel),
                  "flavor carries the selector")
        # A foreign flavor over rack r2 reaches only h100-2, which the selector leaves out: no
        # conflict (a later pool change shows the controller has looked at it) ...
        created = c.create({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ResourceFlavor",
                            "metadata": {"name": "other-r2"},
                            "spec": {"nodeLabels": {"tau.test/rack": "r2"}}}, RFS)
        c.merge(NODES + "/a100-1/status", {"status": {"allocatable": {"nvidia.com/gpu": "5"}}})
        self.wait_budget("foreign flavor over excluded nodes", selector=sel)
        c.wait_ok(lambda: c.team_ready_diffs("research"), "no conflict for other-r2")
        # ... until the selector admits rack r2 too: now it reaches counted nodes.
        c.merge(CLUSTER, {"spec": {"nodes": None}})
        self.wait_conflict(["other-r2"])
        self.assert_untouched(RFS + "/other-r2", created)
        c.delete(RFS + "/other-r2")
        c.wait_gone(RFS + "/other-r2")
        c.merge(NODES + "/a100-1/status", {"status": {"allocatable": {"nvidia.com/gpu": "4"}}})
        self.wait_restored("foreign flavor removed")
        # A selector Kueue's 8 nodeLabels cannot carry: zeroed, flavors left as they are.
        before = c.get(RFS + "/taugrid-gpu-h100")
        wide = {"tau.test/l%d" % i: "x" for i in range(7)}
        c.merge(CLUSTER, {"spec": {"nodes": {"selector": wide}}})
        why = ("spec.nodes.selector has 7 labels besides tau.azure.com/gpu-class and "
               "kubernetes.io/os; a Kueue ResourceFlavor holds at most 8 nodeLabels, so TauGrid's "
               "flavors could not confine pods to the selected nodes: select the pool with at "
               "most 6 labels")
        want_zero = self.want(zero=True)

        def zeroed():
            cl = c.cluster()
            d = cohort_diffs(c.cohort("research"), "research", team_uid, want_zero)
            d += cond_diffs(cl, "NodeSelectorValid", "False", "Invalid")
            d += cond_diffs(c.team("research"), "QuotaReady", "False", "BudgetZeroed")
            if (wst.cond(cl, "NodeSelectorValid") or {}).get("message") != why:
                d.append("NodeSelectorValid message %r" % (wst.cond(cl, "NodeSelectorValid") or
                                                           {}).get("message"))
            if (wst.cond(c.team("research"), "QuotaReady") or {}).get("message") != \
                    "root quota is 0: " + why:
                d.append("QuotaReady message %r" % wst.cond(c.team("research"), "QuotaReady"))
            return d
        c.wait_ok(zeroed, "a selector beyond Kueue's nodeLabels zeroes the budget")
        self.assertEqual(c.get(RFS + "/taugrid-gpu-h100")["spec"], before["spec"])
        c.merge(CLUSTER, {"spec": {"nodes": None}})
        self.wait_restored("selector removed")
        c.wait_ok(lambda: c.cluster_ready_diffs(c.pool()), "TauCluster Ready again")

    # -- kube-sim faults --

    def test_06_faults_during_reconcile_end_in_the_right_state(self):
        c = self.c
        start = len(self.agg.log())
        self.addCleanup(lambda: self.fault_spans.append((start, len(self.agg.log()))))
        c.faults("PUT", {"rules": [
            {"verb": "update,patch", "resource": "cohorts", "status": 500, "count": 2},
            {"verb": "update,patch", "resource": "cohorts", "status": 429, "retryAfter": 1,
             "count": 1},
            {"verb": "list", "resource": "resourceflavors,clusterqueues,cohorts", "status": 500,
             "count": 3},
            {"verb": "update,patch,create", "resource": "clusterqueues", "status": 503,
             "count": 1},
        ]})
        self.addCleanup(c.faults, "DELETE")
        self.undo_merge(NODES + "/h100-2", {"spec": {"unschedulable": None}})
        c.faults("POST", {"closeWatches": True})
        c.merge(NODES + "/h100-2", {"spec": {"unschedulable": True}})
        self.wait_budget("cordon applied through 500s, a 429 and closed watches")
        left = [r for r in c.faults("GET")["rules"] if r["resource"] == "cohorts"]
        self.assertEqual(left, [], "the Cohort writes never met the faults")
        c.merge(NODES + "/h100-2", {"spec": {"unschedulable": None}})
        self.wait_restored("uncordoned")
        c.wait_ok(self.queue_diffs, "workspace queues intact")
        c.wait_ok(lambda: c.cluster_ready_diffs(c.pool()), "TauCluster Ready")

    # -- P6 --

    def test_07_shrink_below_reservations_and_keep_empty_flavors(self):
        c = self.c
        saved = {n: c.get(NODES + "/" + n) for n in ("h100-1", "h100-2")}
        self.addCleanup(self.recreate, saved)
        self.undo_merge(CQS + "/tau-ws-alpha/status", {"status": {"flavorsReservation": None,
                                                                 "flavorsUsage": None}})
        self.undo_merge(NODES + "/h100-1", {"spec": {"unschedulable": None}})
        reservation = [{"name": "taugrid-gpu-h100", "resources": [
            {"name": "nvidia.com/gpu", "total": "16", "borrowed": "16"}]}]
        c.merge(CQS + "/tau-ws-alpha/status", {"status": {"flavorsReservation": reservation,
                                                          "flavorsUsage": reservation}})
        c.merge(NODES + "/h100-1", {"spec": {"unschedulable": True}})
        cohort = self.wait_budget("cordon shrinks the Cohort below the reservation")
        self.assertEqual(quota(cohort, "h100", "nvidia.com/gpu"), 8)
        st = c.get(CQS + "/tau-ws-alpha")["status"]
        self.assertEqual(h.qty(st["flavorsReservation"][0]["resources"][0]["total"]), 16)
        # Every h100 node gone: the flavor stays in the Cohort at 0, its ResourceFlavor stays.
        for n in saved:
            c.delete(NODES + "/" + n)
        self.assertNotIn("h100", c.pool())
        cohort = self.wait_budget("no h100 node left")
        self.assertEqual(quota(cohort, "h100", "nvidia.com/gpu"), 0)
        self.assertEqual(quota(cohort, "h100", "rdma/ib"), 0)
        c.wait_ok(self.queue_diffs, "queues keep the flavor too")
        self.assertEqual(rf_diffs(c.get(RFS + "/taugrid-gpu-h100"), "h100", self.uid(CLUSTER)),
                         [])
        c.wait_ok(lambda: c.team_ready_diffs("research"), "team Ready at zero h100")
        self.recreate(saved)
        self.wait_restored("nodes back")

    def recreate(self, saved):
        """Create the saved Nodes again (uncordoned) where they are missing."""
        for n, obj in saved.items():
            if self.c.sim.req("GET", NODES + "/" + n)[0] == 404:
                self.c.create(h.node(n, "h100", obj["status"]["allocatable"], labels={
                    "tau.test/rack": obj["metadata"]["labels"]["tau.test/rack"]}), NODES)

    # -- P7 --

    def test_08_leaving_the_mode(self):
        c = self.c
        full = self.want()
        team_uid = self.uid(TEAMS + "/research")
        c.merge(CLUSTER, {"spec": {"queues": {"capacityTeamRef": None}}})
        c.wait_ok(lambda: cond_diffs(c.team("research"), "QuotaReady", "False", "LeaveBlocked"),
                  "leaving refused while workspaces remain")
        self.assertEqual(cohort_diffs(c.cohort("research"), "research", team_uid, full), [],
                         "the budget must be kept while leaving is refused")
        # The status is written before the pass records its Events: wait for the Event.
        c.wait_ok(lambda: [] if c.events("LeaveRefused") else
                  ["no LeaveRefused Event: %s" % c.events()], "LeaveRefused Event recorded")
        for ws in sorted(self.WS):
            c.delete(WORKSPACES + "/" + ws)
        for ws in sorted(self.WS):
            c.wait_gone(WORKSPACES + "/" + ws)
        c.wait_gone(COHORTS + "/tau-team-research")
        for ws in sorted(self.WS):
            c.wait_gone(CQS + "/" + h.cq_name(ws))
        # A capacityTeamRef naming a missing team: reported, nothing written for it.
        c.merge(CLUSTER, {"spec": {"queues": {"capacityTeamRef": {"name": "platform"}}}})
        c.wait_ok(lambda: cond_diffs(c.cluster(), "ConflictDetected", "True", None, "platform"),
                  "missing capacity team reported")
        self.assertEqual(c.names(COHORTS), [])
        # The team appears: it gets the pool.
        uid = c.create(h.team("platform"), TEAMS)["metadata"]["uid"]
        want = h.Shape().groups(c.pool())
        c.wait_ok(lambda: cohort_diffs(c.cohort("platform"), "platform", uid, want),
                  "tau-team-platform holds the pool")
        c.wait_ok(lambda: c.team_ready_diffs("platform"), "TauTeam platform Ready")
        self.assertEqual(c.names(COHORTS), ["tau-team-platform"])
        self.assertEqual(c.ours(RFS), ["taugrid-gpu-a100", "taugrid-gpu-h100"])


class GateObserveV0Test(OneCluster, unittest.TestCase):
    AGENT_NODES = ("gpu-a", "gpu-b", "gpu-x")  # gpu-x: test_02b's node, created there
    AGG_ARGS = ("--initial-sync-timeout", "600s", "--budget-resync", "2s")

    @classmethod
    def populate(cls, c):
        cls.nodes = {n: c.create(h.node(n, "h100", h.H100), NODES) for n in ("gpu-a", "gpu-b")}

    def wait_budget(self, msg):
        uid = self.c.team("research")["metadata"]["uid"]
        want = self.shape.groups(self.c.pool())
        self.c.wait_ok(lambda: cohort_diffs(self.c.cohort("research"), "research", uid, want),
                       msg)

    def test_01_nothing_written_before_the_pool_is_established(self):
        c = self.c
        c.start_agent(self.agg, self.nodes["gpu-a"])
        c.wait_ok(lambda: cond_diffs(c.team("research"), "QuotaReady", "False",
                                     "WaitingForInventory") +
                  cond_diffs(c.cluster(), "InventoryEstablished", "False"),
                  "the controller waits for the inventory")
        pool = self.agg.unary("GetPool", proto.query().GetPoolRequest(), proto.query().Pool)
        self.assertFalse(pool.established)
        self.assertEqual(list(pool.missing_nodes), ["gpu-b"])
        self.assertEqual(c.team("research")["status"].get("phase"), "Pending")
        self.assertEqual((c.items(COHORTS), c.items(RFS), c.items(CQS)), ([], [], []))
        self.assertEqual(c.writes(h.KUEUE_KINDS), {})
        c.start_agent(self.agg, self.nodes["gpu-b"])
        self.wait_budget("established: the Cohort holds the pool")
        c.wait_ok(lambda: c.team_ready_diffs("research"), "team Ready")

    def test_02_observe_reports_and_writes_nothing(self):
        c = self.c
        c.merge(CLUSTER, {"spec": {"managementMode": "Observe"}})
        c.wait_ok(lambda: cond_diffs(c.team("research"), "QuotaReady", "Unknown", "ObserveOnly"),
                  "Observe mode reported")
        before = c.cohort("research")
        c.reset_stats()
        node_b = c.merge(NODES + "/gpu-b/status",
                         {"status": {"allocatable": {"nvidia.com/gpu": "4"}}})
        c.report(node_b)
        want = h.pool_capacity(c.pool())
        self.assertEqual(want[("taugrid-gpu-h100", "nvidia.com/gpu")], 12)
        c.wait_ok(lambda: [] if h.capacity_of(c.cluster()) == want else
                  ["discoveredCapacity %s" % h.dump(sorted(h.capacity_of(c.cluster()).items()))],
                  "status follows the pool in Observe mode")
        self.assertEqual(c.writes(h.KUEUE_KINDS), {})
        self.assertEqual(c.cohort("research")["metadata"]["resourceVersion"],
                         before["metadata"]["resourceVersion"])
        c.merge(CLUSTER, {"spec": {"managementMode": "Reconcile"}})
        self.wait_budget("Reconcile again: the Cohort follows")

    def test_02b_retained_cleaned_up_flavor_keeps_its_class(self):
        """Issue 24, finding 5: a class whose flavor name is cleaned up (H100_SXM ->
        taugrid-gpu-h100-sxm-<8 hex>) and whose nodes are gone stays in the Cohort at 0; its
        ResourceFlavor, deleted meanwhile, is not re-created under a class read back from the
        name (h100-sxm-<8 hex>, which no node has), and a node of the class brings it back
        with the right one.  (No workspace queue names the flavor yet, so Kueue's finalizer
        lets it go.)"""
        c = self.c
        cls_name = "H100_SXM"
        path = RFS + "/" + h.flavor_name(cls_name)
        self.assertRegex(path, r"/taugrid-gpu-h100-sxm-[0-9a-f]{8}$")
        self.addCleanup(c.sim.req, "DELETE", NODES + "/gpu-x")
        c.start_agent(self.agg, c.create(h.node("gpu-x", cls_name, h.H100), NODES))
        self.wait_budget("the new class in the Cohort")
        c.delete(NODES + "/gpu-x")
        c.wait_gone(NODES + "/gpu-x")
        self.wait_budget("its flavor kept at 0 (P6)")
        c.delete(path)
        c.wait_gone(path)
        # A pass runs (a node change lands in the Cohort): the flavor is not re-created.
        node_b = c.merge(NODES + "/gpu-b/status",
                         {"status": {"allocatable": {"nvidia.com/gpu": "5"}}})
        c.report(node_b)
        self.wait_budget("the pass after a node change")
        self.assertIsNone(c.get(path), "re-created under a class read back from its name")
        self.assertEqual([n for n in c.names(RFS) if n.startswith("taugrid-gpu-h100-sxm")], [])
        # A node of the class again: its flavor with the right class.
        c.start_agent(self.agg, c.create(h.node("gpu-x", cls_name, h.H100), NODES))
        c.wait_ok(lambda: rf_diffs(c.get(path), cls_name, c.cluster()["metadata"]["uid"]),
                  "the flavor re-created with class %s" % cls_name)
        self.wait_budget("and in the Cohort")
        c.delete(NODES + "/gpu-x")
        c.wait_gone(NODES + "/gpu-x")
        node_b = c.merge(NODES + "/gpu-b/status",
                         {"status": {"allocatable": {"nvidia.com/gpu": "4"}}})
        c.report(node_b)
        self.wait_budget("as test_02 left it")

    def test_03_v0_one_active_workspace_and_a_steady_cluster_writes_nothing(self):
        c = self.c
        c.create(wst.workspace("alpha", ns="ml-alpha", team="research"), WORKSPACES)
        c.env.wait_phase("alpha", "Ready")
        c.create(wst.workspace("beta", ns="ml-beta", team="research"), WORKSPACES)
        c.env.wait_cond("beta", "QueueReady", "False", "BlockedByActiveWorkspace")
        groups = h.norm_groups(c.cohort("research")["spec"]["resourceGroups"])
        ws_uid = c.get(WORKSPACES + "/alpha")["metadata"]["uid"]
        c.wait_ok(lambda: cq_diffs(c.get(CQS + "/tau-ws-alpha"), "alpha", ws_uid, "research",
                                   "ml-alpha", groups), "the active workspace's queue")
        c.wait_ok(lambda: c.team_ready_diffs("research"), "team Ready")
        # Waited for: STEADY_PASSES more budget passes over the steady cluster, counted by
        # the aggregator's tau_budget_passes_total (--budget-resync 2s queues one every 2 s;
        # a pass counts once its writes are done), stopping at the first write kube-sim sees.
        # None of them may write.
        c.reset_stats()
        base = h.budget_passes(self.agg)
        seen = {}

        def passes_left():
            seen["writes"] = c.writes(h.KUEUE_KINDS + h.TAU_KINDS)
            seen["passes"] = h.budget_passes(self.agg) - base
            if seen["writes"] or seen["passes"] >= STEADY_PASSES:
                return []
            return ["%d of %d budget passes since the stats reset" % (seen["passes"],
                                                                     STEADY_PASSES)]
        c.wait_ok(passes_left, "%d budget passes over a steady cluster (tau_budget_passes_total)"
                  % STEADY_PASSES, timeout=STEADY_DEADLINE_S)
        self.assertEqual(seen["writes"], {}, "a steady cluster wrote within %d budget passes" %
                         seen["passes"])
        self.assertEqual(c.ours(CQS), ["tau-ws-alpha"], "v0: only the active workspace")


class Storm(threading.Thread):
    """Adds and removes h100 nodes (at most 3 extra at a time) until stopped; while `leader`
    is set, each new node's agent reports to it."""
    NAMES = 16

    def __init__(self, c, leader):
        super().__init__(daemon=True)
        self.c, self.leader = c, leader
        self.ops = 0
        self.live = []
        self.agents = {}
        self.halt = threading.Event()
        self.error = None

    def run(self):
        i = 0
        try:
            while not self.halt.is_set():
                name = "storm-%d" % (i % self.NAMES)
                i += 1
                obj = self.c.create(h.node(name, "h100", h.H100), NODES)
                leader = self.leader
                if leader is not None:
                    pb = proto.inventory()
                    self.agents[name] = FakeAgent(pb, leader.channel, agent_token(name),
                                                  inventory_from_node(pb, obj))
                self.live.append(name)
                self.ops += 1
                if len(self.live) > 3:
                    self._remove(self.live.pop(0))
                self.halt.wait(0.05)  # the storm's pace, about 20 changes a second
        except Exception as e:  # reported by finish()
            self.error = e

    def _remove(self, name):
        self.c.delete(NODES + "/" + name)
        a = self.agents.pop(name, None)
        if a is not None and not a.done:
            a.cancel()
        self.ops += 1

    def finish(self):
        self.halt.set()
        self.join(30)
        while self.live:
            self._remove(self.live.pop(0))
        if self.error is not None:
            raise self.error


def storm_names():
    return ["storm-%d" % i for i in range(Storm.NAMES)]


class LeaderStormTest(unittest.TestCase):
    def test_new_leader_never_writes_a_smaller_budget_before_established(self):
        base = [h.node("lead-%d" % i, "h100", h.H100) for i in (1, 2, 3)]
        base.append(h.node("lead-4", "a100", h.A100))
        names = [n["metadata"]["name"] for n in base]
        c = h.Cluster(agent_nodes=names + storm_names())
        self.addCleanup(c.stop)
        c.create(h.leader_election_binding(),
                 "/apis/rbac.authorization.k8s.io/v1/namespaces/tau-system/rolebindings")
        nodes = [c.create(n, NODES) for n in base]
        team_uid = c.create(h.team("research"), TEAMS)["metadata"]["uid"]
        c.create(h.tau_cluster(), TAU + "/clusters")
        args = ("--leader-elect", "--initial-sync-timeout", "600s")
        a1 = c.start_aggregator("agg1", *args)
        wait_for(a1.is_leader, timeout=60, what="agg1 leads")
        for n in nodes:
            c.start_agent(a1, n)
        shape = h.Shape()
        base_pool = c.pool()
        want = shape.groups(base_pool)
        c.wait_ok(lambda: cohort_diffs(c.cohort("research"), "research", team_uid, want),
                  "the first leader writes the pool")
        a2 = c.start_aggregator("agg2", *args)
        self.assertFalse(a2.is_leader())
        rec = h.Recorder(c.sim, COHORTS)
        self.addCleanup(rec.close)

        storm = Storm(c, a1)
        storm.start()
        self.addCleanup(lambda: storm.halt.set())
        gpus = lambda: quota(c.cohort("research"), "h100", "nvidia.com/gpu") or 0  # noqa: E731
        c.wait_ok(lambda: [] if gpus() > 24 else ["h100 GPUs %s" % gpus()],
                  "the leader counts storm nodes")
        a1.p.kill()
        a1.p.wait(30)
        storm.leader = None
        wait_for(a2.is_leader, timeout=60, what="agg2 takes over")
        # The storm goes on under the new leader, whose own inventory is not established.
        ops = storm.ops
        wait_for(lambda: storm.ops >= ops + 20, timeout=30, what="storm under agg2")
        storm.finish()
        pool = a2.unary("GetPool", proto.query().GetPoolRequest(), proto.query().Pool)
        self.assertFalse(pool.established, "agg2's gate must still be closed here")
        for n in nodes:
            c.start_agent(a2, c.get(NODES + "/" + n["metadata"]["name"]))
        final = shape.groups(c.pool())
        self.assertEqual(final, want)
        c.wait_ok(lambda: cohort_diffs(c.cohort("research"), "research", team_uid, final),
                  "the new leader writes the exact pool once established")
        c.wait_ok(lambda: c.team_ready_diffs("research"), "team Ready under agg2")

        floor = {(f["name"], r["name"]): r["nominalQuota"]
                 for f in want[0]["flavors"] for r in f["resources"]}
        versions = [o for _, typ, o in rec.snapshot() if typ in ("ADDED", "MODIFIED")]
        self.assertTrue(versions, "no Cohort write seen during the storm")
        for o in versions:
            got = {(f["name"], r["name"]): r["nominalQuota"]
                   for g in h.norm_groups(o["spec"].get("resourceGroups"))
                   for f in g["flavors"] for r in f["resources"]}
            small = {k: (got.get(k), v) for k, v in floor.items() if not got.get(k, 0) >= v}
            self.assertEqual(small, {}, "Cohort resourceVersion %s is smaller than the pool "
                             "(got, pool): %s" % (o["metadata"]["resourceVersion"], small))


if __name__ == "__main__":
    unittest.main()
