"""End-to-end tests of tau-node-agent against kube-sim and a recording aggregator.

    TAU_AGENT_BIN=build/tau-node-agent /usr/bin/python3 -m unittest -v test_agent  (in tests/e2e)

The agent runs for real: its informers watch kube-sim, it probes a fake --host-root, and it
streams to a Python grpcio recorder that stands in for the aggregator (tests/e2e/harness/agents.py).
Every wait is for a condition; "exactly one new report" is checked by waiting for the report and
then for two more heartbeats from the agent (the recorder acks with a 1 s interval), never by a
bare sleep.
"""

import copy
import json
import os
import subprocess
import time
import unittest

from harness import agents, kubesim, paths, procs, proto, require
from harness.agents import ND_NODE
from harness.procs import make_workdir, remove_workdir
from harness.tls import make_tls
from harness.waits import wait_for

WORK = None
pb = None


def setUpModule():
    global WORK, pb
    agents.require_all()
    WORK = make_workdir("tau-agent-e2e-")
    pb = proto.inventory()


def tearDownModule():
    remove_workdir(WORK)


def nd_objects(finalizer=False):
    node = kubesim.fixture("node-nd-h100-v5.json")
    if finalizer:
        node["metadata"]["finalizers"] = ["tau.azure.com/e2e-hold"]
    return [node, kubesim.fixture("csinode-nd-h100-v5.json")]


def labels(inv):
    return dict(inv.labels)


def alloc(inv):
    return {q.name: q.quantity for q in inv.allocatable}


def driver(inv, name):
    for d in inv.csi_drivers:
        if d.name == name:
            return d
    return None


def write_token(path, token):
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        f.write(token + "\n")
    os.replace(tmp, path)  # atomic, as the kubelet's projected volume swaps it


