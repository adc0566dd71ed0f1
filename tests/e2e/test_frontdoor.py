"""End-to-end tests of `tau` as the platform's front door (issue 18), against kube-sim.

- SystemNamespaceTest: with TauCluster `cluster` status.systemNamespace set (as the aggregator
  records it), `tau workspace` and `tau team` find the objects there without
  --system-namespace; an explicit flag wins; without a TauCluster, tau-system.

- WorkspaceCreateTest: a real tau-aggregator (--system-namespace ml-platform) records its
  namespace; `tau workspace create` without --system-namespace writes there with the reference's
  defaults and --wait follows it to Ready; every flag; --dry-run -o yaml applied by kubectl gives
  the object -o json prints (and what create writes); an existing workspace tau did not create
  is never overwritten; values the CRD or the controller would refuse exit 2 and write nothing;
  --wait ends with the first failing condition when the controller refuses the workspace.
- WorkspaceDeleteTest (same aggregator): `tau workspace delete --wait` shows the drain held by
  an unfinished Job routed through the workspace's LocalQueue, by name, and finishes when the
  Job completes.
- ClusterTest: `tau cluster install --namespace ml-platform` with the real helm (.tools/bin)
  installs the umbrella chart; its gate passes step 1 and fails at step 2 (kube-sim runs no
  pods); once the Deployment reports an available replica (written as the deployment
  controller would) and a real tau-aggregator leads in ml-platform, `tau cluster status` and a
  second `tau cluster install` pass every step, found without flags, and the workspace and
  team commands find ml-platform too; with the aggregator stopped the gate fails at step 2
  (no leader); uninstall keeps the CRDs. The umbrella/standalone conflict both ways.

Binaries: TAU_CLI and TAU_AGGREGATOR_BIN (cmake/frontdoor-tests.cmake sets them), else build/.
kubectl: KUBECTL, else .tools/bin/kubectl (scripts/install-deps). Processes and waits: the e2e
harness (tests/e2e/harness).
Waits are wait-for-condition loops with deadlines, never fixed sleeps.
"""
import json
import os
import subprocess
import threading
import unittest

from harness import paths, require
from harness.aggregator import Aggregator
from harness.kubesim import KubeSim
from harness.waits import wait_for

ROOT = paths.ROOT
KUEUE_CRDS = paths.KUEUE_CRDS
TAU_CRDS = paths.TAU_CRDS
CLI = paths.CLI_BIN
KUBECTL = os.environ.get("KUBECTL") or os.path.join(paths.TOOLS, "kubectl")
HELM = os.environ.get("TAU_HELM") or os.path.join(paths.TOOLS, "helm")
CHARTS = os.path.join(ROOT, "charts")
SYSNS = "ml-platform"

TAU = "/apis/tau.azure.com/v1alpha1"
MERGE = "application/merge-patch+json"


def namespace(name):
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}


def workspace(name, ns):
    return {"apiVersion": "tau.azure.com/v1alpha1", "kind": "TauWorkspace",
            "metadata": {"name": name, "namespace": ns},
            "spec": {"authorization": {"mode": "cluster-wide"}}}


def run_tau(sim, *args, env=None, timeout=60):
    r = subprocess.run([CLI, "--kubeconfig", sim.kubeconfig] + list(args),
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env,
                       universal_newlines=True, timeout=timeout)
    return r.returncode, r.stdout, r.stderr


def start_aggregator(sim, sysns, extra=()):
    """The real tau-aggregator against kube-sim (admin), system namespace `sysns`."""
    require.binary(paths.AGG_BIN, "TAU_AGGREGATOR_BIN")
    return Aggregator(sim.kubeconfig, sim.tmp, "aggregator-%s" % sysns,
                      extra=["--system-namespace", sysns, "--budget-coalesce", "50ms",
                             "--feature-gates", "MultipleWorkspaces=true", *extra],
                      sync_timeout="1s", log_level="info")


class SystemNamespaceTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.sim = KubeSim(["--crds", KUEUE_CRDS, "--crds", TAU_CRDS])
        try:
            for ns in ("tau-system", "ml-platform"):
                cls.sim.ok("POST", "/api/v1/namespaces", namespace(ns))
            cls.sim.ok("POST", TAU + "/namespaces/ml-platform/workspaces",
                       workspace("in-custom", "ml-platform"))
            cls.sim.ok("POST", TAU + "/namespaces/tau-system/workspaces",
                       workspace("in-default", "tau-system"))
            cls.sim.ok("POST", TAU + "/namespaces/ml-platform/teams", {
                "apiVersion": "tau.azure.com/v1alpha1", "kind": "TauTeam",
                "metadata": {"name": "research", "namespace": "ml-platform"}, "spec": {}})
        except BaseException:
            cls.sim.stop()
            raise

    @classmethod
    def tearDownClass(cls):
        cls.sim.stop()

    def tau(self, *args):
        return run_tau(self.sim, *args)

    def names(self, out):
        return [w["name"] for w in json.loads(out)["items"]]

    def set_recorded(self, ns):
        st, _ = self.sim.req("GET", TAU + "/clusters/cluster")
        if st == 404:
            self.sim.ok("POST", TAU + "/clusters", {
                "apiVersion": "tau.azure.com/v1alpha1", "kind": "TauCluster",
                "metadata": {"name": "cluster"}, "spec": {}})
        self.sim.ok("PATCH", TAU + "/clusters/cluster/status",
                    {"status": {"systemNamespace": ns}}, MERGE)

    def test_without_a_taucluster_tau_system(self):
        self.sim.req("DELETE", TAU + "/clusters/cluster")
        rc, out, err = self.tau("workspace", "list", "-o", "json")
        self.assertEqual(rc, 0, err)
        self.assertEqual(self.names(out), ["in-default"])

    def test_recorded_namespace_found_without_flags(self):
        self.set_recorded("ml-platform")
        rc, out, err = self.tau("workspace", "list", "-o", "json")
        self.assertEqual(rc, 0, err)
        self.assertEqual(self.names(out), ["in-custom"])
        rc, out, err = self.tau("workspace", "status", "in-custom", "-o", "json")
        self.assertEqual(rc, 0, err)
        self.assertEqual(json.loads(out)["systemNamespace"], "ml-platform")
        rc, out, err = self.tau("team", "list", "-o", "json")
        self.assertEqual(rc, 0, err)
        self.assertEqual(self.names(out), ["research"])

    def test_explicit_flag_wins(self):
        self.set_recorded("ml-platform")
        for args in (["--system-namespace", "tau-system", "workspace", "list"],
                     ["workspace", "list", "--system-namespace", "tau-system"]):
            rc, out, err = self.tau(*(args + ["-o", "json"]))
            self.assertEqual(rc, 0, err)
            self.assertEqual(self.names(out), ["in-default"], args)


EVERY_FLAG = ["--namespace", "ml-gamma", "--team", "research",
              "--authorization", "workspace-rbac", "--principal-provider", "github",
              "--principal", "org/gamma-team", "--subject-kind", "User",
              "--subject", "gamma@example.com", "--queue", "gamma.q",
              "--workload-identity-sa", "gamma-wl",
              "--client-id", "00000000-0000-0000-0000-00000000c11d", "--create-namespace"]
EVERY_FLAG_SPEC = {
    "authorization": {"mode": "workspace-rbac"},
    "principalRef": {"provider": "github", "name": "org/gamma-team"},
    "kubernetesSubject": {"kind": "User", "name": "gamma@example.com"},
    "role": "researcher",
    "target": {"namespace": "ml-gamma", "createNamespace": True, "adopt": False},
    "queue": "gamma.q", "teamRef": {"name": "research"},
    "workloadIdentity": {"serviceAccountName": "gamma-wl",
                         "clientId": "00000000-0000-0000-0000-00000000c11d"}}


class AggregatorCase(unittest.TestCase):
    """kube-sim with the CRDs, TauCluster `cluster`, ClusterQueue alpha, TauTeam research, and
    the real aggregator in SYSNS (which records SYSNS in the TauCluster's status)."""

    @classmethod
    def setUpClass(cls):
        require.binary(KUBECTL, "KUBECTL")
        cls.sim = KubeSim(["--crds", KUEUE_CRDS, "--crds", TAU_CRDS])
        cls.agg = None
        try:
            cls.sim.ok("POST", "/api/v1/namespaces", namespace(SYSNS))
            cls.sim.ok("POST", TAU + "/clusters", {
                "apiVersion": "tau.azure.com/v1alpha1", "kind": "TauCluster",
                "metadata": {"name": "cluster"}, "spec": {}})
            cls.sim.ok("POST", "/apis/kueue.x-k8s.io/v1beta2/clusterqueues", {
                "apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ClusterQueue",
                "metadata": {"name": "alpha"}, "spec": {"namespaceSelector": {}}})
            cls.sim.ok("POST", TAU + "/namespaces/%s/teams" % SYSNS, {
                "apiVersion": "tau.azure.com/v1alpha1", "kind": "TauTeam",
                "metadata": {"name": "research", "namespace": SYSNS}, "spec": {}})
            cls.agg = start_aggregator(cls.sim, SYSNS)
            wait_for(lambda: cls.get(TAU + "/clusters/cluster").get("status", {}).get(
                "systemNamespace") == SYSNS, what="TauCluster status.systemNamespace recorded")
        except BaseException:
            cls.tearDownClass()
            raise

    @classmethod
    def tearDownClass(cls):
        if cls.agg is not None:
            cls.agg.stop()
        cls.sim.stop()

    @classmethod
    def get(cls, path):
        st, obj = cls.sim.req("GET", path)
        return obj if st == 200 else {}

    def ws(self, name):
        return self.get(TAU + "/namespaces/%s/workspaces/%s" % (SYSNS, name))

    def tau(self, *args, timeout=60):
        return run_tau(self.sim, *args, timeout=timeout)

    def kubectl(self, *args):
        return subprocess.run([KUBECTL] + list(args), env=self.sim.kenv(),
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              universal_newlines=True, timeout=60)


