"""Least privilege, rule by rule, for tau-aggregator's ClusterRole and leader-election Role.

kube-sim runs with `--authz rbac` (and its RBAC escalation check, so a RoleBinding to
tau-researcher needs `bind`); it is seeded with the RBAC objects `helm template` renders from
charts/tau-aggregator and charts/tau-node-agent, two GPU Nodes, the taugrid, Kueue and Ray CRDs.
The real tau-aggregator (`--leader-elect`) runs with a kubeconfig holding only its
ServiceAccount's token, two real tau-node-agents with only theirs, and the scenario below runs:
pool, Lease, queries, then (created after the aggregator is up, so every watch matters) a
TauCluster, a TauTeam and, once the budget has written the team's status, a TauWorkspace (so
the budget's first pass with the team never has the workspace, whatever the timing), a cordon,
out-of-band deletions and edits that must be repaired, a retarget, the workspace's deletion and
the team's.  Each step is a named check that waits for its condition with a deadline.

  test_whole_role      with the rendered roles every check passes (the baseline; prints how long
                       each took).
  test_each_rule       for each single rule, one verb on one resource of the rendered roles
                       (generated from them, not listed here), the same run with that rule
                       removed: the check EXPECT names for it must fail, and every check before
                       it must pass.  A rule without an entry in EXPECT, or an entry without a
                       rule, fails the test.  The variants run against separate kube-sims,
                       TAU_RBAC_JOBS (default 8) at a time; a table maps each rule to its check.

A check that is expected to fail is given FAIL_WAIT_S (default 8 s) to pass; the baseline shows
each of those passing within a fraction of that.

Environment: TAU_AGGREGATOR_BIN, TAU_AGENT_BIN (default build/), HELM (default .tools/bin/helm).
"""
import concurrent.futures
import http.client
import json
import os
import subprocess
import sys
import tempfile
import time
import unittest

import grpc
import yaml  # python3-yaml

from harness import paths, proto, waits
from harness.aggregator import QRY, node, require_all
from harness.kubesim import kube_request
from harness.procs import Proc, make_workdir, remove_workdir
from harness.quantity import parse as qparse
from harness.tokens import agent_token, agent_tokens

HERE = paths.E2E
HELM = paths.HELM
JOBS = int(os.environ.get("TAU_RBAC_JOBS", "8"))
FAIL_WAIT_S = float(os.environ.get("TAU_RBAC_FAIL_WAIT", "8"))
PASS_WAIT_S = float(os.environ.get("TAU_RBAC_PASS_WAIT", "60"))
QUIET_S = 2.5  # > the 2 s settle requeue after a repair (workspace/reconcile.c phase_status)

NS = "tau-system"
AGG_USER = "system:serviceaccount:%s:tau-aggregator" % NS
AGG_TOKEN = "tau-aggregator-sa-token"
AGENT_USER = "system:serviceaccount:%s:tau-node-agent" % NS
AGENT_KUBE_TOKEN = "tau-node-agent-sa-token"
READER_TOKEN = "reader-token"
NODES = ("gpu-1", "gpu-2")
TAU = "/apis/tau.azure.com/v1alpha1"
KUEUE = "/apis/kueue.x-k8s.io/v1beta2"
WS = TAU + "/namespaces/%s/workspaces/alpha" % NS
TEAM = TAU + "/namespaces/%s/teams/research" % NS
TEAM_ML = TAU + "/namespaces/%s/teams/ml" % NS
CLUSTER = TAU + "/clusters/cluster"
TEAM_FINALIZER = "tau.azure.com/team-cleanup"
RF = KUEUE + "/resourceflavors/taugrid-gpu-h100"
COHORT = KUEUE + "/cohorts/tau-team-research"
CQ = KUEUE + "/clusterqueues/tau-ws-alpha"
OLD_NS, NEW_NS = "ml-alpha", "ml-alpha2"
RB = "/apis/rbac.authorization.k8s.io/v1/namespaces/%s/rolebindings/tau-workspace-alpha"
LQ = KUEUE + "/namespaces/%s/localqueues/jobqueue"
SA = "/api/v1/namespaces/%s/serviceaccounts/alpha-wl"
WS_UID_ANNOTATION = "tau.azure.com/workspace-uid"
KUEUE_NS = "kueue-system"
KUEUE_CM = "/api/v1/namespaces/%s/configmaps" % KUEUE_NS
DRA = "/apis/resource.k8s.io/v1"
DRA_FIXTURES = os.path.join(paths.ROOT, "tests", "fixtures", "dra")
# The aggregator's roles whose rules are removed one by one (name -> kind).
ROLES = {"tau-aggregator": "ClusterRole", "tau-aggregator-leader-election": "Role"}