class AgentStreaming(unittest.TestCase):
    """One agent, one kube-sim, one recorder; the tests run in order (numbered)."""

    @classmethod
    def setUpClass(cls):
        cls.sim = kubesim.KubeSim(objects=nd_objects(finalizer=True))
        cls.host = agents.HostTree(WORK)
        cls.rec = agents.Recorder(pb, heartbeat_s=1)
        cls.token_file = os.path.join(WORK, "token")
        write_token(cls.token_file, "token-one")
        cls.http_port = procs.free_port()
        cls.agent = agents.Agent(WORK, [
            "--node-name", ND_NODE, "--kubeconfig", cls.sim.kubeconfig,
            "--aggregator", "127.0.0.1:%d" % cls.rec.port, "--insecure",
            "--token-file", cls.token_file, "--host-root", cls.host.root,
            "--http-listen", "127.0.0.1:%d" % cls.http_port, "--log-level", "debug"])
        cls.rec.wait(lambda r: any(x[2].WhichOneof("body") == "inventory" for x in r.reports),
                     30, "the first inventory")

    @classmethod
    def tearDownClass(cls):
        if cls.agent.alive():
            cls.agent.terminate()
        cls.rec.stop()
        cls.sim.stop()

    def n_inv(self):
        return len(self.rec.inventories())

    def expect_one(self, change, pred, what):
        """Run change(); exactly one new inventory must arrive, and it must satisfy pred."""
        before = self.n_inv()
        change()
        _, inv = self.rec.wait_inventory(pred, before, 20, what)
        self.rec.settle(2)
        self.assertEqual(self.n_inv(), before + 1,
                         "%s: expected exactly one new inventory; logs:\n%s"
                         % (what, self.agent.logs()[-3000:]))
        self.assertTrue(self.agent.alive())
        return inv

    def test_01_full_inventory_first(self):
        first = self.rec.of_stream(1)[0]
        self.assertEqual(first.seq, 1)
        self.assertEqual(first.WhichOneof("body"), "inventory")
        self.assertEqual(self.rec.stream_tokens[1], "token-one")
        inv = first.inventory
        self.assertEqual(inv.node_name, ND_NODE)
        self.assertEqual(inv.node_uid, "3f2a6c1e-9b7d-4e5a-8c21-7d9e0b4f6a11")
        self.assertEqual(inv.gpu_class, "h100-ib")
        self.assertEqual(inv.kind, pb.NODE_KIND_AGENT_POOL)
        self.assertTrue(inv.ready and inv.schedulable and not inv.deleting)
        self.assertEqual(alloc(inv)["nvidia.com/gpu"], "8")
        self.assertEqual(alloc(inv)["memory"], "1977700032Ki")
        self.assertEqual(labels(inv), kubesim.fixture("node-nd-h100-v5.json")["metadata"]["labels"])
        self.assertEqual(inv.devices.gpus_present, 8)
        self.assertFalse(inv.devices.gpus_probed)
        self.assertEqual((inv.devices.rdma_ports_total, inv.devices.rdma_ports_up), (8, 8))
        self.assertTrue(driver(inv, "disk.csi.azure.com").socket_present)
        self.assertFalse(driver(inv, "file.csi.azure.com").socket_present)
        self.assertEqual(len(inv.digest), 64)
        self.assertTrue(inv.agent_version)
        # Sequence numbers grow by one on the stream.
        self.rec.settle(1)
        seqs = [r.seq for r in self.rec.of_stream(1)]
        self.assertEqual(seqs, list(range(1, len(seqs) + 1)))
        hb = [r for r in self.rec.of_stream(1) if r.WhichOneof("body") == "heartbeat"]
        self.assertEqual(hb[0].heartbeat.digest, inv.digest)

    def test_02_healthz_and_metrics(self):
        code, body = procs.http_get(self.http_port, "/healthz")
        self.assertEqual((code, body.strip()), (200, "ok"))
        code, body = procs.http_get(self.http_port, "/metrics")
        self.assertEqual(code, 200)
        self.assertIn("tau_agent_connected 1", body)
        self.assertIn('tau_agent_reports_sent_total{kind="inventory"}', body)
        self.assertIn("tau_agent_problems 1", body)
        self.assertEqual(procs.http_get(self.http_port, "/nope")[0], 404)

    def test_03_cordon(self):
        inv = self.expect_one(lambda: self.sim.kubectl("cordon", ND_NODE),
                              lambda i: not i.schedulable, "cordon")
        self.assertTrue(inv.ready)
        self.expect_one(lambda: self.sim.kubectl("uncordon", ND_NODE),
                        lambda i: i.schedulable, "uncordon")

    def test_04_label(self):
        inv = self.expect_one(lambda: self.sim.kubectl("label", "node", ND_NODE, "team=vision"),
                              lambda i: labels(i).get("team") == "vision", "label")
        self.assertEqual(labels(inv)["tau.azure.com/gpu-class"], "h100-ib")

    def test_05_allocatable(self):
        patch = {"status": {"allocatable": {"nvidia.com/gpu": "7", "memory": "1024Mi"}}}
        inv = self.expect_one(
            lambda: self.sim.merge("/api/v1/nodes/%s/status" % ND_NODE, patch),
            lambda i: alloc(i).get("nvidia.com/gpu") == "7", "allocatable change")
        self.assertEqual(alloc(inv)["memory"], "1Gi")  # canonical form
        self.assertTrue(any("nvidia.com/gpu" in p for p in inv.problems), inv.problems)

    def test_06_not_ready(self):
        node = self.sim.get("/api/v1/nodes/" + ND_NODE)
        conds = copy.deepcopy(node["status"]["conditions"])
        for c in conds:
            if c["type"] == "Ready":
                c.update(status="False", reason="KubeletNotReady", message="PLEG is not healthy")
        inv = self.expect_one(
            lambda: self.sim.merge("/api/v1/nodes/%s/status" % ND_NODE,
                                 {"status": {"conditions": conds}}),
            lambda i: not i.ready, "NotReady")
        self.assertTrue(inv.schedulable)

    def test_07_csi_socket_appears(self):
        inv = self.expect_one(lambda: self.host.add_socket("file.csi.azure.com"),
                              lambda i: driver(i, "file.csi.azure.com").socket_present,
                              "CSI socket appears")
        self.assertFalse(any("file.csi.azure.com" in p for p in inv.problems), inv.problems)

    def test_08_reconnect_resends_full_inventory(self):
        last = self.rec.inventories()[-1]
        streams = self.rec.streams
        self.rec.restart()
        self.rec.wait(lambda r: r.streams > streams and r.of_stream(r.streams), 30,
                      "a new stream with a report")
        first = self.rec.of_stream(self.rec.streams)[0]
        self.assertEqual((first.seq, first.WhichOneof("body")), (1, "inventory"))
        self.assertEqual(first.inventory.digest, last.digest)
        self.assertEqual(alloc(first.inventory), alloc(last))
        code, body = procs.http_get(self.http_port, "/metrics")
        self.assertRegex(body, r"tau_agent_reconnects_total [1-9]")

    def test_09_rotated_token_used_on_next_connect(self):
        write_token(self.token_file, "token-two")
        streams = self.rec.streams
        self.rec.restart()
        self.rec.wait(lambda r: r.streams > streams and r.of_stream(r.streams), 30,
                      "a new stream with a report")
        self.assertEqual(self.rec.stream_tokens[self.rec.streams], "token-two")
        self.assertEqual(self.rec.of_stream(self.rec.streams)[0].WhichOneof("body"), "inventory")

    def test_10_deletion(self):
        inv = self.expect_one(
            lambda: self.sim.kubectl("delete", "node", ND_NODE, "--wait=false"),
            lambda i: i.deleting, "deletion")
        self.assertEqual(inv.node_name, ND_NODE)

    def test_11_sigterm_sends_stopping_and_exits(self):
        rc, elapsed = self.agent.terminate()
        self.assertEqual(rc, 0, self.agent.logs()[-2000:])
        self.assertLess(elapsed, 2.0)
        stops = [r for _, _, r, _ in self.rec.reports if r.WhichOneof("body") == "stopping"]
        self.assertEqual(len(stops), 1)
        self.assertEqual(stops[0].stopping.reason, "SIGTERM")
        # It came last on its stream, with the next sequence number.
        stream = [s for s, _, r, _ in self.rec.reports if r.WhichOneof("body") == "stopping"][0]
        seqs = [r.seq for r in self.rec.of_stream(stream)]
        self.assertEqual(seqs, list(range(1, len(seqs) + 1)))
        self.assertEqual(self.rec.of_stream(stream)[-1].WhichOneof("body"), "stopping")


