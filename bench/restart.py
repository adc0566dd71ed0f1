#!/usr/bin/python3
"""Restart storm: SIGKILL of tau-aggregator under N connected agents -> pool established again.

    /usr/bin/python3 bench/restart.py [--build DIR] [--agents 10000] [--channels 64] [--runs 3]
        [--json FILE] [--timeout 900] [--deadline 3600] [--review-qps 400] [--review-burst 100]
        [--unsigned] [--agg-arg=--FLAG=VALUE ...]

Set-up: kube-sim seeded with --agents GPU Nodes (class h100, 8 GPUs each) and one
projected ServiceAccount token per Node in its --tokens table (a JWT naming the agent
ServiceAccount, bound to its node and a pod, signed RS256 with a key kube-sim publishes at
/openid/v1/jwks, so the aggregator verifies it locally, admits the stream at once and confirms
it by TokenReview afterwards; --unsigned: a placeholder signature, every agent waits for its
review, as before local verification); one
tau-aggregator over TLS with --initial-sync-timeout 1h, so its pool is established only once
every Node's agent has reported (docs/aggregator.md, "Initial sync"), and the real TokenReview
path: every agent's token is reviewed by kube-sim through the aggregator's kube client.  The
agents are build/bench-tools/restart_swarm (bench/restart_swarm.c): N Report streams over
--channels TLS connections, each with its own token and its node's inventory, reconnecting as
tau-node-agent does (docs/protocol.md, "Agent side").  All of them come from 127.0.0.1, one
peer to the aggregator, where a cluster has one peer per node: so --max-reviews-per-peer and
--max-streams-per-peer are raised to N (the per-peer caps are for one host's flood, not for a
whole cluster seen through one address); --max-pending-reviews, the cap over all peers, keeps
its default.

One run: with every agent live and the pool established, /sim/stats reset, SIGKILL of the
aggregator and at once a new one on the same gRPC port (what a supervisor does); measured from
the kill:
  ready        the new process printed "ready" (listening);
  established  its /metrics show tau_aggregator_pool_established 1 with
               tau_aggregator_agents_connected N: the pool established again with every agent;
  all live     every agent's new stream acked OK (the swarm's own count);
  confirmed    (signed tokens) every locally admitted stream's TokenReview has confirmed it
               (tau_aggregator_auth_confirm_total{result="confirmed"} N): how long a revoked
               token could have stayed admitted at most in this storm;
and during that window, from kube-sim's /sim/stats sampled every --sample s: TokenReviews made,
all API requests made, their rate (peak over one sample, mean over the window); from the
aggregator's /metrics: tau_aggregator_token_reviews_total.

Floor, measured in the same run before the first kill: kube-sim answering N TokenReviews of the
same tokens on 8 keep-alive connections from this process, as fast as it can (no client
budget): the time the API itself needs for a review per agent.  The ratio established / floor
says what the aggregator adds to that: its review budget, the agents' reconnect backoff, the
re-established streams.  The budget's own bound, (N - burst) / --review-qps (the aggregator's
defaults unless --review-qps/--review-burst say otherwise; they are passed on), is the second
floor: the least any restart may take without a request beyond the budget.

Exit 0 with the figures (nothing here asserts on time); 1 when a phase times out or a process
dies; 2 on bad usage.  Everything stops by itself; the whole run is bounded by --deadline.
"""
import argparse
import faulthandler
import http.client
import json
import os
import resource
import signal
import statistics
import subprocess
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
import harness_path  # noqa: E402,F401  (puts tests/e2e on sys.path)
from harness import paths, procs  # noqa: E402
from harness.aggregator import Aggregator, node, require_all  # noqa: E402
from harness.kubesim import kube_request  # noqa: E402
from harness.procs import Proc, make_workdir, remove_workdir  # noqa: E402
from harness.tls import make_tls  # noqa: E402
from harness.tokens import AGENT_USER, agent_token  # noqa: E402
from harness.waits import wait_for  # noqa: E402
from kubesim import satoken  # noqa: E402

