"""End-to-end tests of `tau` as the platform's front door (issue 18), against kube-sim.

- SystemNamespaceTest: with TauCluster `cluster` status.systemNamespace set (as the aggregator
  records it), `tau workspace` and `tau team` find the objects there without
  --system-namespace; an explicit flag wins; without a TauCluster, tau-system.

Binary: TAU_CLI (cmake/frontdoor-tests.cmake sets it), else build/tau. Standard library only.
"""
import json
import os
import subprocess
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "tests", "kube-sim"))
from simtest import SimProcess  # noqa: E402

KUEUE_CRDS = os.path.join(ROOT, "tests", "fixtures", "kueue")
TAU_CRDS = os.path.join(ROOT, "charts", "taugrid", "crds")
CLI = os.environ.get("TAU_CLI") or os.path.join(ROOT, "build", "tau")

TAU = "/apis/tau.azure.com/v1alpha1"
MERGE = "application/merge-patch+json"


def namespace(name):
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}


def workspace(name, ns):
    return {"apiVersion": "tau.azure.com/v1alpha1", "kind": "TauWorkspace",
            "metadata": {"name": name, "namespace": ns},
            "spec": {"authorization": {"mode": "cluster-wide"}}}


def run_tau(sim, *args, env=None, timeout=60):
    r = subprocess.run([CLI, "--kubeconfig", sim.kubeconfig] + list(args),
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env,
                       universal_newlines=True, timeout=timeout)
    return r.returncode, r.stdout, r.stderr


class SystemNamespaceTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.sim = SimProcess(["--crds", KUEUE_CRDS, "--crds", TAU_CRDS])
        try:
            for ns in ("tau-system", "ml-platform"):
                cls.sim.ok("POST", "/api/v1/namespaces", namespace(ns))
            cls.sim.ok("POST", TAU + "/namespaces/ml-platform/workspaces",
                       workspace("in-custom", "ml-platform"))
            cls.sim.ok("POST", TAU + "/namespaces/tau-system/workspaces",
                       workspace("in-default", "tau-system"))
            cls.sim.ok("POST", TAU + "/namespaces/ml-platform/teams", {
                "apiVersion": "tau.azure.com/v1alpha1", "kind": "TauTeam",
                "metadata": {"name": "research", "namespace": "ml-platform"}, "spec": {}})
        except BaseException:
            cls.sim.stop()
            raise

    @classmethod
    def tearDownClass(cls):
        cls.sim.stop()

    def tau(self, *args):
        return run_tau(self.sim, *args)

    def names(self, out):
        return [w["name"] for w in json.loads(out)["items"]]

    def set_recorded(self, ns):
        st, _ = self.sim.req("GET", TAU + "/clusters/cluster")
        if st == 404:
            self.sim.ok("POST", TAU + "/clusters", {
                "apiVersion": "tau.azure.com/v1alpha1", "kind": "TauCluster",
                "metadata": {"name": "cluster"}, "spec": {}})
        self.sim.ok("PATCH", TAU + "/clusters/cluster/status",
                    {"status": {"systemNamespace": ns}}, MERGE)

    def test_without_a_taucluster_tau_system(self):
        self.sim.req("DELETE", TAU + "/clusters/cluster")
        rc, out, err = self.tau("workspace", "list", "-o", "json")
        self.assertEqual(rc, 0, err)
        self.assertEqual(self.names(out), ["in-default"])

    def test_recorded_namespace_found_without_flags(self):
        self.set_recorded("ml-platform")
        rc, out, err = self.tau("workspace", "list", "-o", "json")
        self.assertEqual(rc, 0, err)
        self.assertEqual(self.names(out), ["in-custom"])
        rc, out, err = self.tau("workspace", "status", "in-custom", "-o", "json")
        self.assertEqual(rc, 0, err)
        self.assertEqual(json.loads(out)["systemNamespace"], "ml-platform")
        rc, out, err = self.tau("team", "list", "-o", "json")
        self.assertEqual(rc, 0, err)
        self.assertEqual(self.names(out), ["research"])

    def test_explicit_flag_wins(self):
        self.set_recorded("ml-platform")
        for args in (["--system-namespace", "tau-system", "workspace", "list"],
                     ["workspace", "list", "--system-namespace", "tau-system"]):
            rc, out, err = self.tau(*(args + ["-o", "json"]))
            self.assertEqual(rc, 0, err)
            self.assertEqual(self.names(out), ["in-default"], args)


if __name__ == "__main__":
    unittest.main(verbosity=2)
