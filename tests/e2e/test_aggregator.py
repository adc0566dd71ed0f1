"""End-to-end test of tau-aggregator's inventory side against kube-sim.

Run with the system interpreter (python3-grpcio lives there), from tests/e2e:
    TAU_AGGREGATOR_BIN=build/tau-aggregator TAU_CLI_BIN=build/tau \
    /usr/bin/python3 -m unittest -v test_aggregator

What runs: kube-sim (Nodes from tests/fixtures/kube plus generated ones, a tokens file for
TokenReview, the taugrid CRDs), the real aggregator, fake agents (tests/e2e/aggregator/agent.py)
speaking InventoryService.Report through grpcio (they can send exactly the bad, spoofed and
out-of-order reports the cases need), and in the last case the real tau-node-agent
(TAU_AGENT_BIN) with a fake host root. The pool is checked against an
independent calculation with exact Fractions. Waits are for conditions, never fixed sleeps.
"""

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import unittest

import grpc
import yaml

from harness import paths, proto, require
from harness.agents import FakeAgent, RealAgent, inventory_from_node
from harness.aggregator import (Aggregator, PoolWatcher, expected_pool, gpu_nodes,
                                make_nodes, pool_values)
from harness.aggregator import node as _node
from harness.kubesim import kube_request
from harness.procs import Proc
from harness.quantity import parse as qparse
from harness.tls import make_tls
from harness.tokens import AGENT_USER, agent_token, bare_jwt, expired_token
from harness.waits import wait_for

ROOT = paths.ROOT
pb = qpb = hpb = None
WORK = None

EXPIRED_TOKEN = expired_token()
WRONG_USER = agent_token("", tag="wrong-user")
WRONG_AUD = agent_token("", tag="wrong-aud")
NO_NODE = agent_token("", tag="no-node")


def setUpModule():
    global pb, qpb, hpb, WORK
    require.binary(paths.AGG_BIN, "TAU_AGGREGATOR_BIN")
    require.binary(paths.CLI_BIN, "TAU_CLI_BIN")
    require.binary(paths.AGENT_BIN, "TAU_AGENT_BIN")
    require.tool("openssl", "openssl", "TAU_OPENSSL")
    WORK = tempfile.mkdtemp(prefix="tau-agg-e2e-")
    pb, qpb, hpb = proto.inventory(), proto.query(), proto.health()


def tearDownModule():
    if WORK and not os.environ.get("TAU_E2E_KEEP"):
        shutil.rmtree(WORK, ignore_errors=True)