class AgentBadInput(unittest.TestCase):
    """A malformed Node and an unreadable sysfs file: logged, reported, never a crash."""

    def test_bad_quantity_and_unreadable_sysfs(self):
        objs = nd_objects()
        objs[0]["status"]["allocatable"]["example.com/widgets"] = "12abc"
        sim = kubesim.KubeSim(objects=objs)
        host = agents.HostTree(WORK)
        host.break_port_state("mlx5_3")
        rec = agents.Recorder(pb, heartbeat_s=1)
        agent = agents.Agent(WORK, [
            "--node-name", ND_NODE, "--kubeconfig", sim.kubeconfig, "--aggregator",
            "127.0.0.1:%d" % rec.port, "--insecure", "--host-root", host.root])
        try:
            _, inv = rec.wait_inventory(lambda i: True, 0, 30, "first inventory")
            self.assertNotIn("example.com/widgets", alloc(inv))
            self.assertEqual(alloc(inv)["nvidia.com/gpu"], "8")
            self.assertTrue(any("example.com/widgets" in p for p in inv.problems), inv.problems)
            self.assertTrue(any("mlx5_3" in p and "state" in p for p in inv.problems),
                            inv.problems)
            self.assertEqual((inv.devices.rdma_ports_total, inv.devices.rdma_ports_up), (8, 7))
            # Another malformed write: a new report, still alive.
            sim.merge("/api/v1/nodes/%s/status" % ND_NODE,
                    {"status": {"allocatable": {"nvidia.com/gpu": "eight"}}})
            _, inv = rec.wait_inventory(lambda i: "nvidia.com/gpu" not in alloc(i), 1, 20,
                                        "inventory without the bad gpu quantity")
            self.assertTrue(any("nvidia.com/gpu" in p for p in inv.problems), inv.problems)
            rec.settle(1)
            self.assertTrue(agent.alive())
            logs = agent.logs()
            self.assertIn("example.com/widgets", logs)
            self.assertIn("level=warn", logs)
            # The problems that stayed through the second change are not logged again; the new
            # one is logged once.
            problem_lines = [line for line in logs.splitlines() if 'msg="inventory problem"' in line]
            self.assertEqual(sum("mlx5_3" in line for line in problem_lines), 1, problem_lines)
            self.assertEqual(sum("example.com/widgets" in line for line in problem_lines), 1,
                             problem_lines)
            self.assertEqual(sum("eight" in line for line in problem_lines), 1, problem_lines)
        finally:
            rc, _ = agent.terminate()
            rec.stop()
            sim.stop()
        self.assertEqual(rc, 0)


