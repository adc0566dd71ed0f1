"""End-to-end scenarios of issue 24: the team Cohort never freezes above the pool.

Run with the system interpreter (python3-grpcio lives there), from tests/e2e:
    TAU_AGGREGATOR_BIN=build/tau-aggregator TAU_CLI=build/tau \
    /usr/bin/python3 -m unittest -v test_budget_safety

What runs: the team budget's harness (harness/budget.py: kube-sim with `--authz rbac`, the real
Kueue CRDs and kube-sim's Kueue admission rules, the taugrid CRDs and the chart's RBAC, the real
tau-aggregator with only its ServiceAccount's token, --budget-resync 3600s so every step is
picked up by its event).  The pool is three Ready Linux nodes counted from their Node objects
(h100: 16 GPUs on two nodes, a100: 4 GPUs); the capacity team is `research` with workspace
`alpha`.  Each case starts from that state and leaves it as it found it; they run in order.

  test_01  finding 1, ownership: a ResourceFlavor of another owner under our name blocks only
           its flavor (left out of the Cohort and alpha's queue, the rest of the pool applied
           and following a cordon); one that selects pool nodes zeroes the whole budget;
           neither is ever written, and its owner's delete completes (no queue of ours keeps
           Kueue's resource-in-use finalizer on it).
  test_02  finding 1, reinstall: the TauCluster held by another finalizer while it is deleted
           (its BudgetReady says the Cohort is kept at 0, managedResources what is left), then
           gone (deletionPolicy Retain: the budget is kept at 0) and created again (a new UID,
           as `helm uninstall && helm install` does): our ResourceFlavors are adopted with an
           Event, the budget follows the pool again.
  test_03  finding 4: spec.quota on a workspace of the capacity team, its queue holding admitted
           work: the ClusterQueue is held (stopPolicy Hold, annotation tau.azure.com/held), never
           deleted; the workspace's QuotaReady names the mistake; undoing it releases the queue;
           the queue of a workspace deleted with reserving work is held, deleted once drained.
  test_04  finding 1, Observe: nothing written, and the TauTeam, TauCluster and `tau team status`
           say how the live Cohort differs from the pool.
  test_05  finding 5: an explicit team holding nothing gets no finalizer; the stock Kueue
           default-flavor and an explicit quota on a taugrid flavor are reported with messages
           that say why and how to fix them.
  test_05b TauCluster deletionPolicy DeleteManaged: deleted while alpha's queue holds admitted
           work, the queue is held and the budget 0; once drained the queue goes, then the
           Cohort (our flavors stay); a TauCluster created again restores them.
  test_05c finding 4, the v0 rule: the aggregator restarted without MultipleWorkspaces while
           workspace beta's queue holds admitted work: beta is blocked (alpha is the active
           one), its queue held (stopPolicy Hold, tau.azure.com/held and QuotaReady QueueHeld
           naming the active workspace and the fix), never deleted; the gate back releases the
           same queue.
  test_05d P4's foreign members: a ClusterQueue of another owner whose cohortName is the team
           Cohort, and a Cohort whose parentName is, each named and the budget zeroed until
           it is removed.
  test_05e finding 1, ownership: a ClusterQueue of another owner under workspace gamma's queue
           name blocks only gamma (named; the budget applied and following a cordon); a
           Cohort of another owner under the team Cohort's name is never written; each
           removed through its owner, ours is written again.
  test_06  finding 1, the capacity team deleted: held by its finalizer (DeletionBlocked) while
           alpha exists, the budget following the pool; with the finalizer removed by hand (an
           aggregator that was not running) the Cohort is zeroed, not frozen, and the
           TauCluster names the missing team (ConflictDetected, Events); the team created
           again adopts it (Event) and gets the pool back; then alpha and the team are deleted
           and the queue, the Cohort and the finalizer go in that order.

Expected objects are exact on the fields the contract fixes (quantities by value) and messages
are matched on the words that name the cause and the fix.  Waits are wait-for-condition loops.
"""
import json
import subprocess
import unittest

from harness import budget as h
from harness import paths
from harness import workspace as wst
from harness.budget import (CLUSTER, COHORTS, CQS, NODES, RFS, TAU, TEAMS, WORKSPACES,
                            cohort_diffs, cond_diffs)

CLI = paths.CLI_BIN
GPU = "nvidia.com/gpu"
FINALIZER = "tau.azure.com/team-cleanup"
HELD = "tau.azure.com/held"


def setUpModule():
    h.require_all()


