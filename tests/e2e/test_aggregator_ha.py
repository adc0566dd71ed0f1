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

Uses the e2e harness (tests/e2e/harness: kube-sim, Aggregator, RealAgent, ServiceProxy).
"""
import http.client
import json
import os
import socket
import sys
import threading
import time
import unittest

import grpc

from harness import paths
from harness.agents import RealAgent
from harness.aggregator import (QRY, Aggregator, ServiceProxy, expected_pool, gpu_nodes,
                                make_nodes, pool_values, require_all)
from harness.kubesim import kube_request
from harness.procs import Proc, make_workdir, remove_workdir
from harness.quantity import parse as qparse
from harness.tokens import agent_tokens, write_table
from harness.waits import wait_for

WORK = None


def setUpModule():
    global WORK
    require_all()
    WORK = make_workdir("tau-agg-ha-")


def tearDownModule():
    remove_workdir(WORK)


class ViaService(Aggregator):
    """Queries through the Service: a fresh channel per call, so each call is a new connection
    the Service routes (a long-lived channel would stick to one endpoint)."""

    def __init__(self, addr, md):
        self.addr = addr
        self.md = md  # the bearer token metadata of the replicas' own Aggregator objects

    def unary(self, method, req, resp_cls, timeout=10):
        ch = grpc.insecure_channel(self.addr)
        try:
            fn = ch.unary_unary(QRY + method, request_serializer=lambda m: m.SerializeToString(),
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
                    out[f["name"]] = qparse(str(r["nominalQuota"]))
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
        self.nodes = make_nodes()
        self.gpu = gpu_nodes(self.nodes)
        work = os.path.join(WORK, "ha")
        os.makedirs(work, exist_ok=True)
        write_table(os.path.join(work, "tokens.json"), agent_tokens(self.nodes))
        with open(os.path.join(work, "seed.json"), "w") as f:
            json.dump({"kind": "List", "items": self.nodes}, f)
        self.kubeconfig = os.path.join(work, "kubeconfig")
        self.sim = Proc([paths.SIM_PYTHON, paths.KUBE_SIM, "--listen", "127.0.0.1:0",
                         "--kubeconfig-out", self.kubeconfig, "--tokens",
                         os.path.join(work, "tokens.json"), "--seed",
                         os.path.join(work, "seed.json"), "--crds", paths.TAU_CRDS, "--crds",
                         paths.KUEUE_CRDS], "kube-sim-ha", WORK)
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
            st, body = kube_request(self.sim_port, self.admin, "POST", path, obj)
            self.assertEqual(st, 201, body)
        extra = ("--leader-elect", "--system-namespace", "kube-system",
                 "--no-workspace-controller")
        self.aggs = [Aggregator(self.kubeconfig, WORK, sync_timeout="60s", extra=extra)
                     for _ in range(2)]
        self.addCleanup(self.stop_aggs)
        self.svc = ServiceProxy(self.aggs)
        self.addCleanup(self.svc.close)
        self.agents = [RealAgent(WORK, n["metadata"]["name"], self.svc.addr, self.kubeconfig)
                       for n in self.gpu]
        self.addCleanup(lambda: [a.stop() for a in self.agents])
        self.full = {k: {"nodes": len(v["nodes"]), "resources": v["resources"]}
                     for k, v in expected_pool(self.nodes).items()}
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
        except grpc.RpcError:
            return None
        # every agent reported to it: not the sync gate's timeout counting Node objects alone
        return p if p.established and p.missing_count == 0 else None

    def agents_connected(self, agg):
        return ("tau_aggregator_agents_connected %d\n" % len(self.gpu)) in agg.http("/metrics")[1]

    def test_service_routes_to_the_leader_and_survives_its_sigkill(self):
        leader = wait_for(self.leader, what="one leader")
        follower = [a for a in self.aggs if a is not leader][0]
        p = wait_for(self.established_via_service, timeout=60, what="pool via the Service")
        self.assertEqual(pool_values(p), self.full)
        self.assertTrue(self.agents_connected(leader), "not every agent connected to the leader")
        # Only the leader is Ready: every connection the Service made went to it.
        self.assertEqual(follower.http("/readyz")[0], 503)
        self.assertIn("follower", follower.http("/readyz")[1])
        self.assertEqual(set(self.svc.routed), {leader.grpc_port}, self.svc.routed)
        for _ in range(5):
            self.assertEqual(pool_values(self.via.pool()), pool_values(leader.pool()))
        self.assertEqual(len(leader.nodes(counted_only=True)),
                         sum(v["nodes"] for v in self.full.values()))

        # The budget of the full pool, as the leader wrote it; from here on every version of
        # the Cohort is recorded.
        want = sorted(v["resources"].get("nvidia.com/gpu", 0) for v in self.full.values())

        def cohort_full():
            st, c = kube_request(self.sim_port, self.admin, "GET",
                                    COHORT + "/tau-team-" + TEAM)
            return c if st == 200 and sorted(gpu_quotas(c).values()) == want else None

        cohort = wait_for(cohort_full, timeout=60, what="the Cohort holding the full pool")
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
            except grpc.RpcError:
                return None
            seen.append(q)
            return q if q.established and q.missing_count == 0 else None

        p = wait_for(reestablished, timeout=120, what="pool established again via the Service")
        failover = time.monotonic() - killed
        self.assertIs(self.leader(), follower)
        self.assertEqual(pool_values(p), self.full)
        wait_for(lambda: self.agents_connected(follower), what="every agent on the new leader")
        for q in seen:
            if q.established:
                self.assertEqual(pool_values(q), self.full, "established with less than the pool")
        self.assertEqual(pool_values(follower.pool()), self.full)
        # The Cohort still holds the full pool; no version written meanwhile held less.
        self.assertEqual(gpu_quotas(wait_for(cohort_full, what="the Cohort after failover")),
                         budget)
        during = list(watch.versions)
        # The watch sees writes and the new leader's budget controller is live: a cordon
        # shrinks the pool, and the Cohort follows.
        victim = follower.nodes(counted_only=True)[0].name
        st, body = kube_request(self.sim_port, self.admin, "PATCH", "/api/v1/nodes/" + victim,
                                   {"spec": {"unschedulable": True}},
                                   ctype="application/merge-patch+json")
        self.assertEqual(st, 200, body)
        wait_for(lambda: [v for v in watch.versions[len(during):]
                             if sum(gpu_quotas(v).values()) < sum(budget.values())],
                    what="the new leader writing the smaller Cohort after a cordon")
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
