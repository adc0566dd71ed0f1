"""End-to-end test of tau-node-agent --node-conditions under kube-sim's RBAC (issue 25).

    TAU_AGENT_BIN=build/tau-node-agent TAU_BUILD_DIR=build /usr/bin/python3 -m unittest -v \
        test_agent_node_conditions   (in tests/e2e)

kube-sim runs with --authz rbac, seeded with the RBAC objects `helm template` renders from
charts/tau-node-agent with nodeConditions.enabled=true: the read-only tau-node-agent ClusterRole
and tau-node-agent-node-conditions (patch on nodes/status), both bound to the agent's
ServiceAccount. Three real agents stream to the recording aggregator of tests/e2e/agent:

- `sick`: that ServiceAccount, --node-conditions, fake NVML (8 GPUs) and an InfiniBand sysfs
  tree: its Node gains TauGPUHealthy and TauNetworkReady (kubelet's conditions kept), they
  flip within REPORT_WITHIN_S of a GPU needing a row remap and of a port going down, the other
  condition keeps its lastTransitionTime, nothing is patched while nothing changes, and a
  condition someone else overwrites is put back;
- `plain`: --node-conditions but a ServiceAccount bound to the read-only ClusterRole only: the
  patch is refused (403), one clear error is logged, the agent keeps running and reporting;
- `off`: the full ServiceAccount without the flag: no condition, no patch.
"""

import json
import os
import subprocess
import sys
import time
import unittest

from harness import agents, kubesim, paths, procs, proto, require
from harness.agents import FAKE_GPUS as GPUS
from harness.agents import write_atomic
from harness.procs import make_workdir, remove_workdir
from harness.waits import wait_for

REPORT_WITHIN_S = 5
NS = "tau-system"
SA_USER = "system:serviceaccount:%s:tau-node-agent" % NS
PLAIN_USER = "system:serviceaccount:%s:plain-agent" % NS
HELM = paths.HELM
NODES = {"sick": "gpu-sick", "plain": "gpu-plain", "off": "gpu-off"}
OURS = ("TauGPUHealthy", "TauNetworkReady")

WORK = None
pb = None


def setUpModule():
    global WORK, pb
    agents.require_all(("fakes/nvml-full/libnvidia-ml.so.1",), kubectl=False)
    require.binary(HELM, "HELM")
    require.module("yaml", "python3-yaml")
    WORK = make_workdir("tau-nc-")
    pb = proto.inventory()


def tearDownModule():
    remove_workdir(WORK)


def chart_rbac():
    """The ClusterRoles and bindings the node-agent chart renders with nodeConditions on."""
    import yaml
    r = subprocess.run([HELM, "template", "t", os.path.join(paths.ROOT, "charts",
                                                            "tau-node-agent"),
                        "-n", NS, "--set", "nodeConditions.enabled=true"],
                       capture_output=True, text=True, timeout=60, check=True)
    return [d for d in yaml.safe_load_all(r.stdout)
            if d and d["kind"] in ("ClusterRole", "ClusterRoleBinding")]


def node(name):
    n = kubesim.fixture("node-nd-h100-v5.json")
    n["metadata"] = {"name": name, "labels": dict(n["metadata"]["labels"],
                                                  **{"kubernetes.io/hostname": name})}
    return n


def conditions(sim, name):
    """The Node's conditions by type."""
    n = sim.get("/api/v1/nodes/" + name)
    return {c["type"]: c for c in n.get("status", {}).get("conditions", [])}


def metric(port, name):
    status, body = procs.http_get(port, "/metrics")
    assert status == 200, body
    for line in body.splitlines():
        if line.startswith(name + " "):
            return float(line.split()[1])
    raise AssertionError("no %s in /metrics:\n%s" % (name, body))


PATCH_OK = 'tau_agent_node_condition_patches_total{result="ok"}'
PATCH_ERR = 'tau_agent_node_condition_patches_total{result="error"}'


