"""Monitoring a platform team can use on day one: alerts, dashboard, and the metrics they use.

- promtool (Debian's prometheus package) checks charts/tau-aggregator/files/alerts.rules.yaml
  and runs its unit tests (tests/monitoring/alerts_test.yaml).
- Both charts render the same rules into a PrometheusRule and the dashboard into a ConfigMap
  labelled grafana_dashboard, from the one source file each (charts/tau-aggregator/files; the
  umbrella renders it as its subchart aggregator).
- A live aggregator (kube-sim, a capacity team, two fake agents; harness/budget.py) is scraped:
  every metric name the rules and the dashboard use exists in its /metrics, the budget
  families carry the values the Cohort and the TauCluster hold, every histogram is cumulative
  and agrees with its _count, and a pass whose write fails (kube-sim answers 500) moves the
  reconcile count, the error count, the retries and the request count of that code.

Environment: TAU_AGGREGATOR_BIN, TAU_PROTOC (as the budget suite), TAU_PROMTOOL, HELM.
"""
import http.client
import json
import os
import re
import subprocess
import unittest

import yaml

from harness import budget as h
from harness import paths
from harness.budget import NODES, TAU, TEAMS

ROOT = paths.ROOT
PROMTOOL = os.environ.get("TAU_PROMTOOL") or "promtool"
HELM = paths.HELM
FILES = os.path.join(ROOT, "charts", "tau-aggregator", "files")
RULES = os.path.join(FILES, "alerts.rules.yaml")
DASHBOARD = os.path.join(FILES, "dashboard.json")
NAME = re.compile(r"\b(tau_[a-z0-9_]+)\b")
SAMPLE = re.compile(r"^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{[^}]*\})? (\S+)$")
LABEL = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"')


def samples(body):
    """Every sample of a scrape as (name, {label: value}, float)."""
    out = []
    for line in body.splitlines():
        if not line or line.startswith("#"):
            continue
        m = SAMPLE.match(line)
        assert m, "not a sample line: %r" % line
        out.append((m.group(1), dict(LABEL.findall(m.group(2) or "")), float(m.group(3))))
    return out


def value(body, metric, **labels):
    """The value of the one sample `metric` with exactly these labels; None when absent."""
    for n, ls, v in samples(body):
        if n == metric and ls == labels:
            return v
    return None


def histogram_problems(body):
    """What is wrong with the histograms of a scrape: buckets that are not cumulative, a +Inf
    bucket unlike _count, a series without _sum or _count."""
    types = dict(re.findall(r"^# TYPE (\S+) (\S+)$", body, re.M))
    series = {}
    for n, ls, v in samples(body):
        for fam, t in ((n[:-len(sfx)], sfx) for sfx in ("_bucket", "_sum", "_count")
                       if n.endswith(sfx)):
            if types.get(fam) != "histogram":
                continue
            key = (fam, tuple(sorted((k, x) for k, x in ls.items() if k != "le")))
            s = series.setdefault(key, {"buckets": []})
            if t == "_bucket":
                s["buckets"].append((float(ls["le"]), v))
            else:
                s[t] = v
    problems = []
    for key, s in sorted(series.items()):
        b = s["buckets"]
        if [le for le, _ in b] != sorted(le for le, _ in b) or not b or b[-1][0] != float("inf"):
            problems.append("%s: buckets out of order or no +Inf: %s" % (key, b))
        elif any(b[i][1] > b[i + 1][1] for i in range(len(b) - 1)):
            problems.append("%s: buckets not cumulative: %s" % (key, b))
        elif s.get("_count") != b[-1][1]:
            problems.append("%s: _count %s != +Inf %s" % (key, s.get("_count"), b[-1][1]))
        if s.get("_sum") is None or s["_sum"] < 0:
            problems.append("%s: no _sum" % (key,))
    return series, problems


def setUpModule():
    h.require_all()


def run(argv, stderr=subprocess.STDOUT, **kw):
    return subprocess.run(argv, stdout=subprocess.PIPE, stderr=stderr,
                          universal_newlines=True, **kw)


