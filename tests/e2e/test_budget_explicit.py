"""End-to-end scenarios of explicit-quota teams (issue 14, rules E1-E10 of docs/api.md).

Run with the system interpreter (python3-grpcio lives there), from tests/e2e:
    TAU_AGGREGATOR_BIN=build/tau-aggregator TAU_CLI=build/tau \
    /usr/bin/python3 -m unittest -v test_budget_explicit

What runs: the team budget's harness (harness/budget.py: kube-sim with `--authz rbac`, the real
Kueue CRDs and kube-sim's Kueue admission rules, the taugrid CRDs and the chart's RBAC, the real
tau-aggregator with only its ServiceAccount's token).  The TauCluster names no capacity team, so
every TauTeam is an explicit-quota team.  The pool is three Ready Linux nodes (h100: 16 GPUs,
a100: 4 GPUs), counted from their Node objects once the sync gate's timeout passes.

One aggregator runs with --budget-resync 3600s, so every step below is picked up by its event.
Reservations are set on ClusterQueue status by the test, as Kueue would.  The cases run in order
and each leaves the cluster as the next expects it.  Expected objects are exact (quantities
compared by value) and messages are matched in full where the contract fixes them.
"""
import json
import subprocess
import unittest

from harness import budget as h
from harness import paths
from harness import workspace as wst
from harness.budget import COHORTS, CQS, NODES, RFS, TAU, TEAMS, WORKSPACES, cond_diffs

CLI = paths.CLI_BIN
H100 = "taugrid-gpu-h100"
GPU = "nvidia.com/gpu"
CPU = "cpu"
FINALIZER = "tau.azure.com/team-cleanup"
QUOTA_MODE = "tau.azure.com/quota-mode"


def setUpModule():
    h.require_all()


def entry(flavor, resource, nominal, borrowing=None, lending=None):
    e = {"flavor": flavor, "resource": resource, "nominalQuota": nominal}
    if borrowing is not None:
        e["borrowingLimit"] = borrowing
    if lending is not None:
        e["lendingLimit"] = lending
    return e


def want_groups(cells, queue=False):
    """resourceGroups as our contract writes them, from {(flavor, resource): nominal} (Cohort)
    or {(flavor, resource): (nominal, borrowing, lending)} (ClusterQueue): one group, resources
    and flavors sorted, every flavor listing every covered resource ("0" where not given)."""
    if not cells:
        return []
    resources = sorted({r for _, r in cells})
    flavors = sorted({f for f, _ in cells})
    out = []
    for f in flavors:
        rs = []
        for r in resources:
            v = cells.get((f, r), ("0", "0", "0") if queue else "0")
            if queue:
                rs.append({"name": r, "nominalQuota": h.qty(v[0]), "borrowingLimit": h.qty(v[1]),
                           "lendingLimit": h.qty(v[2])})
            else:
                rs.append({"name": r, "nominalQuota": h.qty(v)})
        out.append({"name": f, "resources": rs})
    return [{"coveredResources": resources, "flavors": out}]


