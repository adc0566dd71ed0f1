#!/usr/bin/python3
"""HA failover: SIGKILL of the leading tau-aggregator -> new leader, pool, budget written again.

    /usr/bin/python3 bench/failover.py [--build DIR] [--agents 200] [--runs 3]
        [--follower cold,warm] [--json FILE] [--deadline 1800]

Set up as tests/e2e/test_aggregator_ha.py (docs/install.md, "High availability"), at scale:
kube-sim with --agents GPU Nodes (3/4 class h100 with 8 GPUs, 1/4 class a100 with 4), a
TauCluster in Reconcile mode whose capacity team's Cohort carries the budget, two tau-aggregator
processes with --leader-elect (default Lease timings: 15 s duration, 10 s renew deadline, 2 s
retry period) behind the e2e's Service stand-in (a TCP proxy that sends each new connection to a
replica whose /readyz answers 200), and one real tau-node-agent process per Node, each with its
own ServiceAccount-like token, streaming to the Service.

One run:
  1. the leader's pool is established with every agent connected; one h100 node is cordoned and
     the Cohort follows (the leader writes the smaller budget);
  2. SIGKILL of the leader (no Lease release) and, at once, the node is uncordoned: the true
     pool grows back, so the budget must be written again, by the new leader;
  3. measured from the kill: the Lease changing holder (a watch on it), the other replica Ready
     (/readyz 200, so the Service routes to it), every agent reconnected to it, its pool
     established, and the Cohort committed with the full pool (a watch on it): "budget
     writable again";
  4. safety, from the Cohort watch: every version committed after the kill holds at least the
     true pool at its resourceVersion (the pool with the node cordoned before the uncordon's
     resourceVersion, the full pool after), on every resource and flavor it lists; and every
     established answer of the new leader's GetPool shows one of those two pools, never less;
  5. the killed replica is started again (the next run's follower).
--runs runs per follower kind (--follower):
  cold  --initial-sync-timeout 1h: the follower's sync gate is still closed when it takes over,
        so its pool is established only once every agent has reconnected to it and reported
        (a follower younger than the timeout, e.g. right after a rolling update);
  warm  --initial-sync-timeout 5s, and the follower's gate opened before the kill: it has
        counted the silent nodes from their Node objects, as every follower older than the
        timeout (default 60s) has; the agents reconnect while the budget is already written.

Floor: the Lease duration (15 s).  After a SIGKILL nothing releases the Lease, and a candidate
may take it only once the record it last saw change has stayed unchanged for a whole lease
duration by its own clock; that change is the dead leader's last renewal, at most one retry
period (2 s) before the kill, so no failover is shorter than 13 s and few are shorter than
15 s.  The ratio (budget written again / 15 s) says what the rest adds: the election's
observation lag and retry jitter, the agents' reconnects, the sync gate, the budget reconcile.
Also printed, for reference: the cold start of the first leader (agents started -> pool
established with every agent).

Exit 0 with the figures (nothing here asserts on time); 1 when a safety check fails, a phase
times out or a process dies; 2 on bad usage.  Everything stops by itself; the whole run is
bounded by --deadline.
"""
import argparse
import faulthandler
import http.client
import json
import os
import statistics
import subprocess
import sys
import threading
import time

import grpc

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
import harness_path  # noqa: E402,F401  (puts tests/e2e on sys.path)
from harness import paths  # noqa: E402
from harness.aggregator import (Aggregator, ServiceProxy, expected_pool, node,  # noqa: E402
                                require_all)
from harness.kubesim import kube_request  # noqa: E402
from harness.procs import Proc, make_workdir, remove_workdir  # noqa: E402
from harness.quantity import parse as qparse  # noqa: E402
from harness.tokens import agent_tokens, agent_token, write_table  # noqa: E402
from harness.waits import EventLog, wait_for  # noqa: E402

