"""Monitoring a platform team can use on day one: alerts, dashboard, and the metrics they use.

- promtool (Debian's prometheus package) checks charts/tau-aggregator/files/alerts.rules.yaml
  and runs its unit tests (tests/monitoring/alerts_test.yaml).
- Both charts render the same rules into a PrometheusRule and the dashboard into a ConfigMap
  labelled grafana_dashboard, from the one source file each (sync-charts keeps the copies).
- A live aggregator (kube-sim, a capacity team, two fake agents; budget/harness.py) is scraped:
  every metric name the rules and the dashboard use exists in its /metrics, and the budget
  families carry the values the Cohort and the TauCluster hold.

Environment: TAU_AGGREGATOR, TAU_PROTOC (as the budget suite), TAU_PROMTOOL, HELM.
"""
import http.client
import json
import os
import re
import subprocess
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(ROOT, "tests", "kube-sim"))

import yaml  # noqa: E402

import test_aggregator_workspaces as taw  # noqa: E402
from budget import harness as h  # noqa: E402
from budget.harness import NODES, TAU, TEAMS  # noqa: E402

PROMTOOL = os.environ.get("TAU_PROMTOOL") or "promtool"
HELM = os.environ.get("HELM") or os.path.join(ROOT, ".tools", "bin", "helm")
FILES = os.path.join(ROOT, "charts", "tau-aggregator", "files")
RULES = os.path.join(FILES, "alerts.rules.yaml")
DASHBOARD = os.path.join(FILES, "dashboard.json")
NAME = re.compile(r"\b(tau_[a-z0-9_]+)\b")


def setUpModule():
    taw.setUpModule()


def tearDownModule():
    taw.tearDownModule()


def run(argv, **kw):
    return subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
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
        self.assertIn("SUCCESS: 5 rules found", r.stdout)

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
                env=dict(os.environ, HOME=os.environ.get("TMPDIR", "/tmp")))
        self.assertEqual(r.returncode, 0, r.stdout)
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
        self.check(self.render("taugrid", "components.aggregator."))

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
        exposed = set(re.findall(r"^# TYPE (\S+) ", body, re.M))
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


if __name__ == "__main__":
    unittest.main()
