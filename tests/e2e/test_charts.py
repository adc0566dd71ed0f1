"""The Helm charts (charts/taugrid, charts/tau-aggregator, charts/tau-node-agent and the
tau-lib and tau-crds charts they depend on) with the real helm v4 and kubectl that
scripts/install-tools puts in .tools/bin, against kube-sim.

- every file under charts/ exists once: the umbrella depends on the component charts (alias and
  condition each), all three on the tau-lib library chart, the components on tau-crds, whose
  crds/ is charts/taugrid/crds; each charts/*/charts/ entry is a link to the chart it names, and
  no template is defined twice;
- `helm package` of every chart works offline, the packages carry the CRDs on both install paths
  and render what the chart directories render;
- `helm lint` passes for every chart;
- `helm template` with the defaults and with every charts/*/ci/*-values.yaml renders, and a
  server-side dry run (`kubectl apply --dry-run=server`) against kube-sim accepts every object;
  the rendered objects carry what docs/install.md promises (leader election, probes,
  restricted security, the DaemonSet's placement, token and read-only host mounts, flags);
- values that break a chart's values.schema.json are refused with helm's message;
- `helm install`, `upgrade`, `rollback`, `list` and `uninstall` of the umbrella and of the
  standalone charts work against kube-sim with helm's default server-side apply (a rollback
  removes what the later revision added; an upgrade over a manual edit conflicts until
  `--force-conflicts`); the umbrella refuses to render a component that a standalone release
  owns, and installs beside it with that component disabled; `helm test` runs the aggregator's
  readiness check (its Pod's command run here against /readyz answering 200, then 503; kube-sim
  runs no pods, so the test sets the phase the command's exit status gives);
- `kubectl apply --server-side` of every chart's rendered output creates, re-applies without a
  change, and deletes.

Environment: HELM and KUBECTL override the binaries (default: .tools/bin/helm, .tools/bin/kubectl;
missing ones are an error naming scripts/install-deps). Standard library only.
"""
import hashlib
import http.server
import json
import os
import re
import shutil
import subprocess
import tarfile
import tempfile
import threading
import unittest

from harness import paths
from harness.kubesim import KubeSim
from harness.waits import wait_for

HERE = paths.E2E
ROOT = paths.ROOT

CHARTS = os.path.join(ROOT, "charts")
UMBRELLA = os.path.join(CHARTS, "taugrid")
AGG = os.path.join(CHARTS, "tau-aggregator")
AGENT = os.path.join(CHARTS, "tau-node-agent")
LIB = os.path.join(CHARTS, "tau-lib")
CRDS_CHART = os.path.join(CHARTS, "tau-crds")
ALL_CHARTS = (UMBRELLA, AGG, AGENT)  # the ones that render objects
# Each link under charts/, and the chart directory it stands for.
LINKS = {
    "tau-crds/crds": "taugrid/crds",
    "tau-aggregator/charts/tau-lib": "tau-lib",
    "tau-aggregator/charts/tau-crds": "tau-crds",
    "tau-node-agent/charts/tau-lib": "tau-lib",
    "tau-node-agent/charts/tau-crds": "tau-crds",
    "taugrid/charts/tau-lib": "tau-lib",
    "taugrid/charts/tau-aggregator": "tau-aggregator",
    "taugrid/charts/tau-node-agent": "tau-node-agent",
}
TOOLS = os.path.join(ROOT, ".tools", "bin")
HELM = os.environ.get("HELM") or os.path.join(TOOLS, "helm")
KUBECTL = os.environ.get("KUBECTL_CHARTS") or os.path.join(TOOLS, "kubectl")
KUEUE_CRDS = os.path.join(ROOT, "tests", "fixtures", "kueue")
TAU_CRDS = os.path.join(UMBRELLA, "crds")
TEST_CRDS = os.path.join(HERE, "charts")
NS = "tau-system"


def ci_values(chart):
    d = os.path.join(chart, "ci")
    if not os.path.isdir(d):
        return []
    return sorted(os.path.join(d, f) for f in os.listdir(d) if f.endswith("-values.yaml"))


def by_kind(objs, kind, name=None):
    found = [o for o in objs if o["kind"] == kind and (name is None or o["metadata"]["name"] == name)]
    if not found:
        raise AssertionError("no %s %s among %s" % (kind, name or "", [
            (o["kind"], o["metadata"]["name"]) for o in objs]))
    return found[0]


class Tools:
    """helm and kubectl against one kube-sim, with their own HOME and helm directories."""

    def __init__(self, sim):
        self.sim = sim
        self.env = sim.kenv()
        for var, sub in (("HELM_CACHE_HOME", "cache"), ("HELM_CONFIG_HOME", "config"),
                         ("HELM_DATA_HOME", "data")):
            self.env[var] = os.path.join(sim.home, "helm", sub)

    def run(self, binary, args, check=True):
        r = subprocess.run([binary] + list(args), env=self.env, stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, universal_newlines=True, timeout=120)
        if check and r.returncode != 0:
            raise AssertionError("%s %s failed (%d):\n%s\n%s" % (
                os.path.basename(binary), " ".join(args), r.returncode, r.stdout, r.stderr))
        return r

    def helm(self, *args, check=True):
        return self.run(HELM, args, check)

    def kubectl(self, *args, check=True):
        return self.run(KUBECTL, args, check)

    def dry_run(self, manifest):
        """Server-side dry run of a rendered manifest; the objects as the server returned them."""
        path = os.path.join(self.sim.tmp, "rendered.yaml")
        with open(path, "w") as f:
            f.write(manifest)
        r = self.kubectl("apply", "--dry-run=server", "-o", "json", "-f", path)
        out = json.loads(r.stdout)
        return out["items"] if out.get("kind") == "List" else [out]