GPU = "nvidia.com/gpu"
POLL_S = 0.1  # sampling period of the aggregator's /metrics: the figures' resolution
FLOOR_CONNS = 8


class Failed(Exception):
    pass


def metrics(port):
    """{series: value} of an aggregator's /metrics (labels part of the key), or None when down."""
    try:
        c = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
        c.request("GET", "/metrics")
        r = c.getresponse()
        body = r.read().decode()
        c.close()
    except OSError:
        return None
    if r.status != 200:
        return None
    out = {}
    for line in body.splitlines():
        if line and not line.startswith("#"):
            k, _, v = line.rpartition(" ")
            try:
                out[k] = float(v)
            except ValueError:
                pass
    return out


class Swarm:
    """build/bench-tools/restart_swarm; keeps its latest status line."""

    def __init__(self, binary, target, agents_file, channels, ca, log):
        self.p = subprocess.Popen([binary, "--target", target, "--agents-file", agents_file,
                                   "--channels", str(channels), "--ca", ca, "--every-ms", "100"],
                                  stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=log,
                                  text=True)
        self.live = 0
        self.closed = 0
        self.cond = threading.Condition()
        threading.Thread(target=self._pump, daemon=True).start()

    def _pump(self):
        for line in self.p.stdout:
            f = line.split()
            if len(f) >= 6 and f[0] == "live":
                with self.cond:
                    self.live, self.closed = int(f[1]), int(f[5])
                    self.cond.notify_all()
        with self.cond:
            self.cond.notify_all()

    def stop(self):
        if self.p.poll() is None:
            self.p.stdin.close()
            try:
                self.p.wait(30)
            except subprocess.TimeoutExpired:
                self.p.kill()
                self.p.wait()


class Sampler:
    """/sim/stats every `period` s in a thread: (monotonic, all requests, TokenReviews)."""

    def __init__(self, sim_port, admin, period):
        self.sim_port, self.admin, self.period = sim_port, admin, period
        self.samples = []
        self.cond = threading.Condition()
        self.stop_ev = threading.Event()
        self.t = threading.Thread(target=self._run, daemon=True)
        self.t.start()

    def _run(self):
        while not self.stop_ev.is_set():
            try:
                st, body = kube_request(self.sim_port, self.admin, "GET", "/sim/stats")
                if st == 200:
                    total = sum(v for v in body.values() if isinstance(v, int))
                    tr = sum(v for k, v in body.items() if k.endswith("/tokenreviews"))
                    with self.cond:
                        self.samples.append((time.monotonic(), total, tr))
                        self.cond.notify_all()
            except OSError:
                pass
            self.stop_ev.wait(self.period)

    def wait_past(self, t, count=1, timeout=60):
        """Until `count` samples were taken after monotonic time t."""
        with self.cond:
            if not self.cond.wait_for(lambda: sum(1 for s in self.samples if s[0] > t) >= count,
                                      timeout):
                raise Failed("no /sim/stats sample within %d s" % timeout)

    def stop(self):
        self.stop_ev.set()
        self.t.join(30)

    def rates(self, t0, t1):
        """(peak, mean) requests/s of all requests and of TokenReviews within [t0, t1]."""
        xs = [s for s in self.samples if t0 <= s[0] <= t1]
        if len(xs) < 2:
            return {"requests_peak": 0, "requests_mean": 0, "reviews_peak": 0, "reviews_mean": 0}
        peak_all = max((b[1] - a[1]) / (b[0] - a[0]) for a, b in zip(xs, xs[1:]))
        peak_tr = max((b[2] - a[2]) / (b[0] - a[0]) for a, b in zip(xs, xs[1:]))
        span = xs[-1][0] - xs[0][0]
        return {"requests_peak": peak_all, "requests_mean": (xs[-1][1] - xs[0][1]) / span,
                "reviews_peak": peak_tr, "reviews_mean": (xs[-1][2] - xs[0][2]) / span}


