"""End-to-end tests of `tau team list|status` against kube-sim.

kube-sim starts with the Kueue CRDs and taugrid's CRDs. No aggregator runs: the test writes by
hand what the budget controller would (docs/budget.md): the TauCluster `cluster` with its
capacityTeamRef and status.discoveredCapacity, TauTeams with their status, the team's root
Cohort and the workspace ClusterQueues with their status (each status through its /status
subresource, as the aggregator writes it). Then it runs the real `tau` binary and checks its
output and exit codes.

Binary: TAU_CLI (cmake/team-cli-tests.cmake sets it), else build/tau. Standard library only.
"""
import json
import os
import subprocess
import unittest

import yaml

from harness import paths
from harness.kubesim import KubeSim

ROOT = paths.ROOT

KUEUE_CRDS = os.path.join(ROOT, "tests", "fixtures", "kueue")
TAU_CRDS = os.path.join(ROOT, "charts", "taugrid", "crds")
CLI = os.environ.get("TAU_CLI") or os.path.join(ROOT, "build", "tau")

TAU = "/apis/tau.azure.com/v1alpha1"
TEAMS = TAU + "/namespaces/tau-system/teams"
WORKSPACES = TAU + "/namespaces/tau-system/workspaces"
KUEUE = "/apis/kueue.x-k8s.io/v1beta2"
MERGE = "application/merge-patch+json"
H100, A100 = "taugrid-gpu-h100-80gb", "taugrid-gpu-a100-80gb"
NOW = "2026-12-02T18:00:00Z"


def condition(status, reason, message, ctype="QuotaReady"):
    return {"type": ctype, "status": status, "reason": reason, "message": message,
            "lastTransitionTime": NOW}


def team_status(phase, cond, cohort=None, uid=None, observed=1):
    st = {"phase": phase, "observedGeneration": observed, "conditions": [cond]}
    if cohort:
        st["cohort"] = cohort
    if uid:
        st["cohortUID"] = uid
    return {"status": st}


def flavors(quota):
    """[(flavor, {resource: quantity})] -> Kueue flavors list."""
    return [{"name": f, "resources": [{"name": r, "nominalQuota": q}
                                      for r, q in sorted(res.items())]} for f, res in quota]


def workspace(name, team=None):
    spec = {"authorization": {"mode": "workspace-rbac"},
            "principalRef": {"provider": "entra", "name": "researchers"},
            "kubernetesSubject": {"kind": "Group", "name": "researchers"},
            "role": "researcher", "target": {"createNamespace": True, "namespace": "ml-" + name}}
    if team:
        spec["teamRef"] = {"name": team}
    return {"apiVersion": "tau.azure.com/v1alpha1", "kind": "TauWorkspace",
            "metadata": {"name": name, "namespace": "tau-system"}, "spec": spec}


