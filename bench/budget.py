#!/usr/bin/python3
"""Team capacity budget: node change -> Cohort written, and Cohort writes in a node storm.

    /usr/bin/python3 bench/budget.py [--build DIR] [--nodes 64] [--changes 200]
        [--storm-rate 1000] [--storm-seconds 10] [--steady-seconds 10] [--json FILE]

Runs the real tau-aggregator (default budget flags: --budget-coalesce 200ms, --budget-resync
5m) against kube-sim on 127.0.0.1, set up as the budget e2e suite does (tests/e2e/harness/
budget.py: TLS, `--authz rbac`, the Kueue and taugrid CRDs, the aggregator with only its
ServiceAccount's token).  The nodes have no agents: the sync gate opens on its 1 s timeout and
each node counts with its Node's allocatable, so every change below goes through the API.
The Nodes are seeded (kube-sim `--seed`, so 50,000 of them take seconds, not minutes of POSTs)
and kube-sim's watch cache holds twice the storm, so no watcher is sent 410 and made to relist.

  kube-sim's own cost at this size, apart from the aggregator's: its VmRSS with the Nodes, a
      full list of them (on the wire, best and median of 3) and a paged list (limit=500, this
      client's parse included), then the time from aggregator start to the first Cohort.

  (a) latency: --changes single node changes, one at a time, alternately an allocatable change
      (nvidia.com/gpu 8 <-> 4) and a cordon/uncordon; for each, the time from sending the
      request until a watch on cohorts delivers a Cohort whose h100 nvidia.com/gpu nominalQuota
      is the new pool sum.  Each change is sent --gap (the larger of the coalescing window and
      the budget's 1 s spacing of writes, + 0.2 s) after
      the previous Cohort write, once the controller's own follow-up reconcile (one window after
      its write) is over.
  (c) floor, measured on the same changes: the time until a trivial watcher (a watch on nodes
      in this process) receives the same Node change.  latency - floor is what the aggregator
      adds: its node watch, the pool rebuild and window (20 ms), the budget coalescing
      (200 ms), the reconcile and the Cohort write.
  (b) storm: --storm-rate node allocatable changes a second for --storm-seconds, sent by eight
      threads on kept-alive connections; Cohort writes counted by kube-sim (/sim/stats, write
      requests) and by the watch (committed versions, per second); then, once the Cohort holds
      the final pool, a steady window of --steady-seconds in which every write on a Kueue or
      taugrid object is counted (goal: 0).
Also reported: the CPU seconds tau-aggregator and kube-sim used in each phase.

Goals (issue 13): Cohort writes <= 1/s during a 1,000 changes/s storm, 0 when steady.
Exit 0 with the figures, goals met or not (nothing here asserts on time); 1 when the budget
never reflects a change, a phase times out or the steady window has writes (a write loop is a
bug, not a figure); 2 on bad usage.  Everything stops by itself; the whole run is bounded by
--deadline.
"""
import argparse
import faulthandler
import json
import os
import resource
import socket
import shutil
import statistics
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
import harness_path  # noqa: E402,F401  (puts tests/e2e on sys.path)
from harness import budget as h  # noqa: E402
from harness import paths  # noqa: E402
from harness.budget import quota  # noqa: E402

FLAVOR_CLS = "h100"
GPU = "nvidia.com/gpu"
STORM_THREADS = 8
TICK = os.sysconf("SC_CLK_TCK")


class Failed(Exception):
    pass


class Api:
    """One kept-alive connection to kube-sim, admin token.  kube-sim writes a response's
    headers and body in two sends without TCP_NODELAY, so a kept-alive client that delays its
    ACK waits about 40 ms per request (Nagle); TCP_QUICKACK before each read avoids that
    artefact, which is kube-sim's and not the aggregator's."""

    def __init__(self, sim):
        self.sim = sim
        self.c = None
        self.hdrs = {"Authorization": "Bearer " + sim.token, "Accept": "application/json"}

    def patch(self, path, body):
        if self.c is None:
            self.c = self.sim.conn(timeout=30)
        hd = dict(self.hdrs, **{"Content-Type": "application/merge-patch+json"})
        try:
            self.c.request("PATCH", path, body=json.dumps(body).encode(), headers=hd)
            self.c.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_QUICKACK, 1)
            r = self.c.getresponse()
            data = r.read()
        except (OSError, ValueError):
            self.c.close()
            self.c = None
            raise
        if r.status != 200:
            raise Failed("PATCH %s -> %s %s" % (path, r.status, data[:300]))
        return json.loads(data)["metadata"]["resourceVersion"]

    def close(self):
        if self.c is not None:
            self.c.close()