class Bench:
    def __init__(self, a):
        self.a = a
        self.deadline = time.monotonic() + a.deadline
        self.sim = self.agg = self.swarm = None
        self.out = {"agents": a.agents, "channels": a.channels, "runs": [],
                    "aggregator_args": a.agg_arg, "review_qps": a.review_qps,
                    "review_burst": a.review_burst,
                    "budget_bound_s": max(0, a.agents - a.review_burst) / a.review_qps}

    def until(self, seconds):
        return min(self.deadline, time.monotonic() + seconds)

    def setup(self):
        require_all()
        self.work = make_workdir("tau-bench-%s-" % os.path.basename(__file__)[:-3])
        n = self.a.agents
        self.names = ["rs-%05d" % i for i in range(n)]
        nodes = [node(x, "h100", {"cpu": "96", "memory": "1800Gi", GPU: "8", "pods": "110"})
                 for x in self.names]
        sim_key = []
        if self.a.unsigned:
            self.tokens = [agent_token(x) for x in self.names]
        else:
            key_path = os.path.join(self.work, "sa.key")
            key = satoken.SigningKey.generate(key_path)
            t0 = time.monotonic()
            self.tokens = [satoken.projected_token(AGENT_USER, ["taugrid"], node=x,
                                                   pod="tau-node-agent-" + x, key=key)
                           for x in self.names]
            self.out["signing_s"] = time.monotonic() - t0
            sim_key = ["--service-account-signing-key-file", key_path]
        with open(os.path.join(self.work, "tokens.json"), "w") as f:
            json.dump({t: satoken.table_entry(AGENT_USER, ["taugrid"], node=x,
                                              pod="" if self.a.unsigned else "tau-node-agent-" + x)
                       for x, t in zip(self.names, self.tokens)}, f)
        with open(os.path.join(self.work, "seed.json"), "w") as f:
            json.dump({"kind": "List", "items": nodes}, f)
        self.agents_file = os.path.join(self.work, "agents.txt")
        with open(self.agents_file, "w") as f:
            for x, t in zip(self.names, self.tokens):
                f.write("%s %s\n" % (x, t))
        self.kubeconfig = os.path.join(self.work, "kubeconfig")
        self.sim = Proc([paths.SIM_PYTHON, paths.KUBE_SIM, "--listen", "127.0.0.1:0",
                            "--kubeconfig-out", self.kubeconfig, "--tokens",
                            os.path.join(self.work, "tokens.json"), "--seed",
                            os.path.join(self.work, "seed.json"), "--crds",
                            os.path.join(ROOT, "charts/taugrid/crds"), "--crds",
                            os.path.join(ROOT, "tests/fixtures/kueue"), *sim_key], "kube-sim", self.work)
        self.port = int(self.sim.wait_line("ready ", timeout=600).split()[1])
        with open(self.kubeconfig) as f:
            self.admin = json.load(f)["users"][0]["user"]["token"]
        self.tls()
        self.grpc_port = procs.free_port()

    def tls(self):
        t = make_tls(self.work)
        self.ca, self.cert, self.key = t["ca"], t["cert"], t["key"]

    def start_agg(self):
        n = str(max(self.a.agents, 256))
        budget = ("--review-qps", str(self.a.review_qps),
                  "--review-burst", str(self.a.review_burst))
        agg = Aggregator(self.kubeconfig, self.work, sync_timeout="1h", ca=self.ca, extra=(
            "--grpc-listen", "127.0.0.1:%d" % self.grpc_port,
            "--tls-cert", self.cert, "--tls-key", self.key,
            "--no-workspace-controller", "--log-level", "warn",
            # One peer address stands for a whole cluster's nodes here (see the docstring).
            "--max-reviews-per-peer", n, "--max-streams-per-peer", n, *budget, *self.a.agg_arg))
        return agg

    def established(self, agg):
        """Established with every agent, and no confirming review left (so none of this
        process's reviews is counted in the next run)."""
        m = metrics(agg.http_port) or {}
        return m.get("tau_aggregator_pool_established") == 1 and \
            m.get("tau_aggregator_agents_connected") == self.a.agents and \
            m.get("tau_aggregator_auth_confirms_pending") == 0

    def alive(self):
        """Raises Failed when the aggregator or the swarm has exited (a wait's guard)."""
        if self.agg is not None and self.agg.proc.p.poll() is not None:
            raise Failed("the aggregator exited (rc %s)" % self.agg.proc.p.returncode)
        if self.swarm is not None and self.swarm.p.poll() is not None:
            raise Failed("the swarm exited (rc %s)" % self.swarm.p.returncode)

    def wait(self, pred, seconds, what):
        return wait_for(pred, self.until(seconds) - time.monotonic(), what, interval=POLL_S,
                        guard=self.alive)

    def floor(self):
        """kube-sim answering one TokenReview per agent on FLOOR_CONNS keep-alive connections."""
        body = [json.dumps({"apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview",
                            "spec": {"token": t, "audiences": ["taugrid"]}}) for t in self.tokens]
        bad = []

        def worker(k):
            c = http.client.HTTPConnection("127.0.0.1", self.port, timeout=60)
            for i in range(k, len(body), FLOOR_CONNS):
                c.request("POST", "/apis/authentication.k8s.io/v1/tokenreviews", body[i],
                          headers={"Authorization": "Bearer " + self.admin,
                                   "Content-Type": "application/json"})
                r = c.getresponse()
                st = json.loads(r.read()).get("status") or {}
                if r.status != 201 or not st.get("authenticated"):
                    bad.append(i)
            c.close()
        t0 = time.monotonic()
        ts = [threading.Thread(target=worker, args=(k,)) for k in range(FLOOR_CONNS)]
        for t in ts:
            t.start()
        for t in ts:
            t.join()
        if bad:
            raise Failed("floor: %d TokenReviews not authenticated" % len(bad))
        return time.monotonic() - t0

    def cold_start(self):
        self.agg = self.start_agg()
        t0 = time.monotonic()
        log = open(os.path.join(self.work, "swarm.log"), "a")
        self.swarm = Swarm(os.path.join(self.a.build, "bench-tools", "restart_swarm"),
                           "127.0.0.1:%d" % self.grpc_port, self.agents_file, self.a.channels,
                           self.ca, log)
        self.wait(lambda: self.established(self.agg) and self.swarm.live == self.a.agents,
                  self.a.timeout, "the first aggregator established with every agent")
        self.out["cold_start_s"] = time.monotonic() - t0

    def run_once(self, i):
        n = self.a.agents
        self.wait(lambda: self.established(self.agg) and self.swarm.live == n, self.a.timeout,
                  "established with every agent before run %d" % i)
        kube_request(self.port, self.admin, "POST", "/sim/stats/reset")
        sampler = Sampler(self.port, self.admin, self.a.sample)
        sampler.wait_past(time.monotonic(), count=2)  # a quiet baseline before the kill
        closed0 = self.swarm.closed
        t0 = time.monotonic()
        self.agg.proc.p.send_signal(signal.SIGKILL)
        self.agg.proc.p.wait(30)
        self.agg.stop()
        self.agg = self.start_agg()
        marks = {"ready": time.monotonic() - t0}
        end = self.until(self.a.timeout)
        m = {}
        want = {"established", "all_live"} | (set() if self.a.unsigned else {"confirmed"})
        while not want <= set(marks):
            now = time.monotonic()
            if now > end:
                raise Failed("run %d: after %.0f s still waiting; reached %s; last metrics "
                             "agents_connected %s, token_reviews %s, pending %s; swarm live %d"
                             % (i, now - t0, sorted(marks),
                                m.get("tau_aggregator_agents_connected"),
                                m.get("tau_aggregator_token_reviews_total"),
                                m.get("tau_aggregator_token_reviews_pending"), self.swarm.live))
            if self.agg.proc.p.poll() is not None:
                raise Failed("the new aggregator exited (rc %s)" % self.agg.proc.p.returncode)
            m = metrics(self.agg.http_port) or m
            if "established" not in marks and m.get("tau_aggregator_pool_established") == 1 \
                    and m.get("tau_aggregator_agents_connected") == n:
                marks["established"] = now - t0
            if "confirmed" not in marks and m.get(
                    'tau_aggregator_auth_confirm_total{result="confirmed"}') == n:
                marks["confirmed"] = now - t0
            # Every agent's stream has ended once since the kill (the swarm's count lags it).
            if "all_live" not in marks and self.swarm.live == n and \
                    self.swarm.closed - closed0 >= n:
                marks["all_live"] = now - t0
            time.sleep(POLL_S)
        t1 = time.monotonic()
        sampler.wait_past(t1)  # the sample that covers t1
        sampler.stop()
        st, stats = kube_request(self.port, self.admin, "GET", "/sim/stats")
        m = metrics(self.agg.http_port) or m
        row = dict(marks)
        row.update(sampler.rates(t0, t1 + self.a.sample * 1.5))
        row["sim_tokenreviews"] = sum(v for k, v in stats.items() if k.endswith("/tokenreviews"))
        row["sim_requests"] = sum(v for v in stats.values() if isinstance(v, int))
        row["sim_stats"] = stats
        row["agg_token_reviews"] = m.get("tau_aggregator_token_reviews_total")
        row["auth_overloaded"] = m.get(
            'tau_aggregator_auth_failures_total{code="RESOURCE_EXHAUSTED"}')
        row["stream_ends"] = self.swarm.closed - closed0
        row["local_admitted"] = m.get('tau_aggregator_auth_local_total{result="admitted"}')
        row["confirm_refused"] = m.get('tau_aggregator_auth_confirm_total{result="refused"}')
        return row

    def stop(self):
        if self.swarm is not None:
            self.swarm.stop()
        if self.agg is not None and self.agg.proc.p.poll() is None:
            self.agg.stop()
        if self.sim is not None:
            self.sim.stop()
        remove_workdir(self.work)


