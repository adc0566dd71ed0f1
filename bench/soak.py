#!/usr/bin/python3
"""Fault soak: the team capacity budget under API faults, churn and aggregator SIGKILLs.

    /usr/bin/python3 bench/soak.py [--build DIR] [--duration 300] [--kills 20] [--agents 200]
        [--seed N] [--churn-rate 3] [--lag 30] [--max-writes-per-minute 75] [--steady 20]
        [--json FILE] [--keep]

Everything runs on 127.0.0.1: kube-sim (TLS, `--authz rbac`, the Kueue and taugrid CRDs, the
chart's RBAC, set up as the budget e2e suite does: tests/e2e/harness/budget.py) with
`--history-events`, one real tau-aggregator (its ServiceAccount's token only,
MultipleWorkspaces=true) on a fixed gRPC port, and --agents agents: a swarm of Report streams
in this process (tests/e2e/aggregator/agent.FakeAgent, one node-bound token each, reconnecting
with jittered backoff as the real agent does), each reporting its Node as the soak changes it.
For --duration seconds, all at once:

  faults   every API request: 10 % answered 5xx (500, 503, 504), 5 % 429 with Retry-After 1;
           every watch closed every 10 s; the watch cache compacted every 30 s (so informers
           relist after 410).
  churn    --churn-rate node changes a second (cordon/uncordon, a label, a move to another
           GPU class, an allocatable change, a Ready flip, delete and re-add a few seconds
           later); the agent of each node reports what its Node now says.
  objects  TauWorkspaces of the capacity team created and deleted (up to 3 at a time), the
           team's labels changed, an explicit-quota TauTeam without quota created and deleted.
  kills    the aggregator SIGKILLed --kills times at random moments (seeded), restarted at
           once on the same port (its sync gate waits for the agents, --sync-timeout).

Invariants, checked continuously from kube-sim's history (GET /sim/history: every committed
write, faults and compaction notwithstanding) by replaying the Node events into the true pool
(tests/e2e/harness/aggregator.py expected_pool, exact Fractions) after every resourceVersion:

  I1 budget floor  every write of the root Cohort tau-team-research holds, per flavor and
                   resource, at least the smallest true pool of the last --lag seconds before
                   it (P6: it follows the pool down, with the coalescing and fault delays),
                   nodes created in that window left out (one enters the pool once its agent
                   has reported, which the history does not show);
                   all-zero writes (P5) are allowed only with the team's QuotaReady reason
                   BudgetZeroed or ConflictDetected and are listed.  The Cohort is never
                   deleted.
  I2 budget cap    nor more than the largest true pool in that window (over-admission).
  I3 no write loop per sliding minute, commits on Cohorts, ClusterQueues, ResourceFlavors,
                   TauTeams and TauClusters <= --max-writes-per-minute each (the budget
                   writes at most one pass a second, plus one per restart); after the churn,
                   a --steady second window with no write request on them at all.
  I4 no crash      kube-sim and every aggregator the soak did not kill stay up; an aggregator
                   stopped with SIGTERM exits 0; no sanitizer report in their logs.
  I5 fresh state   at the end (faults cleared, churn stopped) the Cohort, ResourceFlavors,
                   workspace ClusterQueues, TauTeam and TauCluster status equal what the
                   oracle computes from the Node objects; then a fresh aggregator started
                   against the soaked cluster (--budget-resync 2s) settles and makes 3 more
                   budget passes without changing any of them.

Prints a summary; exit 0 when every invariant held, 1 with each broken invariant and its
evidence (the offending write from kube-sim's history, the true pool around it), 2 on bad usage.
"""
import argparse
import calendar
import faulthandler
import json
import os
import random
import signal
import socket
import statistics
import sys
import threading
import time
from fractions import Fraction

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
import grpc  # noqa: E402

import harness_path  # noqa: E402,F401  (puts tests/e2e on sys.path)
from harness import agents, paths, proto  # noqa: E402
from harness import budget as h  # noqa: E402
from harness import workspace as wst  # noqa: E402
from harness.aggregator import expected_pool  # noqa: E402
from harness.churn import Api, Failed, Swarm  # noqa: E402
from harness.quantity import parse as qparse  # noqa: E402
from harness.tokens import agent_token  # noqa: E402
from harness.waits import wait_for  # noqa: E402

TEAM = "research"
COHORT = h.cohort_name(TEAM)
# GPU classes and their nodes' allocatable (share of the nodes); h200 nodes can move to h100.
CLASSES = (("h100", h.H100, 0.5), ("h200", h.H100_B, 0.25), ("a100", h.A100, 0.25))
WATCHED = ("nodes", "cohorts", "clusterqueues", "resourceflavors", "teams", "clusters")
FRESH_PASSES = 3  # budget passes the fresh aggregator makes, after it agrees, writing nothing
LOOP_KINDS = ("cohorts", "clusterqueues", "resourceflavors", "teams", "clusters")


def now():
    return time.monotonic()


def flat_pool(pool):
    """expected_pool's answer as {(flavor, resource): Fraction}."""
    return {(h.flavor_name(cls), r): v for cls, f in pool.items()
            for r, v in f["resources"].items()}