class WorkspaceCreateTest(AggregatorCase):
    def test_defaults_and_wait_until_ready(self):
        rc, out, err = self.tau("workspace", "create", "alpha", "--principal",
                                "alpha-researchers", "--subject", "grp-alpha", "--queue",
                                "alpha", "--create-namespace", "--wait", "--timeout", "60s")
        self.assertEqual(rc, 0, out + err + self.agg.log()[-3000:])
        self.assertIn("workspace %s/alpha created" % SYSNS, out)
        self.assertIn("workspace alpha: Ready (namespace alpha, queue alpha)", out)
        self.assertIn("QueueReady=True", out)
        ws = self.ws("alpha")
        self.assertEqual(ws["metadata"]["annotations"]["tau.azure.com/created-by"], "tau")
        self.assertEqual(ws["spec"], {
            "authorization": {"mode": "workspace-rbac"},
            "principalRef": {"provider": "entra", "name": "alpha-researchers"},
            "kubernetesSubject": {"kind": "Group", "name": "grp-alpha"},
            "role": "researcher",
            "target": {"namespace": "alpha", "createNamespace": True, "adopt": False},
            "queue": "alpha"})
        rc, out, err = self.tau("workspace", "check", "alpha")
        self.assertEqual(rc, 0, out + err)

    def test_every_flag_and_dry_run_applied_by_kubectl(self):
        rc, js, err = self.tau("workspace", "create", "gamma", "--dry-run", "-o", "json",
                               *EVERY_FLAG)
        self.assertEqual(rc, 0, err)
        want = json.loads(js)
        # -n: kubectl's short form of --namespace (the workspace's namespace here).
        rc, js_n, err = self.tau("workspace", "create", "gamma", "--dry-run", "-o", "json",
                                 *["-n" if f == "--namespace" else f for f in EVERY_FLAG])
        self.assertEqual((rc, json.loads(js_n)), (0, want), err)
        self.assertEqual(want["metadata"], {"name": "gamma", "namespace": SYSNS,
                                            "annotations": {"tau.azure.com/created-by": "tau"}})
        rc, yml, err = self.tau("workspace", "create", "gamma", "--dry-run", *EVERY_FLAG)
        self.assertEqual(rc, 0, err)
        self.assertEqual(self.ws("gamma"), {}, "a dry run writes nothing")
        path = os.path.join(self.sim.tmp, "gamma.yaml")
        with open(path, "w") as f:
            f.write(yml)
        r = self.kubectl("apply", "-f", path)
        self.assertEqual(r.returncode, 0, r.stderr + yml)
        got = self.ws("gamma")
        self.assertEqual(got["spec"], EVERY_FLAG_SPEC)
        self.assertEqual(got["spec"], dict(want["spec"], target=dict(want["spec"]["target"],
                                                                     adopt=False)))
        self.assertEqual(got["metadata"]["annotations"]["tau.azure.com/created-by"], "tau")
        # kubectl applied what tau marks as its own: create again replaces the spec in place.
        rc, out, err = self.tau("workspace", "create", "gamma", *EVERY_FLAG)
        self.assertEqual(rc, 0, err)
        self.assertIn("workspace %s/gamma updated" % SYSNS, out)
        self.assertEqual(self.ws("gamma")["spec"], EVERY_FLAG_SPEC)
        # And the same flags without --dry-run write the same spec.
        flags = [f.replace("gamma", "delta") for f in EVERY_FLAG]
        rc, out, err = self.tau("workspace", "create", "delta", *flags)
        self.assertEqual(rc, 0, err)
        self.assertEqual(self.ws("delta")["spec"], json.loads(json.dumps(
            EVERY_FLAG_SPEC).replace("gamma", "delta")))

    def test_refuses_to_overwrite_a_workspace_it_did_not_create(self):
        self.sim.ok("POST", TAU + "/namespaces/%s/workspaces" % SYSNS, {
            "apiVersion": "tau.azure.com/v1alpha1", "kind": "TauWorkspace",
            "metadata": {"name": "manual", "namespace": SYSNS},
            "spec": {"authorization": {"mode": "cluster-wide"},
                     "target": {"namespace": "ml-manual"}}})
        before = self.ws("manual")
        rc, out, err = self.tau("workspace", "create", "manual", "--authorization",
                                "cluster-wide", "--create-namespace")
        self.assertEqual(rc, 1, out + err)
        self.assertIn("workspace %s/manual exists and was not created by tau (no annotation "
                      "tau.azure.com/created-by=tau); refusing to overwrite it" % SYSNS, err)
        # The workspace controller may add its finalizer and status meanwhile (new
        # resourceVersions); what tau must not have touched is the spec and our mark.
        after = self.ws("manual")
        self.assertEqual(after["spec"], before["spec"])
        self.assertEqual(after["metadata"]["generation"], before["metadata"]["generation"])
        self.assertNotIn("tau.azure.com/created-by",
                         after["metadata"].get("annotations") or {})

    def test_invalid_values_exit_2_and_write_nothing(self):
        cases = [
            (["Bad"], "workspace name: \"Bad\": a lowercase RFC 1123 label"),
            (["x", "--namespace", "kube-x", "--authorization", "cluster-wide"],
             "--namespace kube-x: default and kube-* namespaces cannot host a workspace"),
            (["x", "--namespace", SYSNS, "--authorization", "cluster-wide"],
             "--namespace %s: it is the TauGrid system namespace" % SYSNS),
            (["x"], "authorization workspace-rbac (the default) needs --principal"),
            (["x", "--authorization", "cluster-wide", "--subject", "s"],
             "--authorization cluster-wide must leave --principal"),
            (["x", "--authorization", "open"], "--authorization open: must be"),
            (["x", "--principal", "p", "--subject", "s", "--principal-provider", "okta"],
             "--principal-provider okta: must be entra or github"),
            (["x", "--principal", "p", "--subject", "Not_A_Name", "--subject-kind",
              "ServiceAccount"], "--subject (a ServiceAccount in the workspace namespace)"),
            (["x", "--authorization", "cluster-wide", "--queue", "-q"], "--queue -q: at most"),
            (["x", "--authorization", "cluster-wide", "--team", "Team"], "--team: \"Team\""),
            (["x", "--authorization", "cluster-wide", "--client-id", "c"],
             "--workload-identity-sa and --client-id go together"),
            (["x", "--authorization", "cluster-wide", "-o", "yaml"], "-o belongs to --dry-run"),
            (["x", "--authorization", "cluster-wide", "--wait", "--timeout", "soon"],
             "--timeout soon"),
            ([], "NAME is required"),
        ]
        for args, msg in cases:
            rc, out, err = self.tau("workspace", "create", *args)
            self.assertEqual(rc, 2, (args, out, err))
            self.assertIn(msg, err, args)
        self.assertEqual(self.ws("x"), {})

    def test_cluster_state_refusals(self):
        self.sim.ok("POST", "/api/v1/namespaces", {
            "apiVersion": "v1", "kind": "Namespace",
            "metadata": {"name": "taken", "labels": {"tau.azure.com/workspace": "other"}}})
        rc, out, err = self.tau("workspace", "create", "eps", "--namespace", "taken",
                                "--authorization", "cluster-wide")
        self.assertEqual(rc, 1, out + err)
        self.assertIn("namespace taken belongs to workspace other", err)
        rc, out, err = self.tau("workspace", "create", "eps", "--namespace", "nowhere",
                                "--authorization", "cluster-wide")
        self.assertEqual(rc, 1, out + err)
        self.assertIn("namespace nowhere does not exist; create it, or give --create-namespace",
                      err)
        rc, out, err = self.tau("workspace", "create", "eps", "--team", "nobody",
                                "--authorization", "cluster-wide", "--create-namespace")
        self.assertEqual(rc, 1, out + err)
        self.assertIn("TauTeam %s/nobody: not found" % SYSNS, err)
        self.assertEqual(self.ws("eps"), {})

    def test_unowned_namespace_needs_adopt(self):
        self.sim.ok("POST", "/api/v1/namespaces", namespace("unowned"))
        rc, out, err = self.tau("workspace", "create", "eta", "--namespace", "unowned",
                                "--authorization", "cluster-wide", "--create-namespace")
        self.assertEqual(rc, 1, out + err)
        self.assertIn("namespace unowned already exists without ownership labels; the "
                      "aggregator takes it over only with --adopt", err)
        self.assertEqual(self.ws("eta"), {})
        rc, out, err = self.tau("workspace", "create", "eta", "--namespace", "unowned",
                                "--authorization", "cluster-wide", "--create-namespace",
                                "--adopt")
        self.assertEqual(rc, 0, out + err)
        self.assertEqual(self.ws("eta")["spec"]["target"],
                         {"namespace": "unowned", "createNamespace": True, "adopt": True})

    def test_wait_prints_the_failing_condition(self):
        # The queue's ClusterQueue does not exist: QueueReady stays False, and --wait ends at
        # its deadline with that condition's reason and message. The workspace is created
        # first and its status awaited, so the 3 s deadline measures tau's wait, not how soon
        # a loaded aggregator gets to its first reconcile; the second create replaces the spec
        # tau wrote with the same one.
        args = ("workspace", "create", "zeta", "--authorization", "cluster-wide",
                "--create-namespace", "--queue", "no-such-cq")
        rc, out, err = self.tau(*args)
        self.assertEqual(rc, 0, out + err)

        def queue_not_ready():
            st = self.ws("zeta").get("status") or {}
            conds = {c.get("type"): c for c in st.get("conditions") or []}
            q = conds.get("QueueReady") or {}
            return (st.get("phase") == "Pending" and q.get("status") == "False"
                    and "no-such-cq" in q.get("message", ""))
        wait_for(queue_not_ready, timeout=60, what="zeta Pending with QueueReady False")
        rc, out, err = self.tau(*args, "--wait", "--timeout", "3s")
        self.assertEqual(rc, 1, out + err)
        self.assertIn("workspace zeta: not Ready after 3 s (phase Pending)", out)
        self.assertRegex(out, r"failing: QueueReady=False \w+: .*no-such-cq")