class NodeConditions(unittest.TestCase):
    """The tests run in order (numbered) against one kube-sim and three agents."""

    @classmethod
    def setUpClass(cls):
        seed = [node(n) for n in NODES.values()] + chart_rbac()
        seed.append({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
                     "metadata": {"name": "plain-agent"},
                     "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                                 "name": "tau-node-agent"},
                     "subjects": [{"kind": "ServiceAccount", "name": "plain-agent",
                                   "namespace": NS}]})
        tokens = os.path.join(WORK, "tokens.json")
        with open(tokens, "w") as f:
            json.dump({"agent-token": {"username": SA_USER},
                       "plain-token": {"username": PLAIN_USER}}, f)
        cls.sim = kubesim.KubeSim(objects=seed, args=("--authz", "rbac", "--tokens", tokens))
        cls.rec = agents.Recorder(pb, heartbeat_s=1)
        cls.nvml_conf = os.path.join(WORK, "nvml.conf")
        write_atomic(cls.nvml_conf, agents.fake_nvml_config(GPUS))
        cls.hosts, cls.agents, cls.ports = {}, {}, {}
        for key, token, flag in (("sick", "agent-token", True), ("plain", "plain-token", True),
                                 ("off", "agent-token", False)):
            cls.hosts[key] = agents.HostTree(WORK, sockets=())
            cls.ports[key] = procs.free_port()
            args = ["--node-name", NODES[key],
                    "--kubeconfig", cls.sim.kubeconfig_for(token, key),
                    "--aggregator", "127.0.0.1:%d" % cls.rec.port, "--insecure",
                    "--host-root", cls.hosts[key].root, "--probe-interval", "1",
                    "--http-listen", "127.0.0.1:%d" % cls.ports[key]]
            env = {}
            if key == "sick":
                env = {"TAU_AGENT_NVML": paths.build("fakes/nvml-full/libnvidia-ml.so.1"),
                       "TAU_FAKE_NVML_CONFIG": cls.nvml_conf}
            cls.agents[key] = agents.Agent(WORK, args + (["--node-conditions"] if flag else []),
                                           env=env)
        for key, name in NODES.items():
            cls.rec.wait(lambda r, n=name: any(x[2].WhichOneof("body") == "inventory" and
                                               x[2].inventory.node_name == n
                                               for x in r.reports),
                         30, "the first inventory of " + name)

    @classmethod
    def tearDownClass(cls):
        for a in cls.agents.values():
            if a.alive():
                a.terminate()
        cls.rec.stop()
        cls.sim.stop()

    def logs(self, key):
        return self.agents[key].logs()[-3000:]

    def wait_conditions(self, pred, what, within=REPORT_WITHIN_S):
        t0 = time.monotonic()
        conds = wait_for(lambda: (lambda c: c if pred(c) else None)(
            conditions(self.sim, NODES["sick"])), timeout=within + 10, interval=0.1, what=what)
        took = time.monotonic() - t0
        sys.stderr.write("%s: on the Node in %.2f s\n" % (what, took))
        self.assertLess(took, within, "%s took %.1f s; logs:\n%s" % (what, took,
                                                                     self.logs("sick")))
        return conds

    def test_01_enabled_conditions_land(self):
        c = self.wait_conditions(lambda c: all(t in c for t in OURS), "both conditions",
                                 within=15)
        gpu, net = c["TauGPUHealthy"], c["TauNetworkReady"]
        self.assertEqual((gpu["status"], gpu["reason"], gpu["message"]),
                         ("True", "GPUsHealthy", "8 of 8 GPUs healthy (NVML)"))
        self.assertEqual((net["status"], net["reason"], net["message"]),
                         ("True", "RDMAPortsActive", "8 of 8 RDMA ports active"))
        for cond in (gpu, net):
            self.assertRegex(cond["lastTransitionTime"], r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$")
            self.assertRegex(cond["lastHeartbeatTime"], r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$")
            self.assertNotIn("observedGeneration", cond)
        # Strategic merge by type: kubelet's conditions are all still there.
        self.assertEqual(c["Ready"]["status"], "True")
        self.assertIn("MemoryPressure", c)
        self.assertIn("node conditions published", self.agents["sick"].logs())

    def test_02_nothing_patched_while_nothing_changes(self):
        before = metric(self.ports["sick"], PATCH_OK)
        self.assertGreaterEqual(before, 1)
        self.rec.settle(3)  # three more heartbeats, a host probe every second
        self.assertEqual(metric(self.ports["sick"], PATCH_OK), before, self.logs("sick"))
        self.assertEqual(metric(self.ports["sick"], PATCH_ERR), 0)

    def test_03_gpu_needs_a_remap(self):
        net_since = conditions(self.sim, NODES["sick"])["TauNetworkReady"]["lastTransitionTime"]
        write_atomic(self.nvml_conf, agents.fake_nvml_config(GPUS, sick=3))
        c = self.wait_conditions(lambda c: c["TauGPUHealthy"]["status"] == "False",
                                 "TauGPUHealthy False")
        gpu = c["TauGPUHealthy"]
        self.assertEqual(gpu["reason"], "GPUUnhealthy")
        self.assertEqual(gpu["message"], "1 of 8 GPUs unhealthy: GPU 3 (%s): row remap pending: "
                         "the GPU needs a reset" % GPUS[3])
        self.assertEqual(c["TauNetworkReady"]["status"], "True")
        self.assertEqual(c["TauNetworkReady"]["lastTransitionTime"], net_since)

    def test_04_ib_port_down(self):
        self.hosts["sick"].set_port_down("mlx5_2")
        c = self.wait_conditions(lambda c: c["TauNetworkReady"]["status"] == "False",
                                 "TauNetworkReady False")
        net = c["TauNetworkReady"]
        self.assertEqual(net["reason"], "RDMAPortDown")
        self.assertEqual(net["message"], "1 of 8 RDMA ports not active: mlx5_2 port 1 state 1: DOWN")

    def test_05_overwritten_condition_is_put_back(self):
        # Level-triggered: someone else sets the condition True; the Node's own update event
        # makes the agent compare again and restore what the node knows.
        before = metric(self.ports["sick"], PATCH_OK)
        edited = self.sim.ok("PATCH", "/api/v1/nodes/%s/status" % NODES["sick"], {"status": {
            "conditions": [{"type": "TauGPUHealthy", "status": "True", "reason": "Manual",
                            "message": "edited", "lastTransitionTime": "2026-01-01T00:00:00Z"}]}},
            ctype="application/strategic-merge-patch+json")
        mine = [c for c in edited["status"]["conditions"] if c["type"] == "TauGPUHealthy"]
        self.assertEqual((mine[0]["reason"], mine[0]["message"]), ("Manual", "edited"))
        c = self.wait_conditions(lambda c: c["TauGPUHealthy"]["reason"] == "GPUUnhealthy",
                                 "TauGPUHealthy restored")
        self.assertEqual(c["TauGPUHealthy"]["status"], "False")
        self.assertEqual(metric(self.ports["sick"], PATCH_OK), before + 1, self.logs("sick"))

    def test_06_without_rbac_a_clear_error_and_the_agent_keeps_going(self):
        agent = self.agents["plain"]
        wait_for(lambda: metric(self.ports["plain"], PATCH_ERR) >= 1, timeout=15,
                 what="a refused patch")
        before = len([i for i in self.rec.inventories() if i.node_name == NODES["plain"]])
        self.hosts["plain"].set_port_down("mlx5_0")  # its reports still flow
        self.rec.wait_inventory(lambda i: i.node_name == NODES["plain"] and
                                i.devices.rdma_ports_up == 7, 0, 15, "plain's port down")
        self.assertGreater(len([i for i in self.rec.inventories()
                                if i.node_name == NODES["plain"]]), before)
        self.assertTrue(agent.alive())
        logs = agent.logs()
        line = [ln for ln in logs.splitlines() if "cannot publish the node conditions" in ln]
        self.assertEqual(len(line), 1, logs[-3000:])  # once, however often it retries
        self.assertIn("level=error", line[0])
        self.assertIn("may not patch nodes/status", line[0])
        self.assertIn("nodeConditions.enabled", line[0])
        self.assertIn("HTTP 403 Forbidden", line[0])
        self.assertIn('cannot patch resource \\"nodes/status\\"', line[0])
        self.assertFalse(set(OURS) & set(conditions(self.sim, NODES["plain"])))

    def test_07_disabled_writes_nothing(self):
        self.rec.settle(2)
        self.assertFalse(set(OURS) & set(conditions(self.sim, NODES["off"])))
        self.assertEqual(metric(self.ports["off"], PATCH_OK), 0)
        self.assertEqual(metric(self.ports["off"], PATCH_ERR), 0)
        self.assertIn("node_conditions=off", self.agents["off"].logs())

    def test_99_agents_stop_cleanly(self):
        for key, agent in self.agents.items():
            rc, _ = agent.terminate()
            self.assertEqual(rc, 0, "%s: %s" % (key, agent.logs()[-2000:]))


if __name__ == "__main__":
    unittest.main()