def report(out):
    n = out["agents"]
    print("bench/restart: %d agents over %d TLS connections, real TokenReviews (kube-sim); "
          "aggregator args %s" % (n, out["channels"], " ".join(out["aggregator_args"]) or "-"))
    if "floor_s" in out:
        print("  floor: kube-sim answers %d TokenReviews on %d keep-alive connections in %.1f s "
              "(%.0f/s)" % (n, FLOOR_CONNS, out["floor_s"], n / out["floor_s"]))
    print("  floor: the review budget (--review-qps %d, --review-burst %d) reviews %d tokens in "
          "%.1f s at best" % (out["review_qps"], out["review_burst"], n, out["budget_bound_s"]))
    if "signing_s" in out:
        print("  tokens signed RS256 (kube-sim's key) in %.1f s; the aggregator verifies them "
              "locally" % out["signing_s"])
    if "cold_start_s" in out:
        print("  reference: cold start (swarm started -> established with every agent) %.1f s"
              % out["cold_start_s"])
    for i, r in enumerate(out["runs"]):
        print("  run %d: from the SIGKILL: ready %.1f s, established %.1f s, every agent acked "
              "%.1f s; ratio established / kube-sim floor %.2f, / budget floor %.2f" % (
                  i + 1, r["ready"], r["established"], r["all_live"],
                  r["established"] / out["floor_s"] if out.get("floor_s") else 0,
                  r["established"] / out["budget_bound_s"] if out["budget_bound_s"] else 0))
        if "confirmed" in r:
            print("         admitted on a locally verified token %s; every admission confirmed by "
                  "TokenReview %.1f s after the kill (refused %s)" % (
                      "%d" % r["local_admitted"] if r["local_admitted"] is not None else "?",
                      r["confirmed"], "%d" % r["confirm_refused"]
                      if r["confirm_refused"] is not None else "?"))
        print("         TokenReviews: kube-sim %d, aggregator %s; API requests %d; during the "
              "storm: requests/s peak %.0f mean %.0f, TokenReviews/s peak %.0f mean %.0f; "
              "streams ended %d, refused over a review cap %s" % (
                  r["sim_tokenreviews"], "%d" % r["agg_token_reviews"]
                  if r["agg_token_reviews"] is not None else "?", r["sim_requests"],
                  r["requests_peak"], r["requests_mean"], r["reviews_peak"], r["reviews_mean"],
                  r["stream_ends"], "%d" % r["auth_overloaded"]
                  if r["auth_overloaded"] is not None else "?"))
    if out["runs"]:
        est = [r["established"] for r in out["runs"]]
        out["summary"] = {"established_median": statistics.median(est),
                          "established_max": max(est)}
        if out["budget_bound_s"]:
            out["summary"]["ratio_budget_median"] = statistics.median(est) / out["budget_bound_s"]
        if out.get("floor_s"):
            out["summary"]["ratio_median"] = statistics.median(est) / out["floor_s"]
        print("  established again: median %.1f s, max %.1f s%s%s" % (
            statistics.median(est), max(est), "; ratio to the kube-sim floor %.2f" %
            out["summary"]["ratio_median"] if out.get("floor_s") else "",
            "; ratio to the budget floor %.2f" % out["summary"]["ratio_budget_median"]
            if out["budget_bound_s"] else ""))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--agents", type=int, default=10000)
    ap.add_argument("--channels", type=int, default=64,
                    help="TLS connections the agents' streams are spread over")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--sample", type=float, default=0.5, help="/sim/stats sampling period, s")
    ap.add_argument("--timeout", type=float, default=900,
                    help="bound on one restart, s (a longer one is a failure, not a figure)")
    ap.add_argument("--deadline", type=float, default=3600, help="bound on the whole run, s")
    ap.add_argument("--agg-arg", action="append", default=[],
                    help="one more tau-aggregator argument (repeatable), e.g. "
                    "--agg-arg=--review-qps=50")
    ap.add_argument("--review-qps", type=int, default=400,
                    help="the aggregator's --review-qps (its default: 400)")
    ap.add_argument("--review-burst", type=int, default=100,
                    help="the aggregator's --review-burst (its default: 100)")
    ap.add_argument("--no-floor", action="store_true", help="skip the floor measurement")
    ap.add_argument("--unsigned", action="store_true",
                    help="placeholder signatures: every agent waits for its TokenReview")
    ap.add_argument("--json", help="also write the figures here")
    a = ap.parse_args()
    if a.agents < 1 or a.runs < 1 or a.channels < 1:
        ap.error("need --agents, --runs, --channels >= 1")
    a.build = os.path.abspath(a.build)
    paths.AGG_BIN = os.path.join(a.build, "tau-aggregator")
    paths.AGENT_BIN = os.path.join(a.build, "tau-node-agent")
    paths.CLI_BIN = os.path.join(a.build, "tau")
    for b in (paths.AGG_BIN, os.path.join(a.build, "bench-tools", "restart_swarm")):
        if not os.access(b, os.X_OK):
            print("bench/restart: %s is not built" % b, file=sys.stderr)
            return 1
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))  # inherited by every child
    faulthandler.dump_traceback_later(a.deadline + 120, exit=True)
    b = Bench(a)
    rc = 0
    try:
        b.setup()
        if not a.no_floor:
            b.out["floor_s"] = b.floor()
        b.cold_start()
        for i in range(a.runs):
            row = b.run_once(i + 1)
            print("bench/restart: run %d: established %.1f s after the SIGKILL, %d TokenReviews"
                  % (i + 1, row["established"], row["sim_tokenreviews"]), flush=True)
            b.out["runs"].append(row)
    except (Failed, AssertionError) as e:
        print("bench/restart: FAILED: %s" % e, file=sys.stderr)
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
