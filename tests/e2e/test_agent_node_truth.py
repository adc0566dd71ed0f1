"""End-to-end test of tau-node-agent's node-local probes (issue 25).

    TAU_AGENT_BIN=build/tau-node-agent TAU_BUILD_DIR=build /usr/bin/python3 -m unittest -v \
        test_agent_node_truth   (in tests/e2e)

The real agent runs against kube-sim, streams to the recording aggregator of
tests/e2e/harness/agents.py and probes a fake host root that holds what a GPU node holds: our
fake libnvidia-ml.so.1 (build/fakes/nvml-full, GPUs from a file it reads at every nvmlInit), a
fake kubelet serving pod-resources on <root>/var/lib/kubelet/pod-resources/kubelet.sock, a fake
CSI driver with its registration socket, and the InfiniBand sysfs tree of an ND H100 v5. Each
test changes one of them and waits for the inventory that reports it; the agent re-probes every
second (--probe-interval 1), so every change must arrive within REPORT_WITHIN_S (DRA devices
a ResourceClaim holds, from kubelet's dynamic_resources, among them), which the
tests measure and assert. Between changes nothing is re-sent: the digest holds. A second agent
probes once an hour: a pod event alone must bring kubelet's new allocation within the same time.
"""

import json
import os
import sys
import time
import unittest

from harness import agents, kubesim, paths, proto
from harness.agents import (DISK, DRA_DRIVER, ND_NODE, FakePlugin, kubelet_config,
                            write_atomic)
from harness.agents import FAKE_GPUS as GPUS
from harness.procs import make_workdir, remove_workdir

# --probe-interval 1: a change is seen at the next probe (<= 1 s), then built and sent at once.
PROBE_INTERVAL_S = 1
REPORT_WITHIN_S = 5

WORK = None
pb = None


def setUpModule():
    global WORK, pb
    agents.require_all(("fakes/bin/fake_kubelet", "fakes/bin/fake_csi_driver",
                        "fakes/nvml-full/libnvidia-ml.so.1"))
    WORK = make_workdir("tau-nt-")
    pb = proto.inventory()


def tearDownModule():
    remove_workdir(WORK)


def gpu(inv, index):
    return [g for g in inv.devices.gpus if g.index == index][0]


def port(inv, dev):
    return [p for p in inv.devices.rdma_ports if p.device == dev][0]


def holder(inv, device_id):
    d = [d for d in inv.devices.pod_devices if d.device_id == device_id][0]
    return (d.pod_namespace, d.pod_name, d.container_name)


def csi(inv, name):
    return [d for d in inv.csi_drivers if d.name == name][0]