def cpu_seconds(pid):
    try:
        with open("/proc/%d/stat" % pid) as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / TICK
    except (OSError, IndexError, ValueError):
        return float("nan")


def rss_kib(pid):
    try:
        with open("/proc/%d/status" % pid) as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
    except (OSError, ValueError):
        pass
    return None


def pct(xs, p):
    """The p-th percentile (nearest rank) of xs."""
    s = sorted(xs)
    return s[min(len(s) - 1, max(0, int(round(p / 100.0 * len(s) + 0.5)) - 1))]


def seconds(dur):
    """A duration as the aggregator's flags take it (500ms, 1s, 2m), in seconds."""
    for suffix, scale in (("ms", 0.001), ("s", 1.0), ("m", 60.0)):
        if dur.endswith(suffix):
            return float(dur[:-len(suffix)]) * scale
    raise ValueError(dur)


def ms(x):
    return "%.1f ms" % (x * 1000)


def node_path(name):
    return h.NODES + "/" + name


def gpu_quota(obj):
    return quota(obj, FLAVOR_CLS, GPU)


class Bench:
    def __init__(self, a):
        self.a = a
        self.deadline = time.monotonic() + a.deadline
        self.h100 = ["bench-h100-%05d" % i for i in range(a.nodes - a.nodes // 16)]
        self.a100 = ["bench-a100-%05d" % i for i in range(a.nodes // 16)]
        self.gpus = {n: 8 for n in self.h100}
        self.cordoned = set()
        self.c = self.agg = self.cohorts = self.nodes = None
        self.out = {}
        self.tmp = tempfile.mkdtemp(prefix="bench-budget-")

    def until(self, seconds):
        return min(self.deadline, time.monotonic() + seconds)

    def pool_gpus(self):
        return sum(v for n, v in self.gpus.items() if n not in self.cordoned)

    def cpu(self):
        me = resource.getrusage(resource.RUSAGE_SELF)
        return (cpu_seconds(self.agg.p.pid), cpu_seconds(self.c.sim.proc.pid),
                me.ru_utime + me.ru_stime)

    def cpu_since(self, before):
        now = self.cpu()
        return {"aggregator_cpu_s": now[0] - before[0], "kube_sim_cpu_s": now[1] - before[1],
                "bench_cpu_s": now[2] - before[2]}

    def wait_event(self, rec, pred, start, seconds, what):
        """The first event of Recorder rec at index >= start that pred holds for: (index, event)."""
        return rec.log.wait(pred, start, self.until(seconds) - time.monotonic(), what)

    def wait_cohort_gpus(self, want, start, seconds, what):
        return self.wait_event(self.cohorts, lambda e: e[1] in ("ADDED", "MODIFIED") and
                               e[2] == want, start, seconds, what)

    # -- set-up --
    def setup(self):
        # The Nodes are seeded (kube-sim loads them before it serves: 50,000 POSTs would take
        # minutes and measure nothing), and the watch cache holds the whole storm, so a watcher
        # that lags behind the storm is not sent 410 Gone and made to relist every Node.
        seed = os.path.join(self.tmp, "nodes.json")
        with open(seed, "w") as f:
            json.dump({"kind": "List", "apiVersion": "v1",
                       "items": [h.node(n, "h100", h.H100) for n in self.h100] +
                       [h.node(n, "a100", h.A100) for n in self.a100]}, f)
        window = max(1000, 2 * int(self.a.storm_rate * self.a.storm_seconds) + 1000)
        c = self.c = h.Cluster((), ["--seed", seed, "--watch-cache-events", str(window)])
        os.unlink(seed)
        c.create(h.team("research"), h.TEAMS)
        c.create(h.tau_cluster(), h.TAU + "/clusters")
        # Events are (arrival, type, the decoded object): the Cohort's GPU quota, the Node's
        # resourceVersion (50,000 Nodes' objects are not kept).
        self.cohorts = h.Recorder(c.sim, h.COHORTS, gpu_quota)
        self.nodes = h.Recorder(c.sim, h.NODES, lambda o: o["metadata"]["resourceVersion"])
        extra = ("--budget-coalesce", self.a.coalesce) if self.a.coalesce else ()
        t0 = time.monotonic()
        self.agg = c.start_aggregator("aggregator", *extra)
        self.wait_cohort_gpus(self.pool_gpus(), 0, 60 + self.a.nodes / 500,
                              "the first Cohort holding the pool")
        self.out["setup"] = dict(first_cohort_s=time.monotonic() - t0,
                                 aggregator_rss_kib=rss_kib(self.agg.p.pid))
        team_uid = c.team("research")["metadata"]["uid"]
        want = h.Shape().groups(c.pool())
        c.wait_ok(lambda: h.cohort_diffs(c.cohort("research"), "research", team_uid, want),
                  "the Cohort holds the exact pool", timeout=30)

    # -- kube-sim's own cost at this size, apart from the aggregator's --
    def sim_cost(self):
        sim = self.c.sim
        hd = {"Authorization": "Bearer " + sim.token, "Accept": "application/json"}

        def get(path):
            conn = sim.conn(timeout=120)
            try:
                t = time.monotonic()
                conn.request("GET", path, headers=hd)
                r = conn.getresponse()
                body = r.read()
                if r.status != 200:
                    raise Failed("GET %s -> %s %s" % (path, r.status, body[:300]))
                return time.monotonic() - t, body
            finally:
                conn.close()

        full = []
        for _ in range(3):
            dt, body = get(h.NODES)
            full.append(dt)
        size = len(body)
        t0, n, cont = time.monotonic(), 0, ""
        while True:
            _, body = get(h.NODES + "?limit=500" + ("&continue=" + cont if cont else ""))
            page = json.loads(body)
            n += len(page["items"])
            cont = page["metadata"].get("continue")
            if not cont:
                break
        paged = time.monotonic() - t0
        if n != self.a.nodes:
            raise Failed("the paged list of Nodes has %d items, want %d" % (n, self.a.nodes))
        self.out["kube_sim"] = dict(nodes=n, rss_kib=rss_kib(sim.proc.pid), list_bytes=size,
                                    list_s_min=min(full), list_s_median=statistics.median(full),
                                    paged_list_s=paged)

    # -- (a) + (c) --
    def latency(self):
        api = Api(self.c.sim)
        half = len(self.h100) // 2
        rows = []
        cpu0 = self.cpu()
        try:
            for i in range(self.a.changes):
                if i % 2 == 0:
                    name = self.h100[(i // 2) % half]
                    self.gpus[name] = 4 if self.gpus[name] == 8 else 8
                    path, body, kind = (node_path(name) + "/status",
                                        {"status": {"allocatable": {GPU: str(self.gpus[name])}}},
                                        "allocatable")
                else:
                    name = self.h100[half + (i // 2) % (len(self.h100) - half)]
                    cordon = name not in self.cordoned
                    (self.cordoned.add if cordon else self.cordoned.discard)(name)
                    path, body, kind = (node_path(name),
                                        {"spec": {"unschedulable": True if cordon else None}},
                                        "cordon" if cordon else "uncordon")
                want = self.pool_gpus()
                if rows:
                    # Pacing, not a wait: each write makes the controller see its own Cohort and
                    # status updates and reconcile once more (writing nothing) one coalescing
                    # window later; a change sent inside that window would ride on it and look
                    # faster than an isolated one.
                    time.sleep(max(0.0, last + self.a.gap - time.monotonic()))
                n0, c0 = self.nodes.log.count(), self.cohorts.log.count()
                t0 = time.monotonic()
                rv = api.patch(path, body)
                t_resp = time.monotonic()
                _, ev = self.wait_event(self.nodes, lambda e: e[2] == rv, n0, 10,
                                        "change %d (%s %s) on the node watch" % (i, kind, name))
                _, co = self.wait_cohort_gpus(want, c0, 10, "change %d (%s %s): Cohort %s %s = %d"
                                              % (i, kind, name, FLAVOR_CLS, GPU, want))
                last = co[0]
                rows.append({"kind": kind, "response": t_resp - t0, "floor": ev[0] - t0,
                             "cohort": co[0] - t0})
        finally:
            api.close()
        lat = [r["cohort"] for r in rows]
        floor = [r["floor"] for r in rows]
        over = [r["cohort"] - r["floor"] for r in rows]
        self.out["latency"] = dict(
            changes=len(rows),
            cohort_p50_s=pct(lat, 50), cohort_p99_s=pct(lat, 99), cohort_max_s=max(lat),
            floor_p50_s=pct(floor, 50), floor_p99_s=pct(floor, 99),
            over_floor_p50_s=pct(over, 50), over_floor_p99_s=pct(over, 99),
            response_p50_s=pct([r["response"] for r in rows], 50),
            allocatable_p50_s=statistics.median(r["cohort"] for r in rows
                                                if r["kind"] == "allocatable"),
            cordon_p50_s=statistics.median(r["cohort"] for r in rows
                                           if r["kind"] != "allocatable"),
            **self.cpu_since(cpu0))

    # -- (b) --
    def storm(self):
        a = self.a
        total = int(a.storm_rate * a.storm_seconds)
        mine = [[n for j, n in enumerate(self.h100) if j % STORM_THREADS == k]
                for k in range(STORM_THREADS)]
        counter = {n: 0 for n in self.h100}
        sent = [[] for _ in range(STORM_THREADS)]  # (send time, resourceVersion)
        errors = []
        c, c0, n0 = self.c, self.cohorts.log.count(), self.nodes.log.count()
        c.reset_stats()
        cpu0 = self.cpu()
        start = time.monotonic() + 0.05
        stop_at = start + a.storm_seconds

        def run(k):
            api = Api(c.sim)
            try:
                for j in range(k, total, STORM_THREADS):
                    # Pacing: change j is due at start + j/rate; a late thread does not wait,
                    # and the storm ends after --storm-seconds whatever rate was reached.
                    due = start + j / a.storm_rate
                    now = time.monotonic()
                    if now >= stop_at:
                        break
                    if due > now:
                        time.sleep(due - now)
                    name = mine[k][(j // STORM_THREADS) % len(mine[k])]
                    counter[name] += 1
                    self.gpus[name] = 1 + counter[name] % 8
                    t = time.monotonic()
                    rv = api.patch(node_path(name) + "/status",
                                   {"status": {"allocatable": {GPU: str(self.gpus[name])}}})
                    sent[k].append((t, rv))
                    if time.monotonic() > self.deadline:
                        raise Failed("deadline reached in the storm")
            except Exception as e:  # reported below
                errors.append(e)
            finally:
                api.close()

        threads = [threading.Thread(target=run, args=(k,), daemon=True)
                   for k in range(STORM_THREADS)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(max(1, self.deadline - time.monotonic()))
        end = time.monotonic()
        if errors:
            raise Failed("storm: %s" % errors[0])
        if any(t.is_alive() for t in threads):
            raise Failed("storm threads still running at the deadline")
        stats_storm = c.writes(("cohorts",))
        stats_all = c.writes(h.KUEUE_KINDS + h.TAU_KINDS)
        cpu_storm = self.cpu_since(cpu0)
        want = self.pool_gpus()
        _, last = self.wait_event(self.cohorts, lambda e: e[0] >= end and e[2] == want, c0, 60,
                                  "the Cohort holding the pool after the storm (%s %s = %d)"
                                  % (FLAVOR_CLS, GPU, want))
        settle = last[0] - end
        team_uid = c.team("research")["metadata"]["uid"]
        exact = h.Shape().groups(c.pool())
        c.wait_ok(lambda: h.cohort_diffs(c.cohort("research"), "research", team_uid, exact),
                  "the Cohort holds the exact pool after the storm", timeout=30)
        stats_total = c.writes(("cohorts",))
        done = [x for s in sent for x in s]
        by_rv = {rv: t for t, rv in done}
        delivered = {e[2]: e[0] for e in self.nodes.log.since(n0) if e[2] in by_rv}
        lag = [delivered[rv] - t for rv, t in by_rv.items() if rv in delivered]
        writes = [e for e in self.cohorts.log.since(c0) if e[1] == "MODIFIED"]
        in_storm = [e for e in writes if e[0] <= end]
        per_second = [0] * max(1, int(round(end - start)))
        for e in in_storm:
            per_second[min(len(per_second) - 1, max(0, int(e[0] - start)))] += 1
        dur = end - start
        self.out["storm"] = dict(
            changes=len(done), seconds=dur, changes_per_s=len(done) / dur,
            delivered_to_watcher=len(delivered), watcher_lag_p50_s=pct(lag, 50) if lag else None,
            watcher_lag_p99_s=pct(lag, 99) if lag else None,
            cohort_write_requests=sum(stats_storm.values()), all_write_requests=stats_all,
            cohort_writes_committed=len(in_storm), cohort_writes_per_s=len(in_storm) / dur,
            cohort_writes_max_in_1s=max(per_second), cohort_writes_per_second=per_second,
            write_requests_until_settled=sum(stats_total.values()),
            settle_after_storm_s=settle, **cpu_storm)

    def steady(self):
        c = self.c
        c.reset_stats()
        c0 = self.cohorts.log.count()
        cpu0 = self.cpu()
        t0 = time.monotonic()
        # A measured window, not a wait: nothing changes in it and nothing may be written.
        time.sleep(min(self.a.steady_seconds, max(0, self.deadline - t0)))
        writes = c.writes(h.KUEUE_KINDS + h.TAU_KINDS)
        self.out["steady"] = dict(seconds=time.monotonic() - t0, writes=writes,
                                  cohort_watch_events=len(self.cohorts.log.since(c0)),
                                  **self.cpu_since(cpu0))

    def stop(self):
        for w in (self.cohorts, self.nodes):
            if w is not None:
                w.close()
        rc = None
        if self.agg is not None and self.agg.p.poll() is None:
            rc = self.agg.stop()
        if self.c is not None:
            self.c.stop()
        shutil.rmtree(self.tmp, ignore_errors=True)
        return rc


def report(out, a):
    lat, st, sd = out.get("latency"), out.get("storm"), out.get("steady")
    su, ks = out.get("setup"), out.get("kube_sim")
    print("bench/budget: %d nodes (%d h100, %d a100), --budget-coalesce %s" % (
        a.nodes, a.nodes - a.nodes // 16, a.nodes // 16, a.coalesce or "200ms (default)"))
    if su:
        print("    aggregator started -> first Cohort with the pool %.2f s; aggregator VmRSS %s KiB"
              % (su["first_cohort_s"], su["aggregator_rss_kib"]))
    if ks:
        print("kube-sim alone with %d Nodes: VmRSS %s KiB; list (%.1f MB) %.3f s best, %.3f s "
              "median of 3; paged list (limit=500, client parse included) %.3f s" % (
                  ks["nodes"], ks["rss_kib"], ks["list_bytes"] / 1e6, ks["list_s_min"],
                  ks["list_s_median"], ks["paged_list_s"]))
    if lat:
        print("(a) node change -> Cohort written, %d single changes (allocatable, cordon):"
              % lat["changes"])
        print("    p50 %s  p99 %s  max %s  (allocatable p50 %s, cordon p50 %s)" % (
            ms(lat["cohort_p50_s"]), ms(lat["cohort_p99_s"]), ms(lat["cohort_max_s"]),
            ms(lat["allocatable_p50_s"]), ms(lat["cordon_p50_s"])))
        print("(c) floor, same changes to a trivial watcher: p50 %s  p99 %s  "
              "(PATCH answered: p50 %s)" % (ms(lat["floor_p50_s"]), ms(lat["floor_p99_s"]),
                                            ms(lat["response_p50_s"])))
        print("    latency / floor p50 %.0fx; over the floor p50 %s p99 %s (windows: the pool's "
              "20 ms, the budget's coalescing)" % (
                  lat["cohort_p50_s"] / lat["floor_p50_s"], ms(lat["over_floor_p50_s"]),
                  ms(lat["over_floor_p99_s"])))
        print("    CPU: aggregator %.2f s, kube-sim %.2f s, this process %.2f s" % (
            lat["aggregator_cpu_s"], lat["kube_sim_cpu_s"], lat["bench_cpu_s"]))
    if st:
        print("(b) storm: %d changes in %.1f s = %.0f changes/s (target %d/s); "
              "trivial watcher got %d, lag p50 %s p99 %s" % (
                  st["changes"], st["seconds"], st["changes_per_s"], a.storm_rate,
                  st["delivered_to_watcher"], ms(st["watcher_lag_p50_s"] or 0),
                  ms(st["watcher_lag_p99_s"] or 0)))
        print("    Cohort writes during the storm: %d committed (%.2f/s, max %d in one second; "
              "goal <= 1/s: %s), %d write requests" % (
                  st["cohort_writes_committed"], st["cohort_writes_per_s"],
                  st["cohort_writes_max_in_1s"],
                  "met" if st["cohort_writes_per_s"] <= 1 else "NOT MET",
                  st["cohort_write_requests"]))
        print("    per second: %s" % st["cohort_writes_per_second"])
        print("    settled %s after the last change (%d Cohort write requests in all); "
              "CPU in the storm: aggregator %.2f s, kube-sim %.2f s, this process %.2f s" % (
                  ms(st["settle_after_storm_s"]), st["write_requests_until_settled"],
                  st["aggregator_cpu_s"], st["kube_sim_cpu_s"], st["bench_cpu_s"]))
        print("    all write requests on Kueue and taugrid objects in the storm: %s" %
              (st["all_write_requests"] or "none"))
    if sd:
        print("    steady %.1f s afterwards: writes %s (goal 0: %s); CPU: aggregator %.2f s" % (
            sd["seconds"], sd["writes"] or "none", "met" if not sd["writes"] else "NOT MET",
            sd["aggregator_cpu_s"]))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--nodes", type=int, default=64)
    ap.add_argument("--changes", type=int, default=200)
    ap.add_argument("--gap", type=float,
                    help="seconds from one Cohort write to the next single change (default: "
                    "the larger of the coalescing window and the 1 s write spacing, + 0.2 s)")
    ap.add_argument("--storm-rate", type=int, default=1000)
    ap.add_argument("--storm-seconds", type=float, default=10)
    ap.add_argument("--steady-seconds", type=float, default=10)
    ap.add_argument("--deadline", type=float, default=300, help="bound on the whole run, s")
    ap.add_argument("--coalesce", help="pass --budget-coalesce DUR (default: the aggregator's "
                    "default, 200ms)")
    ap.add_argument("--json", help="also write the figures here")
    a = ap.parse_args()
    if a.nodes < 16 or a.changes < 2 or a.storm_rate < 1 or a.storm_seconds <= 0:
        ap.error("need --nodes >= 16, --changes >= 2, --storm-rate >= 1, --storm-seconds > 0")
    try:
        coalesce_s = seconds(a.coalesce or "200ms")
    except ValueError:
        ap.error("--coalesce: want a duration such as 200ms or 1s, not %r" % a.coalesce)
    if a.gap is None:
        # An isolated change: past the coalescing window and the budget's 1 s spacing of writes.
        a.gap = max(coalesce_s, 1.0) + 0.2
    paths.AGG_BIN = os.path.join(a.build, "tau-aggregator")
    if not os.access(paths.AGG_BIN, os.X_OK):
        print("bench/budget: %s is not built" % paths.AGG_BIN, file=sys.stderr)
        return 1
    # A hang is reported with every thread's stack rather than waited out.
    faulthandler.dump_traceback_later(a.deadline + 60, exit=True)
    b = Bench(a)
    rc = 0
    try:
        b.setup()
        b.sim_cost()
        b.latency()
        b.storm()
        b.steady()
    except (Failed, AssertionError) as e:  # AssertionError: a harness wait timed out
        print("bench/budget: FAILED: %s" % e, file=sys.stderr)
        if b.c is not None:
            print(b.c.log_tail(3000), file=sys.stderr)
        rc = 1
    finally:
        agg_rc = b.stop()
    report(b.out, a)
    if agg_rc not in (None, 0):
        print("bench/budget: tau-aggregator exited %s on SIGTERM" % agg_rc, file=sys.stderr)
        rc = 1
    if (b.out.get("steady") or {}).get("writes"):
        print("bench/budget: writes in the steady window: a write loop", file=sys.stderr)
        rc = 1
    if a.json:
        with open(a.json, "w") as f:
            json.dump(b.out, f, indent=1)
    return rc


if __name__ == "__main__":
    sys.exit(main())