TEAM = "research"
NS = "kube-system"
COHORT = "/apis/kueue.x-k8s.io/v1beta2/cohorts"
LEASES = "/apis/coordination.k8s.io/v1/namespaces/%s/leases" % NS
LEASE = "tau-aggregator"
GPU = "nvidia.com/gpu"
FLAVOR = "taugrid-gpu-"
LEASE_DURATION_S = 15.0  # kube_leader.h default, used by tau-aggregator --leader-elect
SYNC = {"cold": "1h", "warm": "5s"}
POLL_S = 0.05  # sampling period of the replicas' /metrics and GetPool: the figures' resolution


class Failed(Exception):
    pass


def cohort_quotas(obj):
    """{GPU class: {resource: nominalQuota as a number}} of a Cohort (flavor taugrid-gpu-<class>,
    docs/budget.md)."""
    out = {}
    for g in (obj.get("spec") or {}).get("resourceGroups") or []:
        for f in g.get("flavors") or []:
            name = f["name"]
            res = out.setdefault(name[len(FLAVOR):] if name.startswith(FLAVOR) else name, {})
            for r in f.get("resources") or []:
                res[r["name"]] = qparse(str(r["nominalQuota"]))
    return out


def below(quotas, pool):
    """What a Cohort's quotas hold below a pool ({flavor: {resource: n}}): every resource the
    Cohort lists for a flavor of the pool, and the GPUs of every flavor of the pool."""
    short = {}
    for fl, res in pool.items():
        got = quotas.get(fl, {})
        for r in set(got) | {GPU}:
            want = res.get(r, 0)
            if got.get(r, 0) < want:
                short["%s/%s" % (fl, r)] = (str(got.get(r, 0)), str(want))
    return short


def equal(quotas, pool):
    """The Cohort holds exactly the pool on every resource it lists, GPUs of every flavor."""
    if set(quotas) < set(pool):
        return False
    for fl, res in pool.items():
        got = quotas.get(fl, {})
        if GPU not in got:
            return False
        if any(got[r] != res.get(r, 0) for r in got):
            return False
    return True


class Watch:
    """Every event of one object from a kube-sim watch, with its arrival time, in a thread."""

    def __init__(self, port, token, collection, name, rv):
        self.log = EventLog()  # (monotonic arrival, type, resourceVersion as int, object)
        self.c = http.client.HTTPConnection("127.0.0.1", port, timeout=3600)
        self.c.request("GET", "%s?watch=1&fieldSelector=metadata.name%%3D%s&resourceVersion=%s"
                       % (collection, name, rv), headers={"Authorization": "Bearer " + token})
        self.r = self.c.getresponse()
        if self.r.status != 200:
            raise Failed("watch %s/%s: HTTP %d" % (collection, name, self.r.status))
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        try:
            for line in self.r:
                now = time.monotonic()
                ev = json.loads(line)
                obj = ev.get("object") or {}
                rv = int((obj.get("metadata") or {}).get("resourceVersion") or 0)
                self.log.append((now, ev.get("type"), rv, obj))
        except Exception:  # noqa: BLE001 - the stream ends when close() shuts the socket
            pass
        finally:
            self.log.end()

    def wait(self, pred, deadline, what):
        return self.log.wait(pred, 0, deadline - time.monotonic(), what)[1]

    def snapshot(self):
        return self.log.snapshot()

    def close(self):
        try:
            self.c.sock.shutdown(2)
        except (OSError, AttributeError):
            pass
        self.c.close()


class Agent:
    """One tau-node-agent for one Node, empty fake host root, its own token; log at --log-level
    info (200 agents at debug would mostly measure the disk)."""

    def __init__(self, work, name, addr, kubeconfig, level):
        root = os.path.join(work, "host-" + name)
        os.makedirs(os.path.join(root, "dev"), exist_ok=True)
        token = os.path.join(work, "token-" + name)
        with open(token, "w") as f:
            f.write(agent_token(name))
        self.log = open(os.path.join(work, "agent-" + name + ".log"), "a")
        self.p = subprocess.Popen([paths.AGENT_BIN, "--node-name", name, "--aggregator", addr,
                                   "--kubeconfig", kubeconfig, "--host-root", root,
                                   "--token-file", token, "--insecure", "--log-level", level],
                                  stdin=subprocess.DEVNULL, stdout=self.log, stderr=self.log)