def require_tools():
    missing = [b for b in (HELM, KUBECTL) if not os.access(b, os.X_OK)]
    if missing:
        raise AssertionError("missing %s: run scripts/install-deps (it puts helm and kubectl "
                             "in .tools/bin)" % ", ".join(missing))


class _Readyz(http.server.BaseHTTPRequestHandler):
    code = 200

    def do_GET(self):
        self.send_response(self.code if self.path == "/readyz" else 404)
        self.end_headers()
        self.wfile.write(b"ok\n" if self.code == 200 else b"not ready\n")

    def log_message(self, *args):
        pass


def run_readyz(command, code, attempts):
    """Runs the helm test Pod's command against a local /readyz answering `code`:
    (exit status, its output)."""
    handler = type("Readyz", (_Readyz,), {"code": code})
    srv = http.server.HTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    try:
        r = subprocess.run(command, env=dict(os.environ, TAU_READYZ_ADDRESS="127.0.0.1:%d" %
                                             srv.server_address[1], TAU_READYZ_ATTEMPTS=attempts),
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                           universal_newlines=True, timeout=30)
        return r.returncode, r.stdout
    finally:
        srv.shutdown()
        srv.server_close()


def start_sim(*crd_dirs):
    args = []
    for d in crd_dirs:
        args += ["--crds", d]
    return KubeSim(args)