# The check each rule's absence breaks (group, resource, verb) -> check name. Kept exact: the
# test fails on a rule the roles grant that is missing here, and on an entry here that no rule
# grants any more.
EXPECT = {
    ("", "nodes", "list"): "pool-established",
    # the DRA lists gate the pool like the Node list (a refused list is never read as empty)
    ("resource.k8s.io", "deviceclasses", "list"): "pool-established",
    ("resource.k8s.io", "resourceslices", "list"): "pool-established",
    ("", "configmaps", "list"): "pool-established",
    ("resource.k8s.io", "deviceclasses", "watch"): "dra-node-counted",
    ("resource.k8s.io", "resourceslices", "watch"): "dra-node-counted",
    ("", "configmaps", "watch"): "kueue-config-followed",
    ("", "nodes", "watch"): "cohort-follows-cordon",
    ("authentication.k8s.io", "tokenreviews", "create"): "agents-authenticated",
    ("authorization.k8s.io", "subjectaccessreviews", "create"): "query-authorized",
    ("coordination.k8s.io", "leases", "get"): "lease-acquired",
    ("coordination.k8s.io", "leases", "create"): "lease-acquired",
    ("coordination.k8s.io", "leases", "update"): "lease-renewed",
    ("tau.azure.com", "workspaces", "get"): "workspace-ready",
    ("tau.azure.com", "workspaces", "list"): "budget-event",
    ("tau.azure.com", "workspaces", "watch"): "workspace-ready",
    ("tau.azure.com", "workspaces", "update"): "workspace-ready",
    ("tau.azure.com", "workspaces/status", "update"): "workspace-ready",
    ("tau.azure.com", "teams", "list"): "budget-event",
    ("tau.azure.com", "teams", "watch"): "flavor-written",
    # the capacity team carries the cleanup finalizer once it has workspaces
    ("tau.azure.com", "teams", "update"): "team-finalizer",
    ("tau.azure.com", "teams/status", "update"): "team-status",
    ("tau.azure.com", "clusters", "list"): "pool-established",
    ("tau.azure.com", "clusters", "watch"): "budget-event",
    ("tau.azure.com", "clusters/status", "update"): "budget-event",
    ("", "namespaces", "get"): "workspace-ready",
    ("", "namespaces", "list"): "workspace-ready",
    ("", "namespaces", "watch"): "namespace-repaired",
    ("", "namespaces", "create"): "workspace-ready",
    ("", "namespaces", "update"): "namespace-repaired",
    ("", "namespaces", "patch"): "retarget-releases-namespace",
    ("", "namespaces", "delete"): "workspace-deleted",
    ("rbac.authorization.k8s.io", "rolebindings", "get"): "workspace-ready",
    ("rbac.authorization.k8s.io", "rolebindings", "list"): "workspace-ready",
    ("rbac.authorization.k8s.io", "rolebindings", "watch"): "rolebinding-restored",
    ("rbac.authorization.k8s.io", "rolebindings", "create"): "workspace-ready",
    ("rbac.authorization.k8s.io", "rolebindings", "update"): "rolebinding-repaired",
    ("rbac.authorization.k8s.io", "rolebindings", "delete"): "retarget-releases-namespace",
    ("rbac.authorization.k8s.io", "clusterroles", "bind"): "workspace-ready",
    ("", "events", "create"): "budget-event",
    ("", "serviceaccounts", "get"): "workload-identity-ready",
    ("", "serviceaccounts", "list"): "workspace-ready",
    ("", "serviceaccounts", "watch"): "serviceaccount-restored",
    ("", "serviceaccounts", "create"): "workload-identity-ready",
    ("", "serviceaccounts", "update"): "serviceaccount-repaired",
    ("", "serviceaccounts", "delete"): "retarget-releases-namespace",
    ("kueue.x-k8s.io", "localqueues", "get"): "workspace-ready",
    ("kueue.x-k8s.io", "localqueues", "list"): "workspace-ready",
    ("kueue.x-k8s.io", "localqueues", "watch"): "localqueue-restored",
    ("kueue.x-k8s.io", "localqueues", "create"): "workspace-ready",
    ("kueue.x-k8s.io", "localqueues", "update"): "localqueue-repaired",
    ("kueue.x-k8s.io", "localqueues", "delete"): "retarget-releases-namespace",
    ("kueue.x-k8s.io", "clusterqueues", "list"): "budget-event",
    # the budget's first pass with the workspace creates the queue (every later pass then
    # fails on its 409: the cache never sees it), but the workspace controller's informer,
    # listed before the queue existed, never sees it either: QueueReady stays False
    ("kueue.x-k8s.io", "clusterqueues", "watch"): "workspace-ready",
    ("kueue.x-k8s.io", "clusterqueues", "create"): "workspace-ready",
    ("kueue.x-k8s.io", "clusterqueues", "update"): "clusterqueue-repaired",
    ("kueue.x-k8s.io", "clusterqueues", "delete"): "workspace-deleted",
    ("kueue.x-k8s.io", "cohorts", "list"): "budget-event",
    # without a watch the cache never sees what the team's first pass wrote: every later pass
    # fails on its create's 409, so the workspace's ClusterQueue is never written
    ("kueue.x-k8s.io", "cohorts", "watch"): "workspace-ready",
    ("kueue.x-k8s.io", "cohorts", "create"): "cohort-written",
    ("kueue.x-k8s.io", "cohorts", "update"): "cohort-follows-cordon",
    ("kueue.x-k8s.io", "cohorts", "delete"): "cohort-retired",
    ("kueue.x-k8s.io", "resourceflavors", "list"): "budget-event",
    ("kueue.x-k8s.io", "resourceflavors", "watch"): "workspace-ready",
    ("kueue.x-k8s.io", "resourceflavors", "create"): "flavor-written",
    ("kueue.x-k8s.io", "resourceflavors", "update"): "flavor-repaired",
    ("kueue.x-k8s.io", "resourceflavors", "delete"): "flavor-deleted",
    ("kueue.x-k8s.io", "workloads", "list"): "retarget-releases-namespace",
    ("batch", "jobs", "list"): "retarget-releases-namespace",
    ("apps", "deployments", "list"): "retarget-releases-namespace",
    ("ray.io", "rayjobs", "list"): "retarget-releases-namespace",
    ("ray.io", "rayservices", "list"): "retarget-releases-namespace",
}


