"""e2e: local verification of agent tokens (issue 29). kube-sim signs the agents' tokens and
publishes its key (/openid/v1/jwks); every TokenReview is slowed to REVIEW_MS, so a stream acked
before that was admitted on its own token. A token whose TokenReview refuses it (revoked in
kube-sim: its pod deleted) is admitted, then closed once its confirming review answers, with a
log line and a metric."""
import json
import os
import sys
import time
import unittest

import grpc

from harness import paths, proto
from harness.agents import FakeAgent, inventory_from_node
from harness.aggregator import Aggregator, node, require_all
from harness.kubesim import kube_request
from harness.procs import Proc, make_workdir, remove_workdir
from harness.tokens import AGENT_USER
from harness.waits import wait_for
from kubesim import satoken

REVIEW_MS = 2000
# A refused stream must be closed within its review's latency plus this.
CLOSE_MARGIN_S = 3.0
GPU = "nvidia.com/gpu"

WORK = None
pb = None


def setUpModule():
    global WORK, pb
    require_all()
    WORK = make_workdir("tau-agg-la-")
    pb = proto.inventory()


def tearDownModule():
    remove_workdir(WORK)


class LocalTokenVerification(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        d = os.path.join(WORK, "localauth")
        os.makedirs(d, exist_ok=True)
        cls.key = satoken.SigningKey.generate(os.path.join(d, "sa.key"))
        cls.names = ["la-%d" % i for i in range(4)]
        cls.nodes = [node(n, "h100", {"cpu": "96", "memory": "1Ti", GPU: "8", "pods": "110"})
                     for n in cls.names]
        cls.tokens = {n: satoken.projected_token(AGENT_USER, ["taugrid"], node=n, pod="agent-" + n,
                                                 key=cls.key) for n in cls.names}
        with open(os.path.join(d, "tokens.json"), "w") as f:
            json.dump({cls.tokens[n]: satoken.table_entry(AGENT_USER, ["taugrid"], node=n,
                                                          pod="agent-" + n)
                       for n in cls.names}, f)
        with open(os.path.join(d, "seed.json"), "w") as f:
            json.dump({"kind": "List", "items": cls.nodes}, f)
        cls.kubeconfig = os.path.join(d, "kubeconfig")
        cls.sim = Proc([paths.SIM_PYTHON, paths.KUBE_SIM, "--listen", "127.0.0.1:0",
                        "--kubeconfig-out", cls.kubeconfig, "--tokens",
                        os.path.join(d, "tokens.json"), "--seed", os.path.join(d, "seed.json"),
                        "--service-account-signing-key-file", os.path.join(d, "sa.key"),
                        "--crds", paths.TAU_CRDS], "kube-sim-la", WORK)
        cls.port = int(cls.sim.wait_line("ready ").split()[1])
        with open(cls.kubeconfig) as f:
            cls.admin = json.load(f)["users"][0]["user"]["token"]
        cls.api("POST", "/sim/faults", {"verb": "create", "resource": "tokenreviews",
                                        "latencyMs": REVIEW_MS})
        cls.agg = Aggregator(cls.kubeconfig, WORK, name="aggregator-localauth")
        wait_for(lambda: cls.metric(cls.agg, "tau_aggregator_auth_keys") == 1, timeout=30,
                 what="the issuer's key fetched")

    @classmethod
    def tearDownClass(cls):
        rc = cls.agg.stop()
        cls.sim.stop()
        assert rc == 0, "aggregator exit code %d after SIGTERM" % rc

    @classmethod
    def api(cls, method, path, body=None):
        return kube_request(cls.port, cls.admin, method, path, body)

    @staticmethod
    def metric(agg, name):
        for line in agg.http("/metrics")[1].splitlines():
            if line.startswith(name + " "):
                return float(line.split()[1])
        return None

    def log_count(self, agg, text):
        with open(agg.proc.log_path) as f:
            return f.read().count(text)

    def report(self, agg, i, token=None):
        return FakeAgent(pb, agg.channel, token or self.tokens[self.names[i]],
                         inventory_from_node(pb, self.nodes[i]))

    def test_1_admitted_before_its_review_then_confirmed(self):
        t0 = time.monotonic()
        a = self.report(self.agg, 0)
        ack = a.wait_ack(1, timeout=REVIEW_MS / 1000.0 + 10)
        took = time.monotonic() - t0
        self.assertEqual(ack.status, pb.ACK_STATUS_OK, ack.message)
        self.assertLess(took, REVIEW_MS / 1000.0, "acked only after the TokenReview")
        self.assertTrue(any(n.name == self.names[0] and n.connected for n in self.agg.nodes()))
        wait_for(lambda: '{result="confirmed"} 1' in self.agg.http("/metrics")[1], timeout=15,
                 what="the confirming review")
        m = self.agg.http("/metrics")[1]
        self.assertIn('tau_aggregator_auth_local_total{result="admitted"} 1', m)
        self.assertIsNone(a.error)
        self.assertFalse(a.done, "a confirmed stream stays open")
        # Reconnecting with the same token: the cached review admits it, no review at all.
        self.assertIsNone(a.stop())
        before = self.api("GET", "/sim/stats")[1].get("create/tokenreviews", 0)
        b = self.report(self.agg, 0)
        self.assertEqual(b.wait_ack(1).status, pb.ACK_STATUS_OK)
        self.assertEqual(self.api("GET", "/sim/stats")[1].get("create/tokenreviews", 0), before)
        self.assertIsNone(b.stop())

    def test_2_revoked_token_closed_when_its_review_refuses(self):
        name = self.names[1]
        self.assertEqual(self.api("POST", "/sim/tokens/revoke",
                                  {"token": self.tokens[name]})[0], 200)
        t0 = time.monotonic()
        a = self.report(self.agg, 1)
        self.assertEqual(a.wait_ack(1, timeout=10).status, pb.ACK_STATUS_OK)
        err = a.wait_done(timeout=REVIEW_MS / 1000.0 + CLOSE_MARGIN_S + 5)
        closed = time.monotonic() - t0
        print("revoked token: admitted, closed %.2f s later (review latency %.1f s)"
              % (closed, REVIEW_MS / 1000.0), file=sys.stderr)
        self.assertIsNotNone(err, "the stream of a refused token stayed open")
        self.assertEqual(err.code(), grpc.StatusCode.UNAUTHENTICATED, err.details())
        self.assertIn("rejected by TokenReview", err.details())
        self.assertLess(closed, REVIEW_MS / 1000.0 + CLOSE_MARGIN_S)
        wait_for(lambda: self.log_count(self.agg, "locally admitted agent stream closed") == 1,
                 what="the closing logged")
        m = self.agg.http("/metrics")[1]
        self.assertIn('tau_aggregator_auth_confirm_total{result="refused"} 1', m)
        wait_for(lambda: not any(n.name == name and n.connected for n in self.agg.nodes()),
                 what="the node no longer connected")

    def test_3_unverifiable_tokens_wait_for_their_review(self):
        # Signed by another key (its kid unknown) and unsigned: neither is admitted early.
        other = satoken.SigningKey.generate(os.path.join(WORK, "localauth", "other.key"))
        name = self.names[2]
        for tok in (satoken.projected_token(AGENT_USER, ["taugrid"], node=name,
                                            pod="agent-" + name, key=other),
                    satoken.projected_token(AGENT_USER, ["taugrid"], node=name, pod="x")):
            err = self.report(self.agg, 2, token=tok).wait_done(timeout=REVIEW_MS / 1000.0 + 10)
            self.assertIsNotNone(err)
            self.assertEqual(err.code(), grpc.StatusCode.UNAUTHENTICATED, err.details())
        m = self.agg.http("/metrics")[1]
        self.assertIn('tau_aggregator_auth_local_total{result="unknown_key"} 2', m)

    def test_4_turned_off(self):
        agg = Aggregator(self.kubeconfig, WORK, extra=("--no-local-token-verification",),
                         name="aggregator-no-local")
        try:
            t0 = time.monotonic()
            a = self.report(agg, 3)
            self.assertEqual(a.wait_ack(1, timeout=REVIEW_MS / 1000.0 + 10).status,
                             pb.ACK_STATUS_OK)
            self.assertGreaterEqual(time.monotonic() - t0, REVIEW_MS / 1000.0 * 0.9)
            self.assertIn('tau_aggregator_auth_local_total{result="admitted"} 0',
                          agg.http("/metrics")[1])
            self.assertIsNone(a.stop())
        finally:
            self.assertEqual(agg.stop(), 0)


if __name__ == "__main__":
    unittest.main()