def rule_exprs():
    with open(RULES) as f:
        doc = yaml.safe_load(f)
    return [r["expr"] for g in doc["groups"] for r in g["rules"]]


def dashboard_exprs():
    with open(DASHBOARD) as f:
        d = json.load(f)
    out = [t["expr"] for p in d["panels"] for t in p.get("targets", [])]
    for v in d.get("templating", {}).get("list", []):
        q = v.get("query")
        if isinstance(q, dict):
            out.append(q.get("query", ""))
    return out


def names_in(exprs):
    return sorted({m for e in exprs for m in NAME.findall(e)})


class RulesTest(unittest.TestCase):
    def test_promtool_check_rules(self):
        r = run([PROMTOOL, "check", "rules", RULES])
        self.assertEqual(r.returncode, 0, r.stdout)
        self.assertIn("SUCCESS: 7 rules found", r.stdout)

    def test_promtool_unit_tests(self):
        r = run([PROMTOOL, "test", "rules", "alerts_test.yaml"],
                cwd=os.path.join(ROOT, "tests", "monitoring"))
        self.assertEqual(r.returncode, 0, r.stdout)
        self.assertIn("SUCCESS", r.stdout)

    def test_a_broken_rule_is_refused(self):
        """The check can fail: a rule with a bad expression does not pass promtool."""
        bad = os.path.join(self.tmp(), "bad.rules.yaml")
        with open(bad, "w") as f:
            f.write("groups:\n- name: x\n  rules:\n  - alert: X\n    expr: sum(\n")
        r = run([PROMTOOL, "check", "rules", bad])
        self.assertNotEqual(r.returncode, 0, r.stdout)

    def tmp(self):
        import tempfile
        d = tempfile.mkdtemp(prefix="tau-monitoring-")
        self.addCleanup(subprocess.run, ["rm", "-rf", d])
        return d


class ChartsTest(unittest.TestCase):
    def render(self, chart, prefix):
        r = run([HELM, "template", "t", os.path.join(ROOT, "charts", chart), "-n", "tau-system",
                 "--set", prefix + "monitoring.prometheusRule.enabled=true",
                 "--set", prefix + "monitoring.dashboard.enabled=true",
                 "--set", prefix + "monitoring.prometheusRule.labels.release=kube-prom"],
                stderr=subprocess.PIPE,  # helm notes the links under charts/*/charts there
                env=dict(os.environ, HOME=os.environ.get("TMPDIR", "/tmp")))
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        return [d for d in yaml.safe_load_all(r.stdout) if d]

    def check(self, docs):
        with open(RULES) as f:
            rules = yaml.safe_load(f)
        with open(DASHBOARD) as f:
            dashboard = json.load(f)
        pr = [d for d in docs if d["kind"] == "PrometheusRule"]
        self.assertEqual(len(pr), 1)
        self.assertEqual(pr[0]["apiVersion"], "monitoring.coreos.com/v1")
        self.assertEqual(pr[0]["spec"], rules)
        self.assertEqual(pr[0]["metadata"]["labels"]["release"], "kube-prom")
        cms = [d for d in docs if d["kind"] == "ConfigMap"
               and d["metadata"]["labels"].get("grafana_dashboard") == "1"]
        self.assertEqual(len(cms), 1)
        self.assertEqual(json.loads(cms[0]["data"]["taugrid.json"]), dashboard)

    def test_standalone_chart(self):
        self.check(self.render("tau-aggregator", ""))

    def test_umbrella_chart(self):
        self.check(self.render("taugrid", "aggregator."))

    def test_dashboard_panels(self):
        """Each panel has its own id and place, its queries their own refId, and the node-truth,
        free-now and DRA families (docs/aggregator.md) each have a panel; that every name a
        panel uses is exposed is LiveMetricsTest's."""
        with open(DASHBOARD) as f:
            panels = json.load(f)["panels"]
        ids = [p["id"] for p in panels]
        self.assertEqual(len(ids), len(set(ids)), "panel ids repeat: %s" % ids)
        cells = {}
        for p in panels:
            g = p["gridPos"]
            for x in range(g["x"], g["x"] + g["w"]):
                for y in range(g["y"], g["y"] + g["h"]):
                    if (x, y) in cells:
                        self.fail("panels %r and %r overlap" % (cells[(x, y)], p["title"]))
                    cells[(x, y)] = p["title"]
            self.assertLessEqual(g["x"] + g["w"], 24, p["title"])
            refs = [t["refId"] for t in p["targets"]]
            self.assertTrue(refs, p["title"])
            self.assertEqual(len(refs), len(set(refs)), p["title"])
        used = {n: [p["title"] for p in panels if n in names_in(t["expr"] for t in p["targets"])]
                for n in ("tau_aggregator_free_now_gpus", "tau_aggregator_free_now_nodes",
                          "tau_aggregator_node_truth_disagreements", "tau_aggregator_dra_devices",
                          "tau_aggregator_dra_pools_incomplete",
                          "tau_aggregator_dra_classes_unusable")}
        self.assertEqual([n for n, titles in used.items() if not titles], [],
                         "metrics without a dashboard panel")

    def test_off_by_default(self):
        r = run([HELM, "template", "t", os.path.join(ROOT, "charts", "tau-aggregator"),
                 "-n", "tau-system"], env=dict(os.environ, HOME=os.environ.get("TMPDIR", "/tmp")))
        self.assertEqual(r.returncode, 0, r.stdout)
        self.assertNotIn("kind: PrometheusRule", r.stdout)
        self.assertNotIn("grafana_dashboard", r.stdout)

    def test_schema_refuses_a_bad_value(self):
        r = run([HELM, "template", "t", os.path.join(ROOT, "charts", "tau-aggregator"),
                 "--set", "monitoring.dashboard.enabled=maybe"],
                env=dict(os.environ, HOME=os.environ.get("TMPDIR", "/tmp")))
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("monitoring", r.stdout)