WORK = None
qpb = None


def setUpModule():
    global WORK, qpb
    require_all()
    WORK = make_workdir("tau-rbac-agg-")
    qpb = proto.query()


def tearDownModule():
    remove_workdir(WORK)


def helm_template(chart, show_only, tmp):
    r = subprocess.run([HELM, "template", "t", os.path.join(paths.ROOT, "charts", chart), "-n", NS,
                        "--show-only", show_only], stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, universal_newlines=True,
                       env=dict(os.environ, HOME=tmp))
    if r.returncode != 0:
        raise AssertionError("helm template %s failed:\n%s" % (chart, r.stderr))
    return [d for d in yaml.safe_load_all(r.stdout) if d]


def atoms(role):
    """[(group, resource, verb, resourceNames)] of a Role/ClusterRole, one per single right."""
    out = []
    for rule in role.get("rules") or []:
        for g in rule.get("apiGroups") or []:
            for res in rule.get("resources") or []:
                for v in rule.get("verbs") or []:
                    out.append((g, res, v, tuple(rule.get("resourceNames") or ())))
    return out


def rules_of(atom_list):
    return [dict({"apiGroups": [g], "resources": [r], "verbs": [v]},
                 **({"resourceNames": list(n)} if n else {})) for g, r, v, n in atom_list]


def metric(text, name):
    for line in text.splitlines():
        if line.startswith(name + " "):
            return float(line.split()[1])
    return None