class LineReader:
    """A process's stdout, read line by line in a thread, so a test can wait for a line."""

    def __init__(self, proc):
        self.proc = proc
        self.lines = []
        self.t = threading.Thread(target=self._read, daemon=True)
        self.t.start()

    def _read(self):
        for line in self.proc.stdout:
            self.lines.append(line)

    def text(self):
        return "".join(self.lines)


class WorkspaceDeleteTest(AggregatorCase):
    def test_delete_shows_the_held_drain_and_finishes_when_the_job_completes(self):
        rc, out, err = self.tau("workspace", "create", "del", "--authorization", "cluster-wide",
                                "--create-namespace", "--queue", "alpha", "--wait",
                                "--timeout", "60s")
        self.assertEqual(rc, 0, out + err)
        job = {"apiVersion": "batch/v1", "kind": "Job",
               "metadata": {"name": "train", "namespace": "del",
                            "labels": {"kueue.x-k8s.io/queue-name": "alpha"}},
               "spec": {"template": {"spec": {"restartPolicy": "Never", "containers": [
                   {"name": "main", "image": "busybox"}]}}}}
        self.sim.ok("POST", "/apis/batch/v1/namespaces/del/jobs", job)
        # Another Job on another queue does not hold the drain.
        other = json.loads(json.dumps(job))
        other["metadata"].update(name="elsewhere", labels={"kueue.x-k8s.io/queue-name": "x"})
        self.sim.ok("POST", "/apis/batch/v1/namespaces/del/jobs", other)
        p = subprocess.Popen([CLI, "--kubeconfig", self.sim.kubeconfig, "workspace", "delete",
                              "del", "--wait", "--timeout", "60s"], stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, universal_newlines=True)
        r = LineReader(p)
        self.addCleanup(self.reap, p, r)
        wait_for(lambda: "Job del/train (unfinished)" in r.text(), timeout=30,
                 what="delete names the unfinished Job")
        self.assertIn("workspace %s/del: deletion requested" % SYSNS, r.text())
        self.assertIn("finalizer tau.azure.com/workspace-cleanup holds it (namespace del)",
                      r.text())
        self.assertIn("the drain waits for 1 unfinished source routed through its queue",
                      r.text())
        self.assertNotIn("elsewhere", r.text())
        self.assertIn("deletionTimestamp", self.ws("del")["metadata"])
        self.assertIsNone(p.poll())
        # The Job completes: the drain ends, the finalizer goes, delete --wait returns 0.
        self.sim.ok("PATCH", "/apis/batch/v1/namespaces/del/jobs/train/status", {
            "status": {"conditions": [{"type": "Complete", "status": "True"}]}}, MERGE)
        rc = p.wait(60)
        r.t.join(10)
        self.assertEqual(rc, 0, r.text() + p.stderr.read())
        self.assertIn("workspace %s/del deleted" % SYSNS, r.text())
        self.assertEqual(self.ws("del"), {})

    @staticmethod
    def reap(p, r):
        if p.poll() is None:
            p.kill()
        p.wait()
        r.t.join(10)
        p.stdout.close()
        p.stderr.close()

    def test_delete_without_wait_and_not_found(self):
        rc, out, err = self.tau("workspace", "create", "quick", "--authorization",
                                "cluster-wide", "--create-namespace")
        self.assertEqual(rc, 0, out + err)
        rc, out, err = self.tau("workspace", "delete", "quick")
        self.assertEqual(rc, 0, out + err)
        self.assertIn("workspace %s/quick: deletion requested" % SYSNS, out)
        wait_for(lambda: self.ws("quick") == {}, timeout=30, what="quick gone")
        rc, out, err = self.tau("workspace", "delete", "quick")
        self.assertEqual(rc, 1, out + err)
        self.assertIn("workspace %s/quick: not found" % SYSNS, err)
        rc, out, err = self.tau("workspace", "delete")
        self.assertEqual((rc, err), (2, "tau workspace delete: NAME is required\n"))