class FakedNode:
    """Mixin: one agent with every node-local source faked, probing every PROBE_S seconds."""

    PROBE_S = PROBE_INTERVAL_S

    @classmethod
    def setUpClass(cls):
        cls.sim = kubesim.KubeSim(objects=[kubesim.fixture("node-nd-h100-v5.json"),
                                          kubesim.fixture("csinode-nd-h100-v5.json")])
        cls.host = agents.HostTree(WORK, sockets=())
        root = cls.host.root
        os.makedirs(os.path.join(root, "var/lib/kubelet/pod-resources"))
        os.makedirs(os.path.join(root, "var/lib/kubelet/plugins", DISK))
        cls.nvml_conf = os.path.join(WORK, "nvml.conf")
        cls.kubelet_conf = os.path.join(WORK, "kubelet.json")
        cls.csi_conf = os.path.join(WORK, "csi.json")
        write_atomic(cls.nvml_conf, agents.fake_nvml_config(GPUS))
        write_atomic(cls.kubelet_conf, kubelet_config())
        write_atomic(cls.csi_conf, json.dumps({"name": DISK, "vendorVersion": "v1.29.9",
                                               "ready": True}))
        cls.fakes = [
            FakePlugin("fake_kubelet", [
                "--socket", os.path.join(root, "var/lib/kubelet/pod-resources/kubelet.sock"),
                "--config", cls.kubelet_conf]),
            FakePlugin("fake_csi_driver", [
                "--registration", os.path.join(cls.host.registry, DISK + "-reg.sock"),
                "--endpoint", os.path.join(root, "var/lib/kubelet/plugins", DISK, "csi.sock"),
                "--advertise", "/var/lib/kubelet/plugins/%s/csi.sock" % DISK,
                "--config", cls.csi_conf]),
        ]
        cls.rec = agents.Recorder(pb, heartbeat_s=1)
        cls.agent = agents.Agent(WORK, [
            "--node-name", ND_NODE, "--kubeconfig", cls.sim.kubeconfig,
            "--aggregator", "127.0.0.1:%d" % cls.rec.port, "--insecure",
            "--host-root", root, "--probe-interval", str(cls.PROBE_S)],
            env={"TAU_AGENT_NVML": os.path.join(paths.BUILD, "fakes/nvml-full/libnvidia-ml.so.1"),
                 "TAU_FAKE_NVML_CONFIG": cls.nvml_conf})
        cls.rec.wait(lambda r: any(x[2].WhichOneof("body") == "inventory" for x in r.reports),
                     30, "the first inventory")

    @classmethod
    def tearDownClass(cls):
        if cls.agent.alive():
            cls.agent.terminate()
        cls.rec.stop()
        for f in cls.fakes:
            f.stop()
        cls.sim.stop()

    def reported(self, change, pred, what):
        """Run change(); the inventory satisfying pred must arrive within REPORT_WITHIN_S."""
        before = len(self.rec.inventories())
        t0 = time.monotonic()
        change()
        _, inv = self.rec.wait_inventory(pred, before, REPORT_WITHIN_S + 5, what)
        took = time.monotonic() - t0
        sys.stderr.write("%s: reported in %.2f s\n" % (what, took))
        self.assertLess(took, REPORT_WITHIN_S, "%s took %.1f s; logs:\n%s"
                        % (what, took, self.agent.logs()[-3000:]))
        return inv

    def test_99_stops_cleanly(self):
        # Last: the agent exits 0 on SIGTERM (the sanitizer build fails it on a leak).
        rc, _ = self.agent.terminate()
        self.assertEqual(rc, 0, self.agent.logs()[-3000:])