class Run:
    """One kube-sim + two agents + the aggregator, with `removed` (role kind, atom) or None."""

    def __init__(self, tag, objects, removed):
        self.tag = tag
        self.dir = tempfile.mkdtemp(prefix="rbac-%s-" % tag, dir=WORK)
        self.removed = removed
        self.procs = []
        self.agg = None
        self.state = {}
        seed = []  # no kueue-system: without Kueue's namespace there is no Kueue configuration
        for o in objects:
            o = json.loads(json.dumps(o))
            if removed and o["kind"] == removed[0] and o["metadata"]["name"] in ROLES:
                o["rules"] = rules_of([a for a in atoms(o) if a != removed[1]])
            seed.append(o)
        for n in NODES:
            seed.append(node(n, "h100", {"cpu": "96", "memory": "1Ti", "nvidia.com/gpu": "8",
                                             "pods": "110"}))
            seed.append({"apiVersion": "storage.k8s.io/v1", "kind": "CSINode",
                         "metadata": {"name": n}, "spec": {"drivers": []}})
        seed.append({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
                     "metadata": {"name": "reader"},
                     "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                                 "name": "tau-inventory-reader"},
                     "subjects": [{"kind": "User", "name": "reader",
                                   "apiGroup": "rbac.authorization.k8s.io"}]})
        with open(os.path.join(self.dir, "seed.json"), "w") as f:
            json.dump({"kind": "List", "items": seed}, f)
        tokens = {AGG_TOKEN: {"username": AGG_USER},
                  AGENT_KUBE_TOKEN: {"username": AGENT_USER},
                  READER_TOKEN: {"username": "reader"}}
        tokens.update(agent_tokens(NODES))
        with open(os.path.join(self.dir, "tokens.json"), "w") as f:
            json.dump(tokens, f)

    def path(self, name):
        return os.path.join(self.dir, name)

    def proc(self, argv, name):
        p = Proc(argv, name, self.dir)
        self.procs.append(p)
        return p

    def start(self):
        kc = self.path("kubeconfig")
        sim = self.proc([paths.SIM_PYTHON, paths.KUBE_SIM, "--listen", "127.0.0.1:0",
                         "--kubeconfig-out", kc, "--authz", "rbac",
                         "--tokens", self.path("tokens.json"), "--seed", self.path("seed.json"),
                         "--crds", os.path.join(paths.ROOT, "charts/taugrid/crds"),
                         "--crds", os.path.join(paths.ROOT, "tests/fixtures/kueue"),
                         "--crds", os.path.join(HERE, "workspace")], "kube-sim")
        self.port = int(sim.wait_line("ready ", timeout=PASS_WAIT_S).split()[1])
        with open(kc) as f:
            k = json.load(f)
        self.admin = k["users"][0]["user"]["token"]
        for user, token in (("aggregator", AGG_TOKEN), ("agent", AGENT_KUBE_TOKEN)):
            k["users"][0]["user"] = {"token": token}
            with open(self.path(user + "-kubeconfig"), "w") as f:
                json.dump(k, f)
        self.agg = self.proc([paths.AGG_BIN, "--kubeconfig", self.path("aggregator-kubeconfig"),
                              "--grpc-listen", "127.0.0.1:0", "--http-listen", "127.0.0.1:0",
                              "--system-namespace", NS, "--leader-elect",
                              "--initial-sync-timeout", "1s", "--budget-coalesce", "50ms",
                              "--budget-resync", "3600s", "--log-level", "debug"], "aggregator")
        line = self.agg.wait_line("ready ", timeout=PASS_WAIT_S)
        parts = dict(kv.split("=") for kv in line.split()[1:])
        self.grpc, self.http_port = "127.0.0.1:" + parts["grpc"], int(parts["http"])
        for n in NODES:
            root = self.path("host-" + n)
            os.makedirs(os.path.join(root, "dev"))
            with open(self.path("token-" + n), "w") as f:
                f.write(agent_token(n))
            self.proc([paths.AGENT_BIN, "--node-name", n, "--aggregator", self.grpc,
                       "--kubeconfig", self.path("agent-kubeconfig"), "--host-root", root,
                       "--token-file", self.path("token-" + n), "--insecure"], "agent-" + n)

    def stop(self):
        """SIGKILL: a variant's aggregator may lack the rights a graceful shutdown uses."""
        for p in reversed(self.procs):
            if p.p.poll() is None:
                p.p.kill()
            p.stop(timeout=10)

    def log(self):
        if self.agg is None:
            return "(no aggregator: the run failed before starting it)"
        with open(self.agg.log_path) as f:
            return f.read()

    # -- API, as admin --
    def req(self, method, path, body=None, ctype="application/json"):
        return kube_request(self.port, self.admin, method, path, body, ctype)

    def get(self, path):
        st, obj = self.req("GET", path)
        return obj if st == 200 else None

    def ok(self, method, path, body=None, ctype="application/json"):
        st, obj = self.req(method, path, body, ctype)
        if st not in (200, 201, 202):
            raise AssertionError("%s %s: %s %s" % (method, path, st, obj))
        return obj

    def merge(self, path, patch):
        return self.ok("PATCH", path, patch, "application/merge-patch+json")

    def metrics(self):
        c = http.client.HTTPConnection("127.0.0.1", self.http_port, timeout=5)
        c.request("GET", "/metrics")
        body = c.getresponse().read().decode()
        c.close()
        return body

    def query_ok(self):
        ch = grpc.insecure_channel(self.grpc)
        try:
            fn = ch.unary_unary(QRY + "GetPool",
                                request_serializer=lambda m: m.SerializeToString(),
                                response_deserializer=qpb.Pool.FromString)
            p = fn(qpb.GetPoolRequest(), timeout=5,
                   metadata=(("authorization", "Bearer " + READER_TOKEN),))
            return p.established
        except grpc.RpcError:
            return False
        finally:
            ch.close()


def cond_true(obj, ctype):
    for c in ((obj or {}).get("status") or {}).get("conditions") or []:
        if c.get("type") == ctype:
            return c.get("status") == "True"
    return False