class AggregatorE2E(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.nodes = make_nodes()
        tokens = {}
        for n in cls.nodes:
            name = n["metadata"]["name"]
            tokens[agent_token(name)] = {"username": AGENT_USER, "audiences": ["taugrid"],
                                     "extra": {"authentication.kubernetes.io/node-name": [name]}}
        first = cls.nodes[0]["metadata"]["name"]
        # Each of these claims to be the agent's (so it is reviewed); the review says otherwise.
        tokens[WRONG_USER] = {"username": "system:serviceaccount:default:intruder",
                                    "audiences": ["taugrid"],
                                    "extra": {"authentication.kubernetes.io/node-name": [first]}}
        tokens[WRONG_AUD] = {"username": AGENT_USER, "audiences": ["https://kubernetes.default.svc"],
                                   "extra": {"authentication.kubernetes.io/node-name": [first]}}
        tokens[NO_NODE] = {"username": AGENT_USER, "audiences": ["taugrid"]}
        # kube-sim does not check exp; the aggregator must (it reads the JWT's exp claim).
        tokens[EXPIRED_TOKEN] = {"username": AGENT_USER, "audiences": ["taugrid"],
                                 "extra": {"authentication.kubernetes.io/node-name": [first]}}
        cls.tokens_path = os.path.join(WORK, "tokens.json")
        with open(cls.tokens_path, "w") as f:
            json.dump(tokens, f)
        seed = os.path.join(WORK, "seed.json")
        with open(seed, "w") as f:
            json.dump({"kind": "List", "items": cls.nodes}, f)
        cls.kubeconfig = os.path.join(WORK, "kubeconfig")
        cls.sim = Proc([paths.SIM_PYTHON, paths.KUBE_SIM, "--listen", "127.0.0.1:0", "--kubeconfig-out",
                        cls.kubeconfig, "--tokens", cls.tokens_path, "--seed", seed,
                        "--crds", os.path.join(ROOT, "charts/taugrid/crds")], "kube-sim", WORK)
        cls.sim_port = int(cls.sim.wait_line("ready ").split()[1])
        with open(cls.kubeconfig) as f:
            cls.admin_token = json.load(f)["users"][0]["user"]["token"]
        cls.agg = Aggregator(cls.kubeconfig, WORK)
        cls.agents = {}
        # The Node watch has delivered every Node before any case starts.
        wait_for(lambda: len(cls.agg.nodes()) == len(cls.nodes), what="every Node known")

    @classmethod
    def tearDownClass(cls):
        for a in cls.agents.values():
            if not a.done:
                a.cancel()
        rc = cls.agg.stop()
        cls.sim.stop()
        assert rc == 0, "aggregator exit code %d after SIGTERM" % rc

    # -- helpers --

    def kube(self, method, path, body=None):
        return kube_request(self.sim_port, self.admin_token, method, path, body)

    def start_agent(self, node, agg=None):
        agg = agg or self.agg
        name = node["metadata"]["name"]
        a = FakeAgent(pb, agg.channel, agent_token(name), inventory_from_node(pb, node))
        ack = a.wait_ack(1)
        self.assertEqual(ack.status, pb.ACK_STATUS_OK, ack.message)
        self.assertGreater(ack.heartbeat_interval_seconds, 0)
        return a

    def current_nodes(self):
        return [n for n in self.nodes if not n.get("_deleted")]

    def assert_pool_matches(self, p, selector=None):
        exp = expected_pool(self.current_nodes(), selector)
        self.assertEqual(pool_values(p), {k: {"nodes": len(v["nodes"]), "resources": v["resources"]}
                                          for k, v in exp.items()})
        for cls, v in exp.items():
            self.assertEqual([n.name for n in self.agg.nodes(gpu_class=cls, counted_only=True)],
                             v["nodes"])

    # -- cases, in order --

    def test_01_refused_streams_change_nothing(self):
        first = self.nodes[0]
        inv = inventory_from_node(pb, first)
        other = inventory_from_node(pb, self.nodes[1])
        cases = [
            (None, inv, grpc.StatusCode.UNAUTHENTICATED, "missing bearer token"),
            # Not a JWT: refused before any TokenReview.
            ("tok-unknown", inv, grpc.StatusCode.UNAUTHENTICATED, "not a JWT"),
            (agent_token("", tag="unknown"), inv, grpc.StatusCode.UNAUTHENTICATED, "rejected"),
            (WRONG_AUD, inv, grpc.StatusCode.UNAUTHENTICATED, "audience"),
            (EXPIRED_TOKEN, inv, grpc.StatusCode.UNAUTHENTICATED, "expired"),
            (WRONG_USER, inv, grpc.StatusCode.PERMISSION_DENIED, "not the agent service account"),
            # A JWT whose own claims name another user: refused without a TokenReview.
            (bare_jwt({"sub": "system:serviceaccount:default:intruder"}), inv,
             grpc.StatusCode.PERMISSION_DENIED, "no TokenReview made"),
            (NO_NODE, inv, grpc.StatusCode.PERMISSION_DENIED, "not bound to a node"),
            (agent_token(first["metadata"]["name"]), other, grpc.StatusCode.PERMISSION_DENIED,
             "may not report for node"),
        ]
        for token, report, code, text in cases:
            with self.subTest(token=token):
                a = FakeAgent(pb, self.agg.channel, token, report)
                err = a.wait_done()
                self.assertIsNotNone(err, "stream was not refused")
                self.assertEqual(err.code(), code, err.details())
                self.assertIn(text, err.details())
        p = self.agg.pool()
        self.assertFalse(p.established)
        self.assertTrue(p.valid)
        self.assertEqual(len(p.flavors), 0)
        self.assertEqual(sorted(p.missing_nodes),
                         sorted(n["metadata"]["name"] for n in gpu_nodes(self.nodes)))
        for n in self.agg.nodes():
            self.assertFalse(n.connected, n.name)
            self.assertEqual(n.last_heard_unix_ms, 0, n.name)
        _, metrics = self.agg.http("/metrics")
        self.assertIn('tau_aggregator_auth_failures_total{code="UNAUTHENTICATED"} 5', metrics)
        self.assertIn('tau_aggregator_tokens_refused_unreviewed_total{reason="not_jwt"} 1', metrics)
        self.assertIn('tau_aggregator_tokens_refused_unreviewed_total{reason="claims"} 1', metrics)
        self.assertIn('tau_aggregator_auth_failures_total{code="PERMISSION_DENIED"} 4', metrics)

    def test_02_invalid_report_rejected(self):
        node = self.nodes[0]
        name = node["metadata"]["name"]
        a = FakeAgent(pb, self.agg.channel, agent_token(name))
        for mutate, text in [
            (lambda i: i.allocatable.add(name="cpu2", quantity="12xyz"), "cpu2"),
            (lambda i: i.allocatable.add(name="bad name!", quantity="1"), "resource name"),
            (lambda i: i.labels.__setitem__("tau.azure.com/gpu-class", "other"), "gpu_class"),
            (lambda i: [i.problems.append("p") for _ in range(100)], "problems"),
        ]:
            inv = inventory_from_node(pb, node)
            mutate(inv)
            seq = a.send_inventory(inv)
            ack = a.wait_ack(seq)
            self.assertEqual(ack.status, pb.ACK_STATUS_REJECTED)
            self.assertIn(text, ack.message)
        # A heartbeat before any accepted inventory needs a full one.
        ack = a.wait_ack(a.heartbeat())
        self.assertEqual(ack.status, pb.ACK_STATUS_RESEND_FULL)
        a.cancel()
        self.assertEqual(len(self.agg.pool().flavors), 0)
        st = self.agg.unary("GetNode", qpb.GetNodeRequest(name=name), qpb.GetNodeResponse)
        self.assertFalse(st.HasField("inventory"))

    def agg_log(self):
        with open(self.agg.proc.log_path) as f:
            return f.read()

    def test_03_gate_opens_when_every_gpu_node_reported(self):
        watcher = PoolWatcher(self.agg.channel, self.agg.md)
        gpus = gpu_nodes(self.nodes)
        for i, node in enumerate(gpus):
            self.agents[node["metadata"]["name"]] = self.start_agent(node)
            if i < len(gpus) - 1:
                p = self.agg.pool()
                self.assertFalse(p.established)
                self.assertEqual(sorted(p.missing_nodes),
                                 sorted(n["metadata"]["name"] for n in gpus[i + 1:]))
        p = wait_for(lambda: (lambda q: q if q.established else None)(self.agg.pool()),
                     what="established pool")
        self.assertEqual(list(p.missing_nodes), [])
        self.assert_pool_matches(p)
        # The gate opened on the last report, not on the timer: the log says so all the same.
        wait_for(lambda: 'msg="pool established" missing_nodes=0' in self.agg_log(),
                 what="the log line saying the pool is established")
        pushed = watcher.wait(lambda q: q.established)
        self.assertEqual(pool_values(pushed), pool_values(p))
        gens = [q.generation for q in watcher.pools]
        self.assertEqual(gens, sorted(set(gens)), "generations must grow")
        watcher.cancel()
        # Duplicates and heartbeats change nothing.
        a = self.agents[gpus[0]["metadata"]["name"]]
        ack = a.wait_ack(a.heartbeat())
        self.assertEqual(ack.status, pb.ACK_STATUS_OK)
        ack = a.wait_ack(a.heartbeat(digest="other"))
        self.assertEqual(ack.status, pb.ACK_STATUS_RESEND_FULL)
        self.assertEqual(self.agg.pool().generation, p.generation)

    def test_04_queries(self):
        names = sorted(n["metadata"]["name"] for n in self.nodes)
        listed = self.agg.nodes()
        self.assertEqual([n.name for n in listed], names)
        by = {n.name: n for n in listed}
        self.assertTrue(by["gpu-ib-2"].counted)
        self.assertTrue(by["gpu-ib-2"].connected)
        self.assertFalse(by["gpu-notready"].counted)
        self.assertTrue(any("P1.ready" in r for r in by["gpu-notready"].reasons))
        self.assertFalse(by["cpu-only-1"].counted)
        ib = self.agg.nodes(gpu_class="h100-ib")
        self.assertEqual(sorted(n.name for n in ib),
                         sorted(n["metadata"]["name"] for n in self.nodes
                                if n["metadata"]["labels"].get("tau.azure.com/gpu-class") == "h100-ib"))
        counted = self.agg.nodes(counted_only=True)
        self.assertTrue(all(n.counted for n in counted))
        got = self.agg.unary("GetNode", qpb.GetNodeRequest(name="gpu-ib-2"), qpb.GetNodeResponse)
        self.assertEqual(got.inventory.node_name, "gpu-ib-2")
        self.assertEqual(got.inventory.gpu_class, "h100-ib")
        with self.assertRaises(grpc.RpcError) as cm:
            self.agg.unary("GetNode", qpb.GetNodeRequest(name="no-such-node"), qpb.GetNodeResponse)
        self.assertEqual(cm.exception.code(), grpc.StatusCode.NOT_FOUND)
        ex = self.agg.unary("ExplainNode", qpb.ExplainNodeRequest(name="aks-nca100-41729305-vmss000002"),
                            qpb.ExplainNodeResponse)
        self.assertFalse(ex.counted)
        rules = {r.name: r.pass_ if hasattr(r, "pass_") else getattr(r, "pass") for r in ex.rules}
        self.assertFalse(rules["P1.schedulable"])
        self.assertTrue(rules["P1.linux"] and rules["P1.gpu-class"] and rules["agent.reported"])
        ex = self.agg.unary("ExplainNode", qpb.ExplainNodeRequest(name="gpu-ib-2"), qpb.ExplainNodeResponse)
        self.assertTrue(ex.counted)
        self.assertEqual(ex.flavor, "h100-ib")
        with self.assertRaises(grpc.RpcError) as cm:
            self.agg.unary("ExplainNode", qpb.ExplainNodeRequest(name="nope"), qpb.ExplainNodeResponse)
        self.assertEqual(cm.exception.code(), grpc.StatusCode.NOT_FOUND)
        health = self.agg.channel.unary_unary("/grpc.health.v1.Health/Check",
                                              request_serializer=lambda m: m.SerializeToString(),
                                              response_deserializer=hpb.HealthCheckResponse.FromString)
        self.assertEqual(health(hpb.HealthCheckRequest(), timeout=10).status,
                         hpb.HealthCheckResponse.SERVING)

    def unchanged_count(self):
        _, m = self.agg.http("/metrics")
        for line in m.splitlines():
            if line.startswith("tau_aggregator_reports_unchanged_total "):
                return int(line.split()[1])
        raise AssertionError("no tau_aggregator_reports_unchanged_total in /metrics")

    def agent_reported_detail(self, name):
        ex = self.agg.unary("ExplainNode", qpb.ExplainNodeRequest(name=name),
                            qpb.ExplainNodeResponse)
        return next(r.detail for r in ex.rules if r.name == "agent.reported")

    def test_04b_unchanged_inventory_is_recognised_by_its_bytes_not_its_digest(self):
        node = next(n for n in gpu_nodes(self.nodes) if n["metadata"]["name"] in self.agents)
        name = node["metadata"]["name"]
        a = self.agents[name]
        get = lambda: self.agg.unary("GetNode", qpb.GetNodeRequest(name=name),  # noqa: E731
                                     qpb.GetNodeResponse)
        inv = inventory_from_node(pb, node)
        inv.digest = "d-first"
        self.assertEqual(a.wait_ack(a.send_inventory(inv)).status, pb.ACK_STATUS_OK)
        before = self.unchanged_count()
        # The same inventory with a new digest and time: recognised, and GetNode shows what
        # the agent sent last (digest and time included); a heartbeat with it is taken.
        inv.digest = "d-second"
        inv.observed_unix_ms += 1000
        self.assertEqual(a.wait_ack(a.send_inventory(inv)).status, pb.ACK_STATUS_OK)
        self.assertEqual(self.unchanged_count(), before + 1)
        got = get()
        self.assertEqual(got.inventory.digest, "d-second")
        self.assertEqual(got.inventory.observed_unix_ms, inv.observed_unix_ms)
        self.assertEqual(dict(got.inventory.labels), dict(inv.labels))
        self.assertEqual(a.wait_ack(a.heartbeat()).status, pb.ACK_STATUS_OK)
        # Changes under the same digest are not taken for unchanged: a new label is kept (and
        # GetNode has it), a changed allocatable shows as a difference from the Node.
        inv.labels["tau.azure.com/e2e-changed"] = "yes"
        self.assertEqual(a.wait_ack(a.send_inventory(inv)).status, pb.ACK_STATUS_OK)
        self.assertEqual(self.unchanged_count(), before + 1)
        self.assertEqual(get().inventory.labels["tau.azure.com/e2e-changed"], "yes")
        cpu = next(r for r in inv.allocatable if r.name == "cpu")
        sent = cpu.quantity
        cpu.quantity = "1"
        self.assertEqual(a.wait_ack(a.send_inventory(inv)).status, pb.ACK_STATUS_OK)
        self.assertEqual(self.unchanged_count(), before + 1)
        self.assertIn("differs from the Node object", self.agent_reported_detail(name))
        # An invalid change under the same digest is refused, not waved through as unchanged.
        cpu.quantity = "12xyz"
        ack = a.wait_ack(a.send_inventory(inv))
        self.assertEqual(ack.status, pb.ACK_STATUS_REJECTED)
        self.assertIn("cpu", ack.message)
        # Back to what the Node says: stored in full again, the difference gone; and that one
        # repeated is recognised again.
        cpu.quantity = sent
        del inv.labels["tau.azure.com/e2e-changed"]
        self.assertEqual(a.wait_ack(a.send_inventory(inv)).status, pb.ACK_STATUS_OK)
        self.assertEqual(self.unchanged_count(), before + 1)
        self.assertNotIn("differs from the Node object", self.agent_reported_detail(name))
        self.assertNotIn("tau.azure.com/e2e-changed", get().inventory.labels)
        inv.digest = "d-third"
        self.assertEqual(a.wait_ack(a.send_inventory(inv)).status, pb.ACK_STATUS_OK)
        self.assertEqual(self.unchanged_count(), before + 2)
        self.assertEqual(get().inventory.digest, "d-third")

    def test_05_cli(self):
        run = lambda *a: subprocess.run([paths.CLI_BIN, "--kubeconfig", self.kubeconfig, "inventory", *a, "--aggregator", self.agg.addr],  # noqa: E731
                                        capture_output=True, text=True, timeout=30)
        r = run("pool", "-o", "json")
        self.assertEqual(r.returncode, 0, r.stderr)
        doc = json.loads(r.stdout)
        self.assertEqual(list(doc.keys()),
                         ["established", "valid", "invalidReason", "missingNodes", "missingCount",
                          "flavors", "freeNow"])
        self.assertEqual(doc["missingCount"], 0)
        self.assertTrue(doc["established"])
        self.assertTrue(doc["valid"])
        self.assertEqual(doc["invalidReason"], "")
        self.assertEqual(doc["missingNodes"], [])
        exp = expected_pool(self.current_nodes())
        self.assertEqual({f["name"]: (f["nodes"], {k: qparse(v) for k, v in f["resources"].items()})
                          for f in doc["flavors"]},
                         {k: (len(v["nodes"]), v["resources"]) for k, v in exp.items()})
        # -o yaml is the same document as -o json, read back by a YAML 1.1 reader (PyYAML).
        node = self.current_nodes()[0]["metadata"]["name"]
        for args in (["pool"], ["nodes"], ["explain", node]):
            js, ym = run(*args, "-o", "json"), run(*args, "-o", "yaml")
            self.assertEqual((ym.returncode, js.returncode), (0, 0), ym.stderr + js.stderr)
            docs = [yaml.safe_load(ym.stdout), json.loads(js.stdout)]
            for d in docs:  # when each node was last heard moves between the two calls
                for n in d if isinstance(d, list) else []:
                    n.pop("lastHeardUnixMs")
            self.assertEqual(docs[0], docs[1], args)
        r = run("pool")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertTrue(r.stdout.startswith("FLAVOR"), r.stdout)
        self.assertIn("Established: yes", r.stdout)
        r = run("nodes", "-o", "json")
        self.assertEqual(r.returncode, 0, r.stderr)
        nodes = {n["name"]: n for n in json.loads(r.stdout)}
        self.assertEqual(set(nodes["gpu-ib-2"]), {"name", "gpuClass", "counted", "reasons", "connected",
                                                  "stale", "allocatable", "draResources",
                                                  "lastHeardUnixMs", "health", "gpusThroughDra",
                                                  "gpusHealthy", "gpusInUse", "gpusFree",
                                                  "problems"})
        self.assertEqual(nodes["gpu-ib-2"]["allocatable"]["nvidia.com/gpu"], "8")
        # No DRA in this cluster: nothing of the pool or of a node comes through it.
        self.assertEqual(nodes["gpu-ib-2"]["draResources"], {})
        self.assertFalse(nodes["gpu-ib-2"]["gpusThroughDra"])
        self.assertEqual([f["draResources"] for f in doc["flavors"]], [{}] * len(doc["flavors"]))
        r = run("nodes")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stdout.splitlines()[0].split(),
                         ["NAME", "GPU-CLASS", "COUNTED", "CONNECTED", "STALE", "GPUS", "HEALTH",
                          "FREE", "REASON"])
        r = run("explain", "gpu-notready", "-o", "json")
        self.assertEqual(r.returncode, 1, r.stderr)
        doc = json.loads(r.stdout)
        self.assertFalse(doc["counted"])
        self.assertIn({"name": "P1.ready", "pass": False, "detail": "Ready condition is not True"},
                      doc["rules"])
        r = run("explain", "gpu-ib-2")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("counts in flavor h100-ib", r.stdout)
        self.assertEqual(run("explain", "nope").returncode, 2)
        self.assertEqual(run("bogus").returncode, 2)

    def test_06_metrics_and_readyz(self):
        status, body = self.agg.http("/readyz")
        self.assertEqual(status, 200, body)
        self.assertEqual(self.agg.http("/healthz")[0], 200)
        _, m = self.agg.http("/metrics")
        n_gpu = len(gpu_nodes(self.nodes))
        self.assertIn("tau_aggregator_agents_connected %d\n" % n_gpu, m)
        self.assertIn("tau_aggregator_pool_established 1\n", m)
        self.assertIn('tau_aggregator_pool_allocatable{flavor="h100-ib",resource="nvidia.com/gpu"} 20\n', m)
        self.assertIn('tau_aggregator_reports_total{kind="inventory"}', m)
        self.assertIn("# TYPE tau_aggregator_nodes_stale gauge", m)

    def test_07_stopped_agent_stays_counted_as_stale(self):
        before = self.agg.pool()
        name = "gpu-ib-3"
        err = self.agents.pop(name).stop()
        self.assertIsNone(err, err)
        n = wait_for(lambda: [x for x in self.agg.nodes() if x.name == name and x.stale],
                     what="stale node")[0]
        self.assertTrue(n.counted)
        self.assertFalse(n.connected)
        after = self.agg.pool()
        self.assertEqual(pool_values(after), pool_values(before))
        self.assertEqual(after.generation, before.generation)
        _, m = self.agg.http("/metrics")
        self.assertIn("tau_aggregator_nodes_stale 1\n", m)

    def test_08_deleted_node_leaves_the_pool(self):
        name = "gpu-ib-2"
        status, _ = self.kube("DELETE", "/api/v1/nodes/" + name)
        self.assertEqual(status, 200)
        for n in self.nodes:
            if n["metadata"]["name"] == name:
                n["_deleted"] = True
        wait_for(lambda: name not in [n.name for n in self.agg.nodes(counted_only=True)],
                 what="the deleted node no longer counted")
        p = self.agg.pool()
        self.assert_pool_matches(p)
        self.assertNotIn(name, [n.name for n in self.agg.nodes()])
        self.agents.pop(name).cancel()

    def test_09_taucluster_selector(self):
        cluster = {"apiVersion": "tau.azure.com/v1alpha1", "kind": "TauCluster",
                   "metadata": {"name": "cluster"},
                   "spec": {"nodes": {"selector": {"kubernetes.azure.com/nodepool-type": "FlexNodes"}}}}
        status, body = self.kube("POST", "/apis/tau.azure.com/v1alpha1/clusters", cluster)
        self.assertIn(status, (200, 201), body)
        sel = {"kubernetes.azure.com/nodepool-type": "FlexNodes"}
        p = wait_for(lambda: (lambda q: q if set(f.name for f in q.flavors) == {"h100-flex"} else None)(
            self.agg.pool()), what="pool narrowed by the TauCluster selector")
        self.assert_pool_matches(p, selector=sel)
        status, _ = self.kube("DELETE", "/apis/tau.azure.com/v1alpha1/clusters/cluster")
        self.assertEqual(status, 200)
        p = wait_for(lambda: (lambda q: q if len(q.flavors) > 1 else None)(self.agg.pool()),
                     what="pool back to every node")
        self.assert_pool_matches(p)

    def test_10_restart_never_publishes_a_smaller_pool(self):
        full = pool_values(self.agg.pool())
        for a in self.agents.values():
            a.cancel()
        self.agents.clear()
        self.assertEqual(self.agg.stop(), 0)
        type(self).agg = agg = Aggregator(self.kubeconfig, WORK)
        watcher = PoolWatcher(agg.channel, agg.md)
        observed = [agg.pool()]
        live = [n for n in gpu_nodes(self.current_nodes())]
        for node in live:
            self.agents[node["metadata"]["name"]] = self.start_agent(node, agg)
            observed.append(agg.pool())
        final = wait_for(lambda: (lambda q: q if q.established else None)(agg.pool()),
                         what="established after restart")
        watcher.wait(lambda q: q.established)
        observed += watcher.pools
        watcher.cancel()
        for p in observed:
            # Partial pools may be shown, but only ever marked established=false.
            if p.established:
                self.assertEqual(pool_values(p), full, "an established pool differs from the full one")
        self.assertFalse(observed[0].established)
        self.assertEqual(pool_values(final), full)
        status, _ = agg.http("/readyz")
        self.assertEqual(status, 200)

    def test_11_tls_and_initial_sync_timeout(self):
        openssl = require.tool("openssl", "openssl", "TAU_OPENSSL")
        tls = make_tls(WORK, openssl)
        ca = tls["ca"]
        # Only one agent reports: the gate opens on the (short) timeout, naming the others.
        agg = Aggregator(self.kubeconfig, WORK, sync_timeout="1s", ca=ca,
                         extra=("--tls-cert", tls["cert"], "--tls-key", tls["key"]))
        try:
            live = gpu_nodes(self.current_nodes())
            a = self.start_agent(live[0], agg)
            p = wait_for(lambda: (lambda q: q if q.established else None)(agg.pool()),
                         what="gate opened by the timeout")
            self.assertEqual(sorted(p.missing_nodes), sorted(n["metadata"]["name"] for n in live[1:]))
            # Silent nodes count with their Node's allocatable: the same pool as before.
            self.assert_pool_matches(p)
            # By IP (the certificate names 127.0.0.1): no DNS resolver in the picture.
            r = subprocess.run([paths.CLI_BIN, "--kubeconfig", self.kubeconfig, "inventory", "pool", "-o", "json", "--aggregator",
                                agg.addr, "--ca-file", ca],
                               capture_output=True, text=True, timeout=30)
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertEqual(sorted(json.loads(r.stdout)["missingNodes"]), sorted(p.missing_nodes))
            r = subprocess.run([paths.CLI_BIN, "--kubeconfig", self.kubeconfig, "inventory", "pool", "--aggregator", agg.addr,
                                "--timeout", "3"], capture_output=True, text=True, timeout=30)
            self.assertEqual(r.returncode, 1, "plaintext to a TLS port must fail")
            a.cancel()
        finally:
            self.assertEqual(agg.stop(), 0)

    def test_12_real_agent_replaces_the_fake_one(self):
        name = "gpu-ib-3"
        fake = self.agents.pop(name)
        before = pool_values(self.agg.pool())
        root = os.path.join(WORK, "host-root")
        os.makedirs(os.path.join(root, "dev"), exist_ok=True)
        token = os.path.join(WORK, "agent-token")
        with open(token, "w") as f:
            f.write(agent_token(name))
        agent = Proc([paths.AGENT_BIN, "--node-name", name, "--aggregator", self.agg.addr,
                      "--kubeconfig", self.kubeconfig, "--host-root", root, "--token-file", token,
                      "--insecure"], "agent", WORK)
        try:
            # The newest stream for a node wins: the fake agent's stream is ended.
            err = fake.wait_done(30)
            self.assertEqual(err.code(), grpc.StatusCode.ABORTED, err)
            got = wait_for(lambda: (lambda g: g if g.status.connected and g.inventory.agent_version
                                    and g.inventory.agent_version != "fake-0" else None)(
                self.agg.unary("GetNode", qpb.GetNodeRequest(name=name), qpb.GetNodeResponse)),
                what="inventory from the real agent")
            self.assertEqual(got.inventory.node_name, name)
            self.assertEqual(pool_values(self.agg.pool()), before)
        finally:
            self.assertEqual(agent.stop(), 0)
        n = wait_for(lambda: [x for x in self.agg.nodes() if x.name == name and x.stale],
                     what="stale after the agent stopped")[0]
        self.assertTrue(n.counted)

    def test_13_leader_election(self):
        extra = ("--leader-elect", "--system-namespace", "kube-system")
        a1 = Aggregator(self.kubeconfig, WORK, sync_timeout="1s", extra=extra)
        a2 = Aggregator(self.kubeconfig, WORK, sync_timeout="1s", extra=extra)
        leader_of = lambda a: "tau_aggregator_leader 1\n" in a.http("/metrics")[1]  # noqa: E731
        try:
            first = wait_for(lambda: [a for a in (a1, a2) if leader_of(a)], what="a leader")
            self.assertEqual(len(first), 1)
            leader, follower = first[0], (a2 if first[0] is a1 else a1)
            # Only the leader is Ready (a Service routes agents and queries to it alone).
            wait_for(lambda: leader.http("/readyz")[0] == 200, what="leader ready")
            self.assertEqual(follower.http("/readyz")[0], 503, follower.http("/readyz")[1])
            self.assertIn("follower", follower.http("/readyz")[1])
            # The follower keeps its own inventory from its own Node watch (once it has listed).
            want = len(self.current_nodes())
            wait_for(lambda: len(follower.nodes()) == want, what="the follower knows every node")
            # The leader hands the Lease back on SIGTERM: the follower takes over.
            self.assertEqual(leader.stop(), 0)
            wait_for(lambda: leader_of(follower), timeout=60, what="follower takes over")
        finally:
            for a in (a1, a2):
                if a.proc.p.poll() is None:
                    self.assertEqual(a.stop(), 0)