class ExplicitTest(unittest.TestCase):
    AGG_ARGS = ("--feature-gates", "MultipleWorkspaces=true", "--budget-resync", "3600s")

    @classmethod
    def setUpClass(cls):
        c = cls.c = h.Cluster()
        try:
            for n in (h.node("h100-1", "h100", h.H100), h.node("h100-2", "h100", h.H100_B),
                      h.node("a100-1", "a100", h.A100)):
                c.create(n, NODES)
            c.create(h.tau_cluster(capacity_team=None), TAU + "/clusters")
            cls.agg = c.start_aggregator("aggregator", *cls.AGG_ARGS)
            # Every scenario starts on an established inventory: a team created before it
            # would pass through Pending (WaitingForInventory), which the Events rule leaves out
            # (docs/budget.md), and on a slow machine (the sanitizer build) it did.
            c.wait_ok(lambda: h.cond_diffs(c.cluster(), "InventoryEstablished", "True"),
                      "the inventory is established")
        except BaseException:
            c.stop()
            raise

    @classmethod
    def tearDownClass(cls):
        cls.c.stop_checked(cls.agg)

    # -- helpers --

    def uid(self, path):
        return self.c.get(path)["metadata"]["uid"]

    def set_team_quota(self, team, quota):
        self.c.merge(TEAMS + "/" + team, {"spec": {"quota": quota}})

    def set_ws_quota(self, ws, quota):
        self.c.merge(WORKSPACES + "/" + ws, {"spec": {"quota": quota}})

    def reserve(self, ws, total):
        res = None if total is None else [{"name": H100, "resources": [
            {"name": GPU, "total": total, "borrowed": "0"}]}]
        self.c.merge(CQS + "/" + h.cq_name(ws) + "/status",
                     {"status": {"flavorsReservation": res}})

    def cohort_diffs(self, team, cells):
        """The explicit team Cohort: ownership, the explicit mark, exactly `cells`, no limits."""
        obj = self.c.cohort(team)
        if obj is None:
            return ["Cohort %s does not exist" % h.cohort_name(team)]
        d = h._owner_diffs(obj, {h.MANAGED_BY: "taugrid", h.TEAM_LABEL: team,
                                 QUOTA_MODE: "explicit"},
                           {h.TEAM_UID: self.uid(TEAMS + "/" + team)})
        spec = obj.get("spec") or {}
        if "parentName" in spec:
            d.append("Cohort has parentName")
        got, want = h.norm_groups(spec.get("resourceGroups")), want_groups(cells)
        if got != want:
            d.append("Cohort %s resourceGroups\n  %s\nwant\n  %s" % (team, h.dump(got),
                                                                    h.dump(want)))
        return d

    def cq_diffs(self, ws, team, cells):
        obj = self.c.get(CQS + "/" + h.cq_name(ws))
        if obj is None:
            return ["ClusterQueue %s does not exist" % h.cq_name(ws)]
        d = h._owner_diffs(obj, {h.MANAGED_BY: "taugrid", h.TEAM_LABEL: team, h.WS_LABEL: ws},
                           {h.WS_UID: self.uid(WORKSPACES + "/" + ws)})
        spec = obj.get("spec") or {}
        if spec.get("cohortName") != h.cohort_name(team):
            d.append("ClusterQueue %s cohortName %r, want %r" % (
                h.cq_name(ws), spec.get("cohortName"), h.cohort_name(team)))
        sel = {"matchLabels": {"kubernetes.io/metadata.name": "ns-" + ws}}
        if spec.get("namespaceSelector") != sel:
            d.append("ClusterQueue %s namespaceSelector %s" % (h.cq_name(ws),
                                                               h.dump(spec.get("namespaceSelector"))))
        got, want = h.norm_groups(spec.get("resourceGroups")), want_groups(cells, queue=True)
        if got != want:
            d.append("ClusterQueue %s resourceGroups\n  %s\nwant\n  %s" % (
                h.cq_name(ws), h.dump(got), h.dump(want)))
        return d

    def team_diffs(self, team, status, reason, text=None, phase=None):
        t = self.c.team(team)
        d = cond_diffs(t, "QuotaReady", status, reason, text)
        st = (t or {}).get("status") or {}
        want_phase = phase or ("Ready" if status == "True" else "Degraded")
        if st.get("phase") != want_phase:
            d.append("TauTeam %s phase %r, want %s" % (team, st.get("phase"), want_phase))
        return d

    def ws_diffs(self, ws, status, reason, text=None):
        """The budget's QuotaReady condition on the workspace (refusals are reported there)."""
        return cond_diffs(self.c.get(WORKSPACES + "/" + ws), "QuotaReady", status, reason, text)

    def wait(self, check, msg):
        self.c.wait_ok(check, msg)

    def team_events(self, team, reason):
        """Events about TauTeam `team` with `reason`, as (type, message), in kube-sim."""
        out = []
        for e in self.c.items("/api/v1/events"):
            io = e.get("involvedObject") or {}
            if (io.get("kind"), io.get("name"), e.get("reason")) == ("TauTeam", team, reason):
                out.append((e.get("type"), e.get("message")))
        return out

    def event_diffs(self, team, reason, etype, text):
        """At least one `reason` Event of type `etype` about `team` whose message names text."""
        evs = self.team_events(team, reason)
        if any(t == etype and text in (m or "") for t, m in evs):
            return []
        return ["no %s %s Event about TauTeam %s naming %r; those with that reason: %s" % (
            etype, reason, team, text, evs)]

    def tau(self, *args):
        r = subprocess.run([CLI, "--kubeconfig", self.c.sim.kubeconfig,
                            "--system-namespace", "tau-system"] + list(args),
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           universal_newlines=True, timeout=60)
        return r.returncode, r.stdout, r.stderr

    def cli_budget_diffs(self, team, want, ready=True):
        """`tau team status TEAM -o json`: budget[] is exactly `want`, its exit code the
        verdict."""
        rc, out, err = self.tau("team", "status", team, "-o", "json")
        if rc != (0 if ready else 1):
            return ["tau team status %s exit %d: %s%s" % (team, rc, out, err)]
        doc = json.loads(out)
        if doc["budget"] != want:
            return ["tau team status %s budget\n  %s\nwant\n  %s" % (team, h.dump(doc["budget"]),
                                                                    h.dump(want))]
        return []

    def create_ws(self, name, team, quota=None):
        w = wst.workspace(name, ns="ns-" + name, team=team)
        if quota is not None:
            w["spec"]["quota"] = quota
        return self.c.create(w, WORKSPACES)

    # -- E10 (flavors), E1, E2, E9 (finalizer) --

    def test_01_flavor_not_ready_then_cohort_and_queues(self):
        c = self.c
        c.create(h.team("ml", [entry(H100, GPU, "10"), entry(H100, CPU, "64")]), TEAMS)
        self.create_ws("a", "ml", [entry(H100, GPU, "4", borrowing="2")])
        self.create_ws("b", "ml")
        self.wait(lambda: self.team_diffs(
            "ml", "False", "FlavorNotReady",
            'ResourceFlavor "%s" named in the quota of team "ml" does not exist' % H100),
            "E10: a flavor that does not exist")
        self.wait(lambda: self.event_diffs("ml", "FlavorNotReady", "Warning",
                                           'ResourceFlavor "%s" named in the quota' % H100),
                  "an Event says why the team is not Ready")
        self.assertEqual(c.names(COHORTS), [])
        self.assertEqual(c.names(CQS), [])
        # The platform creates the flavor (no capacity team: TauGrid does not).
        c.create({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ResourceFlavor",
                  "metadata": {"name": H100},
                  "spec": {"nodeLabels": {h.GPU_CLASS: "h100"}}}, RFS)
        self.wait(lambda: self.cohort_diffs("ml", {(H100, GPU): "6", (H100, CPU): "64"}),
                  "E1: Cohort = team quota - guarantees")
        self.wait(lambda: self.cq_diffs("a", "ml", {(H100, GPU): ("4", "2", "0"),
                                                    (H100, CPU): ("0", "0", "0")}) +
                  self.cq_diffs("b", "ml", {(H100, GPU): ("0", "0", "0"),
                                            (H100, CPU): ("0", "0", "0")}),
                  "E2: guarantees as nominal quota, omitted limits as 0")
        self.wait(lambda: self.team_diffs("ml", "True", "QuotaApplied", "tau-team-ml"),
                  "team Ready")
        self.wait(lambda: self.event_diffs("ml", "QuotaRestored", "Normal", "tau-team-ml"),
                  "an Event says the team recovered")
        # cohortUID follows on the pass after the Cohort's creation event (writes are >= 1 s apart).
        cohort_uid = self.uid(COHORTS + "/tau-team-ml")
        self.wait(lambda: [] if (c.team("ml").get("status") or {}).get("cohortUID") == cohort_uid
                  else ["status.cohortUID is not %s" % cohort_uid], "team status names the Cohort UID")
        t = c.team("ml")
        self.assertEqual(t["status"]["cohort"], "tau-team-ml")
        self.assertIn(FINALIZER, t["metadata"].get("finalizers") or [])
        for ws in ("a", "b"):
            c.env.wait_phase(ws, "Ready")

    # -- E3 --

    def test_02_guarantees_above_the_quota_write_nothing(self):
        c = self.c
        before = c.cohort("ml")["metadata"]["resourceVersion"]
        self.create_ws("c", "ml", [entry(H100, GPU, "7")])
        self.wait(lambda: self.team_diffs(
            "ml", "False", "QuotaInvalid",
            'team "ml": workspace guarantees 11 exceed team quota 10 for flavor %s resource %s'
            % (H100, GPU)), "E3: QuotaInvalid names flavor and resource")
        self.wait(lambda: self.event_diffs("ml", "QuotaInvalid", "Warning",
                                           "workspace guarantees 11 exceed team quota 10"),
                  "a QuotaInvalid Event")
        self.assertEqual(c.cohort("ml")["metadata"]["resourceVersion"], before)
        self.assertIsNone(c.get(CQS + "/tau-ws-c"))
        c.delete(WORKSPACES + "/c")
        c.wait_gone(WORKSPACES + "/c")
        self.wait(lambda: self.team_diffs("ml", "True", "QuotaApplied"), "valid again")
        self.assertEqual(c.cohort("ml")["metadata"]["resourceVersion"], before)

    # -- E4 --

    def test_03_capacity_counts_other_teams_as_applied(self):
        c = self.c
        c.create(h.team("cv", [entry(H100, GPU, "8")]), TEAMS)
        self.wait(lambda: self.team_diffs(
            "cv", "False", "CapacityExceeded",
            "team allocations 18 exceed discovered capacity 16 for flavor %s resource %s"
            % (H100, GPU)), "E4: 10 applied by ml + 8 > 16")
        self.wait(lambda: self.event_diffs("cv", "CapacityExceeded", "Warning",
                                           "team allocations 18 exceed discovered capacity 16"),
                  "a CapacityExceeded Event")
        self.wait(lambda: self.cohort_diffs("cv", {(H100, GPU): "0"}),
                  "cv holds nothing while it does not fit")
        # ml shrinks (never blocked by capacity); then cv fits.
        self.set_team_quota("ml", [entry(H100, GPU, "8"), entry(H100, CPU, "64")])
        self.wait(lambda: self.cohort_diffs("ml", {(H100, GPU): "4", (H100, CPU): "64"}),
                  "ml reduced")
        self.wait(lambda: self.cohort_diffs("cv", {(H100, GPU): "8"}) +
                  self.team_diffs("cv", "True", "QuotaApplied"), "cv fits now")
        self.wait(lambda: self.team_diffs("ml", "True", "QuotaApplied"), "ml Ready")

    # -- E5 --

    def test_04_reductions_never_go_below_reservations(self):
        c = self.c
        # The controller's caches must hold the reservation before the spec changes; a refusal
        # that appears (7 > maximum 6) and clears (5) shows it saw 5.
        self.reserve("a", "7")
        self.wait(lambda: self.ws_diffs("a", "False", "ReductionBlocked",
                                        "active reservation 7 (new maximum 6)"),
                  "the reservation is seen")
        self.reserve("a", "5")
        self.wait(lambda: self.ws_diffs("a", "True", "QuotaApplied") +
                  self.team_diffs("ml", "True", "QuotaApplied"), "reservation 5 fits")
        # Queue guard: guarantee 4 -> 2 with borrowing 2 leaves a maximum of 4 < 5.
        self.set_ws_quota("a", [entry(H100, GPU, "2", borrowing="2")])
        msg = ('refusing to reduce ClusterQueue "tau-ws-a" below active reservation 5 '
               '(new maximum 4) for flavor %s resource %s' % (H100, GPU))
        self.wait(lambda: self.team_diffs("ml", "False", "ReductionBlocked", msg) +
                  self.ws_diffs("a", "False", "ReductionBlocked", msg),
                  "E5: the queue's reduction is refused, on the team and the workspace")
        self.assertEqual(self.cq_diffs("a", "ml", {(H100, GPU): ("4", "2", "0"),
                                                   (H100, CPU): ("0", "0", "0")}), [])
        self.assertEqual(self.cohort_diffs("ml", {(H100, GPU): "4", (H100, CPU): "64"}), [],
                         "the Cohort does not grow by the blocked amount")
        # A shrink that keeps the reservation goes through and releases quota to the Cohort.
        self.set_ws_quota("a", [entry(H100, GPU, "2", borrowing="4")])
        self.wait(lambda: self.cq_diffs("a", "ml", {(H100, GPU): ("2", "4", "0"),
                                                    (H100, CPU): ("0", "0", "0")}) +
                  self.cohort_diffs("ml", {(H100, GPU): "6", (H100, CPU): "64"}) +
                  self.team_diffs("ml", "True", "QuotaApplied") +
                  self.ws_diffs("a", "True", "QuotaApplied"),
                  "E5: a successful shrink releases its quota to the Cohort")
        self.wait(lambda: self.event_diffs("ml", "ReductionBlocked", "Warning",
                                           'refusing to reduce ClusterQueue "tau-ws-a"'),
                  "a ReductionBlocked Event")
        # `tau team status` shows what the aggregator wrote: quota 8, guarantee 2 (workspace a),
        # Cohort 6, applied 6 + 2 + 0 (queues a and b), reserved 5 (queue a).
        self.wait(lambda: self.cli_budget_diffs("ml", [
            {"flavor": H100, "resource": CPU, "budget": "64", "pool": "64", "guarantees": "0",
             "applied": "64", "reserved": "0"},
            {"flavor": H100, "resource": GPU, "budget": "6", "pool": "8", "guarantees": "2",
             "applied": "8", "reserved": "5"}]), "tau team status ml -o json")
        rc, out, err = self.tau("team", "status", "ml")
        self.assertEqual(rc, 0, err)
        rows = [l.split() for l in out.splitlines()]
        self.assertIn(["FLAVOR", "RESOURCE", "QUOTA", "GUARANTEES", "BUDGET", "APPLIED",
                       "RESERVED"], rows)
        self.assertIn([H100, GPU, "8", "2", "6", "8", "5"], rows)
        self.assertIn([H100, CPU, "64", "0", "64", "64", "0"], rows)
        # Team guard: 8 -> 4 with 5 reserved.
        before = c.cohort("ml")["metadata"]["resourceVersion"]
        self.set_team_quota("ml", [entry(H100, GPU, "4"), entry(H100, CPU, "64")])
        self.wait(lambda: self.team_diffs(
            "ml", "False", "ReductionBlocked",
            'refusing to reduce team "ml" below active reservations 5 (new allocation 4) for '
            'flavor %s resource %s' % (H100, GPU)), "E5: the team's reduction is refused")
        self.assertEqual(c.cohort("ml")["metadata"]["resourceVersion"], before)
        self.set_team_quota("ml", [entry(H100, GPU, "8"), entry(H100, CPU, "64")])
        self.reserve("a", None)
        self.wait(lambda: self.team_diffs("ml", "True", "QuotaApplied"), "ml Ready again")

    # -- E6 --

    def test_05_migration_keeps_the_old_charge_until_the_queue_moves(self):
        c = self.c
        # The reservation first, seen by the controller (b's maximum is 0 until its quota
        # lets it hold 9), then b's quota, then the move.
        self.reserve("b", "9")
        self.wait(lambda: self.ws_diffs("b", "False", "ReductionBlocked",
                                        "active reservation 9 (new maximum 0)"),
                  "the reservation is seen")
        self.set_ws_quota("b", [entry(H100, GPU, "2", borrowing="8")])
        self.wait(lambda: self.cohort_diffs("ml", {(H100, GPU): "4", (H100, CPU): "64"}) +
                  self.cq_diffs("b", "ml", {(H100, GPU): ("2", "8", "0"),
                                            (H100, CPU): ("0", "0", "0")}),
                  "ml: 8 - 2 - 2")
        c.merge(WORKSPACES + "/b", {"spec": {"teamRef": {"name": "cv"}}})
        mig = ('refusing workspace migration of "b" from Cohort "tau-team-ml" to team "cv": its '
               'quota 8 of flavor %s resource %s would be below active reservations 9; the queue '
               'keeps its Cohort' % (H100, GPU))
        self.wait(lambda: self.team_diffs("cv", "False", "MigrationBlocked", mig) +
                  self.ws_diffs("b", "False", "MigrationBlocked", mig),
                  "E6: the destination cannot hold the reservations")
        self.wait(lambda: self.event_diffs("cv", "MigrationBlocked", "Warning", mig),
                  "a MigrationBlocked Event")
        cq = c.get(CQS + "/tau-ws-b")
        self.assertEqual(cq["spec"]["cohortName"], "tau-team-ml", "the queue keeps its Cohort")
        self.assertEqual(self.cohort_diffs("ml", {(H100, GPU): "4", (H100, CPU): "64"}), [],
                         "still charged to the old team")
        self.assertEqual(self.cohort_diffs("cv", {(H100, GPU): "8"}), [])
        self.reserve("b", "3")
        self.wait(lambda: self.cq_diffs("b", "cv", {(H100, GPU): ("2", "8", "0")}) +
                  self.cohort_diffs("cv", {(H100, GPU): "6"}) +
                  self.team_diffs("cv", "True", "QuotaApplied"), "the queue moved to cv")
        self.wait(lambda: self.cohort_diffs("ml", {(H100, GPU): "6", (H100, CPU): "64"}),
                  "ml gets the guarantee back once the queue left")
        self.reserve("b", None)

    # -- E7 --

    def test_06_degraded_team_lets_shrinks_converge(self):
        self.set_team_quota("cv", [entry(H100, GPU, "12")])
        self.wait(lambda: self.team_diffs("cv", "False", "CapacityExceeded",
                                          "team allocations 20 exceed discovered capacity 16"),
                  "cv Degraded")
        self.set_ws_quota("b", [entry(H100, GPU, "1", borrowing="8")])
        self.wait(lambda: self.cq_diffs("b", "cv", {(H100, GPU): ("1", "8", "0")}) +
                  self.cohort_diffs("cv", {(H100, GPU): "7"}),
                  "E7: the shrink converges and releases to the Cohort")
        self.set_ws_quota("b", [entry(H100, GPU, "3", borrowing="6")])
        raise_msg = ('refusing to raise the nominal quota of ClusterQueue "tau-ws-b" (workspace '
                     '"b"): team "cv" is not Ready')
        self.wait(lambda: self.team_diffs("cv", "False", "CapacityExceeded", raise_msg) +
                  self.ws_diffs("b", "False", "TeamNotReady", raise_msg),
                  "E7: a raise traded against borrowing is refused")
        self.assertEqual(self.cq_diffs("b", "cv", {(H100, GPU): ("1", "8", "0")}), [])
        self.set_team_quota("cv", [entry(H100, GPU, "8")])
        self.wait(lambda: self.cq_diffs("b", "cv", {(H100, GPU): ("3", "6", "0")}) +
                  self.cohort_diffs("cv", {(H100, GPU): "5"}) +
                  self.team_diffs("cv", "True", "QuotaApplied"), "Ready: the raise goes through")

    # -- E8 --

    def test_07_objects_of_another_owner_are_never_adopted(self):
        c = self.c
        created = c.create({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Cohort",
                            "metadata": {"name": "tau-team-owned",
                                         "labels": {h.MANAGED_BY: "taugrid"},
                                         "annotations": {h.TEAM_UID: "someone-else"}},
                            "spec": {}}, COHORTS)
        c.create(h.team("owned", [entry(H100, GPU, "0")]), TEAMS)
        self.wait(lambda: self.team_diffs(
            "owned", "False", "OwnershipConflict",
            'Cohort "tau-team-owned" has a different owner UID'), "E8: different owner UID")
        c.merge(COHORTS + "/tau-team-owned", {"metadata": {"annotations": {h.TEAM_UID: None}}})
        self.wait(lambda: self.team_diffs(
            "owned", "False", "OwnershipConflict",
            'Cohort "tau-team-owned" has legacy ownership metadata'), "E8: legacy ownership")
        now = c.cohort("owned")
        self.assertEqual(now["spec"], created["spec"])
        self.assertNotIn(QUOTA_MODE, now["metadata"].get("labels") or {})
        # A ClusterQueue with our labels but no owner annotation, for a new workspace of ml.
        legacy = c.create({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ClusterQueue",
                           "metadata": {"name": "tau-ws-d", "labels": {h.MANAGED_BY: "taugrid"}},
                           "spec": {"namespaceSelector": {}}}, CQS)
        self.create_ws("d", "ml")
        self.wait(lambda: self.team_diffs(
            "ml", "False", "OwnershipConflict",
            'ClusterQueue "tau-ws-d" has legacy ownership metadata'), "E8: a legacy queue")
        self.wait(lambda: self.ws_diffs("d", "False", "OwnershipConflict",
                                        'ClusterQueue "tau-ws-d" has legacy ownership metadata'),
                  "E8: reported on the workspace")
        now = c.get(CQS + "/tau-ws-d")
        self.assertEqual(now["spec"], legacy["spec"])
        self.assertEqual(now["metadata"]["resourceVersion"], legacy["metadata"]["resourceVersion"])
        c.delete(WORKSPACES + "/d")
        c.wait_gone(WORKSPACES + "/d")
        c.delete(CQS + "/tau-ws-d")
        c.wait_gone(CQS + "/tau-ws-d")
        c.delete(TEAMS + "/owned")
        c.delete(COHORTS + "/tau-team-owned")
        c.wait_gone(COHORTS + "/tau-team-owned")
        self.wait(lambda: self.team_diffs("ml", "True", "QuotaApplied"), "ml Ready again")

    # -- E9 --

    def test_08_deleting_a_team_waits_for_its_queues(self):
        c = self.c
        c.delete(TEAMS + "/cv")
        self.wait(lambda: self.team_diffs(
            "cv", "False", "DeletionBlocked",
            'team "cv" is being deleted but ClusterQueue "tau-ws-b" of workspace "b" is still '
            'applied to Cohort "tau-team-cv"'), "E9: deletion waits")
        self.wait(lambda: self.event_diffs("cv", "DeletionBlocked", "Warning",
                                           'ClusterQueue "tau-ws-b" of workspace "b"'),
                  "a DeletionBlocked Event")
        t = c.team("cv")
        self.assertIn(FINALIZER, t["metadata"]["finalizers"])
        self.assertIsNotNone(c.cohort("cv"))
        c.delete(WORKSPACES + "/b")
        c.wait_gone(CQS + "/tau-ws-b")
        c.wait_gone(TEAMS + "/cv")
        c.wait_gone(COHORTS + "/tau-team-cv")

    # -- E10 --

    def test_09_empty_quota_is_zero(self):
        c = self.c
        c.create(h.team("empty"), TEAMS)
        self.create_ws("e", "empty")
        self.wait(lambda: self.cohort_diffs("empty", {}) + self.cq_diffs("e", "empty", {}),
                  "E10: no quota: an empty Cohort and queue, never unlimited")
        self.set_ws_quota("e", [entry(H100, GPU, "1")])
        self.wait(lambda: self.team_diffs(
            "empty", "False", "QuotaInvalid",
            'team "empty": workspace guarantees 1 exceed team quota 0 for flavor %s resource %s'
            % (H100, GPU)), "E10: a guarantee of a team without quota")

    # -- a workspace leaving its team --

    def test_10_workspace_leaving_keeps_no_quota_ready(self):
        c = self.c
        self.create_ws("f", "ml")
        self.wait(lambda: self.ws_diffs("f", "True", "QuotaApplied") +
                  self.cq_diffs("f", "ml", {(H100, GPU): ("0", "0", "0"),
                                            (H100, CPU): ("0", "0", "0")}),
                  "f in ml: its queue holds its (empty) guarantee")
        c.merge(WORKSPACES + "/f", {"spec": {"teamRef": None}})

        def left():
            ws = c.get(WORKSPACES + "/f")
            d = [] if wst.cond(ws, "QuotaReady") is None else [
                "workspace f still has QuotaReady %s" % h.dump(wst.cond(ws, "QuotaReady"))]
            if c.get(CQS + "/tau-ws-f") is not None:
                d.append("ClusterQueue tau-ws-f still exists")
            return d
        self.wait(left, "no QuotaReady from the team it left, and its queue removed")
        c.delete(WORKSPACES + "/f")
        c.wait_gone(WORKSPACES + "/f")

    # -- Events: one per change, never one per pass --

    def test_11_events_only_on_changes(self):
        # Each of these states was entered once in the cases above; the passes between (many:
        # every workspace, queue and team change) added none.
        for team, reason in (("ml", "FlavorNotReady"), ("ml", "QuotaInvalid"),
                             ("cv", "MigrationBlocked"), ("cv", "DeletionBlocked")):
            self.assertEqual(len(self.team_events(team, reason)), 1,
                             "%s %s Events: %s" % (team, reason, self.team_events(team, reason)))
        self.wait(lambda: self.event_diffs("empty", "QuotaInvalid", "Warning",
                                           "workspace guarantees 1 exceed team quota 0"),
                  "a QuotaInvalid Event for the team without quota")
        # More passes (annotations on the Degraded team) make no new Event.
        for i in range(3):
            self.c.merge(TEAMS + "/empty", {"metadata": {"annotations": {"touch": str(i)}}})
        self.set_ws_quota("e", [entry(H100, GPU, "2")])
        self.wait(lambda: self.team_diffs("empty", "False", "QuotaInvalid",
                                          "workspace guarantees 2 exceed team quota 0"),
                  "a pass after the touches")
        self.assertEqual(len(self.team_events("empty", "QuotaInvalid")), 1,
                         self.team_events("empty", "QuotaInvalid"))
        self.assertEqual(self.team_events("empty", "QuotaRestored"), [])

    # -- issue 24, finding 1: an explicit team and its workspace created again --

    def test_12_team_and_workspace_created_again_adopt_their_objects(self):
        c = self.c
        self.addCleanup(c.sim.req, "DELETE", TEAMS + "/re")
        self.addCleanup(c.sim.req, "DELETE", WORKSPACES + "/rw")
        c.create(h.team("re", [entry(H100, GPU, "1")]), TEAMS)
        self.create_ws("rw", "re")
        self.wait(lambda: self.cohort_diffs("re", {(H100, GPU): "1"}) +
                  self.team_diffs("re", "True", "QuotaApplied"), "team re Ready")
        cq = CQS + "/" + h.cq_name("rw")
        self.wait(lambda: [] if c.get(cq) is not None else ["no %s" % cq], "rw's queue")
        queue_uid = self.uid(cq)
        c.merge(cq + "/status", {"status": {"admittedWorkloads": 1}})
        # The team gone without its cleanup (its finalizer removed by hand, as when the
        # aggregator was not running): rw's queue holds work, so it and the Cohort it names
        # stay, and a team created again under the name adopts the Cohort.
        old_uid = self.uid(TEAMS + "/re")
        c.delete(TEAMS + "/re")
        c.merge(TEAMS + "/re", {"metadata": {"finalizers": None}})
        c.wait_gone(TEAMS + "/re")
        self.assertIsNotNone(c.cohort("re"))
        new_uid = c.create(h.team("re", [entry(H100, GPU, "1")]), TEAMS)["metadata"]["uid"]
        self.wait(lambda: self.cohort_diffs("re", {(H100, GPU): "1"}) +
                  self.team_diffs("re", "True", "QuotaApplied"),
                  "the new team owns its Cohort again")
        self.wait(lambda: self.event_diffs(
            "re", "Adopted", "Normal",
            "Cohort tau-team-re carries TauGrid's labels but its owner (tau.azure.com/team-uid "
            "%s) no longer exists: adopted by TauTeam re (UID %s)" % (old_uid, new_uid)),
            "Adopted Event")
        self.assertEqual(self.uid(cq), queue_uid, "rw's queue was re-created")
        self.assertEqual(c.get(cq)["spec"].get("cohortName"), h.cohort_name("re"))
        # rw deleted while its queue holds work, then created again (a new UID): the queue,
        # kept for its work, is adopted by the new workspace.
        old_ws = self.uid(WORKSPACES + "/rw")
        c.delete(WORKSPACES + "/rw")
        c.wait_gone(WORKSPACES + "/rw")
        self.assertEqual(self.uid(cq), queue_uid, "the queue with work was deleted")
        new_ws = self.create_ws("rw", "re")["metadata"]["uid"]
        self.wait(lambda: [] if (c.get(cq)["metadata"].get("annotations") or {}).get(
            h.WS_UID) == new_ws else ["%s not adopted: %s" % (cq, h.dump(
                c.get(cq)["metadata"].get("annotations")))], "the queue adopted by rw")
        self.wait(lambda: self.event_diffs(
            "re", "Adopted", "Normal",
            "ClusterQueue tau-ws-rw carries TauGrid's labels but its owner "
            "(tau.azure.com/workspace-uid %s) no longer exists: adopted by TauTeam re" % old_ws),
            "Adopted Event for the queue")
        self.assertEqual(self.uid(cq), queue_uid, "rw's queue was re-created")
        self.wait(lambda: self.team_diffs("re", "True", "QuotaApplied"), "team re Ready")
        c.merge(cq + "/status", {"status": {"admittedWorkloads": 0}})
        c.delete(WORKSPACES + "/rw")
        c.wait_gone(cq)
        c.delete(TEAMS + "/re")
        c.wait_gone(TEAMS + "/re")
        c.wait_gone(COHORTS + "/tau-team-re")


if __name__ == "__main__":
    unittest.main()
