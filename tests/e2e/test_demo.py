"""e2e/demo: the README's `make demo` (scripts/demo.py) shows what it promises.

The demo runs kube-sim, one real tau-node-agent per GPU node, the real aggregator and the CLI.
Its exit status alone proves little (a pool appears even when every agent is refused, once the
aggregator's sync gate times out), so this suite reads what the demo observed (`--summary`, the
figures behind each check) and what it printed, and asserts on them itself:
- every GPU node's agent connected and no missing node, at every step that depends on agents;
- the Cohort's nominalQuota equal to the pool, flavor by flavor and resource by resource;
- the workspace Ready;
- the cordon shrinking the Cohort to the pool without the node;
- node-local truth from the real agents with our fakes (NVML library, kubelet pod-resources,
  IB sysfs): explain's agent.* rules name the GPU waiting for a row remap and the port down
  while both nodes still count, the agents' Node conditions say the same, the aggregator's
  metrics count one node per rule, `tau inventory nodes` shows HEALTH and FREE, and an 8-GPU
  job on one node fits (`tau inventory fit`) until a pod takes 2 GPUs;
- the node whose GPUs come only through DRA (tests/fixtures/dra): no nvidia.com/gpu in its
  allocatable, its 8 GPUs in the pool (all through DRA) and in the Cohort, flavor
  taugrid-gpu-h100-dra, and the TauCluster's DRAClassesUsable True.
And a demo whose agent is refused fails, naming that agent and its last log line.
"""
import json
import os
import re
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
DEMO = os.path.join(ROOT, "scripts", "demo.py")
BUILD = os.environ.get("TAU_DEMO_BUILD") or os.path.join(ROOT, "build")
FIXTURES = os.path.join(ROOT, "tests", "fixtures", "kube")
SHAPES = ("node-nd-h100-v5.json", "node-nc-a100-v4-mig.json", "node-flex-h100.json")
DRA_NODE = os.path.join(ROOT, "tests", "fixtures", "dra", "node-dra-h100-0.json")
TIMEOUT_S = 300


def gpu_nodes():
    """The demo's GPU nodes: two copies (-0, -1) of each fixture shape, and the DRA node."""
    names = [dra_node()]
    for shape in SHAPES:
        with open(os.path.join(FIXTURES, shape)) as f:
            base = json.load(f)["metadata"]["name"]
        names += ["%s-%d" % (base, k) for k in range(2)]
    return sorted(names)


def dra_node():
    with open(DRA_NODE) as f:
        return json.load(f)["metadata"]["name"]


def run_demo(*extra):
    with tempfile.TemporaryDirectory() as tmp:
        summary = os.path.join(tmp, "summary.json")
        r = subprocess.run([sys.executable, DEMO, "--build", BUILD, "--summary", summary] +
                           list(extra), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           universal_newlines=True, timeout=TIMEOUT_S)
        data = None
        if os.path.exists(summary):
            with open(summary) as f:
                data = json.load(f)
    return r, data


def quota_diff(cohort, pool):
    """Flavor/resource cells where the Cohort differs from the pool (absent in the pool: 0)."""
    out = []
    for flavor in sorted(set(cohort) | set(pool)):
        have, want = cohort.get(flavor, {}), pool.get(flavor, {})
        for r in sorted(set(have) | set(want)):
            if str(have.get(r, "0")) != str(want.get(r, "0")):
                out.append((flavor, r, have.get(r), want.get(r)))
    return out