def flavor_of(p, name):
    for f in p.flavors:
        if f.name == name:
            return f
    return None


class TrustE2E(unittest.TestCase):
    """Issue 12: the pool follows the API, and bad input fails closed (real agents)."""

    @classmethod
    def setUpClass(cls):
        if not os.access(paths.AGENT_BIN, os.X_OK):
            raise AssertionError("tau-node-agent not built (%s)" % paths.AGENT_BIN)
        cls.nodes = [_node("trust-a", "t4", {"cpu": "8", "nvidia.com/gpu": "1"}),
                     _node("trust-b", "t4", {"cpu": "8", "nvidia.com/gpu": "1"}),
                     _node("trust-c", "t4", {"cpu": "8", "nvidia.com/gpu": "1"})]
        tokens = {agent_token(n): {"username": AGENT_USER, "audiences": ["taugrid"],
                               "extra": {"authentication.kubernetes.io/node-name": [n]}}
                  for n in ["trust-a", "trust-b", "trust-c", "absurd-0", "absurd-1", "sane-0",
                            "sane-1"]}
        d = os.path.join(WORK, "trust")
        os.makedirs(d, exist_ok=True)
        tokens_path = os.path.join(d, "tokens.json")
        with open(tokens_path, "w") as f:
            json.dump(tokens, f)
        seed = os.path.join(d, "seed.json")
        with open(seed, "w") as f:
            json.dump({"kind": "List", "items": cls.nodes}, f)
        cls.kubeconfig = os.path.join(d, "kubeconfig")
        cls.sim = Proc([paths.SIM_PYTHON, paths.KUBE_SIM, "--listen", "127.0.0.1:0", "--kubeconfig-out",
                        cls.kubeconfig, "--tokens", tokens_path, "--seed", seed,
                        "--crds", os.path.join(ROOT, "charts/taugrid/crds")], "kube-sim-trust", WORK)
        cls.sim_port = int(cls.sim.wait_line("ready ").split()[1])
        with open(cls.kubeconfig) as f:
            cls.admin_token = json.load(f)["users"][0]["user"]["token"]
        cls.agg = Aggregator(cls.kubeconfig, WORK)
        cls.agents = {n["metadata"]["name"]: RealAgent(WORK, n["metadata"]["name"], cls.agg.addr,
                                                       cls.kubeconfig) for n in cls.nodes}
        # Established with no missing node: each real agent reported (not the sync gate's
        # timeout, which would count the nodes from their Node objects with every agent refused).
        wait_for(lambda: (lambda p: p.established and p.missing_count == 0
                          and flavor_of(p, "t4") is not None
                          and flavor_of(p, "t4").node_count == 3)(cls.agg.pool()),
                 timeout=60, what="every real agent reported")

    @classmethod
    def tearDownClass(cls):
        for a in cls.agents.values():
            a.stop()
        rc = cls.agg.stop()
        cls.sim.stop()
        assert rc == 0, "aggregator exit code %d after SIGTERM" % rc

    def kube(self, method, path, body=None, ctype="application/json"):
        status, doc = kube_request(self.sim_port, self.admin_token, method, path, body, ctype)
        self.assertLess(status, 300, doc)
        return doc

    def patch_node(self, name, body, sub=""):
        return self.kube("PATCH", "/api/v1/nodes/" + name + sub, body,
                         "application/merge-patch+json")

    def explain(self, name):
        ex = self.agg.unary("ExplainNode", qpb.ExplainNodeRequest(name=name), qpb.ExplainNodeResponse)
        return ex, {r.name: (getattr(r, "pass"), r.detail) for r in ex.rules}

    def t4_nodes(self):
        f = flavor_of(self.agg.pool(), "t4")
        return f.node_count if f else 0

    def kill_agent_and_wait_stale(self, name):
        # connected first, so "closed" below is the kill's doing, not an agent never let in
        self.assertTrue([x for x in self.agg.nodes() if x.name == name and x.connected],
                        "%s's agent is not connected before the kill" % name)
        self.agents[name].kill()
        wait_for(lambda: [x for x in self.agg.nodes() if x.name == name and not x.connected],
                 what="%s's stream closed" % name)
        # Still counted: the Node is Ready and schedulable, and only its agent is gone.
        ex, _ = self.explain(name)
        self.assertTrue(ex.counted)

    def test_01_agent_killed_then_node_not_ready_leaves_the_pool(self):
        name = "trust-a"
        before = self.t4_nodes()
        self.kill_agent_and_wait_stale(name)
        self.patch_node(name, {"status": {"conditions": [{"type": "Ready", "status": "Unknown",
                                                          "reason": "NodeStatusUnknown"}]}},
                        "/status")
        wait_for(lambda: self.t4_nodes() == before - 1, what="trust-a out of the pool")
        ex, rules = self.explain(name)
        self.assertFalse(ex.counted)
        self.assertEqual(rules["P1.ready"], (False, "Ready condition is not True"))
        # The dead agent's last report still says Ready: reported, never trusted.
        self.assertTrue(rules["agent.reported"][0])
        self.assertIn("differs from the Node object", rules["agent.reported"][1])
        self.assertIn("agent reports true/true/false, the Node says false/true/false",
                      rules["agent.reported"][1])
        _, m = self.agg.http("/metrics")
        self.assertIn("tau_aggregator_nodes_agent_mismatch 1\n", m)
        with open(self.agg.proc.log_path) as f:
            self.assertIn("agent report differs from the Node object", f.read())

    def test_02_agent_killed_then_node_cordoned_leaves_the_pool(self):
        name = "trust-b"
        before = self.t4_nodes()
        self.kill_agent_and_wait_stale(name)
        self.patch_node(name, {"spec": {"unschedulable": True}})
        wait_for(lambda: self.t4_nodes() == before - 1, what="trust-b out of the pool")
        ex, rules = self.explain(name)
        self.assertFalse(ex.counted)
        self.assertEqual(rules["P1.schedulable"], (False, "cordoned (spec.unschedulable)"))
        # Uncordoned, it counts again, still without its agent.
        self.patch_node(name, {"spec": {"unschedulable": False}})
        wait_for(lambda: self.t4_nodes() == before, what="trust-b back in the pool")

    def test_03_unusable_selector_counts_nothing_and_says_why(self):
        counted = self.t4_nodes()
        self.assertGreater(counted, 0)
        # The CRD accepts any string up to 63 characters; a label value cannot hold a space.
        cluster = {"apiVersion": "tau.azure.com/v1alpha1", "kind": "TauCluster",
                   "metadata": {"name": "cluster"},
                   "spec": {"nodes": {"selector": {"tau.azure.com/pool": "not a value"}}}}
        self.kube("POST", "/apis/tau.azure.com/v1alpha1/clusters", cluster)
        p = wait_for(lambda: (lambda q: q if not q.valid else None)(self.agg.pool()),
                     what="pool marked invalid")
        self.assertEqual(list(p.flavors), [], "an unusable selector must count nothing")
        self.assertIn("spec.nodes.selector", p.invalid_reason)
        self.assertIn("not a value", p.invalid_reason)
        ex, rules = self.explain("trust-c")
        self.assertFalse(ex.counted)
        self.assertFalse(rules["P1.selector"][0])
        self.assertIn("the TauCluster node selector is unusable, so no node counts",
                      rules["P1.selector"][1])
        _, m = self.agg.http("/metrics")
        self.assertIn("tau_aggregator_pool_valid 0\n", m)
        self.assertIn("tau_aggregator_nodes_counted 0\n", m)
        with open(self.agg.proc.log_path) as f:
            self.assertIn("TauCluster node selector unusable", f.read())
        r = subprocess.run([paths.CLI_BIN, "--kubeconfig", self.kubeconfig, "inventory", "pool", "-o", "json", "--aggregator",
                            self.agg.addr], capture_output=True, text=True, timeout=30)
        self.assertEqual(r.returncode, 0, r.stderr)
        doc = json.loads(r.stdout)
        self.assertFalse(doc["valid"])
        self.assertEqual(doc["invalidReason"], p.invalid_reason)
        self.assertEqual(doc["flavors"], [])
        # Fixed (a usable selector every node matches): valid again, the same nodes count.
        self.kube("PATCH", "/apis/tau.azure.com/v1alpha1/clusters/cluster",
                  {"spec": {"nodes": {"selector": {"tau.azure.com/pool": None,
                                                   "kubernetes.io/os": "linux"}}}},
                  "application/merge-patch+json")
        p = wait_for(lambda: (lambda q: q if q.valid and flavor_of(q, "t4") else None)(
            self.agg.pool()), what="pool valid again")
        self.assertEqual(p.invalid_reason, "")
        self.assertEqual(self.t4_nodes(), counted)
        self.kube("DELETE", "/apis/tau.azure.com/v1alpha1/clusters/cluster")

    def add_node_with_agent(self, node):
        """Create the Node, wait until the aggregator knows it, then start its real agent."""
        name = node["metadata"]["name"]
        self.kube("POST", "/api/v1/nodes", node)
        wait_for(lambda: [n for n in self.agg.nodes() if n.name == name], what=name + " known")
        self.agents[name] = RealAgent(WORK, name, self.agg.addr, self.kubeconfig)
        wait_for(lambda: self.agg.unary("GetNode", qpb.GetNodeRequest(name=name),
                                        qpb.GetNodeResponse).HasField("inventory"),
                 what=name + "'s agent reported")

    def test_04_absurd_node_next_to_a_sane_one_in_both_orders(self):
        # Class x5: the absurd node arrives first; class x6: the sane one does.
        cases = [("x5", "absurd-0", "1e999", "sane-0", True),
                 ("x6", "absurd-1", "100E", "sane-1", False)]
        for cls, bad, qty, good, bad_first in cases:
            nodes = [_node(bad, cls, {"cpu": "8", "nvidia.com/gpu": qty}),
                     _node(good, cls, {"cpu": "8", "nvidia.com/gpu": "8"})]
            for n in (nodes if bad_first else nodes[::-1]):
                self.add_node_with_agent(n)
        for cls, bad, qty, good, _ in cases:
            with self.subTest(cls=cls):
                f = wait_for(lambda: flavor_of(self.agg.pool(), cls), what="flavor " + cls)
                self.assertEqual(f.node_count, 1)
                self.assertEqual([n.name for n in self.agg.nodes(gpu_class=cls, counted_only=True)],
                                 [good])
                self.assertEqual(dict(f.resources), {"cpu": "8", "nvidia.com/gpu": "8"})
                ex, rules = self.explain(bad)
                self.assertFalse(ex.counted)
                self.assertEqual(rules["P2.kueue-int64"],
                                 (False, "allocatable nvidia.com/gpu %s is more than Kueue can "
                                  "count (int64 units)" % qty))
                # Not refused: the absurd node's agent report was accepted like any other.
                self.assertTrue(rules["agent.reported"][0])
                ex, _ = self.explain(good)
                self.assertTrue(ex.counted)
        _, m = self.agg.http("/metrics")
        self.assertIn('tau_aggregator_pool_allocatable{flavor="x5",resource="nvidia.com/gpu"} 8\n', m)
        self.assertIn('tau_aggregator_pool_allocatable{flavor="x6",resource="nvidia.com/gpu"} 8\n', m)
        self.assertIn("tau_aggregator_reports_rejected_total 0\n", m)


    def test_05_pool_waits_for_the_taucluster_list(self):
        # Without the TauCluster CRD the selector can never be known: nothing may count as an
        # established pool, and the log says why once the sync timeout has passed.
        d = os.path.join(WORK, "no-crd")
        os.makedirs(d, exist_ok=True)
        seed = os.path.join(d, "seed.json")
        with open(seed, "w") as f:
            json.dump({"kind": "List", "items": [_node("lone", "t4", {"nvidia.com/gpu": "1"})]}, f)
        kubeconfig = os.path.join(d, "kubeconfig")
        sim = Proc([paths.SIM_PYTHON, paths.KUBE_SIM, "--listen", "127.0.0.1:0", "--kubeconfig-out",
                    kubeconfig, "--seed", seed], "kube-sim-no-crd", WORK)
        sim.wait_line("ready ")
        agg = Aggregator(kubeconfig, WORK, sync_timeout="1s", extra=("--no-workspace-controller",))
        try:
            def warned():
                with open(agg.proc.log_path) as f:
                    return "the Node or TauCluster list has not been read yet" in f.read()
            wait_for(warned, what="the unread-list warning")
            wait_for(lambda: [n.name for n in agg.nodes()] == ["lone"], what="the Node known")
            self.assertFalse(agg.pool().established)
            self.assertEqual(agg.http("/readyz")[0], 503)
        finally:
            self.assertEqual(agg.stop(), 0)
            sim.stop()