def gpu_quota(cohort):
    total = 0
    for g in ((cohort or {}).get("spec") or {}).get("resourceGroups") or []:
        for f in g.get("flavors") or []:
            for r in f.get("resources") or []:
                if r.get("name") == "nvidia.com/gpu":
                    total += int(qparse(str(r.get("nominalQuota"))))
    return total


def uid(obj):
    return ((obj or {}).get("metadata") or {}).get("uid")


# -- the scenario: (check name, action run first or None, condition) ---------------------------

def create_cluster(r):
    """The TauCluster first, naming a capacity team that does not exist yet: a conflict the
    budget reports with an Event."""
    r.ok("POST", TAU + "/clusters", {
        "apiVersion": "tau.azure.com/v1alpha1", "kind": "TauCluster",
        "metadata": {"name": "cluster"},
        "spec": {"managementMode": "Reconcile", "queues": {"capacityTeamRef": {"name": "research"}},
                 "workspaces": {"namespaceMode": "Managed"}}})


def create_team(r):
    r.ok("POST", TAU + "/namespaces/%s/teams" % NS, {
        "apiVersion": "tau.azure.com/v1alpha1", "kind": "TauTeam",
        "metadata": {"name": "research", "namespace": NS}, "spec": {}})


def create_workspace(r):
    """Only after team-status: the budget's pass of the team alone is done, so the workspace
    comes to a later pass in every variant (created with the team, the first pass had it or
    not depending on which watch event arrived first)."""
    r.ok("POST", TAU + "/namespaces/%s/workspaces" % NS, {
        "apiVersion": "tau.azure.com/v1alpha1", "kind": "TauWorkspace",
        "metadata": {"name": "alpha", "namespace": NS},
        "spec": {"authorization": {"mode": "workspace-rbac"},
                 "principalRef": {"provider": "entra", "name": "researchers"},
                 "kubernetesSubject": {"kind": "Group", "name": "researchers"},
                 "role": "researcher", "teamRef": {"name": "research"},
                 "target": {"createNamespace": True, "namespace": OLD_NS},
                 "workloadIdentity": {"serviceAccountName": "alpha-wl", "clientId": "cid-1"}}})


def create_explicit_team(r):
    """An explicit-quota team: the budget adds its deletion finalizer (a TauTeam update)."""
    r.ok("POST", TAU + "/namespaces/%s/teams" % NS, {
        "apiVersion": "tau.azure.com/v1alpha1", "kind": "TauTeam",
        "metadata": {"name": "ml", "namespace": NS},
        "spec": {"quota": [{"flavor": "taugrid-gpu-h100", "resource": "nvidia.com/gpu",
                            "nominalQuota": "4"}]}})


def delete_managed(r):
    """deletionPolicy DeleteManaged, then the TauCluster deleted: our flavor goes once nothing
    names it (the explicit team ml, whose Cohort names it, is deleted first; research, without
    workspaces now, is the capacity team again so the flavor records the policy)."""
    r.ok("DELETE", TEAM_ML)
    if wait(r, lambda r: r.get(TEAM_ML) is None, PASS_WAIT_S) is None:
        raise AssertionError("TauTeam ml was never deleted")
    r.merge(CLUSTER, {"spec": {"deletionPolicy": "DeleteManaged",
                               "queues": {"capacityTeamRef": {"name": "research"}}}})
    if wait(r, lambda r: ((r.get(RF) or {}).get("metadata", {}).get("annotations") or {}).get(
            "tau.azure.com/deletion-policy") == "DeleteManaged", PASS_WAIT_S) is None:
        raise AssertionError("the flavor never recorded deletionPolicy DeleteManaged")
    r.ok("DELETE", CLUSTER)


def phase_ready(obj):
    return ((obj or {}).get("status") or {}).get("phase") == "Ready"


def ws_ready(r):
    return phase_ready(r.get(WS))


def quiet(r):
    """Wait until nothing is left that would make the workspace controller run again by itself:
    its status says NoDrift (no settle pass pending) and neither the TauWorkspace nor the
    TauCluster (whose events trigger every workspace) changed for QUIET_S. Then only the
    informer of the object the next step touches can trigger the repair."""
    seen = {}

    def still(r):
        ws, cl = r.get(WS) or {}, r.get(CLUSTER) or {}
        drift = [c for c in (ws.get("status") or {}).get("conditions") or []
                 if c.get("type") == "DriftDetected"]
        key = ((ws.get("metadata") or {}).get("resourceVersion"),
               (cl.get("metadata") or {}).get("resourceVersion"))
        if not drift or drift[0].get("reason") != "NoDrift":
            seen.clear()
            return False
        if seen.get("key") != key:
            seen.update(key=key, since=time.monotonic())
            return False
        return time.monotonic() - seen["since"] >= QUIET_S
    if wait(r, still, PASS_WAIT_S) is None:
        raise AssertionError("the workspace controller never went quiet")