class SafetyTest(unittest.TestCase):
    AGG_ARGS = ("--feature-gates", "MultipleWorkspaces=true", "--budget-resync", "3600s")

    @classmethod
    def setUpClass(cls):
        c = cls.c = h.Cluster()
        try:
            for n in (h.node("h100-1", "h100", h.H100), h.node("h100-2", "h100", h.H100_B),
                      h.node("a100-1", "a100", h.A100)):
                c.create(n, NODES)
            c.create(h.team("research"), TEAMS)
            c.create(h.tau_cluster(), TAU + "/clusters")
            c.create(wst.workspace("alpha", ns="ml-alpha", team="research"), WORKSPACES)
            cls.agg = c.start_aggregator("aggregator", *cls.AGG_ARGS)
            c.env.wait_phase("alpha", "Ready")
        except BaseException:
            c.stop()
            raise

    @classmethod
    def tearDownClass(cls):
        cls.c.stop_checked(cls.agg)

    # -- helpers --

    def setUp(self):
        self.wait_pool("the case starts on the full budget")

    def uid(self, path):
        return self.c.get(path)["metadata"]["uid"]

    def groups(self, zero_classes=(), zero=False, drop_classes=()):
        """The Cohort's resourceGroups for the pool the API holds now, the flavors of
        `zero_classes` (or all, `zero`) at 0, those of `drop_classes` left out."""
        groups = h.Shape().groups(self.c.pool())
        drop = [h.flavor_name(x) for x in drop_classes]
        for g in groups:
            g["flavors"] = [f for f in g["flavors"] if f["name"] not in drop]
            for f in g["flavors"]:
                if zero or f["name"] in [h.flavor_name(x) for x in zero_classes]:
                    for r in f["resources"]:
                        r["nominalQuota"] = 0
        return groups

    def wait_pool(self, msg, zero_classes=(), zero=False, team_uid=None, drop_classes=()):
        uid = team_uid or self.uid(TEAMS + "/research")
        self.c.wait_ok(lambda: cohort_diffs(self.c.cohort("research"), "research", uid,
                                            self.groups(zero_classes, zero, drop_classes)), msg)

    def queue_flavors(self, ws):
        q = self.c.get(CQS + "/" + h.cq_name(ws)) or {}
        return sorted(f["name"] for g in h.norm_groups((q.get("spec") or {}).get(
            "resourceGroups")) for f in g["flavors"])

    def held_diffs(self, ws, uid, why, ws_why):
        """ClusterQueue tau-ws-<ws> held, never deleted or re-created (UID `uid`): stopPolicy
        Hold, tau.azure.com/held naming each of `why`, the workspace's QuotaReady QueueHeld
        naming each of `ws_why`."""
        q = self.c.get(CQS + "/" + h.cq_name(ws))
        if q is None:
            return ["ClusterQueue %s was deleted" % h.cq_name(ws)]
        d = []
        if q["metadata"]["uid"] != uid:
            d.append("ClusterQueue %s was re-created" % h.cq_name(ws))
        if q["metadata"].get("deletionTimestamp"):
            d.append("being deleted")
        if (q.get("spec") or {}).get("stopPolicy") != "Hold":
            d.append("stopPolicy %r" % (q.get("spec") or {}).get("stopPolicy"))
        got = (q["metadata"].get("annotations") or {}).get(HELD) or ""
        d += ["annotation %s %r lacks %r" % (HELD, got, w) for w in why if w not in got]
        return d + cond_diffs(self.c.get(WORKSPACES + "/" + ws), "QuotaReady", "False",
                              "QueueHeld", ["its ClusterQueue is held (stopPolicy Hold"] + ws_why)

    def released_diffs(self, ws):
        """ClusterQueue tau-ws-<ws> exists and is no longer held (Kueue's CRD defaults
        stopPolicy to None once ours is removed)."""
        q = self.c.get(CQS + "/" + h.cq_name(ws))
        if q is None:
            return ["ClusterQueue %s is gone" % h.cq_name(ws)]
        if ((q.get("spec") or {}).get("stopPolicy") not in (None, "None")
                or HELD in (q["metadata"].get("annotations") or {})):
            return ["still held: %s" % h.dump(q["metadata"].get("annotations"))]
        return []

    def cordon(self, node, on):
        self.c.merge(NODES + "/" + node, {"spec": {"unschedulable": True if on else None}})

    def event_diffs(self, kind, name, reason, text):
        evs = [e for e in self.c.events(reason) if e[0] == kind and e[1] == name]
        if any(text in (e[3] or "") for e in evs):
            return []
        return ["no %s Event about %s %s naming %r; with that reason: %s" % (
            reason, kind, name, text, evs)]

    def tau(self, *args):
        r = subprocess.run([CLI, "--kubeconfig", self.c.sim.kubeconfig,
                            "--system-namespace", "tau-system"] + list(args),
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           universal_newlines=True, timeout=60)
        return r.returncode, r.stdout, r.stderr

    # -- finding 1: ownership --

    def test_01_foreign_flavor_under_our_name_blocks_only_its_flavor(self):
        c = self.c
        path = RFS + "/taugrid-gpu-a100"
        ours = c.get(path)
        self.addCleanup(self.cordon, "h100-2", False)
        # Someone takes our a100 flavor over: no TauGrid labels, nodeLabels on no pool node.
        taken = c.sim.ok("PUT", path, {
            "apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ResourceFlavor",
            "metadata": {"name": "taugrid-gpu-a100",
                         "resourceVersion": ours["metadata"]["resourceVersion"],
                         "labels": {h.MANAGED_BY: "platform-team"}},
            "spec": {"nodeLabels": {"tau.test/rack": "nowhere"}}})
        # Left out of the Cohort and of alpha's queue: not ours, so no budget on it, and
        # nothing of ours keeps Kueue's resource-in-use finalizer on it.
        self.wait_pool("a100 left out, h100 applied", drop_classes=("a100",))
        c.wait_ok(lambda: [] if self.queue_flavors("alpha") == ["taugrid-gpu-h100"] else
                  ["tau-ws-alpha lists %s" % self.queue_flavors("alpha")],
                  "alpha's queue no longer names the flavor")
        c.wait_ok(lambda: cond_diffs(c.team("research"), "QuotaReady", "False",
                                     "OwnershipConflict",
                                     ["ResourceFlavor taugrid-gpu-a100 exists but is not ours",
                                      "its flavor is left out of Cohort tau-team-research and "
                                      "its ClusterQueues (the rest of the pool is applied), so "
                                      "no queue of ours keeps its owner from deleting it"]),
                  "the team names the flavor and what it holds")
        # Not frozen: the rest follows the pool.
        self.cordon("h100-2", True)
        self.wait_pool("h100 follows a cordon while a100 is blocked", drop_classes=("a100",))
        self.cordon("h100-2", False)
        self.wait_pool("and the uncordon", drop_classes=("a100",))
        # It now selects a pool node: a second budget for the same GPUs, everything zeroed.
        taken = c.merge(path, {"spec": {"nodeLabels": {"tau.test/rack": None,
                                                       h.GPU_CLASS: "a100"}}})
        self.wait_pool("the whole budget zeroed", zero=True, drop_classes=("a100",))
        c.wait_ok(lambda: cond_diffs(c.cluster(), "ConflictDetected", "True", None,
                                     "ResourceFlavor taugrid-gpu-a100 is not this "
                                     "TauCluster's"), "conflict reported")
        now = c.get(path)
        self.assertEqual(now["metadata"]["resourceVersion"], taken["metadata"]["resourceVersion"],
                         "another owner's flavor was written")
        self.assertEqual(now["metadata"].get("annotations"), taken["metadata"].get("annotations"))
        # Its owner deletes it, and it goes: no ClusterQueue names it, so Kueue's
        # resource-in-use finalizer (which kube-sim plays) lets it go.  Then it is ours again
        # and the budget restored.
        self.assertIn("kueue.x-k8s.io/resource-in-use", now["metadata"].get("finalizers") or [])
        c.delete(path)
        c.wait_gone(path)
        c.wait_ok(lambda: h.rf_diffs(c.get(path), "a100", self.uid(CLUSTER)), "ours again")
        self.wait_pool("the budget is restored")
        c.wait_ok(lambda: c.team_ready_diffs("research"), "team Ready")

    def test_02_reinstall_adopts_our_objects(self):
        c = self.c
        old_uid = self.uid(CLUSTER)
        spec = c.cluster()["spec"]
        # Held by another finalizer first (foreground deletion): while it is being deleted the
        # TauCluster's own status says what is kept and why.
        hold = "example.com/hold"
        self.addCleanup(c.sim.req, "PATCH", CLUSTER, {"metadata": {"finalizers": None}},
                        "application/merge-patch+json")
        c.merge(CLUSTER, {"metadata": {"finalizers": [hold]}})
        c.delete(CLUSTER)

        def deleting():
            st = c.cluster().get("status") or {}
            left = [(m.get("kind"), m.get("name")) for m in st.get("managedResources") or []]
            d = [] if ("Cohort", "tau-team-research") in left else [
                "managedResources %s lacks Cohort tau-team-research" % left]
            return d + cond_diffs(c.cluster(), "BudgetReady", "False", "BudgetZeroed",
                                  "root quota is 0: TauCluster cluster is being deleted "
                                  "(deletionPolicy Retain): Cohort tau-team-research is kept "
                                  "at 0 (deletionPolicy Retain)")
        c.wait_ok(deleting, "the deleting TauCluster says what it keeps")
        self.wait_pool("the retained budget is zeroed while it is being deleted", zero=True)
        c.merge(CLUSTER, {"metadata": {"finalizers": None}})
        c.wait_gone(CLUSTER)
        # deletionPolicy Retain (the default): the budget is kept, bounded at 0.
        self.wait_pool("the retained budget is zeroed", zero=True)
        c.wait_ok(lambda: cond_diffs(c.team("research"), "QuotaReady", "False", "BudgetZeroed",
                                     "TauCluster cluster does not exist (deletionPolicy "
                                     "Retain): Cohort tau-team-research is kept at 0"),
                  "the team says why")
        new = c.create({"apiVersion": "tau.azure.com/v1alpha1", "kind": "TauCluster",
                        "metadata": {"name": "cluster"}, "spec": spec}, TAU + "/clusters")
        new_uid = new["metadata"]["uid"]
        self.assertNotEqual(new_uid, old_uid)
        for cls in ("a100", "h100"):
            c.wait_ok(lambda: h.rf_diffs(c.get(RFS + "/" + h.flavor_name(cls)), cls, new_uid),
                      "ResourceFlavor %s adopted by the new TauCluster" % h.flavor_name(cls))
            c.wait_ok(lambda: self.event_diffs(
                "TauCluster", "cluster", "Adopted",
                "ResourceFlavor %s carries TauGrid's labels but its owner "
                "(tau.azure.com/cluster-uid %s) no longer exists: adopted by TauCluster cluster "
                "(UID %s)" % (h.flavor_name(cls), old_uid, new_uid)), "Adopted Event")
        self.wait_pool("the budget follows the pool under the new TauCluster")
        self.cordon("h100-2", True)
        self.addCleanup(self.cordon, "h100-2", False)
        self.wait_pool("and follows a cordon")
        self.cordon("h100-2", False)
        c.wait_ok(lambda: c.cluster_ready_diffs(c.pool()), "TauCluster Ready, no conflict")

    # -- finding 4 --

    def test_03_misconfiguration_holds_a_queue_with_work(self):
        c = self.c
        path = CQS + "/tau-ws-alpha"
        self.addCleanup(c.sim.req, "PATCH", WORKSPACES + "/alpha", {"spec": {"quota": None}},
                        "application/merge-patch+json")
        before = c.get(path)
        c.merge(path + "/status", {"status": {"admittedWorkloads": 2, "reservingWorkloads": 1}})
        c.merge(WORKSPACES + "/alpha", {"spec": {"quota": [
            {"flavor": "taugrid-gpu-h100", "resource": GPU, "nominalQuota": "1"}]}})

        held = lambda: self.held_diffs(  # noqa: E731
            "alpha", before["metadata"]["uid"],
            ["TauWorkspace alpha of capacity team research sets spec.quota"],
            ["sets spec.quota", "remove spec.quota"])
        c.wait_ok(held, "the queue is held, never deleted, and the workspace says why")
        self.assertEqual(c.get(path)["status"]["admittedWorkloads"], 2)
        self.wait_pool("the spec.quota conflict zeroes the budget (P4)", zero=True)
        # Undone: released as it was.
        c.merge(WORKSPACES + "/alpha", {"spec": {"quota": None}})

        c.wait_ok(lambda: self.released_diffs("alpha") + (
            [] if wst.cond(c.get(WORKSPACES + "/alpha"), "QuotaReady") is None
            else ["the workspace keeps a QuotaReady condition"]), "the queue is released")
        self.assertEqual(c.get(path)["metadata"]["uid"], before["metadata"]["uid"])
        self.wait_pool("the budget is restored")
        c.merge(path + "/status", {"status": {"admittedWorkloads": 0, "reservingWorkloads": 0}})

        # A workspace deleted while its queue holds work: held until drained, then deleted.
        beta = CQS + "/tau-ws-beta"
        self.addCleanup(c.sim.req, "DELETE", WORKSPACES + "/beta")
        c.create(wst.workspace("beta", ns="ml-beta", team="research"), WORKSPACES)
        c.wait_ok(lambda: [] if c.get(beta) is not None else ["no ClusterQueue tau-ws-beta"],
                  "beta's queue")
        c.merge(beta + "/status", {"status": {"reservingWorkloads": 1}})
        c.delete(WORKSPACES + "/beta")
        c.wait_gone(WORKSPACES + "/beta")
        c.wait_ok(lambda: [] if c.get(beta) is not None and (c.get(beta).get("spec") or {}).get(
            "stopPolicy") == "Hold" and "TauWorkspace beta no longer exists: its queue is deleted "
            "once its admitted and reserving work has drained" in (
                c.get(beta)["metadata"].get("annotations") or {}).get(HELD, "")
            else ["tau-ws-beta not held: %s" % h.dump(c.get(beta))],
            "the queue of a deleted workspace is held while it has work")
        c.merge(beta + "/status", {"status": {"reservingWorkloads": 0}})
        c.wait_gone(beta)

    def test_03b_unresolved_namespace_holds_a_queue_with_work(self):
        """Finding 4, the namespace kind: alpha retargeted to a namespace another workspace
        holds, its status lost, has no resolved namespace; its queue with admitted work is held,
        never deleted, and released as it was once the target is undone."""
        c = self.c
        path = CQS + "/tau-ws-alpha"
        self.addCleanup(c.sim.req, "DELETE", WORKSPACES + "/gamma")
        self.addCleanup(c.sim.req, "PATCH", WORKSPACES + "/alpha",
                        {"spec": {"target": {"namespace": "ml-alpha"}}},
                        "application/merge-patch+json")
        c.create(wst.workspace("gamma", ns="ml-gamma"), WORKSPACES)
        c.wait_ok(lambda: [] if ((c.get(WORKSPACES + "/gamma") or {}).get("status") or {}).get(
            "target", {}).get("resolvedNamespace") == "ml-gamma" else ["gamma not resolved"],
            "gamma holds namespace ml-gamma")
        before = c.get(path)
        c.merge(path + "/status", {"status": {"admittedWorkloads": 1}})
        c.merge(WORKSPACES + "/alpha", {"spec": {"target": {"namespace": "ml-gamma"}}})
        # Refused, alpha keeps ml-alpha while its status remembers it; a status lost (restored
        # from a backup without status) leaves nothing to keep: no resolved namespace.
        c.wait_ok(lambda: cond_diffs(c.get(WORKSPACES + "/alpha"), "QueueReady", "False",
                                     "NamespaceOwnedByOtherWorkspace"), "the retarget refused")
        c.merge(WORKSPACES + "/alpha/status", {"status": {"target": None}})

        held = lambda: self.held_diffs(  # noqa: E731
            "alpha", before["metadata"]["uid"],
            ["TauWorkspace alpha has no resolved namespace: fix what its Ready condition names"],
            ["has no resolved namespace"])
        c.wait_ok(held, "the queue is held, never deleted, and the workspace says why")
        self.assertEqual(c.get(path)["status"]["admittedWorkloads"], 1)
        c.merge(WORKSPACES + "/alpha", {"spec": {"target": {"namespace": "ml-alpha"}}})

        c.wait_ok(lambda: self.released_diffs("alpha"),
                  "the queue is released once the target is undone")
        self.assertEqual(c.get(path)["metadata"]["uid"], before["metadata"]["uid"])
        c.merge(path + "/status", {"status": {"admittedWorkloads": 0}})
        c.delete(WORKSPACES + "/gamma")
        c.wait_gone(WORKSPACES + "/gamma")
        self.wait_pool("the budget is as before")

    # -- finding 1: Observe --

    def test_04_observe_writes_nothing_and_says_how_the_cohort_differs(self):
        c = self.c
        self.addCleanup(c.sim.req, "PATCH", CLUSTER, {"spec": {"managementMode": "Reconcile"}},
                        "application/merge-patch+json")
        self.addCleanup(self.cordon, "h100-2", False)
        full = c.cohort("research")
        c.merge(CLUSTER, {"spec": {"managementMode": "Observe"}})
        self.cordon("h100-2", True)
        # Every cell that differs, live and wanted (the model test's B2 reads them).
        want = ["managementMode is Observe: nothing is written; the live Cohort "
                "tau-team-research does not follow the pool: ",
                "taugrid-gpu-h100/nvidia.com/gpu holds 16, want 8"]
        c.wait_ok(lambda: cond_diffs(c.team("research"), "QuotaReady", "Unknown",
                                     "ObserveOnly", want) +
                  cond_diffs(c.cluster(), "BudgetReady", "Unknown", "ObserveOnly", want),
                  "TauTeam and TauCluster say the Cohort does not follow the pool")
        self.assertEqual(c.cohort("research")["metadata"]["resourceVersion"],
                         full["metadata"]["resourceVersion"], "Observe wrote the Cohort")
        rc, out, err = self.tau("team", "status", "research", "-o", "json")
        self.assertEqual(rc, 1, out + err)
        doc = json.loads(out)
        quota = [cd for cd in doc["conditions"] if cd["type"] == "QuotaReady"]
        self.assertTrue(quota and want[0] in quota[0]["message"], doc["conditions"])
        rows = {(r["flavor"], r["resource"]): (r["budget"], r["pool"]) for r in doc["budget"]}
        self.assertEqual(rows[("taugrid-gpu-h100", GPU)], ("16", "8"))
        self.cordon("h100-2", False)
        c.wait_ok(lambda: cond_diffs(c.team("research"), "QuotaReady", "Unknown",
                                     "ObserveOnly", "the live Cohort tau-team-research matches "
                                     "the pool"), "and that it matches again")
        c.merge(CLUSTER, {"spec": {"managementMode": "Reconcile"}})
        c.wait_ok(lambda: c.team_ready_diffs("research"), "Reconcile: team Ready")

    # -- finding 5 --

    def test_05_smaller_items_name_their_fix(self):
        c = self.c
        # An explicit team that holds nothing gets no finalizer: deleting it never waits.
        c.create(h.team("empty"), TEAMS)
        c.wait_ok(lambda: cond_diffs(c.team("empty"), "QuotaReady", "True", "QuotaApplied",
                                     "the team holds nothing, so no Cohort and no finalizer"),
                  "team empty Ready")
        self.assertNotIn(FINALIZER, c.team("empty")["metadata"].get("finalizers") or [])
        c.delete(TEAMS + "/empty")
        c.wait_gone(TEAMS + "/empty")

        # The stock Kueue default-flavor: why a flavor without nodeLabels matters, how to fix.
        self.addCleanup(c.sim.req, "DELETE", RFS + "/default-flavor")
        c.create({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ResourceFlavor",
                  "metadata": {"name": "default-flavor"}, "spec": {}}, RFS)
        c.wait_ok(lambda: cond_diffs(c.team("research"), "QuotaReady", "False",
                                     "ConflictDetected", [
                                         "ResourceFlavor default-flavor (label "
                                         "app.kubernetes.io/managed-by is absent: not managed "
                                         "by TauGrid) has no nodeLabels, so Kueue may place "
                                         "what it admits on any node, the 3 GPU pool nodes",
                                         "quota on this flavor, even for cpu only, admits work "
                                         "onto them outside it",
                                         "give default-flavor nodeLabels that only non-pool "
                                         "nodes carry"]),
                  "default-flavor reported with its fix")
        self.wait_pool("zeroed while it selects the pool", zero=True)
        c.delete(RFS + "/default-flavor")
        c.wait_gone(RFS + "/default-flavor")
        self.wait_pool("restored once it is gone")

        # An explicit quota on our flavor (its Cohort as an explicit team's budget was written
        # before the capacity team took the pool): named as TauGrid's, with the quota to
        # remove, never as someone else's.
        self.addCleanup(c.sim.req, "DELETE", TEAMS + "/ml")
        ml = c.create(h.team("ml", quota=[{"flavor": "taugrid-gpu-h100", "resource": GPU,
                                           "nominalQuota": "4"}]), TEAMS)
        self.addCleanup(c.sim.req, "DELETE", COHORTS + "/tau-team-ml")
        c.create({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Cohort",
                  "metadata": {"name": "tau-team-ml",
                               "labels": {h.MANAGED_BY: "taugrid", h.TEAM_LABEL: "ml",
                                          "tau.azure.com/quota-mode": "explicit"},
                               "annotations": {h.TEAM_UID: ml["metadata"]["uid"]}},
                  "spec": {"resourceGroups": [{"coveredResources": [GPU], "flavors": [
                      {"name": "taugrid-gpu-h100",
                       "resources": [{"name": GPU, "nominalQuota": "4"}]}]}]}}, COHORTS)
        c.wait_ok(lambda: cond_diffs(c.cluster(), "ConflictDetected", "True", None, [
            "Cohort tau-team-ml is the budget of explicit-quota team ml and has nominalQuota",
            "on pool flavor taugrid-gpu-h100, which the capacity team's Cohort already holds: "
            "the same nodes would be budgeted twice; remove flavor taugrid-gpu-h100 from "
            "TauTeam ml spec.quota"]), "the explicit quota is named as TauGrid's")
        self.assertNotIn("is not TauGrid's", wst.cond(c.cluster(), "ConflictDetected")["message"])
        c.delete(TEAMS + "/ml")
        c.wait_gone(TEAMS + "/ml")
        c.wait_gone(COHORTS + "/tau-team-ml")
        self.wait_pool("restored once the explicit team is gone")

    def test_05b_delete_managed_removes_the_budget_once_drained(self):
        c = self.c
        path = CQS + "/tau-ws-alpha"
        spec = dict(c.cluster()["spec"], deletionPolicy="DeleteManaged")
        c.merge(CLUSTER, {"spec": {"deletionPolicy": "DeleteManaged"}})
        c.wait_ok(lambda: [] if ((c.cohort("research") or {}).get("metadata", {}).get(
            "annotations") or {}).get("tau.azure.com/deletion-policy") == "DeleteManaged"
            else ["the Cohort does not record deletionPolicy DeleteManaged"],
            "the policy is recorded on the Cohort")
        c.wait_ok(lambda: [] if all(((c.get(RFS + "/" + n) or {}).get("metadata", {}).get(
            "annotations") or {}).get("tau.azure.com/deletion-policy") == "DeleteManaged"
            for n in ("taugrid-gpu-a100", "taugrid-gpu-h100"))
            else ["a flavor does not record deletionPolicy DeleteManaged"],
            "the policy is recorded on our flavors")
        c.merge(path + "/status", {"status": {"admittedWorkloads": 1}})
        # Another finalizer (foreground deletion) holds the TauCluster: while it is being
        # deleted its status says what is held and why.
        hold = "example.com/hold"
        self.addCleanup(c.sim.req, "PATCH", CLUSTER, {"metadata": {"finalizers": None}},
                        "application/merge-patch+json")
        c.merge(CLUSTER, {"metadata": {"finalizers": [hold]}})
        c.delete(CLUSTER)
        c.wait_ok(lambda: cond_diffs(c.cluster(), "BudgetReady", "False", "BudgetZeroed", [
            "root quota is 0: TauCluster cluster is being deleted (deletionPolicy "
            "DeleteManaged): ClusterQueue tau-ws-alpha is held (stopPolicy Hold) until its "
            "admitted and reserving work drains; Cohort tau-team-research is at 0 and goes "
            "once no ClusterQueue is applied to it",
            "ResourceFlavor taugrid-gpu-h100 is kept while ClusterQueue tau-ws-alpha names "
            "it"]), "the deleting TauCluster says what is held")
        c.merge(CLUSTER, {"metadata": {"finalizers": None}})
        c.wait_gone(CLUSTER)

        def held():
            q = c.get(path)
            if q is None:
                return ["ClusterQueue tau-ws-alpha was deleted with admitted work"]
            why = (q["metadata"].get("annotations") or {}).get(HELD) or ""
            d = [] if (q.get("spec") or {}).get("stopPolicy") == "Hold" else ["not held"]
            if "TauCluster cluster is gone (deletionPolicy DeleteManaged)" not in why:
                d.append("annotation %s %r" % (HELD, why))
            return d
        c.wait_ok(held, "the queue with work is held")
        self.wait_pool("the budget is 0 meanwhile", zero=True)
        c.wait_ok(lambda: cond_diffs(c.team("research"), "QuotaReady", "False", "BudgetZeroed",
                                     "(deletionPolicy DeleteManaged): the team's ClusterQueues "
                                     "are deleted as their work drains, then Cohort "
                                     "tau-team-research"), "the team says what happens")
        # Drained: the queue goes, then the Cohort, then our flavors (Kueue's resource-in-use
        # finalizer, which kube-sim emulates, has nothing to wait for by then).
        c.merge(path + "/status", {"status": {"admittedWorkloads": 0}})
        c.wait_gone(path)
        c.wait_gone(COHORTS + "/tau-team-research")
        c.wait_gone(RFS + "/taugrid-gpu-h100")
        c.wait_gone(RFS + "/taugrid-gpu-a100")
        self.assertEqual(c.ours(RFS), [])
        # A TauCluster created again brings everything back.
        spec["deletionPolicy"] = "Retain"
        c.create({"apiVersion": "tau.azure.com/v1alpha1", "kind": "TauCluster",
                  "metadata": {"name": "cluster"}, "spec": spec}, TAU + "/clusters")
        self.wait_pool("the budget is back")
        c.wait_ok(lambda: [] if c.get(path) is not None else ["no ClusterQueue tau-ws-alpha"],
                  "alpha's queue is back")
        c.wait_ok(lambda: c.team_ready_diffs("research"), "team Ready")

    # -- finding 4: the v0 rule (before test_06, which deletes the team) --

    def restart_aggregator(self, name, *args):
        rc = type(self).agg.stop()
        self.assertEqual(rc, 0, "aggregator exit code %s after SIGTERM" % rc)
        type(self).agg = self.c.start_aggregator(name, *args)
        type(self).agg_args = args

    def restore_aggregator(self):
        if getattr(type(self), "agg_args", self.AGG_ARGS) != self.AGG_ARGS:
            self.restart_aggregator("aggregator-restored", *self.AGG_ARGS)

    def test_05c_v0_blocked_workspace_holds_its_queue(self):
        c = self.c
        path = CQS + "/tau-ws-beta"
        self.addCleanup(c.sim.req, "DELETE", WORKSPACES + "/beta")
        c.create(wst.workspace("beta", ns="ml-beta", team="research"), WORKSPACES)
        c.wait_ok(lambda: [] if c.get(path) is not None else ["no ClusterQueue tau-ws-beta"],
                  "beta's queue (MultipleWorkspaces on)")
        before = c.get(path)
        c.merge(path + "/status", {"status": {"admittedWorkloads": 1}})
        # The aggregator restarted without the MultipleWorkspaces gate: v0 activates one
        # workspace in the cluster, the oldest (alpha); beta is blocked, its queue holds work.
        self.restart_aggregator("aggregator-v0", "--budget-resync", "3600s")
        self.addCleanup(self.restore_aggregator)
        c.env.wait_cond("beta", "QueueReady", "False", "BlockedByActiveWorkspace")

        c.wait_ok(lambda: self.held_diffs(
            "beta", before["metadata"]["uid"],
            ["TauWorkspace beta is blocked by the one-active-workspace rule (v0 activates one "
             "workspace at a time: workspace alpha (created ",
             "): delete the active workspace or enable the MultipleWorkspaces feature gate"],
            ["workspace alpha (created ", "enable the MultipleWorkspaces feature gate"]),
            "beta's queue is held, never deleted, and beta says why")
        self.assertEqual(c.get(path)["status"]["admittedWorkloads"], 1)
        alpha = c.get(CQS + "/tau-ws-alpha")
        self.assertNotIn(HELD, alpha["metadata"].get("annotations") or {})
        self.wait_pool("the budget still follows the pool")
        # The gate back: beta active again, the same queue released.
        self.restart_aggregator("aggregator-mw", *self.AGG_ARGS)

        c.wait_ok(lambda: self.released_diffs("beta"), "released once the gate is back")
        self.assertEqual(c.get(path)["metadata"]["uid"], before["metadata"]["uid"])
        c.merge(path + "/status", {"status": {"admittedWorkloads": 0}})
        c.delete(WORKSPACES + "/beta")
        c.wait_gone(path)

    # -- P4: the conflict kinds test_budget's test_04 leaves out --

    def test_05d_foreign_members_of_the_team_cohort(self):
        c = self.c
        for path, body, text in (
                (CQS, {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ClusterQueue",
                       "metadata": {"name": "intruder"},
                       "spec": {"namespaceSelector": {}, "cohortName": "tau-team-research"}},
                 "ClusterQueue intruder is not a TauGrid workspace queue of team research but "
                 "its cohortName is tau-team-research: it would borrow the team budget; remove "
                 "it or change its cohortName through its owner"),
                (COHORTS, {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Cohort",
                           "metadata": {"name": "sub-budget"},
                           "spec": {"parentName": "tau-team-research"}},
                 "Cohort sub-budget is not TauGrid's but its parentName is tau-team-research: "
                 "its queues would borrow the team budget")):
            name = body["metadata"]["name"]
            self.addCleanup(c.sim.req, "DELETE", path + "/" + name)
            created = c.create(body, path)
            c.wait_ok(lambda: cond_diffs(c.team("research"), "QuotaReady", "False",
                                         "ConflictDetected", text) +
                      cond_diffs(c.cluster(), "ConflictDetected", "True", None, text),
                      "%s named as a foreign member" % name)
            self.wait_pool("a foreign member zeroes the budget", zero=True)
            self.assertEqual(c.get(path + "/" + name)["metadata"]["resourceVersion"],
                             created["metadata"]["resourceVersion"], "%s was written" % name)
            c.delete(path + "/" + name)
            c.wait_gone(path + "/" + name)
            self.wait_pool("restored once %s is gone" % name)
            c.wait_ok(lambda: c.team_ready_diffs("research"), "team Ready")

    # -- finding 1: objects of another owner under our names --

    def test_05e_queue_and_cohort_of_another_owner_under_our_names(self):
        c = self.c
        gamma = CQS + "/tau-ws-gamma"
        self.addCleanup(c.sim.req, "DELETE", WORKSPACES + "/gamma")
        self.addCleanup(c.sim.req, "DELETE", gamma)
        self.addCleanup(self.cordon, "h100-2", False)
        # A ClusterQueue of another owner under workspace gamma's queue name: gamma gets no
        # queue, the rest of the budget is applied and follows the pool.
        c.create({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ClusterQueue",
                  "metadata": {"name": "tau-ws-gamma"}, "spec": {"namespaceSelector": {}}}, CQS)
        c.create(wst.workspace("gamma", ns="ml-gamma", team="research"), WORKSPACES)
        c.wait_ok(lambda: cond_diffs(c.team("research"), "QuotaReady", "False",
                                     "OwnershipConflict", [
                                         "ClusterQueue tau-ws-gamma exists but is not ours",
                                         "it is never changed or adopted: remove it through "
                                         "its owner"]), "the team names the queue")
        self.cordon("h100-2", True)
        self.wait_pool("the budget follows a cordon meanwhile")
        self.cordon("h100-2", False)
        self.wait_pool("and the uncordon")
        theirs = c.get(gamma)
        self.assertNotIn(h.MANAGED_BY, theirs["metadata"].get("labels") or {})
        self.assertNotIn("cohortName", theirs["spec"])
        # Its owner deletes it: gamma gets its queue.
        c.delete(gamma)
        c.wait_ok(lambda: [] if ((c.get(gamma) or {}).get("metadata", {}).get("labels") or {})
                  .get(h.MANAGED_BY) == "taugrid" else ["tau-ws-gamma is not ours yet"],
                  "gamma's queue written once the other one is gone")
        c.wait_ok(lambda: c.team_ready_diffs("research"), "team Ready")
        c.delete(WORKSPACES + "/gamma")
        c.wait_gone(gamma)

        # A Cohort of another owner under the team Cohort's name: nothing is written for the
        # team (its queues would borrow from it), never that Cohort.
        path = COHORTS + "/tau-team-research"
        ours = c.get(path)
        taken = c.sim.ok("PUT", path, {
            "apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Cohort",
            "metadata": {"name": "tau-team-research",
                         "resourceVersion": ours["metadata"]["resourceVersion"],
                         "labels": {h.MANAGED_BY: "platform-team"}},
            "spec": {}})
        c.wait_ok(lambda: cond_diffs(c.team("research"), "QuotaReady", "False",
                                     "OwnershipConflict",
                                     "Cohort tau-team-research exists but is not ours"),
                  "the team names the Cohort")
        self.cordon("h100-2", True)
        c.wait_ok(lambda: [] if h.capacity_of(c.cluster()) == h.pool_capacity(c.pool()) else
                  ["discoveredCapacity %s" % h.dump(sorted(h.capacity_of(c.cluster()).items()))],
                  "the pass after the cordon ran")
        self.assertEqual(c.get(path)["metadata"]["resourceVersion"],
                         taken["metadata"]["resourceVersion"], "another owner's Cohort written")
        self.cordon("h100-2", False)
        # Its owner deletes it: ours again, holding the pool.
        c.delete(path)
        c.wait_gone(path)
        self.wait_pool("the Cohort is ours again and holds the pool")
        c.wait_ok(lambda: c.team_ready_diffs("research"), "team Ready")

    # -- finding 1: the capacity team deleted --

    def test_06_capacity_team_deletion(self):
        c = self.c
        old_uid = self.uid(TEAMS + "/research")
        c.wait_ok(lambda: [] if FINALIZER in (c.team("research")["metadata"].get("finalizers")
                                              or []) else ["no finalizer on research"],
                  "the capacity team with a workspace carries the cleanup finalizer")
        c.delete(TEAMS + "/research")
        c.wait_ok(lambda: cond_diffs(c.team("research"), "QuotaReady", "False",
                                     "DeletionBlocked", [
                                         "team research is being deleted but its workspaces "
                                         "(alpha) still use its budget: delete them or move "
                                         "them to another team",
                                         "the budget keeps following the pool"]),
                  "deletion held while alpha exists")
        self.addCleanup(self.cordon, "h100-2", False)
        self.cordon("h100-2", True)
        self.wait_pool("the budget follows a cordon while the team is being deleted",
                       team_uid=old_uid)
        self.cordon("h100-2", False)
        self.wait_pool("and the uncordon", team_uid=old_uid)

        # The finalizer removed by hand (the aggregator was not running): the team is gone.
        c.merge(TEAMS + "/research", {"metadata": {"finalizers": [
            f for f in c.team("research")["metadata"]["finalizers"] if f != FINALIZER]}})
        c.wait_gone(TEAMS + "/research")
        self.wait_pool("a Cohort whose team is gone is zeroed, never frozen", zero=True,
                       team_uid=old_uid)
        missing = ("TauCluster capacityTeamRef names TauTeam research, which does not exist; "
                   "create it or change capacityTeamRef")
        c.wait_ok(lambda: cond_diffs(c.cluster(), "ConflictDetected", "True", None, missing) +
                  cond_diffs(c.cluster(), "BudgetReady", "False", "ConflictDetected", missing),
                  "the TauCluster names the missing team")
        for reason in ("ConflictDetected", "BudgetZeroed"):
            c.wait_ok(lambda: self.event_diffs("TauCluster", "cluster", reason, missing),
                      "%s Event on the TauCluster" % reason)
        self.assertIsNotNone(c.get(CQS + "/tau-ws-alpha"))

        # The team created again (a new UID) adopts its Cohort and gets the pool back.
        new_uid = c.create(h.team("research"), TEAMS)["metadata"]["uid"]
        self.wait_pool("adopted by the new team", team_uid=new_uid)
        c.wait_ok(lambda: self.event_diffs(
            "TauTeam", "research", "Adopted",
            "Cohort tau-team-research carries TauGrid's labels but its owner "
            "(tau.azure.com/team-uid %s) no longer exists: adopted by TauTeam research (UID %s)"
            % (old_uid, new_uid)), "Adopted Event")
        c.wait_ok(lambda: c.team_ready_diffs("research"), "team Ready")

        # Deleted for good: alpha first, then the queue, the Cohort and the finalizer go.
        c.delete(TEAMS + "/research")
        c.wait_ok(lambda: cond_diffs(c.team("research"), "QuotaReady", "False",
                                     "DeletionBlocked", "(alpha)"), "held by alpha")
        c.delete(WORKSPACES + "/alpha")
        c.wait_gone(CQS + "/tau-ws-alpha")
        c.wait_gone(COHORTS + "/tau-team-research")
        c.wait_gone(TEAMS + "/research")
        self.assertEqual(c.ours(CQS), [])


if __name__ == "__main__":
    unittest.main()