CAPACITY_TEAM = ["--set", "tauCluster.managementMode=Reconcile",
                 "--set", "tauCluster.queues.ownership=Manage",
                 "--set", "tauCluster.queues.capacityTeamRef.name=research",
                 "--set", "teams[0].name=research"]


class ClusterTest(unittest.TestCase):
    def setUp(self):
        require.binary(HELM, "TAU_HELM")
        self.sim = KubeSim(["--crds", KUEUE_CRDS])
        self.addCleanup(self.sim.stop)
        self.env = self.sim.kenv()
        for var, sub in (("HELM_CACHE_HOME", "cache"), ("HELM_CONFIG_HOME", "config"),
                         ("HELM_DATA_HOME", "data")):
            self.env[var] = os.path.join(self.sim.home, "helm", sub)
        self.env["TAU_HELM"] = HELM
        self.agg = None

    def tearDown(self):
        if self.agg is not None:
            self.agg.stop()

    def tau(self, *args, timeout=120):
        return run_tau(self.sim, *args, env=self.env, timeout=timeout)

    def helm(self, *args):
        return subprocess.run([HELM] + list(args), env=self.env, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, universal_newlines=True, timeout=120)

    def steps(self, out):
        return [l.split(":")[0].split() for l in out.splitlines() if l.startswith("[")]

    def make_available(self, ns):
        self.sim.ok("PATCH", "/apis/apps/v1/namespaces/%s/deployments/tau-aggregator/status"
                    % ns, {"status": {"replicas": 1, "readyReplicas": 1,
                                      "availableReplicas": 1}}, MERGE)

    def test_install_custom_namespace_gate_and_commands(self):
        ns = "ml-platform"
        # docs/getting-started.md: the capacity team research receives the measured pool.
        rc, out, err = self.tau("cluster", "install", "--namespace", ns, "--timeout", "2s",
                                *CAPACITY_TEAM)
        self.assertEqual(rc, 1, out + err)
        self.assertIn("helm from $TAU_HELM", err)
        self.assertIn("release taugrid installed in %s" % ns, out)
        self.assertIn("[ok]      1/4 CRDs established", out)
        self.assertIn("[FAILED]  2/4 aggregator available with a leader: Deployment "
                      "%s/tau-aggregator has no available replica" % ns, out)
        self.assertNotIn("3/4", out)
        rel = json.loads(self.helm("list", "-n", ns, "-o", "json").stdout)
        self.assertEqual([(r["name"], r["chart"]) for r in rel], [("taugrid", "taugrid-0.1.0")])
        # What the deployment controller and the aggregator's pod would do: an available
        # replica, and the real aggregator leading in ns (Lease, TauCluster status).
        self.make_available(ns)
        self.agg = start_aggregator(self.sim, ns, extra=("--leader-elect",))
        wait_for(lambda: self.tau("cluster", "status")[0] == 0, timeout=60,
                 what="tau cluster status passes (found without flags)")
        rc, out, err = self.tau("cluster", "status")
        self.assertEqual(rc, 0, out + err)
        self.assertIn("TauGrid readiness gate in namespace %s" % ns, out)
        self.assertEqual(self.steps(out), [["[ok]", "1/4", "CRDs", "established"],
                                           ["[ok]", "2/4", "aggregator", "available", "with",
                                            "a", "leader"],
                                           ["[ok]", "3/4", "inventory", "established"],
                                           ["[ok]", "4/4", "TauCluster", "conditions"]])
        self.assertIn("InventoryEstablished=True", out)
        # Upgrade through tau again, no flags: the namespace is the installed one.
        rc, out, err = self.tau("cluster", "install", "--timeout", "60s", *CAPACITY_TEAM)
        self.assertEqual(rc, 0, out + err)
        self.assertIn("release taugrid installed in %s" % ns, out)
        self.assertIn("TauGrid in %s is ready" % ns, out)
        # Every command finds the install without --system-namespace.
        # And the getting-started workspace becomes Ready on the team's ClusterQueue.
        rc, out, err = self.tau("workspace", "create", "w1", "--team", "research",
                                "--principal", "alpha-researchers", "--subject", "grp-a1",
                                "--create-namespace", "--wait", "--timeout", "60s")
        self.assertEqual(rc, 0, out + err + self.agg.log()[-3000:])
        self.assertIn("workspace %s/w1 created" % ns, out)
        self.assertIn("workspace w1: Ready (namespace w1, queue jobqueue)", out)
        rc, out, err = self.tau("workspace", "list", "-o", "json")
        self.assertEqual([w["name"] for w in json.loads(out)["items"]], ["w1"], err)
        rc, out, err = self.tau("team", "list")
        self.assertEqual(rc, 0, err)
        rc, out, err = self.tau("workspace", "delete", "w1", "--wait", "--timeout", "30s")
        self.assertEqual(rc, 0, out + err)
        # The aggregator stops (its Lease is released): the gate fails at step 2.
        self.agg.stop()
        self.agg = None
        rc, out, err = self.tau("cluster", "status")
        self.assertEqual(rc, 1, out + err)
        self.assertIn("[ok]      1/4", out)
        self.assertRegex(out, r"\[FAILED\]  2/4 aggregator available with a leader: no leader: "
                              r"Lease %s/tau-aggregator" % ns)
        # Uninstall keeps the CRDs and says so.
        rc, out, err = self.tau("cluster", "uninstall")
        self.assertEqual(rc, 0, out + err)
        self.assertIn("release taugrid uninstalled from %s" % ns, out)
        self.assertIn("kept: the CRDs clusters.tau.azure.com", out)
        st, _ = self.sim.req("GET", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/"
                             "workspaces.tau.azure.com")
        self.assertEqual(st, 200)
        self.assertEqual(json.loads(self.helm("list", "-A", "-o", "json").stdout), [])

    def test_install_from_a_packaged_chart(self):
        # What a release ships: `helm package` of the umbrella (offline: its dependencies are
        # the links under charts/taugrid/charts), installed by tau from the .tgz.
        out = os.path.join(self.sim.tmp, "packages")
        r = self.helm("package", os.path.join(CHARTS, "taugrid"), "-d", out)
        self.assertEqual(r.returncode, 0, r.stderr)
        tgz = os.path.join(out, "taugrid-0.1.0.tgz")
        rc, out, err = self.tau("cluster", "install", "--chart", tgz, "--timeout", "2s")
        self.assertEqual(rc, 1, out + err)  # kube-sim runs no pods: the gate stops at step 2
        self.assertIn("release taugrid installed in tau-system", out)
        self.assertIn("[ok]      1/4 CRDs established", out)
        self.assertIn("[FAILED]  2/4 aggregator available with a leader", out)
        rel = json.loads(self.helm("list", "-n", "tau-system", "-o", "json").stdout)
        self.assertEqual([(r["name"], r["chart"]) for r in rel], [("taugrid", "taugrid-0.1.0")])
        for path in ("/apis/apps/v1/namespaces/tau-system/deployments/tau-aggregator",
                     "/apis/apps/v1/namespaces/tau-system/daemonsets/tau-node-agent",
                     "/apis/tau.azure.com/v1alpha1/clusters/cluster"):
            self.sim.ok("GET", path)

    def test_umbrella_and_standalone_refuse_each_other(self):
        self.sim.ok("POST", "/api/v1/namespaces", namespace("tau-system"))
        r = self.helm("install", "agg", os.path.join(CHARTS, "tau-aggregator"), "-n",
                      "tau-system")
        self.assertEqual(r.returncode, 0, r.stderr)
        rc, out, err = self.tau("cluster", "install", "--timeout", "1s")
        self.assertEqual(rc, 1, out + err)
        self.assertIn('Deployment tau-system/tau-aggregator is owned by release "agg"', err)
        self.assertIn("tau cluster install: helm upgrade --install of release taugrid in "
                      "tau-system failed", err)
        self.assertIn("never taken over: uninstall that release", err)
        self.assertNotIn("readiness gate", out)
        r = self.helm("uninstall", "agg", "-n", "tau-system")
        self.assertEqual(r.returncode, 0, r.stderr)
        # The other way: the umbrella installed by tau, then a standalone chart is refused.
        rc, out, err = self.tau("cluster", "install", "--timeout", "1s")
        self.assertIn("release taugrid installed in tau-system", out, err)
        r = self.helm("install", "agg", os.path.join(CHARTS, "tau-aggregator"), "-n",
                      "tau-system")
        self.assertNotEqual(r.returncode, 0)
        self.assertIn('Deployment tau-system/tau-aggregator is owned by release "taugrid"',
                      r.stderr)

    def test_dry_run_installs_nothing_and_finds_the_projects_helm(self):
        env = dict(self.env)
        del env["TAU_HELM"]
        # -n: kubectl's short form of --namespace.
        rc, out, err = run_tau(self.sim, "cluster", "install", "--dry-run", "-n", "ml-dry",
                               env=env, timeout=120)
        self.assertEqual(rc, 0, out + err)
        self.assertIn("helm from the project's .tools/bin", err)
        self.assertIn("CRD clusters.tau.azure.com not found, so the server cannot validate",
                      err)
        self.assertIn("kind: Deployment", out)
        self.assertIn('"--system-namespace=ml-dry"', out.replace("- --system-namespace=ml-dry",
                                                                 '"--system-namespace=ml-dry"'))
        self.assertNotIn("readiness gate", out)
        self.assertEqual(json.loads(self.helm("list", "-A", "-o", "json").stdout), [])
        st, _ = self.sim.req("GET", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/"
                             "workspaces.tau.azure.com")
        self.assertEqual(st, 404)
        env["TAU_CHART"] = "/nonexistent/chart"
        rc, out, err = run_tau(self.sim, "cluster", "install", env=env, timeout=60)
        self.assertEqual(rc, 1, out + err)
        self.assertIn("tau cluster install: helm upgrade --install of release taugrid", err)
        self.assertNotIn("never taken over", err)

    def test_help_and_bash_completion(self):
        rc, out, err = self.tau("--help")
        self.assertEqual(rc, 0, err)
        commands = out.split("Commands:\n")[1].split("\n\n")[0].splitlines()
        self.assertEqual([c.split()[0] for c in commands],
                         ["cluster", "workspace", "team", "inventory", "storage", "completion"])
        rc, script, err = self.tau("completion", "bash")
        self.assertEqual(rc, 0, err)
        path = os.path.join(self.sim.tmp, "tau.bash")
        with open(path, "w") as f:
            f.write(script)

        def complete(*words):
            line = ("source %s; COMP_WORDS=(%s); COMP_CWORD=%d; _tau; "
                    "echo \"${COMPREPLY[*]}\"" % (path, " ".join(words), len(words) - 1))
            r = subprocess.run(["bash", "-c", line], stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, universal_newlines=True, timeout=30)
            self.assertEqual(r.returncode, 0, r.stderr)
            return r.stdout.split()
        self.assertEqual(complete("tau", "cl"), ["cluster"])
        self.assertEqual(complete("tau", "workspace", "c"), ["check", "create"])
        self.assertIn("--principal-provider", complete("tau", "workspace", "create", "--pr"))
        self.assertEqual(complete("tau", "workspace", "create", "x", "--authorization", ""),
                         ["workspace-rbac", "cluster-wide"])
        self.assertEqual(complete("tau", "cluster", "u"), ["uninstall"])
        rc, out, err = self.tau("completion", "zsh")
        self.assertEqual(rc, 2)

    def test_usage_errors(self):
        for args, msg in ((["cluster"], "Usage: tau cluster install"),
                          (["cluster", "deploy"], "unknown command deploy"),
                          (["cluster", "status", "--set", "a=b"], "belong to install"),
                          (["cluster", "install", "--namespace", "Bad"], "--namespace"),
                          (["cluster", "install", "-n", "Bad"], "--namespace"),
                          (["cluster", "install", "--timeout", "x"], "--timeout x")):
            rc, out, err = self.tau(*args)
            self.assertEqual(rc, 2, (args, out, err))
            self.assertIn(msg, err, args)


if __name__ == "__main__":
    unittest.main(verbosity=2)