def metrics(agg):
    """{name: value} of the unlabelled gauges of a replica's /metrics, or None when down."""
    try:
        st, body = agg.http("/metrics")
    except OSError:
        return None
    if st != 200:
        return None
    out = {}
    for line in body.splitlines():
        if line and not line.startswith("#") and "{" not in line:
            k, _, v = line.partition(" ")
            try:
                out[k] = float(v)
            except ValueError:
                pass
    return out


def pct_summary(xs):
    return {"median": statistics.median(xs), "max": max(xs), "min": min(xs), "n": len(xs)}


class Bench:
    def __init__(self, a):
        self.a = a
        self.deadline = time.monotonic() + a.deadline
        self.work = None
        self.sim = None
        self.aggs = []
        self.agents = []
        self.svc = None
        self.out = {"agents": a.agents, "lease_duration_s": LEASE_DURATION_S, "runs": {}}

    def until(self, seconds):
        return min(self.deadline, time.monotonic() + seconds)

    def wait(self, pred, seconds, what):
        return wait_for(pred, self.until(seconds) - time.monotonic(), what, interval=POLL_S)

    def req(self, method, path, body=None, ctype="application/json"):
        return kube_request(self.port, self.admin, method, path, body, ctype=ctype)

    # -- set-up --
    def setup(self):
        require_all()
        self.work = make_workdir("tau-bench-%s-" % os.path.basename(__file__)[:-3])
        n = self.a.agents
        n_a100 = n // 4
        self.nodes = []
        for i in range(n):
            a100 = i < n_a100
            name = ("fo-a100-%03d" % i) if a100 else ("fo-h100-%03d" % (i - n_a100))
            gpus = "4" if a100 else "8"
            self.nodes.append(node(name, "a100" if a100 else "h100", {
                "cpu": "96", "memory": "1800Gi", GPU: gpus, "pods": "110"}))
        self.victim = self.nodes[-1]["metadata"]["name"]  # an h100 node
        write_table(os.path.join(self.work, "tokens.json"), agent_tokens(self.nodes))
        with open(os.path.join(self.work, "seed.json"), "w") as f:
            json.dump({"kind": "List", "items": self.nodes}, f)
        self.kubeconfig = os.path.join(self.work, "kubeconfig")
        self.sim = Proc([paths.SIM_PYTHON, paths.KUBE_SIM, "--listen", "127.0.0.1:0",
                            "--kubeconfig-out", self.kubeconfig, "--tokens",
                            os.path.join(self.work, "tokens.json"), "--seed",
                            os.path.join(self.work, "seed.json"), "--crds",
                            os.path.join(ROOT, "charts/taugrid/crds"), "--crds",
                            os.path.join(ROOT, "tests/fixtures/kueue")], "kube-sim", self.work)
        self.port = int(self.sim.wait_line("ready ", timeout=120).split()[1])
        with open(self.kubeconfig) as f:
            self.admin = json.load(f)["users"][0]["user"]["token"]
        for path, obj in (
                ("/apis/tau.azure.com/v1alpha1/clusters", {
                    "apiVersion": "tau.azure.com/v1alpha1", "kind": "TauCluster",
                    "metadata": {"name": "cluster"},
                    "spec": {"managementMode": "Reconcile",
                             "queues": {"capacityTeamRef": {"name": TEAM}}}}),
                ("/apis/tau.azure.com/v1alpha1/namespaces/%s/teams" % NS, {
                    "apiVersion": "tau.azure.com/v1alpha1", "kind": "TauTeam",
                    "metadata": {"name": TEAM, "namespace": NS}, "spec": {}})):
            st, body = self.req("POST", path, obj)
            if st != 201:
                raise Failed("POST %s: %s %s" % (path, st, body))
        # The Service stand-in routes to whatever self.aggs holds at each connection.
        self.svc = ServiceProxy(self.aggs)

    def pool(self, cordoned):
        """The true pool {flavor: {resource: n}} with the victim cordoned or not."""
        nodes = [dict(x, spec={"unschedulable": True}) if cordoned and
                 x["metadata"]["name"] == self.victim else x for x in self.nodes]
        return {k: v["resources"] for k, v in expected_pool(nodes).items()}

    def start_agg(self, kind):
        return Aggregator(self.kubeconfig, self.work, sync_timeout=SYNC[kind], extra=(
            "--leader-elect", "--system-namespace", NS, "--no-workspace-controller",
            "--log-level", "info",
            # Every agent comes from this one host, and all reconnect at each failover.
            "--max-reviews-per-peer", "100000", "--max-pending-reviews", "100000",
            "--max-streams-per-peer", "100000"))

    def start_agents(self):
        t0 = time.monotonic()
        for x in self.nodes:
            self.agents.append(Agent(self.work, x["metadata"]["name"], self.svc.addr,
                                     self.kubeconfig, self.a.agent_log_level))
        return t0

    def check_alive(self):
        dead = [i for i, ag in enumerate(self.agents) if ag.p.poll() is not None]
        if dead:
            raise Failed("%d agents exited (first: %s, rc %s)" % (
                len(dead), self.nodes[dead[0]]["metadata"]["name"],
                self.agents[dead[0]].p.returncode))

    def leader(self):
        leaders = [ag for ag in self.aggs if ag.proc.p.poll() is None and
                   (metrics(ag) or {}).get("tau_aggregator_leader") == 1]
        return leaders[0] if len(leaders) == 1 else None

    def lease(self):
        st, obj = self.req("GET", LEASES + "/" + LEASE)
        return obj if st == 200 else None

    def cohort(self):
        st, obj = self.req("GET", COHORT + "/tau-team-" + TEAM)
        return obj if st == 200 else None

    def settled(self, leader, pool):
        """The leader established with every agent and the Cohort holding `pool`."""
        m = metrics(leader) or {}
        if m.get("tau_aggregator_pool_established") != 1 or \
                m.get("tau_aggregator_agents_connected") != self.a.agents:
            return None
        c = self.cohort()
        return c if c is not None and equal(cohort_quotas(c), pool) else None

    def cordon(self, on):
        st, body = self.req("PATCH", "/api/v1/nodes/" + self.victim,
                            {"spec": {"unschedulable": True if on else None}},
                            ctype="application/merge-patch+json")
        if st != 200:
            raise Failed("cordon %s: %s %s" % (self.victim, st, body))
        return int(body["metadata"]["resourceVersion"])

    # -- one failover --
    def run_once(self, kind, i):
        full, less = self.pool(False), self.pool(True)
        leader = self.wait(self.leader, 120, "one leader")
        follower = [ag for ag in self.aggs if ag is not leader][0]
        self.wait(lambda: self.settled(leader, full), 180,
                  "the leader established with %d agents, the Cohort holding the full pool"
                  % self.a.agents)
        self.cordon(True)
        cohort = self.wait(lambda: self.settled(leader, less), 60,
                           "the Cohort following the cordon of %s" % self.victim)
        if kind == "warm":
            self.wait(lambda: (metrics(follower) or {}).get(
                "tau_aggregator_pool_established") == 1, 120,
                "the follower's sync gate opened by its timeout")
        else:
            m = metrics(follower) or {}
            if m.get("tau_aggregator_pool_established") != 0:
                raise Failed("cold follower already established: %r" % m)
        self.check_alive()
        old = self.lease()
        holder = old["spec"]["holderIdentity"]
        cw = Watch(self.port, self.admin, COHORT, "tau-team-" + TEAM,
                   cohort["metadata"]["resourceVersion"])
        lw = Watch(self.port, self.admin, LEASES, LEASE, old["metadata"]["resourceVersion"])
        try:
            kill_rv = int(self.req("GET", "/api/v1/nodes?limit=1")[1]["metadata"]
                          ["resourceVersion"])
            t0 = time.monotonic()
            leader.proc.p.kill()
            leader.proc.p.wait(30)
            uncordon_rv = self.cordon(False)
            marks = {}
            answers = []  # established GetPool answers of the new leader
            end = self.until(self.a.timeout)
            while ("budget" not in marks or "established" not in marks or
                   "agents" not in marks or "ready" not in marks):
                now = time.monotonic()
                if now > end:
                    raise Failed("run %s/%d: after %.0f s still waiting; reached %s" % (
                        kind, i, now - t0, sorted(marks)))
                if follower.proc.p.poll() is not None:
                    raise Failed("the follower exited (rc %s)" % follower.proc.p.returncode)
                m = metrics(follower) or {}
                if "ready" not in marks and follower.http("/readyz")[0] == 200:
                    marks["ready"] = now - t0
                if "established" not in marks and m.get("tau_aggregator_pool_established") == 1:
                    if m.get("tau_aggregator_leader") == 1:
                        marks["established"] = now - t0
                if "agents" not in marks and \
                        m.get("tau_aggregator_agents_connected") == self.a.agents:
                    marks["agents"] = now - t0
                if m.get("tau_aggregator_leader") == 1:
                    try:
                        p = follower.pool()
                        if p.established:
                            answers.append(p)
                    except grpc.RpcError:
                        pass
                for ev in cw.snapshot():
                    if ev[1] in ("ADDED", "MODIFIED") and ev[2] > uncordon_rv and \
                            equal(cohort_quotas(ev[3]), full):
                        marks.setdefault("budget", ev[0] - t0)
                time.sleep(POLL_S)
            lease_ev = lw.wait(lambda e: e[1] == "MODIFIED" and
                               (e[3].get("spec") or {}).get("holderIdentity") not in
                               (None, "", holder), self.until(10), "the Lease's new holder")
            marks["lease"] = lease_ev[0] - t0
            # Safety: every Cohort version committed after the kill holds at least the true pool.
            versions = [e for e in cw.snapshot() if e[1] in ("ADDED", "MODIFIED")
                        and e[2] > kill_rv]
            bad = []
            for e in versions:
                short = below(cohort_quotas(e[3]), full if e[2] > uncordon_rv else less)
                if short:
                    bad.append("Cohort resourceVersion %d below the true pool (got, pool): %s"
                               % (e[2], short))
            want = {fl: (res.get(GPU, 0), res.get("cpu", 0)) for fl, res in full.items()}
            alt = {fl: (res.get(GPU, 0), res.get("cpu", 0)) for fl, res in less.items()}
            for p in answers:
                got = {f.name: (qparse(f.resources.get(GPU, "0")),
                                qparse(f.resources.get("cpu", "0"))) for f in p.flavors}
                if got != want and got != alt:
                    bad.append("GetPool on the new leader established with %s (pool %s)"
                               % (got, want))
                    break
            if bad:
                raise Failed("run %s/%d: %s" % (kind, i, "; ".join(bad)))
            row = dict(marks, cohort_writes=len(versions), pool_answers=len(answers))
        finally:
            cw.close()
            lw.close()
        # The killed replica comes back as the next run's follower.
        idx = self.aggs.index(leader)
        leader.stop()  # reaped already: closes its channel and log
        self.aggs[idx] = self.start_agg(kind)
        return row

    def scenario(self, kind):
        for ag in self.aggs:
            ag.stop()
        self.aggs[:] = [self.start_agg(kind) for _ in range(2)]
        if not self.agents:
            t0 = self.start_agents()
            leader = self.wait(self.leader, 120, "one leader")
            self.wait(lambda: (metrics(leader) or {}).get("tau_aggregator_agents_connected")
                      == self.a.agents and (metrics(leader) or {}).get(
                          "tau_aggregator_pool_established") == 1, 300,
                      "the first leader established with every agent")
            self.out["cold_start_s"] = time.monotonic() - t0
        rows = []
        for i in range(self.a.runs):
            row = self.run_once(kind, i + 1)
            print("bench/failover: %s run %d: %s" % (kind, i + 1, ", ".join(
                "%s %.1f s" % (k, row[k]) for k in
                ("lease", "ready", "agents", "established", "budget")) +
                ", %d Cohort writes, none below the true pool" % row["cohort_writes"]),
                flush=True)
            rows.append(row)
        summary = {k: pct_summary([r[k] for r in rows]) for k in
                   ("lease", "ready", "agents", "established", "budget")}
        summary["ratio_budget_to_floor"] = {
            "median": summary["budget"]["median"] / LEASE_DURATION_S,
            "max": summary["budget"]["max"] / LEASE_DURATION_S}
        self.out["runs"][kind] = {"initial_sync_timeout": SYNC[kind], "rows": rows,
                                  "summary": summary}

    def stop(self):
        if self.svc is not None:
            self.svc.close()
        for ag in self.agents:
            if ag.p.poll() is None:
                ag.p.terminate()
        for ag in self.agents:
            try:
                ag.p.wait(30)
            except subprocess.TimeoutExpired:
                ag.p.kill()
                ag.p.wait()
            ag.log.close()
        for ag in self.aggs:
            if ag.proc.p.poll() is None:
                ag.stop()
        if self.sim is not None:
            self.sim.stop()
        remove_workdir(self.work)