def delete_action(path):
    def act(r):
        quiet(r)
        r.state[path] = uid(r.get(path))
        r.ok("DELETE", path)
    return act


def restored(path):
    def cond(r):
        o = r.get(path)
        return o is not None and uid(o) != r.state.get(path)
    return cond


def label_drift(path, key="tau.azure.com/workspace-uid"):
    """Edit an owned annotation out of band; the repair is an update of the same object."""
    def act(r):
        quiet(r)
        o = r.get(path)
        r.state[path] = uid(o)
        r.merge(path, {"metadata": {"annotations": {key: "drifted"}}})
    return act


def repaired(path, key="tau.azure.com/workspace-uid"):
    def cond(r):
        o = r.get(path)
        ann = ((o or {}).get("metadata") or {}).get("annotations") or {}
        return o is not None and uid(o) == r.state.get(path) and ann.get(key) not in (
            None, "drifted")
    return cond


def cq_drift(r):
    cq = r.get(CQ)
    r.state["cq"] = uid(cq)
    cq["spec"]["namespaceSelector"] = {"matchLabels": {"drifted": "yes"}}
    r.ok("PUT", CQ, cq)


def cq_repaired(r):
    cq = r.get(CQ)
    sel = ((cq or {}).get("spec") or {}).get("namespaceSelector") or {}
    return uid(cq) == r.state.get("cq") and "drifted" not in json.dumps(sel)


def rf_drift(r):
    rf = r.get(RF)
    r.state["rf"] = uid(rf)
    rf["spec"]["nodeLabels"]["kubernetes.io/os"] = "drifted"
    r.ok("PUT", RF, rf)


def rf_repaired(r):
    rf = r.get(RF)
    return uid(rf) == r.state.get("rf") and \
        ((rf or {}).get("spec") or {}).get("nodeLabels", {}).get("kubernetes.io/os") == "linux"


def retarget(r):
    o = r.get(WS)
    o["spec"]["target"]["namespace"] = NEW_NS
    r.ok("PUT", WS, o)


def released(r):
    old = r.get("/api/v1/namespaces/" + OLD_NS) or {}
    o = r.get(WS) or {}
    return ("tau.azure.com/workspace" not in ((old.get("metadata") or {}).get("labels") or {})
            and r.get(LQ % OLD_NS) is None and r.get(SA % OLD_NS) is None
            and r.get(RB % OLD_NS) is None
            and ((o.get("status") or {}).get("target") or {}).get("resolvedNamespace") == NEW_NS
            and phase_ready(o))


def ws_deleted(r):
    ns = r.get("/api/v1/namespaces/" + NEW_NS)
    return r.get(WS) is None and r.get(CQ) is None and (
        ns is None or (ns.get("metadata") or {}).get("deletionTimestamp"))


def lease_renewed(r):
    spec = (r.get("/apis/coordination.k8s.io/v1/namespaces/%s/leases/tau-aggregator" % NS)
            or {}).get("spec") or {}
    return spec.get("holderIdentity") and spec.get("renewTime") != spec.get("acquireTime")


def events_by_aggregator(r):
    for ns in (NS, "default"):
        for e in (r.get("/api/v1/namespaces/%s/events" % ns) or {}).get("items") or []:
            if (e.get("source") or {}).get("component") == "tau-aggregator":
                return True
    return False


def dra_fixture(name):
    with open(os.path.join(DRA_FIXTURES, name)) as f:
        return json.load(f)


def add_dra_node(r):
    """A node whose 8 GPUs are published only through DRA (tests/fixtures/dra), in class h100:
    its DeviceClass and ResourceSlice are created after the lists, so only the watches see
    them."""
    node = dra_fixture("node-dra-h100-0.json")
    node["metadata"]["labels"]["tau.azure.com/gpu-class"] = "h100"
    r.ok("POST", "/api/v1/nodes", node)
    r.ok("POST", DRA + "/deviceclasses", dra_fixture("deviceclass-gpu.nvidia.com.json"))
    r.ok("POST", DRA + "/resourceslices", dra_fixture("resourceslice-h100-complete.json"))


