"""QueryService authentication and authorization (issue 17), end to end.

kube-sim runs with `--authz rbac` and the RBAC the charts ship (charts/tau-aggregator/rbac/, charts/tau-node-agent/rbac/), the real
tau-aggregator runs as its own ServiceAccount, and callers present bearer tokens of users with
and without a binding to tau-inventory-reader:
  alice  group `readers`, bound to tau-inventory-reader (inventory and workspaces)
  carol  bound to a ClusterRole granting `get` on inventory only
  bob    authenticated, no binding
Each refusal must carry the right gRPC code, be logged and counted in /metrics; grpc.health
stays anonymous; `--allow-anonymous-queries` is an explicit, logged opt-out; the pending-review
cap answers RESOURCE_EXHAUSTED; a call that ends before its review is logged.

Run with the system interpreter (python3-grpcio), from tests/e2e:
    TAU_AGGREGATOR_BIN=build/tau-aggregator TAU_CLI_BIN=build/tau \\
        python3 -m unittest test_query_auth
"""
import concurrent.futures
import json
import os
import subprocess
import tempfile
import unittest

import grpc

from harness import paths, proto
from harness.aggregator import QRY, Aggregator, require_all
from harness.kubesim import KubeSim
from harness.procs import make_workdir, remove_workdir
from harness.tokens import bare_jwt
from harness.waits import wait_for

ROOT = paths.ROOT
# The RBAC manifests of the component charts that render them.
RBAC_DIRS = [os.path.join(ROOT, "charts", c, "rbac")
             for c in ("tau-aggregator", "tau-node-agent")]
TAU_CRDS = paths.TAU_CRDS
SA_TOKEN = "tau-aggregator-sa-token"
TOKENS = {
    SA_TOKEN: {"username": "system:serviceaccount:tau-system:tau-aggregator",
               "groups": ["system:serviceaccounts", "system:serviceaccounts:tau-system"]},
    "alice-tok": {"username": "alice", "groups": ["readers"]},
    "bob-tok": {"username": "bob", "groups": ["devs"]},
    "carol-tok": {"username": "carol"},
}


WORK = None
qpb = hpb = None


def setUpModule():
    global WORK, qpb, hpb
    require_all()
    WORK = make_workdir("tau-query-auth-")
    qpb, hpb = proto.query(), proto.health()


def tearDownModule():
    remove_workdir(WORK)


def expired_jwt():
    return bare_jwt({"sub": "alice", "exp": 1000})


class Agg(Aggregator):
    """tau-aggregator as the ServiceAccount, without the workspace controller; each call
    carries the token the case names."""

    def __init__(self, kubeconfig, name, extra=()):
        super().__init__(kubeconfig, WORK, name, extra=("--no-workspace-controller", *extra),
                         sync_timeout="1s", log_level=None)

    def call(self, method, token=None, timeout=10, req=None, resp=None):
        req = req if req is not None else qpb.GetPoolRequest()
        fn = self.channel.unary_unary(QRY + method, request_serializer=lambda m: m.SerializeToString(),
                                      response_deserializer=(resp or qpb.Pool).FromString)
        md = (("authorization", "Bearer " + token),) if token is not None else None
        return fn(req, timeout=timeout, metadata=md)

    def code(self, method, token=None, **kw):
        try:
            self.call(method, token, **kw)
        except grpc.RpcError as e:
            return e.code(), e.details()
        return grpc.StatusCode.OK, ""