class ScaleE2E(unittest.TestCase):
    """Issue 12 item 10: queries hold at 50,000 nodes (ListNodes pages, GetPool/WatchPool bounded)."""

    N = 50000

    @classmethod
    def setUpClass(cls):
        d = os.path.join(WORK, "scale")
        os.makedirs(d, exist_ok=True)
        cls.names = ["scale-%05d" % i for i in range(cls.N)]
        # Four classes; every tenth node is not Ready.
        nodes = [_node(n, "c%d" % (i % 4), {"cpu": "96", "memory": "1Ti", "nvidia.com/gpu": "8"},
                       ready=i % 10 != 0) for i, n in enumerate(cls.names)]
        cls.counted = {"c%d" % k: sum(1 for i in range(cls.N) if i % 4 == k and i % 10 != 0)
                       for k in range(4)}
        real = cls.names[1]
        tokens = {agent_token(real): {"username": AGENT_USER, "audiences": ["taugrid"],
                                  "extra": {"authentication.kubernetes.io/node-name": [real]}}}
        with open(os.path.join(d, "tokens.json"), "w") as f:
            json.dump(tokens, f)
        with open(os.path.join(d, "seed.json"), "w") as f:
            json.dump({"kind": "List", "items": nodes}, f)
        cls.kubeconfig = os.path.join(d, "kubeconfig")
        cls.sim = Proc([paths.SIM_PYTHON, paths.KUBE_SIM, "--listen", "127.0.0.1:0", "--kubeconfig-out",
                        cls.kubeconfig, "--tokens", os.path.join(d, "tokens.json"),
                        "--seed", os.path.join(d, "seed.json"),
                        "--crds", os.path.join(ROOT, "charts/taugrid/crds")], "kube-sim-scale", WORK)
        cls.sim.wait_line("ready ", timeout=180)
        cls.agg = Aggregator(cls.kubeconfig, WORK, sync_timeout="1s")
        cls.agent = RealAgent(WORK, real, cls.agg.addr, cls.kubeconfig)
        wait_for(lambda: "tau_aggregator_nodes %d\n" % cls.N in cls.agg.http("/metrics")[1]
                 and cls.agg.pool().established, timeout=180, what="50,000 nodes known, established")
        wait_for(lambda: cls.agg.unary("GetNode", qpb.GetNodeRequest(name=real),
                                       qpb.GetNodeResponse).HasField("inventory"),
                 timeout=60, what="the real agent reported")

    @classmethod
    def tearDownClass(cls):
        cls.agent.stop()
        rc = cls.agg.stop()
        cls.sim.stop()
        assert rc == 0, "aggregator exit code %d after SIGTERM" % rc

    def check_pool(self, p):
        self.assertTrue(p.established)
        self.assertTrue(p.valid)
        self.assertEqual({f.name: f.node_count for f in p.flavors}, self.counted)
        self.assertEqual({k: qparse(v) for k, v in p.flavors[0].resources.items()},
                         {"cpu": 96 * self.counted["c0"],
                          "memory": self.counted["c0"] * 2**40,
                          "nvidia.com/gpu": 8 * self.counted["c0"]})
        # Every GPU node but the one with a real agent is missing its agent: a sample is named.
        self.assertEqual(p.missing_count, self.N - 1)
        self.assertEqual(list(p.missing_nodes), self.names[:1] + self.names[2:65])
        # A few hundred bytes, not 64 bytes a node.
        self.assertLess(p.ByteSize(), 4096)

    def test_01_get_pool_and_watch_pool_stay_small(self):
        self.check_pool(self.agg.pool())
        w = PoolWatcher(self.agg.channel, self.agg.md)
        try:
            self.check_pool(w.wait(lambda q: q.established, timeout=60))
        finally:
            w.cancel()

    def test_02_list_nodes_pages(self):
        r = self.agg.unary("ListNodes", qpb.ListNodesRequest(), qpb.ListNodesResponse)
        self.assertEqual([n.name for n in r.nodes], self.names[:500])
        self.assertEqual(r.next_page_token, self.names[499])
        r = self.agg.unary("ListNodes", qpb.ListNodesRequest(page_size=100000,
                                                             page_token=r.next_page_token),
                           qpb.ListNodesResponse)
        self.assertEqual([n.name for n in r.nodes], self.names[500:1500])
        with self.assertRaises(grpc.RpcError) as cm:
            self.agg.unary("ListNodes", qpb.ListNodesRequest(page_token="Not A Token!"),
                           qpb.ListNodesResponse)
        self.assertEqual(cm.exception.code(), grpc.StatusCode.INVALID_ARGUMENT)
        self.assertIn("invalid page_token", cm.exception.details())

    def test_03_cli_lists_all_50000_nodes(self):
        r = subprocess.run([paths.CLI_BIN, "--kubeconfig", self.kubeconfig, "inventory", "nodes", "-o", "json", "--aggregator",
                            self.agg.addr], capture_output=True, text=True, timeout=300)
        self.assertEqual(r.returncode, 0, r.stderr)
        nodes = json.loads(r.stdout)
        self.assertEqual([n["name"] for n in nodes], self.names)
        self.assertEqual(sum(1 for n in nodes if n["counted"]), sum(self.counted.values()))
        real = nodes[1]
        self.assertTrue(real["connected"], real)
        r = subprocess.run([paths.CLI_BIN, "--kubeconfig", self.kubeconfig, "inventory", "nodes", "-o", "json", "--counted",
                            "--gpu-class", "c0", "--aggregator", self.agg.addr],
                           capture_output=True, text=True, timeout=300)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(len(json.loads(r.stdout)), self.counted["c0"])