class LiveMetricsTest(unittest.TestCase):
    """A real aggregator with an established pool and a Ready capacity team."""

    @classmethod
    def setUpClass(cls):
        c = cls.c = h.Cluster(agent_nodes=("gpu-a", "gpu-b"))
        try:
            cls.nodes = {n: c.create(h.node(n, "h100", h.H100), NODES) for n in ("gpu-a", "gpu-b")}
            c.create(h.team("research"), TEAMS)
            c.create(h.tau_cluster(), TAU + "/clusters")
            cls.agg = c.start_aggregator("aggregator", "--initial-sync-timeout", "600s")
            for n in sorted(cls.nodes):
                c.start_agent(cls.agg, cls.nodes[n])
            c.wait_ok(lambda: c.team_ready_diffs("research"), "TauTeam research Ready")
        except BaseException:
            c.stop()
            raise

    @classmethod
    def tearDownClass(cls):
        cls.c.stop()

    def scrape(self):
        conn = http.client.HTTPConnection("127.0.0.1", self.agg.http_port, timeout=10)
        conn.request("GET", "/metrics")
        resp = conn.getresponse()
        body = resp.read().decode()
        conn.close()
        self.assertEqual(resp.status, 200)
        return body

    def test_every_name_the_rules_and_dashboard_use_exists(self):
        body = self.scrape()
        exposed = set()
        for fam, typ in re.findall(r"^# TYPE (\S+) (\S+)$", body, re.M):
            exposed.add(fam)
            if typ == "histogram":  # a query reads a histogram's samples, not its family
                exposed.update(fam + sfx for sfx in ("_bucket", "_sum", "_count"))
        used = names_in(rule_exprs() + dashboard_exprs())
        self.assertGreaterEqual(len(used), 15, used)
        self.assertEqual([n for n in used if n not in exposed], [],
                         "metric names used by the alerts or the dashboard but not exposed")

    def test_budget_values(self):
        def sample(body, line):
            return line + "\n" in body

        gpu = ('tau_budget_nominal_quota{team="research",flavor="taugrid-gpu-h100",'
               'resource="nvidia.com/gpu"} 16')

        def diffs():
            body = self.scrape()
            want = ["tau_budget_ready 1", "tau_budget_zeroed 0", "tau_budget_conflict 0",
                    "tau_aggregator_leader 1", "tau_aggregator_pool_established 1", gpu]
            return ["missing %r" % w for w in want if not sample(body, w)]
        self.c.wait_ok(diffs, "the budget's metrics match the Cohort and the TauCluster")
        body = self.scrape()
        passes = int(re.search(r"^tau_budget_passes_total (\d+)$", body, re.M).group(1))
        writes = int(re.search(r"^tau_budget_writes_total (\d+)$", body, re.M).group(1))
        self.assertGreaterEqual(passes, 1)
        self.assertGreaterEqual(writes, 2)  # at least the ResourceFlavor and the Cohort

    def test_histograms_cumulative_and_consistent(self):
        body = self.scrape()
        series, problems = histogram_problems(body)
        self.assertEqual(problems, [])
        fams = {fam for fam, _ in series}
        for fam in ("tau_controller_reconcile_duration_seconds",
                    "tau_workqueue_queue_duration_seconds",
                    "tau_aggregator_kube_request_duration_seconds",
                    "tau_aggregator_token_review_duration_seconds"):
            self.assertIn(fam, fams)
        # Passes ran and were timed; the agents' tokens were reviewed and timed; the informers'
        # lists were timed.
        self.assertGreaterEqual(value(body, "tau_controller_reconcile_duration_seconds_count",
                                      controller="team-budget"), 1)
        self.assertGreaterEqual(value(body, "tau_aggregator_token_review_duration_seconds_count",
                                      kind="report"), 2)
        self.assertGreaterEqual(value(body, "tau_aggregator_kube_request_duration_seconds_count",
                                      client="main", verb="LIST"), 1)
        self.assertGreaterEqual(value(body, "tau_aggregator_kube_requests_total",
                                      client="review", verb="POST", code="201"), 2)
        for client in ("main", "review"):
            self.assertIsNotNone(value(body, "tau_aggregator_kube_request_retries_total",
                                       client=client), client)
            self.assertGreaterEqual(value(body, "tau_aggregator_kube_throttle_wait_seconds_total",
                                          client=client), 0)

    def test_z_failed_write_counts_as_a_reconcile_error(self):
        """Every Cohort update is refused 403 (a write the client does not retry) until the
        budget's pass has failed at least once: the reconcile and error counts, the work
        queue's retries and the PUT 403s all move, and
        the histograms stay consistent.  Then the fault goes, the node is uncordoned and the
        team is Ready again."""
        c = self.c

        def counts():
            body = self.scrape()
            return {"passes": value(body, "tau_controller_reconcile_total",
                                    controller="team-budget"),
                    "errors": value(body, "tau_controller_reconcile_errors_total",
                                    controller="team-budget"),
                    "retries": value(body, "tau_workqueue_retries_total", name="team-budget"),
                    "put403": value(body, "tau_aggregator_kube_requests_total", client="main",
                                    verb="PUT", code="403") or 0,
                    "timed": value(body, "tau_controller_reconcile_duration_seconds_count",
                                   controller="team-budget")}

        before = counts()
        self.assertNotIn(None, before.values(), before)
        c.faults("PUT", {"rules": [{"verb": "update,patch", "resource": "cohorts",
                                    "status": 403}]})
        self.addCleanup(c.faults, "DELETE")
        c.merge(NODES + "/gpu-b", {"spec": {"unschedulable": True}})
        self.addCleanup(c.merge, NODES + "/gpu-b", {"spec": {"unschedulable": None}})
        c.wait_ok(lambda: [] if counts()["errors"] > before["errors"] else
                  ["no reconcile error counted yet: %s" % counts()],
                  "the failed Cohort update counted as a reconcile error")
        c.faults("DELETE")
        c.merge(NODES + "/gpu-b", {"spec": {"unschedulable": None}})
        c.wait_ok(lambda: c.team_ready_diffs("research"), "TauTeam research Ready again")
        after = counts()
        self.assertGreater(after["passes"], before["passes"])
        self.assertGreater(after["retries"], before["retries"])
        self.assertGreater(after["put403"], before["put403"])
        self.assertGreater(after["timed"], before["timed"])
        self.assertEqual(histogram_problems(self.scrape())[1], [])


if __name__ == "__main__":
    unittest.main()
