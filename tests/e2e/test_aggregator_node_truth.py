"""End-to-end test of node truth in the aggregator (issue 25): free-now capacity, fit, HEALTH.

    TAU_AGGREGATOR_BIN=build/tau-aggregator TAU_AGENT_BIN=build/tau-node-agent \
    TAU_CLI_BIN=build/tau TAU_BUILD_DIR=build /usr/bin/python3 -m unittest -v \
        test_aggregator_node_truth   (in tests/e2e)

What runs: kube-sim (the ND H100 v5 Node of tests/fixtures/kube, GPU class h100-ib, and a
tokens table for the agent's TokenReview), the real tau-aggregator, the real tau-node-agent
streaming to it with the fake host of e2e/agent-node-truth (our fake libnvidia-ml.so.1, the fake
kubelet serving pod-resources, a fake CSI driver, IB sysfs; test_agent_node_truth's setup), and
the tau CLI asking the aggregator. The agent re-probes every second (--probe-interval 1) and a
pod-resources change is re-read at once on a pod event, so every change must show in
`tau inventory fit`, `nodes` (HEALTH, FREE) and `pool` (free now) within CHANGE_WITHIN_S, and in
`tau inventory explain` (agent.gpu-health), /metrics (tau_aggregator_node_truth_disagreements) and
the TauCluster condition NodeTruthAgrees (the budget controller's write) within
CONDITION_WITHIN_S, which each test measures and asserts. Waits are for conditions, never fixed sleeps.

DraFreeNow (issue 26): a node whose GPUs come only through DRA (tests/fixtures/dra: the
DeviceClass, the node, its complete ResourceSlice), its real agent reading the ResourceClaims'
devices from the fake kubelet (dynamic_resources): `tau inventory nodes`, `fit` and `pool`
count a claimed GPU as in use, within CHANGE_WITHIN_S of the claim changing.
"""

import json
import os
import subprocess
import sys
import tempfile
import shutil
import time
import unittest

import grpc
import yaml

from harness import agents, kubesim, paths, proto, require, waits
from harness.agents import (DISK, ND_NODE, FakeAgent, FakePlugin, inventory_from_node,
                            kubelet_config, write_atomic)
from harness.agents import FAKE_GPUS as GPUS
from harness.aggregator import Aggregator
from harness.tokens import agent_token, agent_tokens, write_table

ROOT = paths.ROOT
CLI_BIN = paths.CLI_BIN
CLASS = "h100-ib"
# A change is seen at the agent's next probe (<= 1 s), sent at once, and queried at once.
CHANGE_WITHIN_S = 5
# The TauCluster condition adds the publisher's tick (250 ms), the budget's coalescing (200 ms)
# and a status write (docs/aggregator.md, "The TauCluster condition NodeTruthAgrees").
CONDITION_WITHIN_S = 10
CLUSTER_PATH = "/apis/tau.azure.com/v1alpha1/clusters"
# The drivers the node's CSINode lists (fixtures/kube/csinode-nd-h100-v5.json), each faked.
CSI_DRIVERS = (DISK, "file.csi.azure.com")
DRA_FIXTURES = os.path.join(ROOT, "tests", "fixtures", "dra")
DRA_NODE = "aks-ndh100dra-20914731-vmss000000"  # its pool is named after it, devices gpu-0..7
DRA_DRIVER = "gpu.nvidia.com"

WORK = None


def setUpModule():
    global WORK
    require.binary(paths.AGG_BIN, "TAU_AGGREGATOR_BIN")
    require.binary(CLI_BIN, "TAU_CLI_BIN")
    require.binary(paths.AGENT_BIN, "TAU_AGENT_BIN")
    for fake in ("fakes/bin/fake_kubelet", "fakes/bin/fake_csi_driver",
                 "fakes/nvml-full/libnvidia-ml.so.1"):
        require.binary(paths.build(fake), "TAU_BUILD_DIR")
    WORK = tempfile.mkdtemp(prefix="tau-agg-nt-")


