"""High availability behind a Service (docs/install.md, "High availability"): two tau-aggregator
processes with --leader-elect, real tau-node-agents and queries all going through a stand-in for
a Kubernetes Service, which sends each new connection to a Ready endpoint only (GET /readyz
answers 200), as kube-proxy does with the endpoints the kubelet's readiness probe keeps.

Proves: only the leader is Ready, so every path the Service can take answers the same pool as
the leader itself, the full pool; after SIGKILL of the leader the other replica takes the Lease,
becomes the only Ready endpoint, the agents reconnect to it through the Service and its pool is
established again, equal to the full pool, and never shown established with less; the budget
(the capacity team's Cohort, written by the leader's budget controller) is never written smaller
than the full pool during the failover (every version of it, from a watch). The failover time
(leader killed -> pool established again through the Service) is printed.

Reuses tests/e2e/test_aggregator.py's helpers (kube-sim seed, Aggregator, RealAgent).
"""
import http.client
import json
import os
import socket
import sys
import threading
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import test_aggregator as ta  # noqa: E402


def setUpModule():
    ta.setUpModule()


def tearDownModule():
    ta.tearDownModule()


class ServiceProxy:
    """A TCP stand-in for a ClusterIP Service: each accepted connection goes to one backend
    whose /readyz answers 200 at that moment (the first Ready one in a rotating order); with no
    Ready backend the connection is closed at once, like a Service without endpoints."""

    def __init__(self, backends):
        self.backends = backends          # [Aggregator]
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(256)
        self.addr = "127.0.0.1:%d" % self.sock.getsockname()[1]
        self.routed = {}                  # backend grpc port -> connections routed
        self.turn = 0
        self.closed = False
        threading.Thread(target=self._accept, daemon=True).start()

    def ready(self):
        out = []
        for b in self.backends:
            if b.proc.p.poll() is not None:
                continue
            try:
                if b.http("/readyz")[0] == 200:
                    out.append(b)
            except OSError:
                pass
        return out

    def _accept(self):
        while not self.closed:
            try:
                c, _ = self.sock.accept()
            except OSError:
                return
            threading.Thread(target=self._route, args=(c,), daemon=True).start()

    def _route(self, client):
        ready = self.ready()
        if not ready:
            client.close()
            return
        self.turn += 1
        b = ready[self.turn % len(ready)]
        try:
            up = socket.create_connection(("127.0.0.1", b.grpc_port), timeout=5)
        except OSError:
            client.close()
            return
        up.settimeout(None)
        self.routed[b.grpc_port] = self.routed.get(b.grpc_port, 0) + 1
        for src, dst in ((client, up), (up, client)):
            threading.Thread(target=self._pipe, args=(src, dst), daemon=True).start()

    @staticmethod
    def _pipe(src, dst):
        try:
            while True:
                data = src.recv(65536)
                if not data:
                    break
                dst.sendall(data)
        except OSError:
            pass
        for s in (src, dst):
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            s.close()

    def close(self):
        self.closed = True
        self.sock.close()


class ViaService(ta.Aggregator):
    """Queries through the Service: a fresh channel per call, so each call is a new connection
    the Service routes (a long-lived channel would stick to one endpoint)."""

    def __init__(self, addr, md):
        self.addr = addr
        self.md = md  # the bearer token metadata of the replicas' own Aggregator objects

    def unary(self, method, req, resp_cls, timeout=10):
        ch = ta.grpc.insecure_channel(self.addr)
        try:
            fn = ch.unary_unary(ta.QRY + method, request_serializer=lambda m: m.SerializeToString(),
                                response_deserializer=resp_cls.FromString)
            return fn(req, timeout=timeout, metadata=self.md)
        finally:
            ch.close()


COHORT = "/apis/kueue.x-k8s.io/v1beta2/cohorts"
TEAM = "research"


def gpu_quotas(cohort):
    """{flavor: nvidia.com/gpu nominalQuota as a number} of a Cohort object."""
    out = {}
    for g in (cohort.get("spec") or {}).get("resourceGroups") or []:
        for f in g.get("flavors") or []:
            for r in f.get("resources") or []:
                if r.get("name") == "nvidia.com/gpu":
                    out[f["name"]] = ta.qparse(str(r["nominalQuota"]))
    return out


