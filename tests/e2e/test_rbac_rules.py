"""Least privilege, rule by rule, for the tau-node-agent ClusterRole the chart renders.

kube-sim runs with `--authz rbac`; the objects `helm template charts/tau-node-agent` renders
(ClusterRole tau-node-agent, its binding, the ServiceAccount) are applied as admin, and
`tau-node-agent --once` runs with a kubeconfig holding only that ServiceAccount's token. With the
whole role it reads its Node, CSINode and pods without a problem; with any single rule removed
it fails or reports that read as forbidden. (The watch verbs are the daemon's informers; --once
proves the get/list half of each rule.)

Environment: TAU_AGENT_BIN (default build/tau-node-agent), HELM (default .tools/bin/helm).
Standard library only.
"""
import json
import os
import subprocess
import tempfile
import unittest

from harness import paths
from harness.kubesim import KubeSim

ROOT = paths.ROOT

AGENT = os.environ.get("TAU_AGENT_BIN") or os.path.join(ROOT, "build", "tau-node-agent")
HELM = os.environ.get("HELM") or os.path.join(ROOT, ".tools", "bin", "helm")
SA_USER = "system:serviceaccount:tau-system:tau-node-agent"
SA_TOKEN = "tau-node-agent-sa-token"
NODE = "gpu-1"


class NodeAgentRoleTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        for b in (AGENT, HELM):
            if not os.access(b, os.X_OK):
                raise AssertionError("missing %s (build it; helm: scripts/install-deps)" % b)
        cls.tmp = tempfile.mkdtemp(prefix="tau-rbac-rules-")
        tokens = os.path.join(cls.tmp, "tokens.json")
        with open(tokens, "w") as f:
            json.dump({SA_TOKEN: {"username": SA_USER}}, f)
        cls.sim = KubeSim(["--authz", "rbac", "--tokens", tokens], tls=True)
        try:
            cls.sim.kubectl("create", "namespace", "tau-system")
            r = subprocess.run([HELM, "template", "t", os.path.join(ROOT, "charts", "tau-node-agent"),
                                "-n", "tau-system", "--show-only", "templates/node-agent.yaml"],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               universal_newlines=True, env=dict(os.environ, HOME=cls.tmp))
            if r.returncode != 0:
                raise AssertionError("helm template failed:\n" + r.stderr)
            cls.sim.kubectl("apply", "-f", "-", input=r.stdout)
            cls.sim.ok("POST", "/api/v1/nodes", {
                "apiVersion": "v1", "kind": "Node",
                "metadata": {"name": NODE, "labels": {"tau.azure.com/gpu-class": "h100-80gb",
                                                      "kubernetes.io/os": "linux"}},
                "status": {"allocatable": {"nvidia.com/gpu": "8"},
                           "conditions": [{"type": "Ready", "status": "True"}]}})
            cls.sim.ok("POST", "/apis/storage.k8s.io/v1/csinodes", {
                "apiVersion": "storage.k8s.io/v1", "kind": "CSINode",
                "metadata": {"name": NODE}, "spec": {"drivers": []}})
            with open(cls.sim.kubeconfig) as f:
                kc = json.load(f)
            kc["users"][0]["user"] = {"token": SA_TOKEN}
            cls.sa_kubeconfig = os.path.join(cls.tmp, "sa-kubeconfig")
            with open(cls.sa_kubeconfig, "w") as f:
                json.dump(kc, f)
            cls.role = json.loads(cls.sim.kubectl("get", "clusterrole", "tau-node-agent",
                                                  "-o", "json").stdout)
            os.makedirs(os.path.join(cls.tmp, "host", "dev"))
        except BaseException:
            cls.sim.stop()
            raise

    @classmethod
    def tearDownClass(cls):
        cls.sim.stop()

    def set_rules(self, rules):
        role = json.loads(self.sim.kubectl("get", "clusterrole", "tau-node-agent",
                                           "-o", "json").stdout)
        role["rules"] = rules
        self.sim.kubectl("replace", "-f", "-", input=json.dumps(role))

    def once(self):
        """(exit code, problems, stderr) of tau-node-agent --once as the ServiceAccount."""
        r = subprocess.run([AGENT, "--once", "--node-name", NODE, "--kubeconfig",
                            self.sa_kubeconfig, "--host-root", os.path.join(self.tmp, "host")],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           universal_newlines=True, timeout=60)
        problems = []
        if r.stdout.strip():
            problems = json.loads(r.stdout).get("problems") or []
        return r.returncode, problems, r.stderr

    def test_whole_role_reads_everything(self):
        self.set_rules(self.role["rules"])
        rc, problems, err = self.once()
        self.assertEqual(rc, 0, err)
        self.assertFalse([p for p in problems if "403" in p or "orbidden" in p], problems)

    def test_each_rule_is_needed(self):
        rules = self.role["rules"]
        self.assertEqual(len(rules), 3, rules)
        try:
            for i, rule in enumerate(rules):
                with self.subTest(removed=rule["resources"]):
                    self.set_rules(rules[:i] + rules[i + 1:])
                    rc, problems, err = self.once()
                    what = rule["resources"][0]
                    if what == "nodes":
                        # Without its Node the agent has nothing to report: exit 1.
                        self.assertEqual(rc, 1, err)
                        self.assertIn("cannot read the Node", err)
                    else:
                        self.assertEqual(rc, 0, err)
                        denied = [p for p in problems if "403" in p or "orbidden" in p]
                        self.assertTrue(denied, "removing %s broke nothing: %s" % (what, problems))
        finally:
            self.set_rules(rules)


if __name__ == "__main__":
    unittest.main(verbosity=2)