class BoundedAuthE2E(unittest.TestCase):
    """What a peer with bad or bogus tokens can cost, and what a real agent still gets: tokens that
    cannot be the agent's are refused before any TokenReview, a stream that ends before its
    review gets its answer or a log line, reviews are taken from the peers in turn (a flood of
    2,000 streams with forged agent claims from one address does not delay another address's
    agent), and the per-peer caps answer RESOURCE_EXHAUSTED, counted in /metrics."""

    REVIEW_MS = 200  # kube-sim's TokenReview latency during the flood

    @classmethod
    def setUpClass(cls):
        require.binary(paths.RPC_CLIENT, "TAU_RPC_TEST_CLIENT")
        cls.nodes = make_nodes()
        cls.gpu_nodes = gpu_nodes(cls.nodes)
        cls.gpu = [n["metadata"]["name"] for n in cls.gpu_nodes]
        d = os.path.join(WORK, "bounded")
        os.makedirs(d, exist_ok=True)
        tokens = {agent_token(n): {"username": AGENT_USER, "audiences": ["taugrid"],
                                   "extra": {"authentication.kubernetes.io/node-name": [n]}}
                  for n in cls.gpu}
        with open(os.path.join(d, "tokens.json"), "w") as f:
            json.dump(tokens, f)
        with open(os.path.join(d, "seed.json"), "w") as f:
            json.dump({"kind": "List", "items": cls.nodes}, f)
        cls.kubeconfig = os.path.join(d, "kubeconfig")
        cls.sim = Proc([paths.SIM_PYTHON, paths.KUBE_SIM, "--listen", "127.0.0.1:0", "--kubeconfig-out",
                        cls.kubeconfig, "--tokens", os.path.join(d, "tokens.json"),
                        "--seed", os.path.join(d, "seed.json"),
                        "--crds", os.path.join(ROOT, "charts/taugrid/crds")], "kube-sim-bounded", WORK)
        cls.sim_port = int(cls.sim.wait_line("ready ").split()[1])
        with open(cls.kubeconfig) as f:
            cls.admin_token = json.load(f)["users"][0]["user"]["token"]
        # Listening on [::] too: the flood comes from ::1, the real agents from 127.0.0.1, two
        # peers on one machine. The caps are raised so all 2,000 flood streams wait in the queue.
        cls.agg = Aggregator(cls.kubeconfig, WORK, extra=(
            "--grpc-listen", "[::]:0", "--max-reviews-per-peer", "4000",
            "--max-pending-reviews", "4000", "--max-streams-per-peer", "4000"), name="aggregator-bounded")
        wait_for(lambda: len(cls.agg.nodes()) == len(cls.nodes), what="every Node known")

    @classmethod
    def tearDownClass(cls):
        rc = cls.agg.stop()
        cls.sim.stop()
        assert rc == 0, "aggregator exit code %d after SIGTERM" % rc

    def api(self, method, path, body=None):
        return kube_request(self.sim_port, self.admin_token, method, path, body)

    def reviews(self):
        return self.api("GET", "/sim/stats")[1].get("create/tokenreviews", 0)

    def metric(self, agg, name):
        for line in agg.http("/metrics")[1].splitlines():
            if line.startswith(name + " "):
                return float(line.split()[1])
        raise AssertionError("no metric " + name)

    def log_count(self, agg, text):
        with open(agg.proc.log_path) as f:
            return f.read().count(text)

    def tearDown(self):
        self.api("DELETE", "/sim/faults")

    def test_1_tokens_refused_before_any_review(self):
        before = self.reviews()
        inv = inventory_from_node(pb, self.nodes[0])
        intruder = "system:serviceaccount:default:intruder"
        cases = ([("opaque-%d" % i, grpc.StatusCode.UNAUTHENTICATED, "not a JWT") for i in range(20)]
                 + [(bare_jwt({"sub": intruder, "jti": str(i)}), grpc.StatusCode.PERMISSION_DENIED,
                     "no TokenReview made") for i in range(20)]
                 + [(bare_jwt({"sub": AGENT_USER, "jti": str(i), "kubernetes.io": {
                     "namespace": "default", "serviceaccount": {"name": "tau-node-agent"}}}),
                     grpc.StatusCode.UNAUTHENTICATED, "kubernetes.io claims") for i in range(10)])
        for token, code, text in cases:
            err = FakeAgent(pb, self.agg.channel, token, inv).wait_done()
            self.assertIsNotNone(err, token)
            self.assertEqual(err.code(), code, err.details())
            self.assertIn(text, err.details())
        # No API request at all, each refusal counted, and logged once per peer and reason.
        self.assertEqual(self.reviews(), before)
        m = self.agg.http("/metrics")[1]
        self.assertIn('tau_aggregator_tokens_refused_unreviewed_total{reason="not_jwt"} 20', m)
        self.assertIn('tau_aggregator_tokens_refused_unreviewed_total{reason="claims"} 30', m)
        self.assertEqual(self.log_count(self.agg, "is not a JWT"), 1)
        self.assertEqual(self.log_count(self.agg, "kubernetes.io claims"), 1)

    def test_2_stream_ending_before_its_review(self):
        self.api("POST", "/sim/faults", {"verb": "create", "resource": "tokenreviews", "latencyMs": 1500})
        node = self.gpu_nodes[0]
        name = node["metadata"]["name"]
        # Half-closed right after its report: the review's outcome, the ack, then OK.
        a = FakeAgent(pb, self.agg.channel, agent_token(name), inventory_from_node(pb, node))
        a.q.put(None)
        self.assertIsNone(a.wait_done(timeout=30))
        self.assertEqual([(k.seq, k.status) for k in a.acks], [(1, pb.ACK_STATUS_OK)])
        # Half-closed with a token the review refuses: that refusal, not OK.
        b = FakeAgent(pb, self.agg.channel, agent_token("", tag="unknown-2"), inventory_from_node(pb, node))
        b.q.put(None)
        err = b.wait_done(timeout=30)
        self.assertIsNotNone(err, "a refused token ended OK")
        self.assertEqual(err.code(), grpc.StatusCode.UNAUTHENTICATED, err.details())
        # Cancelled before its review: nobody to answer, but it is logged and counted.
        c = FakeAgent(pb, self.agg.channel, agent_token(self.gpu[1]))
        c.cancel()
        wait_for(lambda: self.metric(self.agg, "tau_aggregator_streams_ended_unauthenticated_total") >= 1,
                 what="the cancelled stream counted")
        wait_for(lambda: self.log_count(self.agg, "agent stream ended before authentication completed") == 1,
                 what="the cancelled stream logged")

    def test_3_flood_does_not_starve_a_real_agent(self):
        self.api("POST", "/sim/faults", {"verb": "create", "resource": "tokenreviews",
                                         "latencyMs": self.REVIEW_MS})
        # 2,000 streams, each with its own token that claims to be the agent's: each would need
        # a TokenReview of its own, first in first out 2,000 x 200 ms / 8 workers = 50 s.
        flood = Proc([paths.RPC_CLIENT, "--target", "[::1]:%d" % self.agg.grpc_port,
                      "--token", agent_token("", tag="flood"), "--flood", "2000"], "flood", WORK)
        try:
            flood.wait_line("flood settled", timeout=180)
            wait_for(lambda: self.metric(self.agg, "tau_aggregator_token_reviews_pending") >= 1000,
                     what="the flood waiting for reviews")
            node = self.gpu_nodes[2]
            start = time.monotonic()
            a = FakeAgent(pb, self.agg.channel, agent_token(self.gpu[2]), inventory_from_node(pb, node))
            ack = a.wait_ack(1, timeout=60)
            took = time.monotonic() - start
            self.assertEqual(ack.status, pb.ACK_STATUS_OK, ack.message)
            left = self.metric(self.agg, "tau_aggregator_token_reviews_pending")
            print("real agent authenticated in %.2f s with %d flood reviews still pending"
                  % (took, left), file=sys.stderr)
            # Its review came after at most one flood review per worker, not after the flood.
            self.assertLess(took, 10)
            self.assertGreater(left, 500)
            a.stop()
        finally:
            flood.p.send_signal(signal.SIGTERM)
            flood.wait_line("flood open=", timeout=60)
            self.assertEqual(flood.stop(), 0)

    def test_4_per_peer_caps(self):
        self.api("POST", "/sim/faults", {"verb": "create", "resource": "tokenreviews", "latencyMs": 8000})
        capped = Aggregator(self.kubeconfig, WORK, extra=("--max-reviews-per-peer", "2",
                                                    "--max-streams-per-peer", "6"), name="aggregator-capped")
        try:
            inv = inventory_from_node(pb, self.nodes[0])
            waiting = [FakeAgent(pb, capped.channel, agent_token("", tag="cap-%d" % i), inv) for i in range(2)]
            wait_for(lambda: self.metric(capped, "tau_aggregator_token_reviews_pending") == 2,
                     what="two reviews pending")
            err = FakeAgent(pb, capped.channel, agent_token("", tag="cap-3"), inv).wait_done()
            self.assertIsNotNone(err)
            self.assertEqual(err.code(), grpc.StatusCode.RESOURCE_EXHAUSTED, err.details())
            self.assertIn("--max-reviews-per-peer", err.details())
            self.assertIn('tau_aggregator_auth_failures_total{code="RESOURCE_EXHAUSTED"} 1',
                          capped.http("/metrics")[1])
            # Streams per peer: the two waiting streams and four health watches fill the cap.
            watch = capped.channel.unary_stream("/grpc.health.v1.Health/Watch",
                                                request_serializer=lambda m: m.SerializeToString(),
                                                response_deserializer=hpb.HealthCheckResponse.FromString)
            # The refused third stream holds its place until the server has freed its call, a
            # moment after the client saw its status: a watch opened in that moment is refused
            # too, so each is retried until it is held (the count must come back down).
            held = []

            def hold_one():
                h = watch(hpb.HealthCheckRequest(), timeout=60)
                try:
                    next(h)
                except grpc.RpcError as e:
                    if e.code() != grpc.StatusCode.RESOURCE_EXHAUSTED:
                        raise
                    return False
                held.append(h)
                return True

            for _ in range(4):
                wait_for(hold_one, timeout=30, what="a health watch held within the cap")
            refused = self.metric(capped, 'tau_aggregator_grpc_refused_total{reason="streams_per_peer"}')
            with self.assertRaises(grpc.RpcError) as cm:
                next(watch(hpb.HealthCheckRequest(), timeout=60))
            self.assertEqual(cm.exception.code(), grpc.StatusCode.RESOURCE_EXHAUSTED)
            self.assertIn("at most 6 per peer", cm.exception.details())
            self.assertEqual(self.metric(capped, 'tau_aggregator_grpc_refused_total{reason="streams_per_peer"}'),
                             refused + 1)
            for h in held:
                h.cancel()
            for w in waiting:
                w.cancel()
        finally:
            self.assertEqual(capped.stop(), 0)

    def test_5_review_budget(self):
        """Reviews are paced by their own budget (--review-qps, --review-burst): with 2/s and a
        burst of 1, the agents' reviews cannot all be done in less than (agents - 1) / 2 s; each
        agent is still authenticated, one TokenReview each."""
        paced = Aggregator(self.kubeconfig, WORK, extra=("--review-qps", "2", "--review-burst", "1"),
                           name="aggregator-paced")
        try:
            wait_for(lambda: len(paced.nodes()) == len(self.nodes), what="every Node known")
            before = self.reviews()
            start = time.monotonic()
            agents = [FakeAgent(pb, paced.channel, agent_token(n["metadata"]["name"]),
                                inventory_from_node(pb, n)) for n in self.gpu_nodes]
            for a in agents:
                self.assertEqual(a.wait_ack(1, timeout=120).status, pb.ACK_STATUS_OK)
            took = time.monotonic() - start
            # A bucket of one token refilled at 2/s: the last review starts no sooner than this.
            floor = (len(agents) - 1) / 2.0
            print("%d agents authenticated in %.2f s at --review-qps 2 (floor %.1f s)"
                  % (len(agents), took, floor), file=sys.stderr)
            self.assertGreaterEqual(took, floor - 0.1)
            self.assertEqual(self.reviews() - before, len(agents))
            for a in agents:
                a.stop()
        finally:
            self.assertEqual(paced.stop(), 0)


if __name__ == "__main__":
    unittest.main()
