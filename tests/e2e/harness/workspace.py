"""The TauWorkspace e2e pieces: kube-sim with `--authz rbac`, the Kueue and taugrid CRDs and the
RBAC the project ships (charts/tau-aggregator/rbac, charts/tau-node-agent/rbac) applied as admin,
the tau-aggregator ClusterRole bound to system:serviceaccount:tau-system:tau-aggregator, and the
controller (tests/e2e/ws_controller_main.c, or the real tau-aggregator: Env.aggregator) running
with a kubeconfig holding only that ServiceAccount's token, so it has exactly the rights the
chart grants. Objects: workspace(), cluster_queue(); cond() reads a status condition.

Binaries come from the environment (cmake/workspace-tests.cmake sets them):
  TAU_WS_CONTROLLER  the ws_controller driver
  TAU_WS_CLI         the tau binary (`tau workspace ...`, `tau storage ...`)
"""
import json
import os
import shutil
import subprocess
import tempfile

from harness import paths
from harness.aggregator import Aggregator
from harness.kubesim import KubeSim
from harness.procs import Proc
from harness.tokens import agent_tokens, write_table
from harness.waits import wait_for

# The RBAC manifests of the component charts that render them.
RBAC_DIRS = [os.path.join(paths.ROOT, "charts", c, "rbac")
             for c in ("tau-aggregator", "tau-node-agent")]


def _find_bin(env, name):
    if os.environ.get(env):
        return os.environ[env]
    for d in ("/tmp/wsbuild/tests/e2e", os.path.join(paths.ROOT, "build", "tests", "e2e")):
        p = os.path.join(d, name)
        if os.path.exists(p):
            return p
    return name


CONTROLLER = _find_bin("TAU_WS_CONTROLLER", "ws_controller")
CLI = os.environ.get("TAU_WS_CLI") or os.path.join(paths.ROOT, "build", "tau")
SA_USER = "system:serviceaccount:tau-system:tau-aggregator"
SA_TOKEN = "tau-aggregator-sa-token"
TIMEOUT = float(os.environ.get("TAU_WS_E2E_TIMEOUT", "30"))

WS_API = "/apis/tau.azure.com/v1alpha1/namespaces/tau-system/workspaces"
KUEUE = "/apis/kueue.x-k8s.io/v1beta2"
WRITE_VERBS = ("create", "update", "patch", "delete", "deletecollection")


def workspace(name, ns=None, queue=None, subject=("Group", "researchers"), create_ns=True,
              team=None, wi=None, authz="workspace-rbac"):
    spec = {"authorization": {"mode": authz}}
    if authz == "workspace-rbac":
        # the CRD's rule: workspace-rbac needs principalRef, kubernetesSubject and role
        spec["principalRef"] = {"provider": "entra", "name": subject[1]}
        spec["kubernetesSubject"] = {"kind": subject[0], "name": subject[1]}
        spec["role"] = "researcher"
    target = {"createNamespace": create_ns}
    if ns is not None:
        target["namespace"] = ns
    spec["target"] = target
    if queue is not None:
        spec["queue"] = queue
    if team is not None:
        spec["teamRef"] = {"name": team}
    if wi is not None:
        spec["workloadIdentity"] = wi
    return {"apiVersion": "tau.azure.com/v1alpha1", "kind": "TauWorkspace",
            "metadata": {"name": name, "namespace": "tau-system"}, "spec": spec}


def cluster_queue(name):
    return {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ClusterQueue",
            "metadata": {"name": name}, "spec": {"namespaceSelector": {}}}


def cond(obj, ctype):
    for c in ((obj or {}).get("status") or {}).get("conditions") or []:
        if c.get("type") == ctype:
            return c
    return None