class TeamCli(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.sim = KubeSim(["--crds", KUEUE_CRDS, "--crds", TAU_CRDS])
        try:
            cls.seed()
        except BaseException:
            cls.sim.stop()
            raise

    @classmethod
    def tearDownClass(cls):
        cls.sim.stop()

    @classmethod
    def seed(cls):
        sim = cls.sim
        sim.ok("POST", "/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace",
                                              "metadata": {"name": "tau-system"}})
        sim.ok("POST", TAU + "/clusters", {
            "apiVersion": "tau.azure.com/v1alpha1", "kind": "TauCluster",
            "metadata": {"name": "cluster"},
            "spec": {"managementMode": "Reconcile",
                     "queues": {"capacityTeamRef": {"name": "research"}}}})
        # discoveredCapacity names the GPU class; "1.5Gi" and the bare number 4 come out
        # canonical ("1536Mi", "4").
        sim.ok("PATCH", TAU + "/clusters/cluster/status", {"status": {
            "phase": "Ready",
            "discoveredCapacity": [
                {"flavor": "a100-80gb", "resource": "nvidia.com/gpu", "capacity": 4},
                {"flavor": "h100-80gb", "resource": "cpu", "capacity": "189880m"},
                {"flavor": "h100-80gb", "resource": "memory", "capacity": "1.5Gi"},
                {"flavor": "h100-80gb", "resource": "nvidia.com/gpu", "capacity": "16"}]}},
            MERGE)
        cohort = sim.ok("POST", KUEUE + "/cohorts", {
            "apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Cohort",
            "metadata": {"name": "tau-team-research",
                         "labels": {"app.kubernetes.io/managed-by": "taugrid",
                                    "tau.azure.com/team": "research"}},
            "spec": {"resourceGroups": [{
                "coveredResources": ["cpu", "memory", "nvidia.com/gpu"],
                "flavors": flavors([
                    (A100, {"cpu": "0", "memory": "0", "nvidia.com/gpu": "4"}),
                    (H100, {"cpu": "189880m", "memory": "1536Mi",
                            "nvidia.com/gpu": "16"})])}]}})
        cls.cohort_uid = cohort["metadata"]["uid"]
        for ws, team in (("alpha", "research"), ("beta", "research"), ("gamma", None)):
            sim.ok("POST", WORKSPACES, workspace(ws, team))
        sim.ok("POST", KUEUE + "/clusterqueues", {
            "apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ClusterQueue",
            "metadata": {"name": "tau-ws-alpha",
                         "labels": {"app.kubernetes.io/managed-by": "taugrid",
                                    "tau.azure.com/team": "research",
                                    "tau.azure.com/workspace": "alpha"}},
            "spec": {"cohortName": "tau-team-research",
                     "namespaceSelector": {"matchLabels": {
                         "kubernetes.io/metadata.name": "ml-alpha"}},
                     "resourceGroups": [{
                         "coveredResources": ["cpu", "memory", "nvidia.com/gpu"],
                         "flavors": flavors([
                             (A100, {"cpu": "0", "memory": "0", "nvidia.com/gpu": "0"}),
                             (H100, {"cpu": "0", "memory": "0", "nvidia.com/gpu": "0"})])}]}})
        sim.ok("PATCH", KUEUE + "/clusterqueues/tau-ws-alpha/status", {"status": {
            "admittedWorkloads": 1, "reservingWorkloads": 1, "pendingWorkloads": 2,
            "flavorsReservation": [{"name": H100, "resources": [
                {"name": "cpu", "total": "8", "borrowed": "8"},
                {"name": "nvidia.com/gpu", "total": "8", "borrowed": "8"}]}]}}, MERGE)
        # the capacity team, Ready for its generation
        sim.ok("POST", TEAMS, {"apiVersion": "tau.azure.com/v1alpha1", "kind": "TauTeam",
                               "metadata": {"name": "research", "namespace": "tau-system"},
                               "spec": {}})
        cls.set_research_ready()
        # an explicit team: quotas not reconciled yet (docs/budget.md), so Pending
        sim.ok("POST", TEAMS, {"apiVersion": "tau.azure.com/v1alpha1", "kind": "TauTeam",
                               "metadata": {"name": "vision", "namespace": "tau-system"},
                               "spec": {"quota": [
                                   {"flavor": A100, "resource": "nvidia.com/gpu",
                                    "nominalQuota": 8},
                                   {"flavor": A100, "resource": "memory",
                                    "nominalQuota": "1760Gi"}]}})
        sim.ok("PATCH", TEAMS + "/vision/status", team_status(
            "Pending", condition("False", "ExplicitQuotaUnsupported",
                                 "explicit quotas are not reconciled yet")), MERGE)

    @classmethod
    def set_research_ready(cls):
        cls.sim.ok("PATCH", TEAMS + "/research/status", team_status(
            "Ready", condition("True", "BudgetApplied", "the Cohort holds the pool"),
            cohort="tau-team-research", uid=cls.cohort_uid), MERGE)

    def tau(self, *args):
        r = subprocess.run([CLI, "--kubeconfig", self.sim.kubeconfig] + list(args),
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           universal_newlines=True, timeout=60)
        return r.returncode, r.stdout, r.stderr

    def requests(self):
        st, obj = self.sim.req("GET", "/sim/stats", token=False)
        self.assertEqual(st, 200)
        return sum(obj.values())

    # -- list ----------------------------------------------------------------------------
    def test_list_table(self):
        rc, out, err = self.tau("team", "list")
        self.assertEqual(rc, 0, err)
        rows = [l.split() for l in out.splitlines()]
        self.assertEqual(rows, [
            ["NAME", "MODE", "PHASE", "COHORT", "WORKSPACES", "REASON"],
            ["research", "capacity", "Ready", "tau-team-research", "2", "BudgetApplied"],
            ["vision", "explicit", "Pending", "<none>", "0", "ExplicitQuotaUnsupported"]])

    def test_list_json(self):
        rc, out, err = self.tau("team", "list", "-o", "json")
        self.assertEqual(rc, 0, err)
        self.assertEqual(json.loads(out), {"items": [
            {"name": "research", "mode": "capacity", "phase": "Ready",
             "cohort": "tau-team-research", "workspaces": 2, "reason": "BudgetApplied",
             "ready": True},
            {"name": "vision", "mode": "explicit", "phase": "Pending", "cohort": None,
             "workspaces": 0, "reason": "ExplicitQuotaUnsupported", "ready": False}]})

    def test_yaml_is_the_json_document(self):
        # -o yaml is the same document as -o json, read back by a YAML 1.1 reader (PyYAML).
        for args in (["team", "list"], ["team", "status", "research"],
                     ["team", "status", "vision"]):
            rc, js, err = self.tau(*args, "-o", "json")
            rc2, ym, err2 = self.tau(*args, "-o", "yaml")
            self.assertEqual((rc2, err2), (rc, err), args)
            self.assertEqual(yaml.safe_load(ym), json.loads(js), args)

    def test_list_other_namespace_is_empty(self):
        rc, out, err = self.tau("--system-namespace", "default", "team", "list")
        self.assertEqual((rc, out), (0, "No teams found.\n"), err)

    # -- status ----------------------------------------------------------------------------
    def test_status_ready_json(self):
        rc, out, err = self.tau("team", "status", "research", "-o", "json")
        self.assertEqual(rc, 0, err)
        doc = json.loads(out)
        self.assertEqual((doc["name"], doc["mode"], doc["phase"], doc["ready"], doc["reason"]),
                         ("research", "capacity", "Ready", True, "BudgetApplied"))
        self.assertEqual((doc["generation"], doc["observedGeneration"]), (1, 1))
        self.assertEqual(doc["cohort"], {"name": "tau-team-research", "uid": self.cohort_uid,
                                         "found": True})
        self.assertEqual(doc["poolSource"], "discoveredCapacity")
        self.assertEqual(doc["budget"], [
            {"flavor": A100, "resource": "cpu", "budget": "0", "pool": None},
            {"flavor": A100, "resource": "memory", "budget": "0", "pool": None},
            {"flavor": A100, "resource": "nvidia.com/gpu", "budget": "4", "pool": "4"},
            {"flavor": H100, "resource": "cpu", "budget": "189880m", "pool": "189880m"},
            {"flavor": H100, "resource": "memory", "budget": "1536Mi", "pool": "1536Mi"},
            {"flavor": H100, "resource": "nvidia.com/gpu", "budget": "16", "pool": "16"}])
        self.assertEqual(doc["queues"], [
            {"workspace": "alpha", "clusterQueue": "tau-ws-alpha", "found": True,
             "cohort": "tau-team-research", "admittedWorkloads": 1, "reservingWorkloads": 1,
             "pendingWorkloads": 2, "reservations": [
                 {"flavor": H100, "resource": "cpu", "total": "8", "borrowed": "8"},
                 {"flavor": H100, "resource": "nvidia.com/gpu", "total": "8",
                  "borrowed": "8"}]},
            {"workspace": "beta", "clusterQueue": "tau-ws-beta", "found": False,
             "cohort": None, "admittedWorkloads": None, "reservingWorkloads": None,
             "pendingWorkloads": None, "reservations": []}])
        self.assertEqual(doc["conditions"], [
            {"type": "QuotaReady", "status": "True", "reason": "BudgetApplied",
             "message": "the Cohort holds the pool", "lastTransitionTime": NOW}])
        self.assertEqual(doc["warnings"], [])

    def test_status_ready_table(self):
        rc, out, err = self.tau("team", "status", "research")
        self.assertEqual(rc, 0, err)
        lines = out.splitlines()
        self.assertIn("Mode:                capacity", lines)
        self.assertIn("Cohort:              tau-team-research", lines)
        rows = [l.split() for l in lines]
        self.assertIn(["FLAVOR", "RESOURCE", "BUDGET", "POOL"], rows)
        self.assertIn([H100, "nvidia.com/gpu", "16", "16"], rows)
        self.assertIn([A100, "cpu", "0", "<none>"], rows)
        self.assertIn(["WORKSPACE", "CLUSTERQUEUE", "ADMITTED", "PENDING", "FLAVOR",
                       "RESOURCE", "RESERVED", "BORROWED"], rows)
        self.assertIn(["alpha", "tau-ws-alpha", "1", "2", H100, "nvidia.com/gpu", "8", "8"],
                      rows)
        self.assertIn(["beta", "<not", "found>", "<none>", "<none>", "<none>", "<none>",
                       "<none>", "<none>"], rows)
        self.assertIn(["QuotaReady", "True", "BudgetApplied", "the", "Cohort", "holds", "the",
                       "pool"], rows)

    def test_status_degraded_exits_1(self):
        self.addCleanup(self.set_research_ready)
        self.sim.ok("PATCH", TEAMS + "/research/status", team_status(
            "Degraded", condition("False", "ConflictDetected",
                                  "ResourceFlavor other-h100 selects pool nodes"),
            cohort="tau-team-research", uid=self.cohort_uid), MERGE)
        rc, out, err = self.tau("team", "status", "research")
        self.assertEqual(rc, 1, err)
        self.assertIn("Phase:               Degraded", out.splitlines())
        self.assertIn(["QuotaReady", "False", "ConflictDetected", "ResourceFlavor",
                       "other-h100", "selects", "pool", "nodes"],
                      [l.split() for l in out.splitlines()])
        rc, out, err = self.tau("team", "status", "research", "-o", "json")
        self.assertEqual(rc, 1, err)
        self.assertEqual((json.loads(out)["phase"], json.loads(out)["ready"]),
                         ("Degraded", False))

    def test_status_stale_generation_exits_1(self):
        self.addCleanup(self.set_research_ready)
        self.sim.ok("PATCH", TEAMS + "/research/status", team_status(
            "Ready", condition("True", "BudgetApplied", "the Cohort holds the pool"),
            cohort="tau-team-research", uid=self.cohort_uid, observed=0), MERGE)
        rc, out, err = self.tau("team", "status", "research", "-o", "json")
        self.assertEqual(rc, 1, err)
        self.assertFalse(json.loads(out)["ready"])

    def test_status_explicit_team(self):
        rc, out, err = self.tau("team", "status", "vision", "-o", "json")
        self.assertEqual(rc, 1, err)  # Pending: not Ready
        doc = json.loads(out)
        self.assertEqual((doc["mode"], doc["poolSource"]), ("explicit", "spec.quota"))
        self.assertEqual(doc["cohort"], {"name": "tau-team-vision", "uid": None,
                                         "found": False})
        # No workspace, Cohort or queue yet: nothing guaranteed, applied or reserved.
        self.assertEqual(doc["budget"], [
            {"flavor": A100, "resource": "memory", "budget": None, "pool": "1760Gi",
             "guarantees": "0", "applied": "0", "reserved": "0"},
            {"flavor": A100, "resource": "nvidia.com/gpu", "budget": None, "pool": "8",
             "guarantees": "0", "applied": "0", "reserved": "0"}])
        self.assertEqual(doc["queues"], [])
        self.assertEqual(doc["warnings"], ["Cohort tau-team-vision does not exist"])
        rc, out, err = self.tau("team", "status", "vision")
        self.assertEqual(rc, 1, err)
        rows = [l.split() for l in out.splitlines()]
        self.assertIn(["FLAVOR", "RESOURCE", "QUOTA", "GUARANTEES", "BUDGET", "APPLIED",
                       "RESERVED"], rows)
        self.assertIn([A100, "memory", "1760Gi", "0", "<none>", "0", "0"], rows)
        self.assertIn("Cohort:              tau-team-vision (not found)", out.splitlines())

    def test_status_not_found_exits_2(self):
        rc, out, err = self.tau("team", "status", "nosuch")
        self.assertEqual(rc, 2)
        self.assertEqual(out, "")
        self.assertIn("team tau-system/nosuch not found", err)
        rc, out, err = self.tau("team", "status", "nosuch", "-o", "json")
        self.assertEqual((rc, out), (2, ""))

    def test_invalid_name_refused_before_any_request(self):
        self.sim.ok("POST", "/sim/stats/reset")
        rc, out, err = self.tau("team", "status", "Bad_Name")
        self.assertEqual((rc, out), (2, ""))
        self.assertIn("invalid team name", err)
        self.assertIn("RFC 1123", err)
        self.assertEqual(self.requests(), 0)

    def test_usage_errors(self):
        for args, what in ((["team"], "Usage"), (["team", "status"], "NAME is required"),
                           (["team", "frobnicate"], "unknown command"),
                           (["team", "list", "-o", "xml"], "-o must be table, json or yaml"),
                           (["team", "list", "extra"], "unexpected argument")):
            rc, out, err = self.tau(*args)
            self.assertEqual(rc, 2, args)
            self.assertIn(what, err, args)


if __name__ == "__main__":
    unittest.main()