class CohortWatch:
    """Every ADDED/MODIFIED version of one Cohort from a kube-sim watch, in a thread."""

    def __init__(self, port, token, name, rv):
        self.versions = []
        self.c = http.client.HTTPConnection("127.0.0.1", port, timeout=300)
        self.c.request("GET", "%s?watch=1&fieldSelector=metadata.name%%3D%s&resourceVersion=%s"
                       % (COHORT, name, rv), headers={"Authorization": "Bearer " + token})
        self.r = self.c.getresponse()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        try:
            for line in self.r:
                ev = json.loads(line)
                if ev.get("type") in ("ADDED", "MODIFIED"):
                    self.versions.append(ev["object"])
        except Exception:  # the stream ends when close() shuts the socket
            pass

    def close(self):
        try:
            self.c.sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self.c.close()


class HighAvailabilityE2E(unittest.TestCase):
    def setUp(self):
        self.nodes = ta.make_nodes()
        self.gpu = ta.gpu_nodes(self.nodes)
        tokens = {ta.agent_token(n["metadata"]["name"]): {
            "username": ta.AGENT_USER, "audiences": ["taugrid"],
            "extra": {"authentication.kubernetes.io/node-name": [n["metadata"]["name"]]}}
            for n in self.nodes}
        work = os.path.join(ta.WORK, "ha")
        os.makedirs(work, exist_ok=True)
        with open(os.path.join(work, "tokens.json"), "w") as f:
            json.dump(tokens, f)
        with open(os.path.join(work, "seed.json"), "w") as f:
            json.dump({"kind": "List", "items": self.nodes}, f)
        self.kubeconfig = os.path.join(work, "kubeconfig")
        self.sim = ta.Proc([ta.SIM_PYTHON, ta.KUBE_SIM, "--listen", "127.0.0.1:0",
                            "--kubeconfig-out", self.kubeconfig, "--tokens",
                            os.path.join(work, "tokens.json"), "--seed",
                            os.path.join(work, "seed.json"), "--crds",
                            os.path.join(ta.ROOT, "charts/taugrid/crds"), "--crds",
                            os.path.join(ta.ROOT, "tests/fixtures/kueue")], "kube-sim-ha")
        self.addCleanup(self.sim.stop)
        self.sim_port = int(self.sim.wait_line("ready ").split()[1])
        with open(self.kubeconfig) as f:
            self.admin = json.load(f)["users"][0]["user"]["token"]
        # The capacity team: the leader's budget controller writes the pool into its Cohort.
        for path, obj in (
                ("/apis/tau.azure.com/v1alpha1/clusters", {
                    "apiVersion": "tau.azure.com/v1alpha1", "kind": "TauCluster",
                    "metadata": {"name": "cluster"},
                    "spec": {"managementMode": "Reconcile",
                             "queues": {"capacityTeamRef": {"name": TEAM}}}}),
                ("/apis/tau.azure.com/v1alpha1/namespaces/kube-system/teams", {
                    "apiVersion": "tau.azure.com/v1alpha1", "kind": "TauTeam",
                    "metadata": {"name": TEAM, "namespace": "kube-system"}, "spec": {}})):
            st, body = ta.kube_request(self.sim_port, self.admin, "POST", path, obj)
            self.assertEqual(st, 201, body)
        extra = ("--leader-elect", "--system-namespace", "kube-system",
                 "--no-workspace-controller")
        self.aggs = [ta.Aggregator(self.kubeconfig, sync_timeout="60s", extra=extra)
                     for _ in range(2)]
        self.addCleanup(self.stop_aggs)
        self.svc = ServiceProxy(self.aggs)
        self.addCleanup(self.svc.close)
        self.agents = [ta.RealAgent(n["metadata"]["name"], self.svc.addr, self.kubeconfig)
                       for n in self.gpu]
        self.addCleanup(lambda: [a.stop() for a in self.agents])
        self.full = {k: {"nodes": len(v["nodes"]), "resources": v["resources"]}
                     for k, v in ta.expected_pool(self.nodes).items()}
        self.via = ViaService(self.svc.addr, self.aggs[0].md)

    def stop_aggs(self):
        for a in self.aggs:
            if a.proc.p.poll() is None:
                a.stop()

    def leader(self):
        alive = [a for a in self.aggs if a.proc.p.poll() is None]
        leaders = [a for a in alive if "tau_aggregator_leader 1\n" in a.http("/metrics")[1]]
        return leaders[0] if len(leaders) == 1 else None

    def established_via_service(self):
        try:
            p = self.via.pool()
        except ta.grpc.RpcError:
            return None
        # every agent reported to it: not the sync gate's timeout counting Node objects alone
        return p if p.established and p.missing_count == 0 else None

    def agents_connected(self, agg):
        return ("tau_aggregator_agents_connected %d\n" % len(self.gpu)) in agg.http("/metrics")[1]

    def test_service_routes_to_the_leader_and_survives_its_sigkill(self):
        leader = ta.wait_for(self.leader, msg="one leader")
        follower = [a for a in self.aggs if a is not leader][0]
        p = ta.wait_for(self.established_via_service, timeout=60, msg="pool via the Service")
        self.assertEqual(ta.pool_values(p), self.full)
        self.assertTrue(self.agents_connected(leader), "not every agent connected to the leader")
        # Only the leader is Ready: every connection the Service made went to it.
        self.assertEqual(follower.http("/readyz")[0], 503)
        self.assertIn("follower", follower.http("/readyz")[1])
        self.assertEqual(set(self.svc.routed), {leader.grpc_port}, self.svc.routed)
        for _ in range(5):
            self.assertEqual(ta.pool_values(self.via.pool()), ta.pool_values(leader.pool()))
        self.assertEqual(len(leader.nodes(counted_only=True)),
                         sum(v["nodes"] for v in self.full.values()))

        # The budget of the full pool, as the leader wrote it; from here on every version of
        # the Cohort is recorded.
        want = sorted(v["resources"].get("nvidia.com/gpu", 0) for v in self.full.values())

        def cohort_full():
            st, c = ta.kube_request(self.sim_port, self.admin, "GET",
                                    COHORT + "/tau-team-" + TEAM)
            return c if st == 200 and sorted(gpu_quotas(c).values()) == want else None

        cohort = ta.wait_for(cohort_full, timeout=60, msg="the Cohort holding the full pool")
        budget = gpu_quotas(cohort)
        watch = CohortWatch(self.sim_port, self.admin, "tau-team-" + TEAM,
                            cohort["metadata"]["resourceVersion"])
        self.addCleanup(watch.close)

        # SIGKILL: no Lease release; the follower waits for it to expire.
        killed = time.monotonic()
        leader.proc.p.kill()
        leader.proc.p.wait(30)
        seen = []

        def reestablished():
            try:
                q = self.via.pool()
            except ta.grpc.RpcError:
                return None
            seen.append(q)
            return q if q.established and q.missing_count == 0 else None

        p = ta.wait_for(reestablished, timeout=120, msg="pool established again via the Service")
        failover = time.monotonic() - killed
        self.assertIs(self.leader(), follower)
        self.assertEqual(ta.pool_values(p), self.full)
        ta.wait_for(lambda: self.agents_connected(follower), msg="every agent on the new leader")
        for q in seen:
            if q.established:
                self.assertEqual(ta.pool_values(q), self.full, "established with less than the pool")
        self.assertEqual(ta.pool_values(follower.pool()), self.full)
        # The Cohort still holds the full pool; no version written meanwhile held less.
        self.assertEqual(gpu_quotas(ta.wait_for(cohort_full, msg="the Cohort after failover")),
                         budget)
        during = list(watch.versions)
        # The watch sees writes and the new leader's budget controller is live: a cordon
        # shrinks the pool, and the Cohort follows.
        victim = follower.nodes(counted_only=True)[0].name
        st, body = ta.kube_request(self.sim_port, self.admin, "PATCH", "/api/v1/nodes/" + victim,
                                   {"spec": {"unschedulable": True}},
                                   ctype="application/merge-patch+json")
        self.assertEqual(st, 200, body)
        ta.wait_for(lambda: [v for v in watch.versions[len(during):]
                             if sum(gpu_quotas(v).values()) < sum(budget.values())],
                    msg="the new leader writing the smaller Cohort after a cordon")
        for v in during:
            got = gpu_quotas(v)
            small = {f: (got.get(f), q) for f, q in budget.items() if got.get(f, 0) < q}
            self.assertEqual(small, {}, "Cohort resourceVersion %s below the pool (got, pool)"
                             % v["metadata"]["resourceVersion"])
        print("\nHA failover with %d agents: leader SIGKILLed -> pool established through the "
              "Service in %.1f s (Lease 15 s); %d Cohort writes during it, none below the pool"
              % (len(self.agents), failover, len(during)), file=sys.stderr)
        for a in self.agents:
            self.assertIsNone(a.proc.p.poll(), "an agent exited")


if __name__ == "__main__":
    unittest.main(verbosity=2)