class QueryAuthE2E(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="tau-query-auth-e2e-", dir=WORK)
        tokens = os.path.join(cls.tmp, "tokens.json")
        with open(tokens, "w") as f:
            json.dump(TOKENS, f)
        cls.sim = KubeSim(["--authz", "rbac", "--tokens", tokens, "--crds", TAU_CRDS], tls=True)
        cls.aggs = []
        try:
            cls.sim.ok("POST", "/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace",
                                                      "metadata": {"name": "tau-system"}})
            cls.sim.kubectl("apply", "-f", RBAC_DIRS[0], "-f", RBAC_DIRS[1])
            cls.bind("tau-aggregator", "tau-aggregator",
                     {"kind": "ServiceAccount", "name": "tau-aggregator", "namespace": "tau-system"})
            cls.bind("readers", "tau-inventory-reader",
                     {"kind": "Group", "name": "readers", "apiGroup": "rbac.authorization.k8s.io"})
            cls.sim.ok("POST", "/apis/rbac.authorization.k8s.io/v1/clusterroles",
                       {"metadata": {"name": "inventory-only"},
                        "rules": [{"apiGroups": ["tau.azure.com"], "resources": ["inventory"],
                                   "verbs": ["get"]}]})
            cls.bind("carol", "inventory-only",
                     {"kind": "User", "name": "carol", "apiGroup": "rbac.authorization.k8s.io"})
            with open(cls.sim.kubeconfig) as f:
                kc = json.load(f)
            cls.kubeconfigs = {}
            for who, tok in (("sa", SA_TOKEN), ("alice", "alice-tok"), ("bob", "bob-tok")):
                kc["users"][0]["user"] = {"token": tok}
                cls.kubeconfigs[who] = os.path.join(cls.tmp, who + "-kubeconfig")
                with open(cls.kubeconfigs[who], "w") as f:
                    json.dump(kc, f)
            cls.agg = Agg(cls.kubeconfigs["sa"], "aggregator")
            cls.aggs.append(cls.agg)
        except BaseException:
            cls.tearDownClass()
            raise

    @classmethod
    def tearDownClass(cls):
        for a in cls.aggs:
            a.stop()
        cls.sim.stop()

    @classmethod
    def bind(cls, name, role, subject):
        cls.sim.ok("POST", "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings",
                   {"metadata": {"name": name},
                    "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                                "name": role},
                    "subjects": [subject]})

    def tau(self, *args, env=None):
        e = dict(os.environ)
        e.pop("KUBECONFIG", None)
        e["HOME"] = self.tmp  # no ~/.kube/config: only what the test names
        e.update(env or {})
        return subprocess.run([paths.CLI_BIN, *args], capture_output=True, text=True, timeout=60, env=e)

    def test_01_refusals_and_codes(self):
        a = self.agg
        cases = [
            (None, grpc.StatusCode.UNAUTHENTICATED, "missing bearer token"),
            ("not-a-token", grpc.StatusCode.UNAUTHENTICATED, "rejected by TokenReview"),
            (expired_jwt(), grpc.StatusCode.UNAUTHENTICATED, "bearer token has expired"),
            ("bob-tok", grpc.StatusCode.PERMISSION_DENIED,
             "user bob may not get inventory.tau.azure.com"),
        ]
        for method in ("GetPool", "ListNodes", "GetNode", "ExplainNode", "WatchPool"):
            for token, code, text in cases:
                with self.subTest(method=method, token=token):
                    req = {"ListNodes": qpb.ListNodesRequest(),
                           "GetNode": qpb.GetNodeRequest(name="n"),
                           "ExplainNode": qpb.ExplainNodeRequest(name="n")}.get(method)
                    if method == "WatchPool":
                        fn = a.channel.unary_stream(QRY + method,
                                                    request_serializer=lambda m: m.SerializeToString(),
                                                    response_deserializer=qpb.Pool.FromString)
                        md = (("authorization", "Bearer " + token),) if token else None
                        with self.assertRaises(grpc.RpcError) as cm:
                            next(iter(fn(qpb.WatchPoolRequest(), timeout=10, metadata=md)))
                        got = (cm.exception.code(), cm.exception.details())
                    else:
                        got = a.code(method, token, req=req)
                    self.assertEqual(got[0], code, got)
                    self.assertIn(text, got[1])
        # Workspaces are their own resource: carol may read the inventory only.
        self.assertEqual(a.code("GetPool", "carol-tok")[0], grpc.StatusCode.OK)
        code, text = a.code("ListWorkspaces", "carol-tok", req=qpb.ListWorkspacesRequest(),
                            resp=qpb.ListWorkspacesResponse)
        self.assertEqual(code, grpc.StatusCode.PERMISSION_DENIED, text)
        self.assertIn("may not get workspaces.tau.azure.com", text)
        # alice may: past authorization, this replica has no workspace controller.
        code, text = a.code("ListWorkspaces", "alice-tok", req=qpb.ListWorkspacesRequest(),
                            resp=qpb.ListWorkspacesResponse)
        self.assertEqual((code, text), (grpc.StatusCode.UNAVAILABLE,
                                        "workspace controller not running on this replica"))
        log = a.log()
        self.assertIn("query refused", log)
        for code in ("UNAUTHENTICATED", "PERMISSION_DENIED"):
            self.assertIn(code, log)
            self.assertGreaterEqual(
                a.metric('tau_aggregator_query_auth_total{code="%s"}' % code), 5)

    def test_02_allowed_queries_and_the_decision_cache(self):
        a = self.agg
        p = a.call("GetPool", "alice-tok")
        self.assertTrue(p.established or p.missing_count == 0)
        nodes = a.call("ListNodes", "alice-tok", req=qpb.ListNodesRequest(),
                       resp=qpb.ListNodesResponse)
        self.assertEqual(len(nodes.nodes), 0)
        reviews = a.metric("tau_aggregator_query_reviews_total")
        for _ in range(5):
            a.call("GetPool", "alice-tok")
        self.assertEqual(a.metric("tau_aggregator_query_reviews_total"), reviews,
                         "a cached decision must not ask the API server again")
        fn = a.channel.unary_stream(QRY + "WatchPool", request_serializer=lambda m: m.SerializeToString(),
                                    response_deserializer=qpb.Pool.FromString)
        call = fn(qpb.WatchPoolRequest(), metadata=(("authorization", "Bearer alice-tok"),))
        self.assertIsNotNone(next(iter(call)))
        wait_for(lambda: a.metric("tau_aggregator_pool_watchers") == 1, what="one watcher")
        call.cancel()
        wait_for(lambda: a.metric("tau_aggregator_pool_watchers") == 0, what="watcher gone")
        # grpc.health needs no token (kubelet probes send none).
        health = a.channel.unary_unary("/grpc.health.v1.Health/Check",
                                       request_serializer=lambda m: m.SerializeToString(),
                                       response_deserializer=hpb.HealthCheckResponse.FromString)
        self.assertEqual(health(hpb.HealthCheckRequest(), timeout=10).status,
                         hpb.HealthCheckResponse.SERVING)

    def test_03_cli_sends_the_kubeconfig_token(self):
        addr = ["--aggregator", self.agg.addr]
        r = self.tau("--kubeconfig", self.kubeconfigs["alice"], "inventory", "pool", "-o", "json", *addr)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("established", json.loads(r.stdout))
        r = self.tau("inventory", "pool", *addr, env={"KUBECONFIG": self.kubeconfigs["alice"]})
        self.assertEqual(r.returncode, 0, r.stderr)
        r = self.tau("--kubeconfig", self.kubeconfigs["bob"], "inventory", "pool", *addr)
        self.assertEqual(r.returncode, 1)
        self.assertIn("PERMISSION_DENIED", r.stderr)
        # --token wins over the kubeconfig's.
        r = self.tau("--kubeconfig", self.kubeconfigs["bob"], "--token", "alice-tok",
                     "inventory", "pool", *addr)
        self.assertEqual(r.returncode, 0, r.stderr)
        r = self.tau("inventory", "pool", *addr)  # no kubeconfig anywhere: no token
        self.assertEqual(r.returncode, 1)
        self.assertIn("UNAUTHENTICATED", r.stderr)
        self.assertIn("missing bearer token", r.stderr)
        r = self.tau("--kubeconfig", os.path.join(self.tmp, "missing"), "inventory", "pool", *addr)
        self.assertEqual(r.returncode, 2, r.stderr)
        self.assertIn("missing", r.stderr)
        r = self.tau("--token", "", "inventory", "pool", *addr)
        self.assertEqual(r.returncode, 2, r.stderr)
        self.assertIn("--token is empty", r.stderr)
        r = self.tau("--token", "alice-tok", "inventory", "pool", "--aggregator", "")
        self.assertEqual(r.returncode, 2, r.stderr)
        self.assertIn("--aggregator is empty", r.stderr)

    def test_04_anonymous_opt_out_is_explicit_and_logged(self):
        b = Agg(self.kubeconfigs["sa"], "anonymous", ("--allow-anonymous-queries",))
        self.aggs.append(b)
        self.assertEqual(b.code("GetPool")[0], grpc.StatusCode.OK)
        self.assertIn("queries are not authenticated", b.log())
        self.assertIn("--allow-anonymous-queries", b.log())

    def test_05_pending_review_cap_and_early_end(self):
        c = Agg(self.kubeconfigs["sa"], "capped", ("--max-pending-reviews", "1"))
        self.aggs.append(c)
        self.sim.ok("PUT", "/sim/faults", {"rules": [{"verb": "create", "resource": "tokenreviews",
                                                      "latencyMs": 1500}]})
        try:
            # 2 workers busy + 1 queued: the rest are refused at once, before any API request.
            with concurrent.futures.ThreadPoolExecutor(8) as ex:
                got = list(ex.map(lambda i: c.code("GetPool", "fresh-%d" % i, timeout=20), range(8)))
            codes = [g[0] for g in got]
            self.assertIn(grpc.StatusCode.RESOURCE_EXHAUSTED, codes, got)
            self.assertIn(grpc.StatusCode.UNAUTHENTICATED, codes, got)
            over = [g for g in got if g[0] == grpc.StatusCode.RESOURCE_EXHAUSTED]
            self.assertIn("too many token reviews pending", over[0][1])
            self.assertGreaterEqual(
                c.metric('tau_aggregator_query_auth_total{code="RESOURCE_EXHAUSTED"}'), len(over))
            # A caller that gives up before its review ends: logged, not answered OK.
            code, _ = c.code("GetPool", "impatient", timeout=0.3)
            self.assertEqual(code, grpc.StatusCode.DEADLINE_EXCEEDED)
            wait_for(lambda: "query ended before its review finished" in c.log(),
                             timeout=20, what="the early end logged")
        finally:
            self.sim.ok("DELETE", "/sim/faults")

    def test_06_pool_watcher_cap(self):
        w = Agg(self.kubeconfigs["sa"], "watch-capped", ("--max-pool-watchers", "1"))
        self.aggs.append(w)
        fn = w.channel.unary_stream(QRY + "WatchPool", request_serializer=lambda m: m.SerializeToString(),
                                    response_deserializer=qpb.Pool.FromString)
        md = (("authorization", "Bearer alice-tok"),)
        first = fn(qpb.WatchPoolRequest(), metadata=md)
        self.assertIsNotNone(next(iter(first)))
        with self.assertRaises(grpc.RpcError) as cm:
            next(iter(fn(qpb.WatchPoolRequest(), timeout=10, metadata=md)))
        self.assertEqual(cm.exception.code(), grpc.StatusCode.RESOURCE_EXHAUSTED)
        self.assertIn("too many WatchPool streams (1, --max-pool-watchers)", cm.exception.details())
        self.assertEqual(w.metric("tau_aggregator_pool_watchers_refused_total"), 1)
        self.assertIn("WatchPool refused: watcher cap reached", w.log())
        first.cancel()
        # The slot is free again once the first watcher is gone.
        wait_for(lambda: w.metric("tau_aggregator_pool_watchers") == 0, what="slot freed")
        again = fn(qpb.WatchPoolRequest(), metadata=md)
        self.assertIsNotNone(next(iter(again)))
        again.cancel()

    def test_07_configuration_errors_exit_2_with_one_line(self):
        bad = os.path.join(self.tmp, "bad-kubeconfig")
        with open(bad, "w") as f:
            f.write("apiVersion: v1\nclusters: {not: [a list\n")
        notpem = os.path.join(self.tmp, "not-a-ca.pem")
        with open(notpem, "w") as f:
            f.write("hello\n")
        base = [paths.AGG_BIN, "--http-listen", "127.0.0.1:0"]
        for argv, text in (
                (base + ["--kubeconfig", bad, "--grpc-listen", "127.0.0.1:0"], "kubeconfig"),
                (base + ["--kubeconfig", os.path.join(self.tmp, "absent"), "--grpc-listen",
                         "127.0.0.1:0"], "kubeconfig"),
                (base + ["--kubeconfig", self.kubeconfigs["sa"], "--grpc-listen", "x:y:z"],
                 "--grpc-listen: listen address x:y:z")):
            with self.subTest(argv=argv):
                r = subprocess.run(argv, capture_output=True, text=True, timeout=60)
                self.assertEqual(r.returncode, 2, r.stderr)
                self.assertIn(text, r.stderr)
                self.assertNotIn("grpc", r.stderr.lower().replace("--grpc-listen", ""))
        r = self.tau("--token", "alice-tok", "inventory", "pool", "--aggregator", self.agg.addr,
                     "--ca-file", notpem)
        self.assertEqual(r.returncode, 2, r.stderr)
        self.assertEqual(r.stderr.strip().splitlines(),
                         ["tau inventory: --ca-file %s: no PEM certificate in it (expected "
                          "-----BEGIN CERTIFICATE-----)" % notpem])


if __name__ == "__main__":
    unittest.main()