def quotas(cohort):
    return {(f["name"], r["name"]): r.get("nominalQuota")
            for g in h.norm_groups((cohort.get("spec") or {}).get("resourceGroups"))
            for f in g["flavors"] for r in f["resources"]}


def show(d):
    return ", ".join("%s/%s=%s" % (k[0], k[1], v) for k, v in sorted(d.items()))


# -- the soak -------------------------------------------------------------------------------------

class Soak:
    def __init__(self, a):
        self.a = a
        self.rng = random.Random(a.seed)
        self.halt = threading.Event()       # ends churn, objects, faults, kills
        self.failures = []
        self.flock = threading.Lock()
        self.c = self.api = self.swarm = self.agg = None
        self.agg_lock = threading.Lock()
        self.aggs = []                       # every aggregator started: (Aggregator, how it ended)
        self.kills = []                      # (time, resourceVersion)
        self.restart_s = []
        self.real = set()
        self.real_agents = {}
        self.started_at = []
        self.ops = {}
        self.threads = []
        self.t0 = now()
        self.port = None
        self.names = []
        self.home = {}                       # node -> its class at creation
        # checker state
        self.hist_rv = 0
        self.live_nodes = {}
        self.timeline = []                   # (rv, unix time, flat pool)
        self.cohort_writes = []              # (rv, unix time, quotas)
        self.commits = {k: [] for k in LOOP_KINDS}
        self.zeroings = []
        self.pending_zero = []
        self.born = {}                       # node -> when its current incarnation was created
        self.team_reason = None
        self.staleness = []
        self.inexact = 0

    def fail(self, invariant, evidence):
        with self.flock:
            if len(self.failures) < 50:
                self.failures.append((invariant, evidence))
            print("soak: INVARIANT %s BROKEN: %s" % (invariant, evidence), file=sys.stderr,
                  flush=True)

    def count(self, op):
        self.ops[op] = self.ops.get(op, 0) + 1

    # -- set-up --
    def setup(self):
        a = self.a
        n = a.agents
        plan = []
        for cls, alloc, share in CLASSES:
            plan += [cls] * int(round(n * share))
        plan = (plan + [CLASSES[0][0]] * n)[:n]
        self.names = ["soak-%s-%03d" % (cls, i) for i, cls in enumerate(plan)]
        self.home = dict(zip(self.names, plan))
        self.c = h.Cluster(self.names, ["--history-events", "2000000",
                                          "--fault-seed", str(a.seed)])
        self.api = Api(self.c.sim, self.halt)
        for name in self.names:
            self.c.create(self.node_obj(name), h.NODES)
        self.c.create(h.node("soak-cpu-0", None, h.CPU), h.NODES)
        self.c.create(h.team(TEAM), h.TEAMS)
        self.c.create(h.tau_cluster(), h.TAU + "/clusters")
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        self.port = s.getsockname()[1]
        s.close()
        self.swarm = Swarm("127.0.0.1:%d" % self.port, random.Random(a.seed + 1))
        # Every len/real-th node gets a real tau-node-agent (following its own Node through the
        # faulty API); the swarm plays the others.
        step = max(1, len(self.names) // a.real_agents) if a.real_agents else 0
        self.real = set(self.names[::step][:a.real_agents]) if step else set()
        for name in self.names:
            if name not in self.real:
                self.swarm.set_node(name, self.c.get(h.NODES + "/" + name))
        self.agg = self.start_aggregator("agg-00")
        self.swarm.start()
        for name in sorted(self.real):
            self.start_real_agent(name)
        team_uid = self.c.team(TEAM)["metadata"]["uid"]
        want = h.Shape().groups(self.c.pool())
        self.c.wait_ok(lambda: h.cohort_diffs(self.c.cohort(TEAM), TEAM, team_uid, want),
                       "the first Cohort holds the pool", timeout=120)

    def report(self, name, obj):
        """The node's agent learns its Node: the swarm is told; a real agent watches it."""
        if name not in self.real:
            self.swarm.set_node(name, obj)

    def start_real_agent(self, name):
        work = self.c.env.tmp
        tok = os.path.join(work, "token-" + name)
        with open(tok, "w") as f:
            f.write(agent_token(name))
        host = agents.HostTree(work)
        self.real_agents[name] = agents.Agent(work, [
            "--node-name", name, "--kubeconfig", self.c.sim.kubeconfig,
            "--aggregator", "127.0.0.1:%d" % self.port, "--insecure", "--token-file", tok,
            "--host-root", host.root, "--log-level", "warn"])

    def node_obj(self, name):
        cls = self.home[name]
        alloc = dict(cls_alloc(cls))
        return h.node(name, cls, alloc, labels={"tau.test/rack": "r0"})

    def start_aggregator(self, name, *extra):
        t = now()
        agg = self.c.start_aggregator(
            name, "--grpc-listen", "127.0.0.1:%d" % self.port, "--initial-sync-timeout",
            "%ds" % self.a.sync_timeout, "--feature-gates", "MultipleWorkspaces=true",
            # Every agent comes from this one host, and all reconnect at each restart.
            "--max-reviews-per-peer", "100000", "--max-pending-reviews", "100000",
            "--max-streams-per-peer", "100000", *extra)
        self.restart_s.append(now() - t)
        self.aggs.append([agg, None])
        self.started_at.append(time.time())
        return agg

    def established_after(self):
        """For each aggregator: seconds from its start to its "pool established" log line
        (None: killed or stopped before), and that line's missing_nodes."""
        out = []
        for (agg, _), t in zip(self.aggs, self.started_at):
            got = (None, None)
            try:
                log = agg.log()
            except OSError:
                log = ""
            for line in log.splitlines():
                if 'msg="pool established"' in line:
                    ts = line.split("ts=", 1)[1].split(" ", 1)[0]
                    when = calendar.timegm(time.strptime(ts[:19], "%Y-%m-%dT%H:%M:%S")) + \
                        float("0" + ts[19:-1])
                    missing = line.rsplit("missing_nodes=", 1)[-1].strip()
                    got = (when - t, missing)
                    break
            out.append(got)
        return out

    # -- activities --
    def churn(self):
        a, rng = self.a, random.Random(self.a.seed + 2)
        readd = []   # (due, name)
        period = 1.0 / a.churn_rate
        next_t = now()
        while not self.halt.is_set():
            next_t += period
            self.halt.wait(max(0.0, next_t - now()))
            if self.halt.is_set():
                break
            t = now()
            for due, name in [x for x in readd if x[0] <= t]:
                readd.remove((due, name))
                obj = self.api.must("POST", h.NODES, self.node_obj(name))
                self.report(name, obj)
                self.count("re-add")
            gone = {n for _, n in readd}
            name = rng.choice([n for n in self.names if n not in gone])
            path = h.NODES + "/" + name
            cur = self.api.must("GET", path)
            op = rng.choices(["cordon", "label", "class", "allocatable", "ready", "delete"],
                             [3, 2, 1, 3, 1, 1])[0]
            if op == "cordon":
                obj = self.api.merge(path, {"spec": {"unschedulable": None if (
                    cur.get("spec") or {}).get("unschedulable") else True}})
            elif op == "label":
                obj = self.api.merge(path, {"metadata": {"labels": {
                    "tau.test/rack": "r%d" % rng.randrange(8)}}})
            elif op == "class":
                cls = cur["metadata"]["labels"].get(h.GPU_CLASS)
                if cls == "a100":
                    op = "label"
                    obj = self.api.merge(path, {"metadata": {"labels": {
                        "tau.test/zone": "z%d" % rng.randrange(4)}}})
                else:
                    obj = self.api.merge(path, {"metadata": {"labels": {
                        h.GPU_CLASS: "h100" if cls == "h200" else "h200"}}})
            elif op == "allocatable":
                gpus = rng.choice(["2", "4", "8"])
                obj = self.api.merge(path + "/status", {"status": {"allocatable": {
                    "nvidia.com/gpu": gpus, "cpu": rng.choice(["64", "95500m", "96"])}}})
            elif op == "ready":
                conds = [dict(c) for c in (cur.get("status") or {}).get("conditions") or []]
                for c in conds:
                    if c.get("type") == "Ready":
                        c["status"] = "False" if c.get("status") == "True" else "True"
                obj = self.api.must("PATCH", path + "/status",
                                    {"status": {"conditions": conds}},
                                    "application/strategic-merge-patch+json")
            else:
                self.api.must("DELETE", path, ok=(200, 202))
                self.report(name, None)
                readd.append((t + rng.uniform(1, 6), name))
                obj = None
            if obj is not None:
                self.report(name, obj)
            self.count(op)
        for _, name in readd:   # the soak ends with every node present
            obj = self.api.must("POST", h.NODES, self.node_obj(name))
            self.report(name, obj)
            self.count("re-add")

    def objects(self):
        rng = random.Random(self.a.seed + 3)
        live, i = [], 0
        while not self.halt.wait(rng.uniform(3, 8)):
            r = rng.random()
            if r < 0.5 and len(live) < 3:
                ws = "soak-ws-%d" % i
                i += 1
                self.api.must("POST", h.WORKSPACES, wst.workspace(ws, ns="ml-" + ws, team=TEAM))
                live.append(ws)
                self.count("workspace-create")
            elif r < 0.75 and live:
                ws = live.pop(0)
                self.api.must("DELETE", h.WORKSPACES + "/" + ws, ok=(200, 202))
                self.count("workspace-delete")
            elif r < 0.9:
                self.api.merge(h.TEAMS + "/" + TEAM, {"metadata": {"labels": {
                    "tau.test/cost-center": "cc%d" % rng.randrange(5)}}})
                self.count("team-label")
            else:
                st, _ = self.api.call("GET", h.TEAMS + "/visitors", ok=(200, 404))
                if st == 404:
                    self.api.must("POST", h.TEAMS, h.team("visitors"))
                    self.count("team-create")
                else:
                    self.api.must("DELETE", h.TEAMS + "/visitors", ok=(200, 202))
                    self.count("team-delete")
        self.workspaces = live

    def faults(self):
        k = 0
        while not self.halt.wait(10):
            k += 1
            body = {"closeWatches": True}
            if k % 3 == 0:
                body["compact"] = True
                self.count("compact")
            st, _ = self.c.sim.req("POST", "/sim/faults", body, token=False)
            self.count("close-watches")

    def killer(self):
        a, rng = self.a, random.Random(self.a.seed + 4)
        span = max(1.0, a.duration - 25)
        times = sorted(self.t0 + 10 + rng.uniform(0, span) for _ in range(a.kills))
        for i, at in enumerate(times):
            if self.halt.wait(max(0.0, at - now())):
                return
            with self.agg_lock:
                agg = self.agg
                if agg.p.poll() is not None:
                    self.fail("I4 no crash", "aggregator %s exited %s on its own before kill %d:"
                              "\n%s" % (os.path.basename(agg.log_path), agg.p.returncode,
                                        i + 1, agg.log()[-3000:]))
                else:
                    agg.p.send_signal(signal.SIGKILL)
                    agg.p.wait(30)
                self.aggs[-1][1] = "SIGKILL"
                rv = self.c.sim.req("GET", "/sim/state", token=False)[1]["resourceVersion"]
                self.kills.append((time.time(), int(rv)))
                agg.close_channel()
                self.agg = self.start_aggregator("agg-%02d" % (i + 1))

    def monitor(self):
        while not self.halt.wait(0.5):
            if self.c.sim.proc.poll() is not None:
                self.fail("I4 no crash", "kube-sim exited %s:\n%s" % (
                    self.c.sim.proc.returncode, self.c.sim.stderr()[-3000:]))
                self.halt.set()
            with self.agg_lock:
                agg = self.agg
                if agg.p.poll() is not None and self.aggs[-1][1] is None:
                    self.aggs[-1][1] = "exited %s" % agg.p.returncode
                    self.fail("I4 no crash", "aggregator %s exited %s on its own:\n%s" % (
                        os.path.basename(agg.log_path), agg.p.returncode, agg.log()[-3000:]))
                    self.agg = self.start_aggregator("agg-restart-%d" % len(self.aggs))
            for name, ag in list(self.real_agents.items()):
                if not ag.alive():
                    del self.real_agents[name]
                    self.fail("I4 no crash", "tau-node-agent of %s exited %s:\n%s" % (
                        name, ag.proc.returncode, ag.logs()[-3000:]))
            if self.swarm.error is not None:
                self.fail("I4 no crash", "the agent swarm failed: %r" % self.swarm.error)
                self.halt.set()

    # -- the checker --
    def check_history(self):
        st, hist = self.c.sim.req("GET", "/sim/history?resource=%s&since=%d" % (
            ",".join(WATCHED), self.hist_rv), token=False)
        if st != 200:
            raise Failed("GET /sim/history -> %s" % st)
        if not hist["complete"]:
            raise Failed("kube-sim's history lost events after %d" % self.hist_rv)
        for ev in hist["items"]:
            rv, t, res, name, obj = (int(ev["resourceVersion"]), ev["time"], ev["resource"],
                                     ev["name"], ev["object"])
            self.hist_rv = rv
            if res in self.commits:
                self.commits[res].append(t)
            if res == "nodes":
                if ev["type"] == "DELETED":
                    self.live_nodes.pop(name, None)
                else:
                    self.live_nodes[name] = obj
                live = [n for n in self.live_nodes.values()
                        if not n["metadata"].get("deletionTimestamp")]
                if ev["type"] == "ADDED":
                    self.born[name] = t
                counted = expected_pool(live)
                pool = flat_pool(counted)
                if not self.timeline or self.timeline[-1][2] != pool:
                    per_node = {n: {(h.flavor_name(cls), r): qparse(q) for r, q in
                                    self.live_nodes[n]["status"]["allocatable"].items()}
                                for cls, f in counted.items() for n in f["nodes"]}
                    self.timeline.append((rv, t, pool, per_node))
            elif res == "teams" and name == TEAM and ev["type"] != "DELETED":
                c = wst.cond(obj, "QuotaReady") or {}
                self.team_reason = c.get("reason")
                if self.pending_zero and c.get("reason") != "BudgetApplied":
                    self.zero_failed(c)
            elif res == "cohorts" and name == COHORT:
                if ev["type"] == "DELETED":
                    self.fail("I1 budget floor", "Cohort %s deleted at resourceVersion %d" % (
                        COHORT, rv))
                    continue
                self.check_cohort(rv, t, obj)
        return hist

    def check_cohort(self, rv, t, obj):
        got = quotas(obj)
        self.cohort_writes.append((rv, t, got))
        if not self.timeline:
            return
        # The true pools the writer may have seen: the one in force at t - lag, and every later
        # one committed before this write.
        start = t - self.a.lag
        window, entries = [], []
        for i in range(len(self.timeline) - 1, -1, -1):
            prv, pt, pool, per_node = self.timeline[i]
            if prv > rv:
                continue
            window.append((prv, pt, pool))
            entries.append(per_node)
            if pt <= start:
                break
        window.reverse()
        entries.reverse()
        # A node (re)created in the window enters the pool only once its agent has reported
        # (docs/aggregator.md: the report lets it in), which the history cannot show: the floor
        # leaves such nodes out.
        fresh = {n for n, b in self.born.items() if b > start}
        floors = []
        for (_, _, pool), per_node in zip(window, entries):
            f = dict(pool)
            for n in fresh & set(per_node):
                for k, v in per_node[n].items():
                    f[k] = f.get(k, Fraction(0)) - v
            floors.append(f)
        # Staleness: how long before the write the pool it holds was last true.
        nonzero = {k: v for k, v in got.items() if v != 0}
        match = [pt for prv, pt, pool in window
                 if {k: v for k, v in pool.items() if v != 0} == nonzero]
        if match:
            later = [pt for prv, pt, _ in window if pt > match[-1]]
            self.staleness.append(max(0.0, t - later[0]) if later else 0.0)
        else:
            self.inexact += 1
        if got and all(v == 0 for v in got.values()):
            # P5: allowed for a cause; the soak makes none (no conflict, a valid selector, a
            # gate that never closes), so each one is reported with the reason the team gives.
            self.zeroings.append((rv, t, self.team_reason))
            self.pending_zero.append((rv, t, obj))
            return
        keys = set(got)
        for _, _, pool in window:
            keys |= set(pool)
        low, high = {}, {}
        for k in keys:
            vals = [pool.get(k, Fraction(0)) for _, _, pool in window]
            floor = min(f.get(k, Fraction(0)) for f in floors)
            v = got.get(k, Fraction(0))
            if not isinstance(v, Fraction) or v < floor:
                low[k] = (v, floor)
            elif v > max(vals):
                high[k] = (v, max(vals))
        for inv, bad in (("I1 budget floor", low), ("I2 budget cap", high)):
            if bad:
                self.fail(inv, self.node_diff() + "; Cohort %s written at resourceVersion %d (%s, %.1f s into the "
                          "soak, aggregator %s): %s; true pool %s over the %.0f s before it "
                          "(nodes created in it left out of the floor: %s; resourceVersions %s); the pool then: %s; the write: %s" % (
                              COHORT, rv, time.strftime("%H:%M:%S", time.gmtime(t)),
                              t - self.t_unix0, self.agg_at(t),
                              ", ".join("%s/%s %s (want %s %s)" % (
                                  k[0], k[1], v[0], "at least" if bad is low else "at most",
                                  v[1]) for k, v in sorted(bad.items())),
                              "min" if bad is low else "max", self.a.lag, sorted(fresh),
                              [w[0] for w in window], show(window[-1][2]),
                              json.dumps(obj.get("spec"))[:1500]))

    def zero_failed(self, cond):
        for rv, t, obj in self.pending_zero:
            self.fail("I1 budget floor", "Cohort %s zeroed (P5) at resourceVersion %d (%.1f s "
                      "into the soak, aggregator %s) for no cause the soak made; the team "
                      "says %s: %s; the write: %s" % (
                          COHORT, rv, t - self.t_unix0, self.agg_at(t), cond.get("reason"),
                          cond.get("message"), json.dumps(obj.get("spec"))[:800]))
        self.pending_zero = []

    def node_diff(self):
        """Evidence: the nodes the running aggregator counts now against the Nodes' answer."""
        live = [n for n in self.live_nodes.values() if not n["metadata"].get("deletionTimestamp")]
        want = {n for f in expected_pool(live).values() for n in f["nodes"]}
        agg = self.agg
        try:
            got, token = {}, ""
            while True:
                r = agg.unary("ListNodes", proto.query().ListNodesRequest(page_token=token),
                              proto.query().ListNodesResponse)
                got.update({n.name: n for n in r.nodes})
                token = r.next_page_token
                if not token:
                    break
        except (grpc.RpcError, AttributeError) as e:
            return "(ListNodes of the running aggregator failed: %s)" % e
        counted = {n for n, st in got.items() if st.counted}
        return ("now the running aggregator %s counts %d nodes, the Nodes say %d; counted only "
                "by it: %s; only by the Nodes: %s" % (
                    os.path.basename(agg.log_path), len(counted), len(want),
                    sorted(counted - want), ["%s (%s)" % (n, "; ".join(got[n].reasons)
                                                         if n in got else "no record")
                                             for n in sorted(want - counted)]))

    def agg_at(self, t):
        alive = "agg-00"
        for i, (kt, _) in enumerate(self.kills):
            if kt <= t:
                alive = "agg-%02d (after kill %d)" % (i + 1, i + 1)
        return alive

    def checker(self):
        while not self.halt.wait(1.0):
            try:
                self.check_history()
                self.check_rates()
            except Failed as e:
                self.fail("I1 budget floor", "cannot check: %s" % e)
                self.halt.set()

    def check_rates(self):
        bound = self.a.max_writes_per_minute
        for kind, ts in self.commits.items():
            j = 0
            for i in range(len(ts)):
                while ts[i] - ts[j] > 60:
                    j += 1
                if i - j + 1 > bound:
                    self.fail("I3 no write loop", "%d commits on %s within 60 s ending %s "
                              "(bound %d)" % (i - j + 1, kind, time.strftime(
                                  "%H:%M:%S", time.gmtime(ts[i])), bound))
                    self.commits[kind] = []
                    break

    def max_per_minute(self, ts):
        best, j = 0, 0
        for i in range(len(ts)):
            while ts[i] - ts[j] > 60:
                j += 1
            best = max(best, i - j + 1)
        return best

    # -- the end --
    def end_state_diffs(self):
        c = self.c
        pool = c.pool()
        d = []
        co = c.cohort(TEAM)
        if co is None:
            return ["Cohort %s does not exist" % COHORT]
        got, want = quotas(co), flat_pool(pool)
        for k in set(got) | set(want):
            if got.get(k, Fraction(0)) != want.get(k, Fraction(0)):
                d.append("Cohort %s/%s = %s, the Nodes say %s" % (
                    k[0], k[1], got.get(k), want.get(k, Fraction(0))))
        team_uid = c.team(TEAM)["metadata"]["uid"]
        groups = h.norm_groups(co["spec"].get("resourceGroups"))
        d += h._owner_diffs(co, {h.MANAGED_BY: "taugrid", h.TEAM_LABEL: TEAM},
                            {h.TEAM_UID: team_uid})
        cluster_uid = c.cluster()["metadata"]["uid"]
        flavors = sorted(f["name"] for g in groups for f in g["flavors"])
        for f in flavors:
            d += h.rf_diffs(c.get(h.RFS + "/" + f), f[len("taugrid-gpu-"):], cluster_uid)
        for ws in c.items(h.WORKSPACES):
            name = ws["metadata"]["name"]
            if ws["metadata"].get("deletionTimestamp"):
                continue
            d += h.cq_diffs(c.get(h.CQS + "/" + h.cq_name(name)), name, ws["metadata"]["uid"],
                            TEAM, "ml-" + name, groups)
        live_ws = {h.cq_name(w["metadata"]["name"]) for w in c.items(h.WORKSPACES)}
        d += ["ClusterQueue %s of no workspace" % q for q in c.ours(h.CQS) if q not in live_ws]
        d += c.team_ready_diffs(TEAM)
        d += c.cluster_ready_diffs(pool)
        return d

    def owned_state(self):
        """What the budget owns, for comparing two aggregators' results."""
        def clean(o):
            if o is None:
                return None
            o = json.loads(json.dumps(o))
            md = o.get("metadata", {})
            for k in ("resourceVersion", "managedFields", "generation"):
                md.pop(k, None)
            for cnd in (o.get("status") or {}).get("conditions") or []:
                cnd.pop("lastTransitionTime", None)
            return o
        c = self.c
        out = {"cohort": clean(c.cohort(TEAM)), "team": clean(c.team(TEAM)),
               "cluster": clean(c.cluster())}
        for path in (h.RFS, h.CQS):
            for o in c.items(path):
                out["%s/%s" % (path.rsplit("/", 1)[1], o["metadata"]["name"])] = clean(o)
        return out

    def finish(self):
        a, c = self.a, self.c
        c.faults("DELETE")
        print("soak: churn over at %.0f s; faults cleared; settling" % (now() - self.t0),
              flush=True)
        # I5 (oracle): the soaked system settles on what the Nodes say.
        c.wait_ok(self.end_state_diffs, "the soaked state equals the computation from the Nodes",
                  timeout=a.settle)
        self.check_history()
        # I3: a steady window, no write request at all.
        c.reset_stats()
        time.sleep(a.steady)  # a measured window, not a wait
        w = c.writes(LOOP_KINDS)
        if w:
            self.fail("I3 no write loop", "write requests in a %.0f s steady window after the "
                      "churn: %s" % (a.steady, w))
        self.check_history()
        # I5 (fresh aggregator): SIGTERM the soaked one, start a new one, nothing changes.
        before = self.owned_state()
        with self.agg_lock:
            rc = self.agg.stop()
            self.aggs[-1][1] = "SIGTERM, exit %s" % rc
            if rc != 0:
                self.fail("I4 no crash", "aggregator %s exited %s on SIGTERM:\n%s" % (
                    os.path.basename(self.agg.log_path), rc, self.agg.log()[-3000:]))
            rv0 = self.hist_rv
            # A pass every 2 s, so that passes after it agrees can be counted (below).
            fresh = self.agg = self.start_aggregator("agg-fresh", "--budget-resync", "2s")
        # Its own inventory established with every agent reconnected and reviewed (missingCount
        # 0: not the --sync-timeout path, which counts Node objects with every agent refused),
        # then a budget pass on it: only then has it computed the budget afresh.
        simtest_wait(lambda: pool_established(fresh, every_agent=True), a.settle,
                     "the fresh aggregator's pool established with every agent reporting")
        simtest_wait(lambda: 'msg="budget reconciled" state=BudgetApplied' in fresh.log(),
                     a.settle, "the fresh aggregator's budget pass on its established pool")
        c.wait_ok(self.end_state_diffs, "the fresh aggregator agrees", timeout=a.settle)
        # Waited for: FRESH_PASSES more budget passes of the fresh aggregator after it agreed
        # (tau_budget_passes_total; a pass counts once its writes are done, a pass deferred by
        # the write spacing counts when it has written), each deciding on the soaked state
        # again: any write it would make is then in the history read below.
        base = h.budget_passes(fresh)
        simtest_wait(lambda: h.budget_passes(fresh) >= base + FRESH_PASSES, a.settle,
                     "%d budget passes of the fresh aggregator after it agreed "
                     "(tau_budget_passes_total)" % FRESH_PASSES)
        self.check_history()
        st, hist = c.sim.req("GET", "/sim/history?resource=%s&since=%d" % (
            ",".join(LOOP_KINDS), rv0), token=False)
        changed = ["%s %s %s/%s" % (e["resourceVersion"], e["type"], e["resource"], e["name"])
                   for e in hist["items"]]
        after = self.owned_state()
        diff = sorted(k for k in set(before) | set(after) if before.get(k) != after.get(k))
        if changed or diff:
            self.fail("I5 fresh state", "a fresh aggregator changed the soaked state: commits %s;"
                      " objects that differ: %s; e.g. %s" % (
                          changed[:20], diff, [(k, before.get(k), after.get(k))
                                               for k in diff[:1]]))
        self.out_fresh_writes = len(changed)
        if self.pending_zero:
            self.zero_failed({"reason": "(no later status)", "message": ""})

    def sanitizer_reports(self):
        for agg, _ in self.aggs:
            try:
                log = agg.log()
            except OSError:
                continue
            for marker in ("AddressSanitizer", "runtime error:", "LeakSanitizer",
                           "Assertion", "SIGSEGV"):
                if marker in log:
                    i = log.index(marker)
                    self.fail("I4 no crash", "%s in %s:\n%s" % (
                        marker, os.path.basename(agg.log_path), log[max(0, i - 500):i + 2500]))
                    break

    def run(self):
        a = self.a
        self.setup()
        self.t0 = now()
        self.t_unix0 = time.time()
        print("soak: %d agents, %d nodes, aggregator on 127.0.0.1:%d; faults on for %.0f s" % (
            a.agents, len(self.names) + 1, self.port, a.duration), flush=True)
        self.check_history()
        c = self.c
        c.faults("PUT", {"rules": [
            {"verb": "*", "resource": "*", "status": 500, "rate": 0.04},
            {"verb": "*", "resource": "*", "status": 503, "rate": 0.04},
            {"verb": "*", "resource": "*", "status": 504, "rate": 0.02},
            {"verb": "*", "resource": "*", "status": 429, "retryAfter": 1, "rate": 0.05}]})
        c.reset_stats()
        for fn in (self.churn, self.objects, self.faults, self.killer, self.monitor,
                   self.checker):
            t = threading.Thread(target=self.guard, args=(fn,), daemon=True)
            t.start()
            self.threads.append(t)
        self.halt.wait(a.duration)
        self.halt.set()
        for t in self.threads:
            t.join(120)
        self.stats = c.stats()
        self.finish()
        self.stop_real_agents()
        self.sanitizer_reports()
        self.est = self.established_after()  # the logs go with kube-sim's folder

    def guard(self, fn):
        try:
            fn()
        except Exception as e:
            self.fail("I4 no crash", "the soak's %s thread failed: %r" % (fn.__name__, e))
            self.halt.set()

    def stop_real_agents(self):
        """SIGTERM every real agent: exit 0 within 2 s (docs/agent.md)."""
        for name, ag in sorted(self.real_agents.items()):
            rc, took = ag.terminate()
            if rc != 0 or took > 5:
                self.fail("I4 no crash", "tau-node-agent of %s: exit %s %.1f s after SIGTERM:"
                          "\n%s" % (name, rc, took, ag.logs()[-3000:]))
        self.real_agents = {}

    def stop(self):
        self.halt.set()
        try:
            self.stop_real_agents()
            if self.swarm is not None:
                self.swarm.close()
        finally:
            self.stop_cluster()

    def stop_cluster(self):
        if self.c is not None:
            for agg, how in self.aggs:
                if agg.p.poll() is None:
                    agg.stop()
            if not self.a.keep:
                self.c.stop()
            else:  # kube-sim stops; its folder (aggregator and agent logs) stays
                self.c.sim.stop()
                print("soak: kept %s" % self.c.env.tmp)

    def summary(self):
        a = self.a
        writes = self.cohort_writes
        st = sorted(self.staleness)
        out = {
            "duration_s": a.duration, "agents": a.agents, "seed": a.seed,
            "kills": len(self.kills), "aggregators_started": len(self.aggs),
            "aggregator_start_s_max": max(self.restart_s) if self.restart_s else None,
            "agent_streams_opened": self.swarm.connects if self.swarm else 0,
            "real_agents": len(self.real),
            "operations": dict(sorted(self.ops.items())),
            "api_requests": sum((getattr(self, "stats", None) or {}).values()),
            "true_pool_changes": len(self.timeline),
            "cohort_writes": len(writes),
            "cohort_writes_max_per_minute": self.max_per_minute([w[1] for w in writes]),
            "commits_max_per_minute": {k: self.max_per_minute(v)
                                       for k, v in self.commits.items()},
            "zeroings": [(rv, reason) for rv, _, reason in self.zeroings],
            "write_staleness_s": {"p50": st[len(st) // 2], "p99": st[int(len(st) * 0.99)],
                                  "max": st[-1]} if st else None,
            "writes_matching_no_recent_pool": self.inexact,
            "fresh_aggregator_commits": getattr(self, "out_fresh_writes", None),
            "established_after_s": [round(e[0], 2) if e[0] is not None else None
                                    for e in getattr(self, "est", None) or []],
            "established_missing_nodes": [e[1] for e in getattr(self, "est", None) or []
                                          if e[0] is not None],
            "failures": [{"invariant": i, "evidence": e} for i, e in self.failures],
        }
        return out


def cls_alloc(cls):
    return {c: alloc for c, alloc, _ in CLASSES}[cls]


def pool_established(agg, every_agent=False):
    """The pool is established; with every_agent, also no GPU node's agent missing."""
    try:
        p = agg.unary("GetPool", proto.query().GetPoolRequest(), proto.query().Pool)
    except grpc.RpcError:
        return False
    return p.established and (not every_agent or p.missing_count == 0)


def simtest_wait(pred, timeout, msg):
    wait_for(pred, timeout, msg, interval=0.2)


def report(out):
    print("soak: %d s, %d agents (%d real tau-node-agent processes), seed %d: %d SIGKILLs (%d "
          "aggregators started, slowest start %.1f s), %d swarm streams opened" % (
              out["duration_s"], out["agents"], out["real_agents"], out["seed"], out["kills"],
              out["aggregators_started"], out["aggregator_start_s_max"] or 0,
              out["agent_streams_opened"]))
    print("  operations: %s" % ", ".join("%s %d" % kv for kv in out["operations"].items()))
    print("  API requests in the soak: %d; true pool changed %d times" % (
        out["api_requests"], out["true_pool_changes"]))
    print("  Cohort writes: %d (max %d in a minute); commits per minute, max: %s" % (
        out["cohort_writes"], out["cohort_writes_max_per_minute"],
        ", ".join("%s %d" % kv for kv in out["commits_max_per_minute"].items())))
    if out["write_staleness_s"]:
        s = out["write_staleness_s"]
        print("  a Cohort write holds the pool of p50 %.2f s / p99 %.2f s / max %.2f s before it;"
              " %d writes match no pool of the window" % (s["p50"], s["p99"], s["max"],
                                                          out["writes_matching_no_recent_pool"]))
    est = [e for e in out["established_after_s"] if e is not None]
    print("  aggregators whose pool was established: %d of %d, %.1f-%.1f s after start "
          "(median %.1f s); the others were killed first; missing agents when established: "
          "%s" % (len(est), len(out["established_after_s"]), min(est or [0]), max(est or [0]),
                  statistics.median(est or [0]),
                  ", ".join(out["established_missing_nodes"]) or "-"))
    print("  zeroings (P5): %s" % (out["zeroings"] or "none"))
    print("  fresh aggregator: %s commits on budget objects" % out["fresh_aggregator_commits"])
    if out["failures"]:
        print("soak: FAILED, %d broken invariant(s):" % len(out["failures"]))
        for f in out["failures"]:
            print("  - %s: %s" % (f["invariant"], f["evidence"]))
    else:
        print("soak: every invariant held (I1 floor, I2 cap, I3 no write loop, I4 no crash, "
              "I5 fresh state)")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--duration", type=float, default=300)
    ap.add_argument("--kills", type=int, default=20)
    ap.add_argument("--agents", type=int, default=200)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--churn-rate", type=float, default=3.0, help="node changes a second")
    ap.add_argument("--lag", type=float, default=30.0,
                    help="seconds a Cohort write may trail the true pool (I1, I2)")
    ap.add_argument("--max-writes-per-minute", type=int, default=75)
    ap.add_argument("--steady", type=float, default=20.0)
    ap.add_argument("--settle", type=float, default=180.0)
    ap.add_argument("--real-agents", type=int, default=8,
                    help="how many of the agents are real tau-node-agent processes")
    ap.add_argument("--sync-timeout", type=int, default=30,
                    help="the aggregators' --initial-sync-timeout, seconds")
    ap.add_argument("--json", help="also write the summary here")
    ap.add_argument("--keep", action="store_true", help="keep kube-sim's and the logs' folder")
    a = ap.parse_args()
    if a.duration < 30 or a.kills < 0 or a.agents < 4 or a.churn_rate <= 0:
        ap.error("need --duration >= 30, --kills >= 0, --agents >= 4, --churn-rate > 0")
    paths.AGG_BIN = os.path.join(a.build, "tau-aggregator")
    paths.CLI_BIN = os.path.join(a.build, "tau")
    paths.AGENT_BIN = os.path.join(a.build, "tau-node-agent")
    if a.real_agents > a.agents:
        ap.error("--real-agents is at most --agents")
    if not os.access(paths.AGG_BIN, os.X_OK):
        print("soak: %s is not built" % paths.AGG_BIN, file=sys.stderr)
        return 1
    faulthandler.dump_traceback_later(a.duration + 3 * a.settle + 600, exit=True)
    proto.inventory()
    s = Soak(a)
    try:
        s.run()
    except (Failed, AssertionError) as e:
        s.fail("I5 fresh state" if s.halt.is_set() else "setup", str(e)[:6000])
    finally:
        s.stop()
    out = s.summary()
    report(out)
    if a.json:
        with open(a.json, "w") as f:
            json.dump(out, f, indent=1, default=str)
    return 1 if out["failures"] else 0


if __name__ == "__main__":
    sys.exit(main())
