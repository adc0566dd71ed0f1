"""Security negative cases against the real tau-aggregator (issue 17), end to end.

Each hostile input must be refused with the right gRPC code and disturb nothing else: a
well-behaved agent's stream stays open and keeps getting acks, the pool is unchanged, the
aggregator keeps running.  Refusals the aggregator's handlers make are logged and checked here
("agent report refused"); those lib/rpc makes before any handler runs (a malformed or oversized
message) are answered but not yet logged (issue 17, docs/SECURITY.md).  Covered here: malformed protobuf (on the
Report stream and on a query), 100,000 labels, a 100 MiB message, an untrusted TLS CA.  The
token cases (no token, another audience, another node's token, expired) are
test_aggregator.AggregatorE2E.test_01_refused_streams_change_nothing and
test_query_auth.QueryAuthE2E.test_01_refusals_and_codes; see docs/SECURITY.md for the list.

Run with the system interpreter (python3-grpcio), from tests/e2e:
    TAU_AGGREGATOR_BIN=build/tau-aggregator TAU_CLI_BIN=build/tau \\
        python3 -m unittest test_hostile_input
"""
import json
import os
import subprocess
import sys
import unittest

import grpc

from harness import paths, proto, require
from harness.agents import REPORT, FakeAgent, inventory_from_node
from harness.aggregator import QRY, Aggregator, node, pool_values, require_all
from harness.procs import Proc, make_workdir, remove_workdir
from harness.tls import make_tls
from harness.tokens import agent_token, agent_tokens, write_table
from harness.waits import wait_for

MIB = 1 << 20
WORK = None
pb = qpb = None


def setUpModule():
    global WORK, pb, qpb
    require_all()
    WORK = make_workdir("tau-hostile-")
    pb, qpb = proto.inventory(), proto.query()


def tearDownModule():
    remove_workdir(WORK)


def vm_kib(pid, field):
    """VmRSS or VmHWM (peak RSS) of a process, in KiB."""
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    raise AssertionError("no %s for pid %d" % (field, pid))