class NodeTruth(FakedNode, unittest.TestCase):
    """Every source, one change at a time; the tests run in order (numbered)."""

    def test_01_first_inventory_carries_node_truth(self):
        inv = self.rec.inventories()[-1]
        d = inv.devices
        self.assertTrue(d.gpus_probed)
        self.assertEqual((d.gpus_present, d.gpus_healthy), (8, 8))
        self.assertEqual((d.driver_version, d.cuda_version), ("550.54.15", "12.4"))
        self.assertEqual([g.uuid for g in d.gpus], GPUS)
        self.assertTrue(all(g.healthy and g.lost == pb.TRI_STATE_FALSE for g in d.gpus))
        self.assertEqual(len(d.rdma_ports), 8)
        self.assertEqual({(p.state, p.phys_state, p.rate_mbps, p.link_layer, p.link_downed)
                          for p in d.rdma_ports}, {(4, 5, 400000, "InfiniBand", 0)})
        self.assertTrue(d.pod_resources_probed and d.pod_resources_allocatable_known)
        self.assertEqual([x.device_id for x in d.pod_devices], sorted(GPUS))
        self.assertTrue(all(x.allocatable and not x.pod_name for x in d.pod_devices))
        self.assertEqual({x.numa_node for x in d.pod_devices}, {0, 1})
        disk = csi(inv, DISK)
        self.assertTrue(disk.probed)
        self.assertEqual(disk.probe_ready, pb.TRI_STATE_TRUE)
        self.assertEqual(disk.endpoint, "/var/lib/kubelet/plugins/%s/csi.sock" % DISK)
        self.assertEqual(disk.vendor_version, "v1.29.9")
        self.assertFalse(csi(inv, "file.csi.azure.com").probed)

    def test_02_only_changes_are_sent(self):
        # The agent re-probes every second; nothing changed, so only heartbeats go out.
        before = len(self.rec.inventories())
        self.rec.settle(3)
        self.assertEqual(len(self.rec.inventories()), before, self.agent.logs()[-2000:])

    def test_03_gpu_turns_unhealthy(self):
        inv = self.reported(
            lambda: write_atomic(self.nvml_conf, agents.fake_nvml_config(GPUS, sick=3)),
            lambda i: not gpu(i, 3).healthy, "GPU 3 rows pending remap")
        g = gpu(inv, 3)
        self.assertEqual(g.remap_pending, pb.TRI_STATE_TRUE)
        self.assertEqual(g.reason, "row remap pending: the GPU needs a reset")
        self.assertEqual(inv.devices.gpus_healthy, 7)
        self.assertIn("NVML: GPU 3 (%s) is unhealthy: row remap pending: the GPU needs a reset"
                      % GPUS[3], list(inv.problems))

    def test_04_ib_port_goes_down(self):
        inv = self.reported(lambda: self.host.set_port_down("mlx5_2"),
                            lambda i: port(i, "mlx5_2").state == 1, "mlx5_2 port 1 down")
        p = port(inv, "mlx5_2")
        self.assertEqual((p.phys_state, p.link_downed), (3, 1))
        self.assertEqual(inv.devices.rdma_ports_up, 7)

    def test_05_pod_takes_gpus(self):
        inv = self.reported(lambda: write_atomic(self.kubelet_conf, kubelet_config(GPUS[:2])),
                            lambda i: holder(i, GPUS[0])[1] == "train-0", "a pod takes 2 GPUs")
        self.assertEqual(holder(inv, GPUS[1]), ("ml", "train-0", "main"))
        self.assertEqual(holder(inv, GPUS[2]), ("", "", ""))

    def test_05a_claim_takes_dra_devices(self):
        # A ResourceClaim's devices (kubelet's dynamic_resources) reach the aggregator, sorted.
        inv = self.reported(
            lambda: write_atomic(self.kubelet_conf,
                                 kubelet_config(GPUS[:2], claimed=["gpu-7", "gpu-6"])),
            lambda i: len(i.devices.dra_devices) == 2, "a claim holds 2 DRA devices")
        d = inv.devices
        self.assertTrue(d.dra_devices_read)
        self.assertEqual(d.dra_devices_dropped, 0)
        self.assertEqual([(x.driver_name, x.pool_name, x.device_name) for x in d.dra_devices],
                         [(DRA_DRIVER, ND_NODE, "gpu-6"), (DRA_DRIVER, ND_NODE, "gpu-7")])
        self.assertEqual({(x.claim_namespace, x.claim_name, x.pod_namespace, x.pod_name,
                           x.container_name) for x in d.dra_devices},
                         {("ml", "infer-0-gpus", "ml", "infer-0", "server")})
        self.assertEqual(holder(inv, GPUS[0]), ("ml", "train-0", "main"))

    def test_06_csi_driver_stops_answering_ready(self):
        inv = self.reported(
            lambda: write_atomic(self.csi_conf, json.dumps({"name": DISK, "ready": False})),
            lambda i: csi(i, DISK).probe_ready == pb.TRI_STATE_FALSE, "Probe ready=false")
        self.assertEqual(csi(inv, DISK).probe_error, "Probe answered ready=false")

    def test_07_kubelet_gone_is_soft(self):
        self.fakes[0].stop()
        inv = self.reported(lambda: None, lambda i: not i.devices.pod_resources_probed,
                            "kubelet gone")
        self.assertIn("kubelet pod-resources", inv.devices.pod_resources_note)
        self.assertEqual(len(inv.devices.pod_devices), 0)
        self.assertEqual(len(inv.devices.dra_devices), 0)
        self.assertFalse(inv.devices.dra_devices_read)
        self.assertTrue(self.agent.alive())


class PodBetweenProbes(FakedNode, unittest.TestCase):
    """No host probe for an hour: a pod taking GPUs is still reported at once, because a pod
    event on the node makes the agent ask kubelet's pod-resources again (and only that)."""

    PROBE_S = 3600

    def test_01_pod_event_refreshes_pod_resources(self):
        def change():
            # kubelet admits the pod and gives it two GPUs; then its object shows up.
            write_atomic(self.kubelet_conf, kubelet_config(GPUS[6:]))
            self.sim.kubectl("create", "namespace", "ml")
            self.sim.ok("POST", "/api/v1/namespaces/ml/pods", {
                "apiVersion": "v1", "kind": "Pod",
                "metadata": {"name": "train-0", "namespace": "ml"},
                "spec": {"nodeName": ND_NODE, "containers": [{"name": "main", "image": "x"}]}},
                ctype="application/json")

        inv = self.reported(change, lambda i: holder(i, GPUS[6])[1] == "train-0",
                            "a pod takes 2 GPUs with no host probe due")
        self.assertEqual(holder(inv, GPUS[7]), ("ml", "train-0", "main"))


if __name__ == "__main__":
    unittest.main()