class StaticTest(unittest.TestCase):
    """No cluster: the copies, lint, schema refusals, template-time refusals."""

    @classmethod
    def setUpClass(cls):
        require_tools()
        cls.tmp = tempfile.mkdtemp(prefix="tau-charts-")
        cls.env = dict(os.environ, HOME=cls.tmp, HELM_CACHE_HOME=cls.tmp + "/c",
                       HELM_CONFIG_HOME=cls.tmp + "/f", HELM_DATA_HOME=cls.tmp + "/d")

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def helm(self, *args):
        return subprocess.run([HELM] + list(args), env=self.env, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, universal_newlines=True, timeout=120)

    def template(self, chart, *args):
        return self.helm("template", "t", chart, "-n", NS, *args)

    def test_every_file_once(self):
        files, links, defines = {}, {}, {}
        for top, dirs, names in os.walk(CHARTS):
            for name in dirs + names:
                path = os.path.join(top, name)
                rel = os.path.relpath(path, CHARTS)
                if os.path.islink(path):
                    links[rel] = os.path.relpath(os.path.realpath(path), CHARTS)
                elif os.path.isfile(path):
                    with open(path, "rb") as f:
                        data = f.read()
                    files.setdefault(hashlib.sha256(data).hexdigest(), []).append(rel)
                    for d in re.findall(rb'define "([^"]+)"', data):
                        defines.setdefault(d.decode(), []).append(rel)
            dirs[:] = [d for d in dirs if not os.path.islink(os.path.join(top, d))]
        self.assertEqual(links, LINKS)
        self.assertEqual([p for p in files.values() if len(p) > 1], [], "files held twice")
        self.assertEqual({d: p for d, p in defines.items() if len(p) > 1}, {},
                         "templates defined twice")
        self.assertFalse(os.path.exists(os.path.join(ROOT, "scripts", "sync-charts")))

    def test_dependencies(self):
        yaml = __import__("yaml")

        def chart(path):
            with open(os.path.join(path, "Chart.yaml")) as f:
                return yaml.safe_load(f)

        deps = {c: [(d["name"], d.get("alias"), d.get("condition"), d["repository"])
                    for d in chart(c).get("dependencies", [])] for c in ALL_CHARTS}
        self.assertEqual(chart(LIB)["type"], "library")
        self.assertEqual(deps[UMBRELLA], [
            ("tau-lib", None, None, "file://../tau-lib"),
            ("tau-aggregator", "aggregator", "aggregator.enabled", "file://../tau-aggregator"),
            ("tau-node-agent", "nodeAgent", "nodeAgent.enabled", "file://../tau-node-agent")])
        for c in (AGG, AGENT):
            self.assertEqual(deps[c], [("tau-lib", None, None, "file://../tau-lib"),
                                       ("tau-crds", "crds", "crds.enabled", "file://../tau-crds")])
        # The umbrella installs the CRDs from its own crds/, not once more per component.
        r = self.template(UMBRELLA, "--include-crds")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stdout.count("kind: CustomResourceDefinition"), 3)
        for c in (AGG, AGENT):
            r = self.template(c, "--include-crds")
            self.assertEqual(r.stdout.count("kind: CustomResourceDefinition"), 3, c)

    def test_package_offline(self):
        # No repository configured (own helm directories), no network needed: file://
        # dependencies are the links under charts/, packaged with their content.
        out = os.path.join(self.tmp, "packages")
        for c in ALL_CHARTS + (LIB, CRDS_CHART):
            r = self.helm("package", c, "-d", out)
            self.assertEqual(r.returncode, 0, r.stderr)
        crds = sorted(n for n in os.listdir(TAU_CRDS) if n.endswith(".yaml"))

        def members(name):
            with tarfile.open(os.path.join(out, name + "-0.1.0.tgz")) as t:
                return {m.name for m in t.getmembers() if m.isfile()}

        um = members("taugrid")
        for n in crds:
            self.assertIn("taugrid/crds/" + n, um)
            self.assertIn("tau-aggregator/charts/tau-crds/crds/" + n, members("tau-aggregator"))
            self.assertIn("tau-node-agent/charts/tau-crds/crds/" + n, members("tau-node-agent"))
        for m in ("taugrid/charts/tau-lib/templates/_image.tpl",
                  "taugrid/charts/tau-aggregator/templates/_aggregator.tpl",
                  "taugrid/charts/tau-aggregator/templates/tests/readiness.yaml",
                  "taugrid/charts/tau-node-agent/templates/_node-agent.tpl"):
            self.assertIn(m, um)
        for c in ALL_CHARTS:
            name = os.path.basename(c)
            with self.subTest(chart=name):
                a = self.template(c)
                b = self.template(os.path.join(out, name + "-0.1.0.tgz"))
                self.assertEqual(a.returncode, 0, a.stderr)
                self.assertEqual(b.stdout, a.stdout)

    def test_lint(self):
        for chart in ALL_CHARTS + (LIB, CRDS_CHART):
            for values in [None] + ci_values(chart):
                with self.subTest(chart=os.path.basename(chart), values=values):
                    args = ["lint", "--strict", chart, "-n", NS]
                    if values:
                        args += ["-f", values]
                    r = self.helm(*args)
                    self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
                    self.assertIn("1 chart(s) linted, 0 chart(s) failed", r.stdout)

    def test_schema_refuses_bad_values(self):
        cases = [
            (AGG, ["--set", "replicas=0"], "at '/replicas': minimum: got 0, want 1"),
            (AGG, ["--set", "featureGates.NoSuchGate=true"],
             "at '/featureGates': additional properties 'NoSuchGate' not allowed"),
            (AGG, ["--set", "initialSyncTimeout=soon"], "at '/initialSyncTimeout'"),
            (AGG, ["--set", "logLevel=loud"], "at '/logLevel'"),
            (AGENT, ["--set", "tokenExpirationSeconds=60"],
             "at '/tokenExpirationSeconds': minimum: got 60, want 600"),
            (AGENT, ["--set", "gpuClasLabel=x"], "additional properties 'gpuClasLabel' not allowed"),
            (AGENT, ["--set", "nvml.hostLibraryDir=usr/lib"],
             "at '/nvml/hostLibraryDir': 'usr/lib' does not match pattern '^/'"),
            (AGENT, ["--set", "nodeConditions.enabled=yes"],
             "at '/nodeConditions/enabled': got string, want boolean"),
            # The umbrella's subcharts: their own schema checks their values.
            (UMBRELLA, ["--set", "aggregator.replicas=two"],
             "aggregator:\n- at '/replicas': got string, want integer"),
            (UMBRELLA, ["--set", "aggregator.featureGates.Bogus=true"],
             "aggregator:\n- at '/featureGates': additional properties 'Bogus' not allowed"),
            (UMBRELLA, ["--set", "nodeAgent.gpuClasLabel=x"],
             "nodeAgent:\n- at '': additional properties 'gpuClasLabel' not allowed"),
            (UMBRELLA, ["--set", "tauCluster.managementMode=Sometimes"],
             "at '/tauCluster/managementMode': value must be one of 'Observe', 'Reconcile'"),
            (UMBRELLA, ["--set", "tauCluster.queues.capacityTeamRef.nam=x"],
             "additional properties 'nam' not allowed"),
            (UMBRELLA, ["--set", "nodeAgent.enabled=maybe"],
             "at '/nodeAgent/enabled': got string, want boolean"),
            (UMBRELLA, ["--set", "components.aggregator.replicas=3"],
             "additional properties 'components' not allowed"),
        ]
        for chart, args, message in cases:
            with self.subTest(chart=os.path.basename(chart), args=args):
                r = self.template(chart, *args)
                self.assertNotEqual(r.returncode, 0, r.stdout)
                self.assertIn("values don't meet the specifications of the schema", r.stderr)
                self.assertIn(message, r.stderr)

    def test_template_refusals(self):
        cases = [
            (AGG, ["--set", "leaderElection.enabled=false"],
             "replicas is 2 but leaderElection.enabled is false"),
            (AGG, ["--set", "tls.enabled=true"], "tls.enabled needs tls.secretName"),
            (AGENT, ["--set", "tls.enabled=true"], "tls.enabled needs tls.caSecretName"),
            (UMBRELLA, ["--set", "teams[0].name=r", "--set",
                        "tauCluster.queues.capacityTeamRef.name=r", "--set",
                        "teams[0].quota[0].flavor=a"], "r is the capacity team"),
        ]
        for chart, args, message in cases:
            with self.subTest(chart=os.path.basename(chart), args=args):
                r = self.template(chart, *args)
                self.assertNotEqual(r.returncode, 0, r.stdout)
                self.assertIn(message, r.stderr)
        r = self.helm("template", "t", UMBRELLA, "-n", "default")
        self.assertNotEqual(r.returncode, 0)
        self.assertIn('installs into the system namespace "tau-system", not "default"', r.stderr)