class HostileInputE2E(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        d = os.path.join(WORK, "hostile")
        os.makedirs(d, exist_ok=True)
        cls.nodes = [node("hostile-good", "t4", {"cpu": "8", "nvidia.com/gpu": "1"}),
                     node("hostile-bad", "t4", {"cpu": "8", "nvidia.com/gpu": "1"})]
        write_table(os.path.join(d, "tokens.json"), agent_tokens(cls.nodes))
        with open(os.path.join(d, "seed.json"), "w") as f:
            json.dump({"kind": "List", "items": cls.nodes}, f)
        cls.dir = d
        cls.kubeconfig = os.path.join(d, "kubeconfig")
        cls.sim = Proc([paths.SIM_PYTHON, paths.KUBE_SIM, "--listen", "127.0.0.1:0",
                        "--kubeconfig-out", cls.kubeconfig, "--tokens",
                        os.path.join(d, "tokens.json"), "--seed", os.path.join(d, "seed.json"),
                        "--crds", paths.TAU_CRDS], "kube-sim-hostile", WORK)
        cls.sim.wait_line("ready ")
        cls.agg = Aggregator(cls.kubeconfig, WORK, sync_timeout="1s")
        cls.good = FakeAgent(pb, cls.agg.channel, agent_token("hostile-good"),
                             inventory_from_node(pb, cls.nodes[0]))
        ack = cls.good.wait_ack(1)
        assert ack.status == pb.ACK_STATUS_OK, ack.message
        cls.baseline = wait_for(
            lambda: (lambda p: pool_values(p) if p.established and p.flavors else None)(cls.agg.pool()),
            what="the pool established")

    @classmethod
    def tearDownClass(cls):
        cls.good.cancel()
        rc = cls.agg.stop()
        cls.sim.stop()
        assert rc == 0, "aggregator exit code %d after SIGTERM" % rc

    # -- helpers --

    def log(self):
        with open(self.agg.proc.log_path) as f:
            return f.read()

    def wait_logged(self, text):
        wait_for(lambda: text in self.log(), what="log line %r" % text)

    def assert_undisturbed(self):
        self.assertIsNone(self.agg.proc.p.poll(), "the aggregator exited")
        ack = self.good.wait_ack(self.good.heartbeat())
        self.assertEqual(ack.status, pb.ACK_STATUS_OK, ack.message)
        self.assertEqual(pool_values(self.agg.pool()), self.baseline)
        good = [n for n in self.agg.nodes() if n.name == "hostile-good"]
        self.assertTrue(good and good[0].connected)

    def raw_report(self, payloads, token=None, timeout=60):
        """A Report stream of raw byte messages; returns (code, details) of its end."""
        token = token or agent_token("hostile-bad")
        fn = self.agg.channel.stream_stream(REPORT, request_serializer=lambda b: b,
                                            response_deserializer=lambda b: b)
        call = fn(iter(payloads), metadata=(("authorization", "Bearer " + token),), timeout=timeout)
        try:
            for _ in call:
                pass
        except grpc.RpcError as e:
            return e.code(), e.details()
        return grpc.StatusCode.OK, ""

    # -- cases --

    def test_malformed_protobuf(self):
        # A length-delimited field whose length runs past the end of the message.
        code, details = self.raw_report([b"\x12\xff\xff\xff\xff\x0f"])
        self.assertEqual(code, grpc.StatusCode.INVALID_ARGUMENT, details)
        fn = self.agg.channel.unary_unary(QRY + "GetNode", request_serializer=lambda b: b,
                                          response_deserializer=lambda b: b)
        with self.assertRaises(grpc.RpcError) as cm:
            fn(b"\x0a\xff\xff\xff\xff\x0f", timeout=10, metadata=self.agg.md)
        self.assertEqual(cm.exception.code(), grpc.StatusCode.INVALID_ARGUMENT)
        # Refused in lib/rpc before any handler ran, and logged there (rate-limited).
        self.wait_logged("request message refused")
        self.assertIn("INVALID_ARGUMENT", self.log())
        self.assert_undisturbed()

    def test_100000_labels(self):
        inv = inventory_from_node(pb, self.nodes[1])
        for i in range(100000):
            inv.labels["l%05d" % i] = "v"
        msg = pb.AgentReport(seq=1, inventory=inv).SerializeToString()
        self.assertGreater(len(msg), MIB)
        code, details = self.raw_report([msg])
        self.assertEqual(code, grpc.StatusCode.RESOURCE_EXHAUSTED, details)
        # Under the message cap, the label cap (512) refuses the report itself.
        bad = FakeAgent(pb, self.agg.channel, agent_token("hostile-bad"))
        inv = inventory_from_node(pb, self.nodes[1])
        for i in range(600):
            inv.labels["l%05d" % i] = "v"
        ack = bad.wait_ack(bad.send_inventory(inv))
        self.assertEqual(ack.status, pb.ACK_STATUS_REJECTED)
        self.assertIn("labels", ack.message)
        bad.cancel()
        self.wait_logged("agent report refused")
        self.assert_undisturbed()

    def test_100_mib_message(self):
        pid = self.agg.proc.p.pid
        before = vm_kib(pid, "VmHWM")
        inv = inventory_from_node(pb, self.nodes[1])
        inv.problems.append("x" * (100 * MIB))
        msg = pb.AgentReport(seq=1, inventory=inv).SerializeToString()
        code, details = self.raw_report([msg])
        self.assertEqual(code, grpc.StatusCode.RESOURCE_EXHAUSTED, details)
        # Open (issue 17, lib/rpc): the core still reads the whole message before refusing it;
        # the peak RSS growth is printed for docs/SECURITY.md until it is bounded.
        grew = vm_kib(pid, "VmHWM") - before
        print("\n100 MiB message: aggregator peak RSS grew by %d KiB" % grew, file=sys.stderr)
        self.assert_undisturbed()

    def test_untrusted_tls_ca(self):
        openssl = require.tool("openssl", "openssl", "TAU_OPENSSL")
        tls = make_tls(self.dir, openssl)
        agg = Aggregator(self.kubeconfig, WORK, sync_timeout="1s", ca=tls["ca"],
                            extra=("--tls-cert", tls["cert"], "--tls-key", tls["key"]))
        try:
            with open(tls["other_ca"], "rb") as f:
                untrusted = grpc.secure_channel(agg.addr, grpc.ssl_channel_credentials(f.read()))
            try:
                fn = untrusted.unary_unary(QRY + "GetPool",
                                           request_serializer=lambda m: m.SerializeToString(),
                                           response_deserializer=qpb.Pool.FromString)
                with self.assertRaises(grpc.RpcError) as cm:
                    fn(qpb.GetPoolRequest(), timeout=10, metadata=agg.md)
                self.assertEqual(cm.exception.code(), grpc.StatusCode.UNAVAILABLE)
                # An agent that trusts another CA never gets to send its token.
                a = FakeAgent(pb, untrusted, agent_token("hostile-bad"),
                              inventory_from_node(pb, self.nodes[1]))
                self.assertEqual(a.wait_done().code(), grpc.StatusCode.UNAVAILABLE)
            finally:
                untrusted.close()
            r = subprocess.run([paths.CLI_BIN, "--kubeconfig", self.kubeconfig, "inventory", "pool",
                                "--aggregator", agg.addr, "--ca-file", tls["other_ca"],
                                "--timeout", "5"], capture_output=True, text=True, timeout=60)
            self.assertEqual(r.returncode, 1, r.stderr)
            self.assertTrue(r.stderr.strip(), "the CLI says why")
            # A client that trusts the right CA is served by the same aggregator.
            self.assertIsNotNone(agg.pool())
            self.assertIsNone(agg.proc.p.poll())
        finally:
            self.assertEqual(agg.stop(), 0)
        self.assert_undisturbed()


if __name__ == "__main__":
    unittest.main()