class AgentTls(unittest.TestCase):
    """TLS to the aggregator (--ca-file): the right CA streams; a CA that did not sign the
    aggregator's certificate never connects, and the log says why in words (the agent keeps
    OpenSSL's error strings: docs/PERFORMANCE.md, Node agent)."""

    def test_ca_file(self):
        tls = make_tls(WORK, require.tool("openssl", "openssl", "TAU_OPENSSL"))
        sim = kubesim.KubeSim(objects=nd_objects())
        host = agents.HostTree(WORK)
        rec = agents.Recorder(pb, heartbeat_s=1, tls=(tls["cert"], tls["key"]))
        started = []
        try:
            def start(ca):
                started.append(agents.Agent(WORK, [
                    "--node-name", ND_NODE, "--kubeconfig", sim.kubeconfig, "--aggregator",
                    "127.0.0.1:%d" % rec.port, "--ca-file", ca, "--host-root", host.root]))
                return started[-1]
            start(tls["ca"])
            _, inv = rec.wait_inventory(lambda i: True, 0, 30, "first inventory over TLS")
            self.assertEqual(inv.node_name, ND_NODE)

            wrong = start(tls["other_ca"])

            def refused_in_words():
                self.assertTrue(wrong.alive(), wrong.logs()[-2000:])
                return any("stream to the aggregator ended" in line and
                           "certificate verify failed" in line
                           for line in wrong.logs().splitlines())

            wait_for(refused_in_words, timeout=30,
                     what="the handshake failure logged in words")
            self.assertEqual(rec.streams, 1, "only the agent that trusts the right CA streams")
        finally:
            codes = [a.terminate()[0] for a in started]
            rec.stop()
            sim.stop()
        self.assertEqual(codes, [0, 0])