class Env:
    """kube-sim + shipped RBAC + the controller running as its own ServiceAccount."""

    def __init__(self, controller_args=(), crds=(), start=True, agent_nodes=(), sim_args=()):
        """agent_nodes: nodes whose agents' tokens (tokens.agent_token) kube-sim also knows;
        sim_args: more kube-sim flags (a write history, a seed); start=False: no controller (a
        tau-aggregator runs it: aggregator())."""
        self.tmp = tempfile.mkdtemp(prefix="ws-e2e-")
        table = {SA_TOKEN: {"username": SA_USER}}
        table.update(agent_tokens(agent_nodes))
        tokens = write_table(os.path.join(self.tmp, "tokens.json"), table)
        args = ["--authz", "rbac", "--tokens", tokens, "--crds", paths.KUEUE_CRDS,
                "--crds", paths.TAU_CRDS]
        for d in crds:
            args += ["--crds", d]
        args += list(sim_args)
        self.sim = KubeSim(args, tls=True)
        self.ctl = None
        self.ctl_log = os.path.join(self.tmp, "controller.log")  # Proc(..., "controller", tmp)
        try:
            self.sim.ok("POST", "/api/v1/namespaces",
                        {"apiVersion": "v1", "kind": "Namespace",
                         "metadata": {"name": "tau-system"}})
            self.sim.kubectl("apply", "-f", RBAC_DIRS[0], "-f", RBAC_DIRS[1])
            self.create({"apiVersion": "rbac.authorization.k8s.io/v1",
                         "kind": "ClusterRoleBinding", "metadata": {"name": "tau-aggregator"},
                         "roleRef": {"apiGroup": "rbac.authorization.k8s.io",
                                     "kind": "ClusterRole", "name": "tau-aggregator"},
                         "subjects": [{"kind": "ServiceAccount", "name": "tau-aggregator",
                                       "namespace": "tau-system"}]})
            with open(self.sim.kubeconfig) as f:
                kc = json.load(f)
            kc["users"][0]["user"] = {"token": SA_TOKEN}
            self.sa_kubeconfig = os.path.join(self.tmp, "sa-kubeconfig")
            with open(self.sa_kubeconfig, "w") as f:
                json.dump(kc, f)
            if start:
                self.start(controller_args)
        except BaseException:
            self.stop()
            raise

    # -- controller ---------------------------------------------------------------
    def start(self, args=()):
        env = dict(os.environ)
        env.setdefault("TAU_LOG_LEVEL", "info")
        self.ctl = Proc([CONTROLLER, "--kubeconfig", self.sa_kubeconfig, "--system-namespace",
                         "tau-system", "--drain-poll-ms", "300"] + list(args), "controller",
                        self.tmp, env=env)
        try:
            self.ctl.wait_line("ready", 60)
        except AssertionError as e:
            raise AssertionError("controller did not start: %s" % e)

    def stop_controller(self):
        if self.ctl is not None:
            self.ctl.stop(20)
        self.ctl = None

    def stop(self):
        self.stop_controller()
        self.sim.stop()
        shutil.rmtree(self.tmp, ignore_errors=True)

    def log(self):
        try:
            with open(self.ctl_log) as f:
                return f.read()
        except OSError:
            return ""

    def aggregator(self, name, extra=(), expect_ready=True):
        """The real tau-aggregator running the controllers as the ServiceAccount (queries carry
        the admin token); its log is tmp/NAME.log."""
        return Aggregator(self.sa_kubeconfig, self.tmp, name,
                          extra=["--system-namespace", "tau-system", *extra], sync_timeout="1s",
                          log_level="info", token=self.sim.token, expect_ready=expect_ready)

    # -- API helpers (admin) --------------------------------------------------------
    def create(self, obj, path=None):
        return self.sim.ok("POST", path or self.path_of(obj), obj)

    def path_of(self, obj, name=False):
        api = obj["apiVersion"]
        kind = obj["kind"]
        plural = {"TauWorkspace": "workspaces", "TauCluster": "clusters",
                  "ClusterQueue": "clusterqueues", "LocalQueue": "localqueues",
                  "Workload": "workloads", "Job": "jobs", "Deployment": "deployments",
                  "RayJob": "rayjobs", "RayService": "rayservices", "Namespace": "namespaces",
                  "ClusterRoleBinding": "clusterrolebindings",
                  "RoleBinding": "rolebindings"}[kind]
        base = "/api/" + api if "/" not in api else "/apis/" + api
        ns = (obj.get("metadata") or {}).get("namespace")
        p = base + ("/namespaces/%s" % ns if ns else "") + "/" + plural
        if name:
            p += "/" + obj["metadata"]["name"]
        return p

    def get(self, path):
        st, obj = self.sim.req("GET", path)
        return obj if st == 200 else None

    def ws(self, name):
        return self.get(WS_API + "/" + name)

    def wait_ws(self, name, pred, msg, timeout=TIMEOUT):
        try:
            return wait_for(lambda: (lambda o: o if o and pred(o) else None)(self.ws(name)),
                            timeout=timeout, what=msg)
        except AssertionError as e:
            raise AssertionError("%s\nlast workspace: %s\ncontroller log:\n%s" % (
                e, json.dumps(self.ws(name), indent=1), self.log()[-6000:]))

    def wait_cond(self, name, ctype, status, reason=None, timeout=TIMEOUT):
        def ok(o):
            c = cond(o, ctype)
            return c and c["status"] == status and (reason is None or c["reason"] == reason)
        return self.wait_ws(name, ok, "%s %s=%s/%s" % (name, ctype, status, reason), timeout)

    def wait_phase(self, name, phase, timeout=TIMEOUT):
        def ok(o):
            st = o.get("status") or {}
            return (st.get("phase") == phase and
                    st.get("observedGeneration") == o["metadata"].get("generation"))
        return self.wait_ws(name, ok, "%s phase %s" % (name, phase), timeout)

    def wait_gone(self, path, timeout=TIMEOUT):
        wait_for(lambda: self.sim.req("GET", path)[0] == 404, timeout=timeout,
                 what="%s gone" % path)

    def stats(self):
        st, obj = self.sim.req("GET", "/sim/stats", token=False)
        return obj

    def writes(self):
        return {k: v for k, v in self.stats().items()
                if k.split("/")[0] in WRITE_VERBS and v}

    def reset_stats(self):
        self.sim.req("POST", "/sim/stats/reset", token=False)

    def cli(self, *args):
        r = subprocess.run([CLI, "--kubeconfig", self.sim.kubeconfig,
                            "--system-namespace", "tau-system"] + list(args),
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           universal_newlines=True, timeout=60)
        return r.returncode, r.stdout, r.stderr

    def sar(self, user=None, groups=(), ns=None, verb="create", resource="jobs", group="batch"):
        body = {"apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview",
                "spec": {"groups": list(groups),
                         "resourceAttributes": {"namespace": ns, "verb": verb,
                                                "group": group, "resource": resource}}}
        if user:
            body["spec"]["user"] = user
        obj = self.sim.ok("POST", "/apis/authorization.k8s.io/v1/subjectaccessreviews", body)
        return bool((obj.get("status") or {}).get("allowed"))