class DemoShowsAgents(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.r, cls.summary = run_demo()

    def checks(self, step):
        self.assertIsNotNone(self.summary, "no summary: %s" % self.r.stderr[-2000:])
        return [c for c in self.summary["checks"] if c["step"] == step]

    def test_1_exit_and_summary(self):
        self.assertEqual(self.r.returncode, 0, self.r.stderr[-3000:])
        steps = [c["step"] for c in self.summary["checks"]]
        for step in ("pool", "dra", "node-truth", "workspace", "budget", "cordon", "shutdown"):
            self.assertIn(step, steps)
        self.assertIn("Demo done: %d checks passed" % len(steps), self.r.stdout)

    def test_2_every_agent_connected_no_missing_node(self):
        want = gpu_nodes()
        for step in ("pool", "budget", "cordon"):
            with self.subTest(step=step):
                agent_checks = [c for c in self.checks(step) if "connected" in (c["data"] or {})]
                self.assertEqual(len(agent_checks), 1)
                data = agent_checks[0]["data"]
                self.assertEqual(data["connected"], want)
                self.assertEqual(data["missingCount"], 0)
                self.assertEqual(data["pool"]["missingNodes"], [])
                self.assertTrue(data["pool"]["established"])
        # The tables a newcomer reads say the same: no missing node, CONNECTED yes on GPU nodes.
        self.assertNotRegex(self.r.stdout, r"Missing nodes: (?!none)")
        rows = re.findall(r"^(\S+)\s+(\S+)\s+(yes|no)\s+(yes|no)\s+(yes|no)\s", self.r.stdout,
                          re.M)
        connected = {name: conn for name, _cls, _counted, conn, _stale in rows}
        for name in want:
            self.assertEqual(connected.get(name), "yes", name)
        self.assertNotIn("agent never reported", self.r.stdout)

    def test_3_cohort_is_the_pool(self):
        (check,) = [c for c in self.checks("budget") if "cohort" in (c["data"] or {})]
        cohort, pool = check["data"]["cohort"], check["data"]["pool"]
        self.assertEqual(quota_diff(cohort, pool), [])
        self.assertEqual(pool["taugrid-gpu-h100-ib"]["nvidia.com/gpu"], "16")
        self.assertEqual(pool["taugrid-gpu-h100-flex"]["nvidia.com/gpu"], "16")
        self.assertEqual(pool["taugrid-gpu-h100-dra"]["nvidia.com/gpu"], "8")

    def test_4_workspace_ready(self):
        self.assertEqual(len(self.checks("workspace")), 1)
        self.assertRegex(self.r.stdout, r"(?m)^alpha\s+Ready\s+ml-alpha\s+alpha$")
        self.assertRegex(self.r.stdout, r"(?m)^Phase:\s+Ready$")

    def test_5_cordon_shrinks_cohort(self):
        (check,) = [c for c in self.checks("cordon") if "cohort" in (c["data"] or {})]
        d = check["data"]
        self.assertEqual(d["flavor"], "taugrid-gpu-h100-ib")
        self.assertEqual((d["before"], d["after"]), ("16", "8"))
        self.assertEqual(quota_diff(d["cohort"], d["pool"]), [])
        self.assertEqual(d["pool"][d["flavor"]]["nvidia.com/gpu"], "8")


    def test_6_node_truth(self):
        explain, conditions, metrics, pod = self.checks("node-truth")
        sick, down = explain["data"]["sick"], explain["data"]["port_down"]
        self.assertFalse(sick["agent.gpu-health"]["pass"])
        self.assertFalse(sick["agent.gpu-health"]["unknown"])
        self.assertRegex(sick["agent.gpu-health"]["detail"],
                         r"^Node advertises 8 nvidia.com/gpu GPUs; the agent sees 7 healthy "
                         r"\(NVML\); GPU 3 \(GPU-\S+\): row remap pending: the GPU needs a reset$")
        self.assertTrue(sick["agent.rdma-ports"]["pass"])
        self.assertFalse(down["agent.rdma-ports"]["pass"])
        self.assertIn("7 of 8 ports active; mlx5_2 port 1 not active (state 1)",
                      down["agent.rdma-ports"]["detail"])
        self.assertTrue(down["agent.gpu-health"]["pass"])
        # Every CSINode entry has a live driver behind it (the fake answers Probe ready).
        for rules in (sick, down):
            self.assertTrue(rules["agent.csi-probe"]["pass"], rules["agent.csi-probe"])
            self.assertFalse(rules["agent.csi-probe"]["unknown"])
        self.assertIn("counts in flavor h100-ib.\n\nWhat the node's agent sees", self.r.stdout)
        c = conditions["data"]
        self.assertEqual((c["sick"]["status"], c["sick"]["reason"]), ("False", "GPUUnhealthy"))
        self.assertEqual((c["port_down"]["status"], c["port_down"]["reason"]),
                         ("False", "RDMAPortDown"))
        self.assertEqual((metrics["data"]["agent.gpu-health"],
                          metrics["data"]["agent.rdma-ports"]), (1, 1))
        # The TauCluster condition names both nodes with the rule each fails.
        (cond,) = [c for c in self.checks("budget") if "nodeTruthAgrees" in (c["data"] or {})]
        t = cond["data"]["nodeTruthAgrees"]
        self.assertEqual((t["status"], t["reason"]), ("False", "Disagrees"))
        self.assertRegex(t["message"], r"^2 of \d+ counted nodes reporting node-local facts "
                         r"disagree with what their Node advertises")
        self.assertIn("agent.gpu-health: Node advertises 8 nvidia.com/gpu GPUs; the agent sees "
                      "7 healthy (NVML)", t["message"])
        self.assertIn("agent.rdma-ports: Node advertises rdma/", t["message"])
        self.assertIn("0 in use, 8 free", pod["data"]["before"])
        self.assertIn("2 in use, 6 free", pod["data"]["after"])
        # An 8-GPU job on one node: fits on the healthy node, then nowhere (7 healthy, 6 free).
        self.assertEqual((pod["data"]["fit_before"], pod["data"]["fit_after"]), (0, 1))
        # The healthy GPU nodes read ok with every GPU free.
        self.assertRegex(self.r.stdout, r"(?m)^edge-gpu-01-0\s+h100-flex\s+yes\s+yes\s+no\s+8"
                         r"\s+ok\s+8\s*$")
        self.assertRegex(self.r.stdout, r"(?m)^aks-ndh100-35817294-vmss000000-1\s+h100-ib\s+yes"
                         r"\s+yes\s+no\s+8\s+degraded\s+7\s+GPU 3 ")


    def test_7_dra_only_node_counts(self):
        (check,) = self.checks("dra")
        d = check["data"]
        self.assertEqual(d["node"], dra_node())
        self.assertNotIn("nvidia.com/gpu", d["allocatable"])
        self.assertEqual(d["flavor"]["resources"]["nvidia.com/gpu"], "8")
        self.assertEqual(d["flavor"]["draResources"], {"nvidia.com/gpu": "8"})
        (budget,) = [c for c in self.checks("budget") if "draCohort" in (c["data"] or {})]
        b = budget["data"]
        self.assertEqual(b["draFlavor"], "taugrid-gpu-h100-dra")
        self.assertEqual(b["draCohort"]["nvidia.com/gpu"], "8")
        self.assertEqual((b["draClassesUsable"]["status"], b["draClassesUsable"]["reason"]),
                         ("True", "Usable"))
        # The node table says where its GPUs come from.
        self.assertRegex(self.r.stdout, r"(?m)^%s\s+h100-dra\s+yes\s+yes\s+no\s+8 \(DRA\)\s"
                         % re.escape(dra_node()))


class DemoFailsWhenAnAgentIsRefused(unittest.TestCase):
    def test_refused_agent_fails_the_demo_by_name(self):
        node = gpu_nodes()[-1]
        r, summary = run_demo("--break-token", node)
        self.assertNotEqual(r.returncode, 0, r.stdout[-2000:])
        self.assertIsNone(summary)
        self.assertRegex(r.stderr, r"the agent of %s is not connected \(refused\); its last log "
                         r"line: .*code=16 .*bearer token rejected by TokenReview" % re.escape(node))
        self.assertNotIn("Demo done", r.stdout)
        # only the broken one is named
        for other in gpu_nodes()[:-1]:
            self.assertNotIn("agent of %s " % other, r.stderr)


if __name__ == "__main__":
    unittest.main()