def tearDownModule():
    if WORK:
        shutil.rmtree(WORK, ignore_errors=True)


def disagreements(agg, rule):
    return agg.metric('tau_aggregator_node_truth_disagreements{rule="%s"}' % rule)


class WithAggregator:
    """What both cases share: stopping everything, the CLI against the aggregator, and timed
    waits for what it shows (each case sets sim, agg, agent, fakes and node())."""

    @classmethod
    def tearDownClass(cls):
        if cls.agent.alive():
            cls.agent.terminate()
        rc = cls.agg.stop()
        for f in cls.fakes:
            f.stop()
        cls.sim.stop()
        assert rc == 0, "aggregator exit code %d after SIGTERM" % rc

    def tau(self, *args):
        r = subprocess.run([CLI_BIN, "--kubeconfig", self.sim.kubeconfig, "inventory", *args,
                            "--aggregator", self.agg.addr], capture_output=True, text=True,
                           timeout=30)
        return r

    def tau_json(self, *args, want_rc=0):
        r = self.tau(*args, "-o", "json")
        self.assertEqual(r.returncode, want_rc, r.stdout + r.stderr)
        return json.loads(r.stdout)

    def fit(self, *args):
        r = self.tau("fit", "--gpu-class", CLASS, *args, "-o", "json")
        self.assertIn(r.returncode, (0, 1), r.stderr)
        doc = json.loads(r.stdout)
        self.assertEqual(doc["fits"], r.returncode == 0, r.stdout)
        return doc

    def within(self, change, pred, what, limit=CHANGE_WITHIN_S):
        """Run change(); the CLI must show pred() within `limit` seconds (measured)."""
        t0 = time.monotonic()
        change()
        try:
            got = waits.wait_for(pred, limit + 10, what, interval=0.1)
        except AssertionError:
            self.fail("%s: not seen in %.0f s; node %s\nagent:\n%s\naggregator:\n%s"
                      % (what, limit + 10, self.node(), self.agent.logs()[-2000:],
                         self.agg.log()[-3000:]))
        took = time.monotonic() - t0
        sys.stderr.write("%s: seen in %.2f s\n" % (what, took))
        self.assertLess(took, limit, "%s took %.1f s" % (what, took))
        return got