def break_kueue_config(r):
    """Kueue's namespace and ConfigMap appear, the ConfigMap holding a Configuration that does
    not read: the DRA node's GPUs stop counting (fail closed) once the ConfigMap watch delivers
    it (the watch is granted by name only: resourceNames kueue-manager-config)."""
    r.ok("POST", "/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace",
                                        "metadata": {"name": KUEUE_NS}})
    r.ok("POST", KUEUE_CM, {"apiVersion": "v1", "kind": "ConfigMap",
                            "metadata": {"name": "kueue-manager-config", "namespace": KUEUE_NS},
                            "data": {"controller_manager_config.yaml": "kind: NotAConfiguration\n"}})


SCENARIO = [
    ("lease-acquired", None, lambda r: ((r.get(
        "/apis/coordination.k8s.io/v1/namespaces/%s/leases/tau-aggregator" % NS) or {}).get(
        "spec") or {}).get("holderIdentity")),
    ("pool-established", None,
     lambda r: metric(r.metrics(), "tau_aggregator_pool_established") == 1),
    ("agents-authenticated", None,
     lambda r: metric(r.metrics(), "tau_aggregator_agents_connected") == len(NODES)),
    ("query-authorized", None, lambda r: r.query_ok()),
    ("lease-renewed", None, lease_renewed),
    ("budget-event", create_cluster, events_by_aggregator),
    ("flavor-written", create_team, lambda r: r.get(RF) is not None),
    ("cohort-written", None, lambda r: gpu_quota(r.get(COHORT)) == 16),
    ("team-status", None, lambda r: ((r.get(TEAM) or {}).get("status") or {}).get("conditions")),
    ("cluster-status", None, lambda r: ((r.get(CLUSTER) or {}).get("status") or {}).get(
        "discoveredCapacity")),
    ("workspace-ready", create_workspace, ws_ready),
    ("team-finalizer", None, lambda r: TEAM_FINALIZER in (
        (r.get(TEAM) or {}).get("metadata") or {}).get("finalizers", [])),
    ("workload-identity-ready", None, lambda r: cond_true(r.get(WS), "WorkloadIdentityReady")),
    ("cohort-follows-cordon", lambda r: r.merge("/api/v1/nodes/gpu-2",
                                                {"spec": {"unschedulable": True}}),
     lambda r: gpu_quota(r.get(COHORT)) == 8),
    ("dra-node-counted", add_dra_node, lambda r: gpu_quota(r.get(COHORT)) == 16),
    ("kueue-config-followed", break_kueue_config, lambda r: gpu_quota(r.get(COHORT)) == 8),
    ("rolebinding-restored", delete_action(RB % OLD_NS), restored(RB % OLD_NS)),
    ("localqueue-restored", delete_action(LQ % OLD_NS), restored(LQ % OLD_NS)),
    ("serviceaccount-restored", delete_action(SA % OLD_NS), restored(SA % OLD_NS)),
    ("rolebinding-repaired", label_drift(RB % OLD_NS), repaired(RB % OLD_NS)),
    ("localqueue-repaired", label_drift(LQ % OLD_NS), repaired(LQ % OLD_NS)),
    ("serviceaccount-repaired", label_drift(SA % OLD_NS), repaired(SA % OLD_NS)),
    ("namespace-repaired", label_drift("/api/v1/namespaces/" + OLD_NS),
     repaired("/api/v1/namespaces/" + OLD_NS)),
    ("clusterqueue-repaired", cq_drift, cq_repaired),
    ("flavor-repaired", rf_drift, rf_repaired),
    ("retarget-releases-namespace", retarget, released),
    ("workspace-deleted", lambda r: r.ok("DELETE", WS), ws_deleted),
    ("cohort-retired", lambda r: r.merge(CLUSTER, {"spec": {"queues": {
        "capacityTeamRef": {"name": "nobody"}}}}), lambda r: r.get(COHORT) is None),
    ("explicit-team-finalizer", create_explicit_team, lambda r: TEAM_FINALIZER in (
        (r.get(TEAM_ML) or {}).get("metadata") or {}).get("finalizers", [])),
    ("flavor-deleted", delete_managed, lambda r: r.get(CLUSTER) is None and r.get(RF) is None),
]
CHECKS = [name for name, _, _ in SCENARIO]


def wait(r, cond, timeout):
    """Seconds until cond(r) held, or None after timeout (an API error reads as not yet)."""
    t0 = time.monotonic()

    def held():
        try:
            return cond(r)
        except (OSError, http.client.HTTPException, ValueError):
            return False
    try:
        waits.wait_for(held, timeout, "the scenario's condition", interval=0.1)
    except AssertionError:
        return None
    return time.monotonic() - t0