class RenderTest(unittest.TestCase):
    """helm template | kubectl apply --dry-run=server against kube-sim, and what it renders."""

    @classmethod
    def setUpClass(cls):
        require_tools()
        cls.sim = start_sim(KUEUE_CRDS, TAU_CRDS, TEST_CRDS)
        try:
            cls.t = Tools(cls.sim)
            cls.t.kubectl("create", "namespace", NS)
        except BaseException:
            cls.sim.stop()
            raise

    @classmethod
    def tearDownClass(cls):
        cls.sim.stop()

    def render(self, chart, *args):
        return self.t.helm("template", "t", chart, "-n", NS, *args).stdout

    def test_every_values_file_renders_and_the_server_accepts_it(self):
        for chart in ALL_CHARTS:
            for values in [None] + ci_values(chart):
                with self.subTest(chart=os.path.basename(chart), values=values):
                    args = ["-f", values] if values else []
                    objs = self.t.dry_run(self.render(chart, *args))
                    self.assertGreater(len(objs), 3)
                    kinds = {o["kind"] for o in objs}
                    if chart is not AGENT:
                        self.assertIn("Deployment", kinds)
                    if chart is not AGG:
                        self.assertIn("DaemonSet", kinds)

    def test_aggregator_deployment(self):
        objs = self.t.dry_run(self.render(UMBRELLA))
        dep = by_kind(objs, "Deployment", "tau-aggregator")
        self.assertEqual(dep["spec"]["replicas"], 2)
        pod = dep["spec"]["template"]["spec"]
        c = pod["containers"][0]
        args = c["args"]
        for want in ("--leader-elect", "--system-namespace=tau-system",
                     "--kueue-config-namespace=kueue-system",
                     "--grpc-listen=0.0.0.0:50051", "--http-listen=0.0.0.0:8080",
                     "--token-audience=taugrid",
                     "--agent-service-account=tau-system:tau-node-agent"):
            self.assertIn(want, args)
        self.assertFalse([a for a in args if a.startswith("--feature-gates")], args)
        self.assertEqual(c["livenessProbe"]["grpc"], {"port": 50051})
        self.assertEqual(c["readinessProbe"]["httpGet"]["path"], "/readyz")
        self.assertEqual(pod["securityContext"]["seccompProfile"], {"type": "RuntimeDefault"})
        self.assertIs(pod["securityContext"]["runAsNonRoot"], True)
        sc = c["securityContext"]
        self.assertIs(sc["readOnlyRootFilesystem"], True)
        self.assertIs(sc["allowPrivilegeEscalation"], False)
        self.assertEqual(sc["capabilities"], {"drop": ["ALL"]})
        self.assertIn("memory", c["resources"]["limits"])
        self.assertIn("cpu", c["resources"]["requests"])
        self.assertEqual(pod["topologySpreadConstraints"][0]["topologyKey"], "kubernetes.io/hostname")
        svc = by_kind(objs, "Service", "tau-aggregator")
        self.assertEqual(sorted(p["name"] for p in svc["spec"]["ports"]), ["grpc", "http"])
        self.assertNotIn("publishNotReadyAddresses", svc["spec"])
        pdb = by_kind(objs, "PodDisruptionBudget", "tau-aggregator")
        self.assertEqual(pdb["spec"]["maxUnavailable"], 1)
        # Nothing lands outside the release namespace, so the chart installs on a cluster
        # without Kueue's namespace: Kueue's ConfigMap is read through the ClusterRole, by name.
        self.assertEqual({o["metadata"].get("namespace") for o in objs} - {None, NS}, set())
        role = by_kind(objs, "ClusterRole", "tau-aggregator")
        self.assertIn({"apiGroups": [""], "resources": ["configmaps"],
                       "resourceNames": ["kueue-manager-config"], "verbs": ["list", "watch"]},
                      role["rules"])

    def test_aggregator_values_reach_the_flags(self):
        objs = self.t.dry_run(self.render(
            UMBRELLA, "-f", os.path.join(UMBRELLA, "ci", "capacity-team-values.yaml")))
        dep = by_kind(objs, "Deployment", "tau-aggregator")
        self.assertEqual(dep["spec"]["replicas"], 3)
        self.assertIn("--feature-gates=MultipleWorkspaces=true",
                      dep["spec"]["template"]["spec"]["containers"][0]["args"])
        tc = by_kind(objs, "TauCluster", "cluster")
        self.assertEqual(tc["spec"]["queues"]["capacityTeamRef"], {"name": "research"})
        teams = sorted(o["metadata"]["name"] for o in objs if o["kind"] == "TauTeam")
        self.assertEqual(teams, ["research", "vision"])
        # TLS from cert-manager: the Certificate, the Secret mounted, liveness over HTTP (the
        # kubelet's gRPC probe has no TLS), agents given the CA instead of --insecure.
        objs = self.t.dry_run(self.render(
            UMBRELLA, "-f", os.path.join(UMBRELLA, "ci", "tls-cert-manager-values.yaml")))
        cert = by_kind(objs, "Certificate", "tau-aggregator")
        self.assertIn("tau-aggregator.tau-system.svc", cert["spec"]["dnsNames"])
        c = by_kind(objs, "Deployment")["spec"]["template"]["spec"]["containers"][0]
        self.assertIn("--tls-cert=/etc/tau/tls/tls.crt", c["args"])
        self.assertEqual(c["livenessProbe"]["httpGet"]["path"], "/livez")
        a = by_kind(objs, "DaemonSet")["spec"]["template"]["spec"]["containers"][0]
        self.assertIn("--ca-file=/etc/tau/ca/ca.crt", a["args"])
        self.assertNotIn("--insecure", a["args"])

    def test_node_agent_daemonset(self):
        objs = self.t.dry_run(self.render(AGENT))
        ds = by_kind(objs, "DaemonSet", "tau-node-agent")
        self.assertEqual(ds["spec"]["updateStrategy"]["rollingUpdate"]["maxUnavailable"], "10%")
        pod = ds["spec"]["template"]["spec"]
        terms = pod["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
        exprs = terms["nodeSelectorTerms"][0]["matchExpressions"]
        self.assertIn({"key": "kubernetes.io/os", "operator": "In", "values": ["linux"]}, exprs)
        self.assertIn({"key": "tau.azure.com/gpu-class", "operator": "Exists"}, exprs)
        self.assertIn({"key": "sku", "operator": "Equal", "value": "gpu", "effect": "NoSchedule"},
                      pod["tolerations"])
        self.assertIn({"key": "nvidia.com/gpu", "operator": "Exists"}, pod["tolerations"])
        self.assertEqual(pod["priorityClassName"], "system-node-critical")
        c = pod["containers"][0]
        self.assertIn({"name": "NODE_NAME", "valueFrom": {"fieldRef": {"fieldPath": "spec.nodeName"}}},
                      c["env"])
        self.assertIn({"name": "TAU_AGENT_NVML", "value": "/host/nvml/libnvidia-ml.so.1"}, c["env"])
        self.assertIn("--aggregator=tau-aggregator.tau-system.svc:50051", c["args"])
        self.assertIn("--host-root=/host", c["args"])
        token = [v for v in pod["volumes"] if v["name"] == "token"][0]
        sat = token["projected"]["sources"][0]["serviceAccountToken"]
        self.assertEqual(sat["audience"], "taugrid")
        self.assertLessEqual(sat["expirationSeconds"], 3600)
        self.assertIn("--token-file=/var/run/secrets/tau/" + sat["path"], c["args"])
        # Exactly the host paths the agent probes, all read-only: /dev, /sys, the kubelet's
        # plugin registry, pod-resources socket and CSI driver sockets under --host-root, and
        # the directory of the driver's libnvidia-ml.so.1 at /host/nvml.
        host = {v["name"]: v["hostPath"]["path"] for v in pod["volumes"] if "hostPath" in v}
        self.assertEqual(sorted(host.values()), [
            "/dev", "/sys", "/usr/lib/x86_64-linux-gnu", "/var/lib/kubelet/plugins",
            "/var/lib/kubelet/plugins_registry", "/var/lib/kubelet/pod-resources"])
        mounts = {m["name"]: m for m in c["volumeMounts"]}
        for name, path in host.items():
            self.assertIs(mounts[name].get("readOnly"), True, name)
            self.assertEqual(mounts[name]["mountPath"],
                             "/host/nvml" if name == "host-nvml" else "/host" + path)
        self.assertEqual([v["hostPath"]["type"] for v in pod["volumes"]
                          if v["name"] == "host-nvml"], ["Directory"])
        sc = c["securityContext"]
        self.assertEqual(sc["capabilities"], {"drop": ["ALL"]})
        self.assertIs(sc["readOnlyRootFilesystem"], True)
        self.assertIs(sc["allowPrivilegeEscalation"], False)
        self.assertLessEqual(int(c["resources"]["requests"]["cpu"].rstrip("m")), 10)

    def test_node_conditions_value(self):
        """nodeConditions.enabled: --node-conditions and patch on nodes/status, both or none."""
        role = "tau-node-agent-node-conditions"

        def agent_of(objs):
            return by_kind(objs, "DaemonSet")["spec"]["template"]["spec"]["containers"][0]

        for chart, prefix in ((AGENT, ""), (UMBRELLA, "nodeAgent.")):
            with self.subTest(chart=os.path.basename(chart), enabled=False):
                objs = self.t.dry_run(self.render(chart))
                self.assertNotIn("--node-conditions", agent_of(objs)["args"])
                self.assertFalse([o for o in objs if o["metadata"]["name"] == role])
                granted = [r for o in objs if o["kind"] == "ClusterRole"
                           and o["metadata"]["name"].startswith("tau-node-agent")
                           for r in o["rules"] if "nodes/status" in r["resources"]]
                self.assertEqual(granted, [])
            with self.subTest(chart=os.path.basename(chart), enabled=True):
                objs = self.t.dry_run(self.render(
                    chart, "--set", prefix + "nodeConditions.enabled=true"))
                self.assertIn("--node-conditions", agent_of(objs)["args"])
                cr = by_kind(objs, "ClusterRole", role)
                self.assertEqual(cr["rules"], [{"apiGroups": [""], "resources": ["nodes/status"],
                                                "verbs": ["patch"]}])
                crb = by_kind(objs, "ClusterRoleBinding", role)
                self.assertEqual(crb["roleRef"]["name"], role)
                self.assertEqual(crb["subjects"], [{"kind": "ServiceAccount",
                                                    "name": "tau-node-agent", "namespace": NS}])
        # rbac.create=false: the flag still follows the value, the cluster's admin grants it.
        objs = self.t.dry_run(self.render(AGENT, "--set", "nodeConditions.enabled=true",
                                          "--set", "rbac.create=false"))
        self.assertIn("--node-conditions", agent_of(objs)["args"])
        self.assertFalse([o for o in objs if o["metadata"]["name"] == role])

    def test_nvml_values(self):
        def pod_of(*args):
            ds = by_kind(self.t.dry_run(self.render(AGENT, *args)), "DaemonSet")
            return ds["spec"]["template"]["spec"]

        pod = pod_of("--set", "nvml.hostLibraryDir=/run/nvidia/driver/usr/lib/x86_64-linux-gnu")
        self.assertEqual([v["hostPath"]["path"] for v in pod["volumes"] if v["name"] == "host-nvml"],
                         ["/run/nvidia/driver/usr/lib/x86_64-linux-gnu"])
        pod = pod_of("--set", "nvml.enabled=false")
        c = pod["containers"][0]
        self.assertIn({"name": "TAU_AGENT_NVML", "value": "off"}, c["env"])
        self.assertFalse([v for v in pod["volumes"] if v["name"] == "host-nvml"])
        self.assertFalse([m for m in c["volumeMounts"] if m["name"] == "host-nvml"])

    def test_priority_class_is_configurable(self):
        objs = self.t.dry_run(self.render(AGENT, "--set", "priorityClassName=gpu-daemons"))
        self.assertEqual(by_kind(objs, "DaemonSet")["spec"]["template"]["spec"]
                         ["priorityClassName"], "gpu-daemons")


class InstallTest(unittest.TestCase):
    """helm install/upgrade/rollback/list/uninstall against a fresh kube-sim per test (helm
    installs the CRDs from crds/ itself)."""

    def setUp(self):
        require_tools()
        self.sim = start_sim(KUEUE_CRDS)
        self.addCleanup(self.sim.stop)
        self.t = Tools(self.sim)
        self.t.kubectl("create", "namespace", NS)

    def releases(self):
        out = json.loads(self.t.helm("list", "-A", "-o", "json").stdout)
        return {r["name"]: (r["chart"], r["revision"], r["status"]) for r in out}

    def get(self, *args):
        return json.loads(self.t.kubectl("get", "-o", "json", *args).stdout)

    def test_umbrella_round_trip(self):
        # helm 4's default: server-side apply with field manager "helm". The rollback below
        # removes what revision 2 added (capacityTeamRef) because helm owned it and no longer
        # applies it, which is kube-sim's field ownership at work.
        self.t.helm("install", "tg", UMBRELLA, "-n", NS)
        self.assertEqual(self.releases(), {"tg": ("taugrid-0.1.0", "1", "deployed")})
        dep = self.get("deployment", "tau-aggregator", "-n", NS, "--show-managed-fields")
        self.assertEqual([(e["manager"], e["operation"]) for e in dep["metadata"]["managedFields"]],
                         [("helm", "Apply")])
        self.assertEqual(self.get("crd", "clusters.tau.azure.com")["spec"]["group"], "tau.azure.com")
        self.assertEqual(self.get("deployment", "tau-aggregator", "-n", NS)["spec"]["replicas"], 2)
        self.get("daemonset", "tau-node-agent", "-n", NS)
        self.get("clusterrole", "tau-aggregator")
        self.assertNotIn("capacityTeamRef", self.get("clusters.tau.azure.com", "cluster")["spec"]["queues"])

        self.t.helm("upgrade", "tg", UMBRELLA, "-n", NS, "-f",
                    os.path.join(UMBRELLA, "ci", "capacity-team-values.yaml"))
        self.assertEqual(self.releases()["tg"][1:], ("2", "deployed"))
        self.assertEqual(self.get("clusters.tau.azure.com", "cluster")["spec"]["queues"]["capacityTeamRef"],
                         {"name": "research"})
        self.assertEqual(self.get("deployment", "tau-aggregator", "-n", NS)["spec"]["replicas"], 3)
        self.get("teams.tau.azure.com", "vision", "-n", NS)

        self.t.helm("rollback", "tg", "1", "-n", NS)
        self.assertEqual(self.releases()["tg"][1:], ("3", "deployed"))
        self.assertNotIn("capacityTeamRef", self.get("clusters.tau.azure.com", "cluster")["spec"]["queues"])
        self.assertEqual(self.get("deployment", "tau-aggregator", "-n", NS)["spec"]["replicas"], 2)
        r = self.t.kubectl("get", "teams.tau.azure.com", "vision", "-n", NS, check=False)
        self.assertNotEqual(r.returncode, 0)

        self.t.helm("uninstall", "tg", "-n", NS)
        self.assertEqual(self.releases(), {})
        for kind in ("deployment", "daemonset", "service", "serviceaccount"):
            self.assertEqual(self.get(kind, "-n", NS)["items"], [], kind)
        self.assertEqual(self.t.kubectl("get", "clusterrole", "tau-aggregator",
                                        check=False).returncode, 1)
        # CRDs stay (Helm never deletes crds/ objects): workspaces survive an uninstall.
        self.get("crd", "workspaces.tau.azure.com")

    def test_upgrade_after_a_manual_edit_conflicts_until_forced(self):
        # As on a real cluster: a field helm applied and someone else changed since is a
        # server-side apply conflict for the next upgrade, and --force-conflicts takes it back.
        self.t.helm("install", "tg", UMBRELLA, "-n", NS)
        self.t.kubectl("patch", "deployment", "tau-aggregator", "-n", NS, "--type", "merge",
                       "-p", '{"spec":{"replicas":5}}')
        r = self.t.helm("upgrade", "tg", UMBRELLA, "-n", NS, check=False)
        self.assertNotEqual(r.returncode, 0)
        self.assertIn('conflict with "kubectl-patch" using apps/v1: .spec.replicas', r.stderr)
        self.assertEqual(self.get("deployment", "tau-aggregator", "-n", NS)["spec"]["replicas"], 5)
        self.t.helm("upgrade", "tg", UMBRELLA, "-n", NS, "--force-conflicts")
        dep = self.get("deployment", "tau-aggregator", "-n", NS, "--show-managed-fields")
        self.assertEqual(dep["spec"]["replicas"], 2)
        owners = {e["manager"]: e for e in dep["metadata"]["managedFields"]}
        self.assertIn("f:replicas", owners["helm"]["fieldsV1"]["f:spec"])
        self.assertNotIn("kubectl-patch", owners)  # it owned only replicas

    def test_standalone_charts_own_their_components(self):
        self.t.helm("install", "agg", AGG, "-n", NS)
        self.t.helm("install", "agents", AGENT, "-n", NS)
        # The umbrella with its components on would take them over: refused, with the way out
        # (for whichever component helm renders first).
        r = self.t.helm("install", "tg", UMBRELLA, "-n", NS, check=False)
        self.assertNotEqual(r.returncode, 0)
        self.assertRegex(r.stderr, r'(Deployment tau-system/tau-aggregator|DaemonSet '
                                   r'tau-system/tau-node-agent) is owned by release "(agg|agents)"')
        for on, message, hint in (
                ("aggregator", 'Deployment tau-system/tau-aggregator is owned by release "agg" '
                 '(tau-aggregator-0.1.0), not by "tg"', "--set aggregator.enabled=false"),
                ("nodeAgent", 'DaemonSet tau-system/tau-node-agent is owned by release "agents" '
                 '(tau-node-agent-0.1.0), not by "tg"', "--set nodeAgent.enabled=false")):
            off = "nodeAgent" if on == "aggregator" else "aggregator"
            with self.subTest(enabled=on):
                r = self.t.helm("install", "tg", UMBRELLA, "-n", NS, "--set",
                                off + ".enabled=false", check=False)
                self.assertNotEqual(r.returncode, 0)
                self.assertIn(message, r.stderr)
                self.assertIn("a standalone release owns it, so install this chart with " + hint,
                              r.stderr)
        self.t.helm("install", "tg", UMBRELLA, "-n", NS, "--set",
                    "aggregator.enabled=false", "--set", "nodeAgent.enabled=false")
        self.assertEqual(sorted(self.releases()), ["agents", "agg", "tg"])
        dep = self.get("deployment", "tau-aggregator", "-n", NS)
        self.assertEqual(dep["metadata"]["annotations"]["meta.helm.sh/release-name"], "agg")
        self.get("clusters.tau.azure.com", "cluster")
        # And the other way round: a standalone chart refuses what the umbrella renders.
        for rel in ("tg", "agg", "agents"):
            self.t.helm("uninstall", rel, "-n", NS)
        self.t.helm("install", "tg", UMBRELLA, "-n", NS)
        r = self.t.helm("install", "agg", AGG, "-n", NS, check=False)
        self.assertNotEqual(r.returncode, 0)
        self.assertIn('Deployment tau-system/tau-aggregator is owned by release "tg" '
                      '(aggregator-0.1.0), not by "agg"', r.stderr)
        self.assertIn("that release renders it; set aggregator.enabled=false there", r.stderr)

    def test_umbrella_labels_carry_name_and_version(self):
        self.t.helm("install", "tg", UMBRELLA, "-n", NS, "--set", "teams[0].name=research")
        for obj in (self.get("clusters.tau.azure.com", "cluster"),
                    self.get("teams.tau.azure.com", "research", "-n", NS)):
            labels = obj["metadata"]["labels"]
            self.assertEqual(labels["app.kubernetes.io/name"], "taugrid")
            self.assertEqual(labels["app.kubernetes.io/version"], "0.1.0")
            self.assertEqual(labels["helm.sh/chart"], "taugrid-0.1.0")
            self.assertEqual(labels["app.kubernetes.io/instance"], "tg")
        labels = self.get("deployment", "tau-aggregator", "-n", NS)["metadata"]["labels"]
        self.assertEqual((labels["app.kubernetes.io/name"], labels["app.kubernetes.io/version"]),
                         ("tau-aggregator", "0.1.0"))

    def pending_pod(self, path):
        st, pod = self.sim.req("GET", path)
        if st == 200 and (pod.get("status") or {}).get("phase") not in ("Succeeded", "Failed"):
            return pod
        return None

    def test_helm_test_checks_readiness(self):
        self.t.helm("install", "tg", UMBRELLA, "-n", NS)
        pod_path = "/api/v1/namespaces/%s/pods/tau-aggregator-test-readiness" % NS
        for code, phase in ((200, "Succeeded"), (503, "Failed")):
            with self.subTest(readyz=code):
                proc = subprocess.Popen([HELM, "test", "tg", "-n", NS, "--timeout", "60s"],
                                        env=self.t.env, stdout=subprocess.PIPE,
                                        stderr=subprocess.PIPE, universal_newlines=True)
                try:
                    # helm deletes the last run's Pod first (before-hook-creation).
                    pod = wait_for(lambda: self.pending_pod(pod_path), 60, what="the helm test Pod")
                    c = pod["spec"]["containers"][0]
                    env = {e["name"]: e["value"] for e in c["env"]}
                    self.assertEqual(env["TAU_READYZ_ADDRESS"], "tau-aggregator.%s.svc:8080" % NS)
                    self.assertEqual(c["image"], "taugrid:0.1.0")
                    self.assertEqual(pod["metadata"]["labels"]["app.kubernetes.io/name"],
                                     "tau-aggregator-test")  # not selected by the Service
                    # The kubelet's part: the container's command, here against /readyz.
                    rc, out = run_readyz(c["command"], code, attempts="2")
                    self.assertEqual(rc, 0 if code == 200 else 1, out)
                    self.assertIn("GET http://127.0.0.1:", out)
                    self.sim.ok("PATCH", pod_path + "/status", {"status": {"phase": phase}},
                                "application/merge-patch+json")
                    out, err = proc.communicate(timeout=90)
                finally:
                    if proc.poll() is None:
                        proc.kill()
                        proc.communicate()
                self.assertIn("TEST SUITE:     tau-aggregator-test-readiness", out)
                self.assertIn("Phase:          " + phase, out)
                if code == 200:
                    self.assertEqual(proc.returncode, 0, err)
                else:
                    self.assertNotEqual(proc.returncode, 0, out)
                    self.assertIn("tau-aggregator-test-readiness", err)


class KubectlServerSideApplyTest(unittest.TestCase):
    """`kubectl apply --server-side` of what each chart renders, against kube-sim with the CRDs:
    created, then applied again without a change, then deleted."""

    def setUp(self):
        require_tools()
        self.sim = start_sim(KUEUE_CRDS, TAU_CRDS, TEST_CRDS)
        self.addCleanup(self.sim.stop)
        self.t = Tools(self.sim)
        self.t.kubectl("create", "namespace", NS)

    def test_rendered_charts(self):
        path = os.path.join(self.sim.tmp, "rendered.yaml")
        for chart in ALL_CHARTS:
            with self.subTest(chart=os.path.basename(chart)):
                with open(path, "w") as f:
                    f.write(self.t.helm("template", "t", chart, "-n", NS).stdout)
                r = self.t.kubectl("apply", "--server-side", "-f", path)
                lines = r.stdout.splitlines()
                self.assertGreater(len(lines), 3)
                self.assertTrue(all(line.endswith(" serverside-applied") for line in lines), lines)
                objs = json.loads(self.t.kubectl("get", "-f", path, "-o", "json",
                                                 "--show-managed-fields").stdout)["items"]
                for o in objs:
                    self.assertEqual([(e["manager"], e["operation"])
                                      for e in o["metadata"]["managedFields"]],
                                     [("kubectl", "Apply")], o["metadata"]["name"])
                before = {(o["kind"], o["metadata"]["name"]): o["metadata"]["resourceVersion"]
                          for o in objs}
                self.t.kubectl("apply", "--server-side", "-f", path)
                after = json.loads(self.t.kubectl("get", "-f", path, "-o", "json").stdout)["items"]
                self.assertEqual({(o["kind"], o["metadata"]["name"]):
                                  o["metadata"]["resourceVersion"] for o in after}, before)
                self.t.kubectl("delete", "-f", path)


if __name__ == "__main__":
    unittest.main(verbosity=2)