class AggregatorNodeTruth(WithAggregator, unittest.TestCase):
    """One node, one agent, every source faked; the tests run in order (numbered)."""

    @classmethod
    def setUpClass(cls):
        cls.token = agent_token(ND_NODE)
        tokens = write_table(os.path.join(WORK, "tokens.json"), agent_tokens([ND_NODE]))
        cls.sim = kubesim.KubeSim(objects=[kubesim.fixture("node-nd-h100-v5.json"),
                                           kubesim.fixture("csinode-nd-h100-v5.json")],
                                  args=("--tokens", tokens,
                                        "--crds", os.path.join(ROOT, "charts/taugrid/crds"),
                                        "--crds", os.path.join(ROOT, "tests/fixtures/kueue")))
        # The TauCluster the budget controller writes NodeTruthAgrees on (Observe mode).
        cls.sim.ok("POST", CLUSTER_PATH, {"apiVersion": "tau.azure.com/v1alpha1",
                                           "kind": "TauCluster", "metadata": {"name": "cluster"},
                                           "spec": {}}, ctype="application/json")
        cls.agg = Aggregator(cls.sim.kubeconfig, WORK, log_level=None)
        cls.host = agents.HostTree(WORK, sockets=())
        root = cls.host.root
        os.makedirs(os.path.join(root, "var/lib/kubelet/pod-resources"))
        # Both drivers the node's CSINode lists answer Probe, so a healthy node agrees.
        for drv in CSI_DRIVERS:
            os.makedirs(os.path.join(root, "var/lib/kubelet/plugins", drv))
        cls.nvml_conf = os.path.join(WORK, "nvml.conf")
        cls.kubelet_conf = os.path.join(WORK, "kubelet.json")
        write_atomic(cls.nvml_conf, agents.fake_nvml_config(GPUS))
        write_atomic(cls.kubelet_conf, kubelet_config())
        cls.fakes = [
            FakePlugin("fake_kubelet", [
                "--socket", os.path.join(root, "var/lib/kubelet/pod-resources/kubelet.sock"),
                "--config", cls.kubelet_conf]),
        ]
        for drv in CSI_DRIVERS:
            csi_conf = os.path.join(WORK, drv + ".json")
            write_atomic(csi_conf, json.dumps({"name": drv, "vendorVersion": "v1.29.9",
                                               "ready": True}))
            cls.fakes.append(FakePlugin("fake_csi_driver", [
                "--registration", os.path.join(cls.host.registry, drv + "-reg.sock"),
                "--endpoint", os.path.join(root, "var/lib/kubelet/plugins", drv, "csi.sock"),
                "--advertise", "/var/lib/kubelet/plugins/%s/csi.sock" % drv,
                "--config", csi_conf]))
        token_file = os.path.join(WORK, "agent-token")
        with open(token_file, "w") as f:
            f.write(cls.token)
        cls.agent = agents.Agent(WORK, [
            "--node-name", ND_NODE, "--kubeconfig", cls.sim.kubeconfig,
            "--aggregator", cls.agg.addr, "--insecure", "--token-file", token_file,
            "--host-root", root, "--probe-interval", "1"],
            env={"TAU_AGENT_NVML": paths.build("fakes/nvml-full/libnvidia-ml.so.1"),
                 "TAU_FAKE_NVML_CONFIG": cls.nvml_conf})

    def node(self):
        return [n for n in self.tau_json("nodes") if n["name"] == ND_NODE][0]

    def test_01_all_free_and_healthy(self):
        n = self.within(lambda: None, lambda: (lambda n: n if n["gpusFree"] == 8 else None)(
            self.node()), "the agent's first inventory", limit=30)
        self.assertEqual((n["health"], n["gpusHealthy"], n["gpusInUse"]), ("ok", 8, 0))
        self.assertEqual(n["problems"], [])
        doc = self.fit("--gpus", "8", "--whole-nodes", "--ib")
        self.assertEqual(doc["placement"], [{"node": ND_NODE, "gpus": 8, "gpusFree": 8}])
        self.assertEqual(doc["unknownCount"], 0)
        # -o yaml is the same document, read back by a YAML 1.1 reader (PyYAML).
        r = self.tau("fit", "--gpu-class", CLASS, "--gpus", "8", "--whole-nodes", "--ib",
                     "-o", "yaml")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(yaml.safe_load(r.stdout), doc)
        r = self.tau("nodes")
        self.assertEqual(r.returncode, 0, r.stderr)
        head = r.stdout.splitlines()[0].split()
        row = [line.split() for line in r.stdout.splitlines() if line.startswith(ND_NODE)][0]
        self.assertEqual((row[head.index("HEALTH")], row[head.index("FREE")]), ("ok", "8"))
        pool = self.tau_json("pool")
        self.assertEqual([(c["gpuClass"], c["gpusFree"], c["wholeNodesFree"], c["nodesUnknown"])
                          for c in pool["freeNow"]], [(CLASS, 8, 1, 0)])
        # The budget's pool is the contract's: advertised allocatable, untouched.
        self.assertEqual(pool["flavors"][0]["resources"]["nvidia.com/gpu"], "8")

    def test_02_pod_takes_gpus(self):
        doc = self.within(
            lambda: write_atomic(self.kubelet_conf, kubelet_config(GPUS[:2])),
            lambda: (lambda d: d if not d["fits"] else None)(self.fit("--gpus", "8")),
            "a pod takes 2 GPUs: 8 no longer fit")
        self.assertIn("8 GPUs of class %s do not fit now: 6 can be had on 1 of 1" % CLASS,
                      doc["reason"])
        self.assertEqual(self.fit("--gpus", "6")["placement"],
                         [{"node": ND_NODE, "gpus": 6, "gpusFree": 6}])
        self.assertFalse(self.fit("--gpus", "6", "--whole-nodes")["fits"])
        n = self.node()
        self.assertEqual((n["gpusFree"], n["gpusInUse"], n["health"]), (6, 2, "ok"))
        r = self.tau("fit", "--gpu-class", CLASS, "--gpus", "8")
        self.assertEqual(r.returncode, 1, r.stderr)
        self.assertIn("Fits: no: 8 GPUs of class %s do not fit now" % CLASS, r.stdout)

    def test_03_gpu_turns_unhealthy(self):
        n = self.within(
            lambda: write_atomic(self.nvml_conf, agents.fake_nvml_config(GPUS, sick=3)),
            lambda: (lambda n: n if n["health"] == "degraded" else None)(self.node()),
            "GPU 3 needs a reset: HEALTH degraded")
        self.assertEqual((n["gpusHealthy"], n["gpusFree"]), (7, 5))
        self.assertEqual(n["problems"], ["GPU 3 (%s) unhealthy: row remap pending: the GPU needs "
                                         "a reset" % GPUS[3]])
        r = self.tau("nodes")
        self.assertIn("degraded", r.stdout)
        self.assertIn("GPU 3 (%s) unhealthy" % GPUS[3], r.stdout)
        pool = self.tau_json("pool")
        c = pool["freeNow"][0]
        self.assertEqual((c["gpusHealthy"], c["gpusInUse"], c["gpusFree"], c["nodesDegraded"]),
                         (7, 2, 5, 1))
        # The same figures in /metrics, beside the pool's.
        gpus = 'tau_aggregator_free_now_gpus{flavor="%s",state="%%s"}' % CLASS
        nodes = 'tau_aggregator_free_now_nodes{flavor="%s",state="%%s"}' % CLASS
        self.assertEqual([self.agg.metric(gpus % st) for st in ("healthy", "in_use", "free")],
                         [7, 2, 5])
        self.assertEqual([self.agg.metric(nodes % st)
                          for st in ("unknown", "degraded", "whole_free")], [0, 1, 0])

    def truth_condition(self, want):
        """The TauCluster's NodeTruthAgrees when its status is `want`, else None."""
        st = self.sim.get(CLUSTER_PATH + "/cluster").get("status") or {}
        for c in st.get("conditions") or []:
            if c["type"] == "NodeTruthAgrees" and c["status"] == want:
                return c
        return None

    def explain_gpu_health(self):
        """The agent.gpu-health rule of `tau inventory explain NODE -o json`."""
        ex = self.tau_json("explain", ND_NODE)
        return [r for r in ex["nodeTruth"] if r["name"] == "agent.gpu-health"][0]

    def everywhere(self, sick):
        """The TauCluster condition, explain's agent.gpu-health and its metric all agree that
        GPU 3 is sick (or not); the condition when they do, else None."""
        c = self.truth_condition("False" if sick else "True")
        if c is None or self.explain_gpu_health()["pass"] == sick:
            return None
        return c if disagreements(self.agg, "agent.gpu-health") == int(sick) else None

    def test_03a_cluster_condition_follows_node_truth(self):
        # GPU 3 waits for a row remap since test_03: the node disagrees with its Node.
        c = self.within(lambda: None, lambda: self.everywhere(True),
                        "TauCluster NodeTruthAgrees False", limit=CONDITION_WITHIN_S)
        self.assertEqual(c["reason"], "Disagrees")
        self.assertIn("1 of 1 counted nodes reporting node-local facts disagree", c["message"])
        self.assertIn("%s: agent.gpu-health: Node advertises 8 nvidia.com/gpu GPUs; the agent "
                      "sees 7 healthy (NVML); GPU 3 (%s): row remap pending"
                      % (ND_NODE, GPUS[3]), c["message"])
        c = self.within(lambda: write_atomic(self.nvml_conf, agents.fake_nvml_config(GPUS)),
                        lambda: self.everywhere(False),
                        "GPU 3 healthy again: explain, metric, NodeTruthAgrees True",
                        limit=CONDITION_WITHIN_S)
        self.assertEqual(c["reason"], "Agrees")
        self.assertIn("the agents of 1 of 1 counted nodes report node-local facts", c["message"])
        c = self.within(
            lambda: write_atomic(self.nvml_conf, agents.fake_nvml_config(GPUS, sick=3)),
            lambda: self.everywhere(True),
            "GPU 3 needs a reset again: explain, metric, NodeTruthAgrees False",
            limit=CONDITION_WITHIN_S)
        self.assertIn("the agent sees 7 healthy", self.explain_gpu_health()["detail"])
        self.assertIn("GPU 3 (%s)" % GPUS[3], c["message"])
        # The budget still counts the node's advertised GPUs (the contract).
        self.assertEqual(self.tau_json("pool")["flavors"][0]["resources"]["nvidia.com/gpu"], "8")

    def test_03b_critical_xid_makes_a_gpu_unhealthy(self):
        # The fake NVML raises a critical XID (79: fell off the bus) on GPU 5 between probes:
        # the agent's event session sees it, and the GPU stays unhealthy (until the agent
        # restarts) while the next probes bring no new event.
        n = self.within(
            lambda: write_atomic(self.nvml_conf,
                                 agents.fake_nvml_config(GPUS, sick=3) + "xid 5 79\n"),
            lambda: (lambda n: n if n["gpusHealthy"] == 6 else None)(self.node()),
            "critical XID on GPU 5: 6 healthy")
        self.assertIn("GPU 5 (%s) unhealthy: critical XID 79 (1 since the agent's NVML session "
                      "began): the GPU needs a reset" % GPUS[5], n["problems"])
        self.assertEqual(n["gpusFree"], 4)
        c = self.within(lambda: None,
                        lambda: (lambda c: c if c and "the agent sees 6 healthy" in c["message"]
                                 else None)(self.truth_condition("False")),
                        "NodeTruthAgrees counts the XID", limit=CONDITION_WITHIN_S)
        self.assertIn("GPU 5 (%s): critical XID 79" % GPUS[5], c["message"])

    def test_04_ib_port_down_leaves_ib_jobs_out(self):
        for dev in ["mlx5_%d" % i for i in range(8)]:
            self.host.set_port_down(dev)
        doc = self.within(lambda: None,
                          lambda: (lambda d: d if not d["fits"] else None)(
                              self.fit("--gpus", "4", "--ib")),
                          "every IB port down: no node for an IB job")
        self.assertEqual(doc["candidates"], 0)
        self.assertTrue(self.fit("--gpus", "4")["fits"])

    def test_05_bad_input_is_a_usage_error(self):
        for args, want in ((["--gpu-class", CLASS, "--gpus", "0"], "--gpus"),
                           (["--gpus", "8"], "--gpu-class C is required"),
                           (["--gpu-class", CLASS, "--gpus", "10", "--per-node", "4"],
                            "--gpus must be a multiple of --per-node"),
                           (["--gpu-class", CLASS, "--gpus", "8", "--whole-nodes",
                             "--per-node", "4"], "exclude each other"),
                           (["--gpu-class", "x100", "--gpus", "8"],
                            "GPU class x100 is not in the pool")):
            r = self.tau("fit", *args)
            self.assertEqual(r.returncode, 2, (args, r.stdout, r.stderr))
            self.assertIn(want, r.stderr, args)
            self.assertEqual(r.stdout, "", args)

    def test_06_agent_gone_is_unknown_not_free(self):
        rc, _ = self.agent.terminate()
        self.assertEqual(rc, 0, self.agent.logs()[-2000:])
        doc = self.within(lambda: None,
                          lambda: (lambda d: d if d["unknownCount"] == 1 else None)(
                              self.fit("--gpus", "1")),
                          "agent stopped: the node is unknown")
        self.assertFalse(doc["fits"])
        self.assertEqual(doc["unknownNodes"], [ND_NODE])
        n = self.node()
        self.assertTrue(n["stale"])
        self.assertIsNone(n["gpusFree"])
        r = self.tau("nodes")
        row = [line.split() for line in r.stdout.splitlines() if line.startswith(ND_NODE)][0]
        self.assertIn("unknown", row)

    def test_07_malformed_node_truth_is_refused_and_nothing_lost(self):
        # An agent (here a stand-in with the same token) sends devices past the limit: the
        # whole inventory is refused with a clear message, and the node keeps what it had.
        before = self.node()
        pb = proto.inventory()
        inv = inventory_from_node(pb, kubesim.fixture("node-nd-h100-v5.json"))
        inv.devices.pod_resources_probed = True
        inv.devices.pod_resources_allocatable_known = True
        for i in range(257):
            inv.devices.pod_devices.add(resource_name="nvidia.com/gpu",
                                        device_id="GPU-%04d" % i, numa_node=-1,
                                        allocatable=True)
        ch = grpc.insecure_channel(self.agg.addr)
        try:
            a = FakeAgent(pb, ch, self.token)
            ack = a.wait_ack(a.send_inventory(inv))
            self.assertEqual(ack.status, pb.ACK_STATUS_REJECTED, ack)
            self.assertIn("pod_devices: 257 entries over the limit of 256", ack.message)
            after = self.node()
            self.assertEqual((after["health"], after["problems"], after["stale"]),
                             (before["health"], before["problems"], True))
            self.assertEqual(after["health"], "degraded")
        finally:
            ch.close()