class AgentOnce(unittest.TestCase):
    """--once -o json: the documented JSON, no aggregator needed."""

    @classmethod
    def setUpClass(cls):
        cls.sim = kubesim.KubeSim(objects=nd_objects())
        cls.host = agents.HostTree(WORK)

    @classmethod
    def tearDownClass(cls):
        cls.sim.stop()

    def once(self, *extra):
        env = dict(os.environ, TAU_AGENT_NVML="off")
        return subprocess.run([paths.AGENT_BIN, "--once", "-o", "json", "--node-name", ND_NODE,
                               "--kubeconfig", self.sim.kubeconfig, "--host-root", self.host.root,
                               *extra], capture_output=True, text=True, timeout=60, env=env)

    def test_matches_expected_json(self):
        r = self.once()
        self.assertEqual(r.returncode, 0, r.stderr)
        got = json.loads(r.stdout)
        with open(os.path.join(paths.E2E, "agent", "expected-nd-h100-v5.json")) as f:
            want = json.load(f)
        # resourceVersion is the simulator's own counter; it is not part of the content.
        self.assertTrue(got.pop("resourceVersion"))
        want.pop("resourceVersion", None)
        self.assertEqual(got, want)
        self.assertEqual(list(json.loads(r.stdout).keys())[:4],
                         ["nodeName", "nodeUID", "resourceVersion", "providerID"])

    def test_missing_csinode_is_a_problem_not_a_failure(self):
        sim = kubesim.KubeSim(objects=nd_objects()[:1])
        try:
            env = dict(os.environ, TAU_AGENT_NVML="off")
            r = subprocess.run([paths.AGENT_BIN, "--once", "--node-name", ND_NODE,
                                "--kubeconfig", sim.kubeconfig, "--host-root", self.host.root],
                               capture_output=True, text=True, timeout=60, env=env)
        finally:
            sim.stop()
        self.assertEqual(r.returncode, 0, r.stderr)
        got = json.loads(r.stdout)
        self.assertTrue(any("CSINode" in p and "does not exist" in p for p in got["problems"]))
        self.assertFalse(any(d["inCSINode"] for d in got["csiDrivers"]))

    def test_missing_node(self):
        r = self.once("--node-name", "no-such-node")
        self.assertEqual(r.returncode, 1)
        got = json.loads(r.stdout)
        self.assertIsNone(got["nodeName"])
        self.assertTrue(any("no-such-node" in p for p in got["problems"]))

    def test_request_timeout_bounds_an_api_that_never_answers(self):
        # A socket that accepts connections and never answers: without --request-timeout
        # each of the three requests would wait 30 s and retry.
        import socket
        lsock = socket.socket()
        lsock.bind(("127.0.0.1", 0))
        lsock.listen(16)
        try:
            with open(self.sim.kubeconfig) as f:
                kc = json.load(f)
            kc["clusters"][0]["cluster"]["server"] = "http://127.0.0.1:%d" % lsock.getsockname()[1]
            kc["clusters"][0]["cluster"].pop("certificate-authority-data", None)
            path = os.path.join(WORK, "silent-kubeconfig")
            with open(path, "w") as f:
                json.dump(kc, f)
            start = time.monotonic()
            r = subprocess.run([paths.AGENT_BIN, "--once", "-o", "json", "--node-name", ND_NODE,
                                "--kubeconfig", path, "--host-root", self.host.root,
                                "--request-timeout", "1s"], capture_output=True, text=True,
                               timeout=60, env=dict(os.environ, TAU_AGENT_NVML="off"))
            took = time.monotonic() - start
        finally:
            lsock.close()
        self.assertEqual(r.returncode, 1, r.stderr)
        self.assertLess(took, 10, "three 1 s attempts, not 30 s retries")
        got = json.loads(r.stdout)
        self.assertTrue(any("Node" in p for p in got["problems"]), got["problems"])

    def test_usage_errors_exit_2(self):
        for args, env, text in (
                ([], {}, "--node-name"),
                (["--node-name", "n"], {}, "--aggregator"),
                (["--node-name", "n", "--aggregator", "a:1"], {}, "--ca-file"),
                (["--node-name", "n", "--aggregator", "a:1", "--insecure", "--ca-file", "x"], {},
                 "exclude"),
                (["--node-name", "n", "--aggregator", "nocolon", "--insecure"], {}, "HOST:PORT"),
                (["--bogus"], {"NODE_NAME": "n"}, "unknown option"),
                (["--once", "-o", "yaml"], {"NODE_NAME": "n"}, "json"),
                (["--once"], {"NODE_NAME": "n", "TAU_INSECURE": "maybe"}, "TAU_INSECURE"),
                (["--once", "--request-timeout", "soon"], {"NODE_NAME": "n"}, "--request-timeout"),
                (["--aggregator", "a:1", "--insecure", "--request-timeout", "1s"],
                 {"NODE_NAME": "n"}, "only applies to --once")):
            env = dict({k: v for k, v in os.environ.items()
                        if k not in ("NODE_NAME", "TAU_AGGREGATOR", "TAU_INSECURE")}, **env)
            r = subprocess.run([paths.AGENT_BIN, *args], capture_output=True, text=True,
                               timeout=10, env=env)
            self.assertEqual(r.returncode, 2, (args, r.stderr))
            self.assertIn(text, r.stderr, args)


if __name__ == "__main__":
    unittest.main()