def report(out):
    print("bench/failover: %d agents, 2 replicas behind the Service stand-in; floor: the Lease "
          "duration, %.0f s" % (out["agents"], out["lease_duration_s"]))
    if "cold_start_s" in out:
        print("  reference: cold start (agents started -> first leader established with every "
              "agent) %.1f s" % out["cold_start_s"])
    for kind, r in out["runs"].items():
        s = r["summary"]
        print("  %s follower (--initial-sync-timeout %s), %d runs, seconds from the SIGKILL, "
              "median / max:" % (kind, r["initial_sync_timeout"], s["budget"]["n"]))
        for k, what in (("lease", "Lease taken by the other replica"),
                        ("ready", "it is Ready (the Service routes to it)"),
                        ("agents", "every agent reconnected to it"),
                        ("established", "its pool established"),
                        ("budget", "Cohort written with the full pool")):
            print("    %-40s %6.1f / %6.1f" % (what, s[k]["median"], s[k]["max"]))
        print("    budget writable again / floor: %.2fx median, %.2fx max; no Cohort write "
              "below the true pool (%d versions checked)" % (
                  s["ratio_budget_to_floor"]["median"], s["ratio_budget_to_floor"]["max"],
                  sum(x["cohort_writes"] for x in r["rows"])))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--agents", type=int, default=200)
    ap.add_argument("--runs", type=int, default=3, help="failovers per follower kind")
    ap.add_argument("--follower", default="cold,warm",
                    help="comma-separated: cold (gate waits for the agents), warm (gate open)")
    ap.add_argument("--timeout", type=float, default=180,
                    help="bound on one failover, s (a longer one is a failure, not a figure)")
    ap.add_argument("--deadline", type=float, default=1800, help="bound on the whole run, s")
    ap.add_argument("--agent-log-level", default="info")
    ap.add_argument("--json", help="also write the figures here")
    a = ap.parse_args()
    kinds = [k for k in a.follower.split(",") if k]
    if a.agents < 4 or a.runs < 1 or not kinds or any(k not in SYNC for k in kinds):
        ap.error("need --agents >= 4, --runs >= 1, --follower from cold,warm")
    paths.AGG_BIN = os.path.join(a.build, "tau-aggregator")
    paths.AGENT_BIN = os.path.join(a.build, "tau-node-agent")
    paths.CLI_BIN = os.path.join(a.build, "tau")
    for b in (paths.AGG_BIN, paths.AGENT_BIN):
        if not os.access(b, os.X_OK):
            print("bench/failover: %s is not built" % b, file=sys.stderr)
            return 1
    faulthandler.dump_traceback_later(a.deadline + 120, exit=True)
    b = Bench(a)
    rc = 0
    try:
        b.setup()
        for k in kinds:
            b.scenario(k)
    except (Failed, AssertionError) as e:
        print("bench/failover: FAILED: %s" % e, file=sys.stderr)
        rc = 1
    finally:
        b.stop()
    report(b.out)
    if a.json:
        with open(a.json, "w") as f:
            json.dump(b.out, f, indent=1)
    return rc


if __name__ == "__main__":
    sys.exit(main())