def dra_fixture(name):
    with open(os.path.join(DRA_FIXTURES, name)) as f:
        return json.load(f)


def dra_kubelet_config(claimed):
    """The fake kubelet of a DRA-only node: no device-plugin GPUs; the ResourceClaim
    ml/infer-0-gpus of pod ml/infer-0 holds `claimed`, (driver, device) pairs of pool
    DRA_NODE."""
    pods = [{"namespace": "ml", "name": "infer-0", "containers": [{"name": "server", "dynamic": [
        {"claimNamespace": "ml", "claimName": "infer-0-gpus",
         "devices": [{"driver": drv, "pool": DRA_NODE, "device": dev}
                     for drv, dev in claimed]}]}]}] if claimed else []
    return json.dumps({"allocatable": [], "pods": pods})


class DraFreeNow(WithAggregator, unittest.TestCase):
    """One DRA-only node and its agent: free now follows ResourceClaims (in order, numbered)."""

    @classmethod
    def setUpClass(cls):
        cls.token = agent_token(DRA_NODE)
        tokens = write_table(os.path.join(WORK, "dra-tokens.json"), agent_tokens([DRA_NODE]))
        cls.sim = kubesim.KubeSim(objects=[dra_fixture("deviceclass-gpu.nvidia.com.json"),
                                           dra_fixture("node-dra-h100-0.json"),
                                           dra_fixture("resourceslice-h100-complete.json")],
                                  args=("--tokens", tokens))
        cls.agg = Aggregator(cls.sim.kubeconfig, WORK, "aggregator-dra", log_level=None)
        cls.host = agents.HostTree(WORK, sockets=())
        root = cls.host.root
        os.makedirs(os.path.join(root, "var/lib/kubelet/pod-resources"))
        cls.kubelet_conf = os.path.join(WORK, "dra-kubelet.json")
        write_atomic(cls.kubelet_conf,
                     dra_kubelet_config([(DRA_DRIVER, "gpu-0"), (DRA_DRIVER, "gpu-1")]))
        cls.fakes = [FakePlugin("fake_kubelet", [
            "--socket", os.path.join(root, "var/lib/kubelet/pod-resources/kubelet.sock"),
            "--config", cls.kubelet_conf])]
        token_file = os.path.join(WORK, "dra-agent-token")
        with open(token_file, "w") as f:
            f.write(cls.token)
        cls.agent = agents.Agent(WORK, [
            "--node-name", DRA_NODE, "--kubeconfig", cls.sim.kubeconfig,
            "--aggregator", cls.agg.addr, "--insecure", "--token-file", token_file,
            "--host-root", root, "--probe-interval", "1"], env={"TAU_AGENT_NVML": "off"})

    def node(self):
        return [n for n in self.tau_json("nodes") if n["name"] == DRA_NODE][0]

    def free(self, want):
        """The node when its FREE is `want`, else None."""
        n = self.node()
        return n if n["gpusFree"] == want else None

    def test_01_claimed_gpus_are_in_use(self):
        n = self.within(lambda: None, lambda: self.free(6), "the agent's first inventory: 6 free",
                        limit=30)
        self.assertTrue(n["gpusThroughDra"])
        self.assertEqual((n["gpusHealthy"], n["gpusInUse"]), (8, 2))
        self.assertEqual(n["draResources"], {"nvidia.com/gpu": "8"})
        self.assertNotIn("nvidia.com/gpu", n["allocatable"])
        r = self.tau("nodes")
        self.assertEqual(r.returncode, 0, r.stderr)
        head = r.stdout.splitlines()[0].split()
        row = [line.split() for line in r.stdout.splitlines() if line.startswith(DRA_NODE)][0]
        # GPUS "8 (DRA)" is two words: FREE sits one further right
        self.assertEqual(row[head.index("GPUS"):head.index("GPUS") + 2], ["8", "(DRA)"])
        self.assertEqual(row[head.index("FREE") + 1], "6")
        self.assertEqual(self.fit("--gpus", "6")["placement"],
                         [{"node": DRA_NODE, "gpus": 6, "gpusFree": 6}])
        self.assertFalse(self.fit("--gpus", "7")["fits"])
        self.assertFalse(self.fit("--gpus", "8", "--whole-nodes")["fits"])
        pool = self.tau_json("pool")
        self.assertEqual([(c["gpuClass"], c["gpusInUse"], c["gpusFree"], c["nodesUnknown"])
                          for c in pool["freeNow"]], [(CLASS, 2, 6, 0)])
        f = pool["flavors"][0]
        self.assertEqual((f["resources"]["nvidia.com/gpu"], f["draResources"]),
                         ("8", {"nvidia.com/gpu": "8"}))

    def test_02_claim_released(self):
        self.within(lambda: write_atomic(self.kubelet_conf, dra_kubelet_config([])),
                    lambda: self.free(8), "the claim released: 8 free")
        self.assertEqual(self.fit("--gpus", "8", "--whole-nodes")["placement"],
                         [{"node": DRA_NODE, "gpus": 8, "gpusFree": 8}])

    def test_03_only_the_node_s_gpus_count(self):
        # gpu-3 is one of the node's GPUs; gpu-9 is published by no slice and eth1 is another
        # driver's: neither is a GPU of the node, so only gpu-3 is in use.
        self.within(lambda: write_atomic(self.kubelet_conf, dra_kubelet_config(
                        [("dra.net", "eth1"), (DRA_DRIVER, "gpu-3"), (DRA_DRIVER, "gpu-9")])),
                    lambda: self.free(7), "a claim on gpu-3 (and on no GPU of the node): 7 free")
        self.assertEqual(self.node()["gpusInUse"], 1)

    def test_99_stops_cleanly(self):
        rc, _ = self.agent.terminate()
        self.assertEqual(rc, 0, self.agent.logs()[-3000:])


if __name__ == "__main__":
    unittest.main()