def run_scenario(r, expect=None):
    """[(check, seconds or None)] in order; with `expect`, stops once that check is decided.
    Checks before `expect` get PASS_WAIT_S, `expect` itself FAIL_WAIT_S."""
    out = []
    r.start()
    for name, action, cond in SCENARIO:
        if action is not None:
            action(r)
        took = wait(r, cond, FAIL_WAIT_S if name == expect else PASS_WAIT_S)
        out.append((name, took))
        if took is None or name == expect:
            break
    return out


class AggregatorRoleTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        for b in (paths.AGG_BIN, paths.AGENT_BIN, HELM):
            if not os.access(b, os.X_OK):
                raise AssertionError("missing %s (build it; helm: scripts/install-deps)" % b)
        tmp = tempfile.mkdtemp(dir=WORK)
        keep = ("ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding", "ServiceAccount")
        cls.objects = [o for o in helm_template("tau-aggregator", "templates/aggregator.yaml", tmp)
                       + helm_template("tau-node-agent", "templates/node-agent.yaml", tmp)
                       if o["kind"] in keep]
        cls.roles = {(o["kind"], o["metadata"]["name"]): o for o in cls.objects
                     if o["kind"] in ("ClusterRole", "Role")}
        cls.rules = [(kind, a) for name, kind in ROLES.items()
                     for a in atoms(cls.roles[(kind, name)])]

    def log_of(self, r):
        try:
            return r.log()[-4000:]
        except OSError:
            return ""

    def test_whole_role(self):
        r = Run("whole", self.objects, None)
        try:
            got = run_scenario(r)
        finally:
            r.stop()
        failed = [n for n, t in got if t is None]
        self.assertFalse(failed, "with the whole role %s failed:\n%s" % (failed, self.log_of(r)))
        self.assertEqual([n for n, _ in got], CHECKS)
        self.assertFalse([line for line in r.log().splitlines() if "orbidden" in line],
                         "a request of the aggregator was forbidden with the whole role")
        # A variant's failure means something only if the check passes well within the time a
        # variant gives it.
        slow = [(n, t) for n, t in got if n in EXPECT.values() and t >= FAIL_WAIT_S]
        self.assertFalse(slow, "checks slower than TAU_RBAC_FAIL_WAIT with the whole role")
        print("\nwhole role: every check passed; seconds per check:", file=sys.stderr)
        for n, t in got:
            print("  %-30s %5.2f" % (n, t), file=sys.stderr)

    def test_each_rule(self):
        keys = [(a[0], a[1], a[2]) for _, a in self.rules]
        self.assertEqual(sorted(set(keys) - set(EXPECT)), [],
                         "rules the roles grant without a check in EXPECT")
        self.assertEqual(sorted(set(EXPECT) - set(keys)), [],
                         "EXPECT entries for rules the roles no longer grant")
        self.assertEqual(sorted(set(EXPECT.values()) - set(CHECKS)), [],
                         "EXPECT names checks the scenario does not have")
        t0 = time.monotonic()

        def one(i, rule):
            kind, a = rule
            expect = EXPECT[(a[0], a[1], a[2])]
            r = Run("r%02d" % i, self.objects, rule)
            try:
                got = run_scenario(r, expect)
            except Exception as e:  # reported in the table, fails the test
                got = [("error: %s" % e, None)]
            finally:
                r.stop()
            return rule, expect, got, self.log_of(r)

        only = os.environ.get("TAU_RBAC_ONLY")  # debugging: "resource/verb" substrings
        rules = [x for x in enumerate(self.rules) if not only or any(
            w in "%s/%s" % (x[1][1][1], x[1][1][2]) for w in only.split(","))]
        with concurrent.futures.ThreadPoolExecutor(max_workers=JOBS) as ex:
            results = list(ex.map(lambda x: one(*x), rules))
        elapsed = time.monotonic() - t0
        bad = []
        print("\n%-58s %-30s %s" % ("rule removed", "check that broke", "observed"),
              file=sys.stderr)
        for (kind, a), expect, got, log in results:
            what = "%s %s %s/%s" % (kind, a[2], a[0] or "core", a[1]) + (
                " %s" % ",".join(a[3]) if a[3] else "")
            last, took = got[-1]
            ok = last == expect and took is None and all(t is not None for _, t in got[:-1])
            print("%-58s %-30s %s" % (what, expect, "failed as expected" if ok else
                                      "UNEXPECTED: %s" % got), file=sys.stderr)
            if not ok:
                bad.append("%s: want %s to fail, got %s\n%s" % (what, expect, got, log[-1500:]))
        print("%d rules, %d variants in %.0f s (%d at a time)" % (
            len(results), len(results), elapsed, JOBS), file=sys.stderr)
        self.assertFalse(bad, "\n\n".join(bad))


if __name__ == "__main__":
    unittest.main(verbosity=2)
