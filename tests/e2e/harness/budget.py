"""The team capacity budget's e2e harness: nodes, expected Kueue objects, kube-sim + aggregators.

Everything here follows docs/budget.md, the contract: object names (`taugrid-gpu-<class>`,
`tau-team-<team>`, `tau-ws-<workspace>`), ownership labels and annotations, the Cohort's shape
(one resource group, coveredResources sorted, flavors sorted, every flavor listing every covered
resource with nominalQuota = the exact pool sum, "0" where the class lacks it) and the status of
TauTeam and TauCluster.  The pool oracle is harness.aggregator.expected_pool (exact Fractions,
independent of the C code); quantities read back are compared by value.

Cluster is workspace.Env (kube-sim with `--authz rbac`, the Kueue and taugrid CRDs, the chart's
RBAC, the aggregator's ServiceAccount kubeconfig, agent tokens for the nodes it is given) plus
real aggregators (Env.aggregator) and agents.FakeAgent; Recorder keeps every watch event of a
collection. OneCluster: the setUpClass/tearDownClass of cases that share one Cluster and one
aggregator; quota() reads one nominalQuota of a Cohort.
"""
import hashlib
import http.client
import json
import os
import re
import socket
import threading
import time
from fractions import Fraction

from harness import paths, proto, require
from harness import workspace as wst
from harness.agents import FakeAgent, inventory_from_node
from harness.aggregator import expected_pool
from harness.aggregator import node as agg_node
from harness.kubesim import WatchStream
from harness.quantity import parse as qparse
from harness.tokens import agent_token
from harness.waits import EventLog, wait_for

SYS_NS = "tau-system"
KUEUE = wst.KUEUE
COHORTS = KUEUE + "/cohorts"
CQS = KUEUE + "/clusterqueues"
RFS = KUEUE + "/resourceflavors"
TAU = "/apis/tau.azure.com/v1alpha1"
CLUSTER = TAU + "/clusters/cluster"
TEAMS = TAU + "/namespaces/%s/teams" % SYS_NS
WORKSPACES = wst.WS_API
NODES = "/api/v1/nodes"

GPU_CLASS = "tau.azure.com/gpu-class"
MANAGED_BY = "app.kubernetes.io/managed-by"
TEAM_LABEL = "tau.azure.com/team"
WS_LABEL = "tau.azure.com/workspace"
LEGACY_LABEL = "tau.azure.com/discover-gpu-flavors"
CLUSTER_UID = "tau.azure.com/cluster-uid"
TEAM_UID = "tau.azure.com/team-uid"
WS_UID = "tau.azure.com/workspace-uid"
KUEUE_KINDS = ("cohorts", "clusterqueues", "resourceflavors")
TAU_KINDS = ("teams", "clusters")
TIMEOUT = float(os.environ.get("TAU_BUDGET_E2E_TIMEOUT", "30"))

# Allocatable of the fixture nodes, in the notations kubelets use.  The two h100 nodes carry
# every resource kind the contract names (rdma/..., hugepages-..., ephemeral-storage, pods);
# a100 lacks rdma and hugepages, so its flavor lists them at "0".
H100 = {"cpu": "96", "memory": "1886Gi", "nvidia.com/gpu": "8", "rdma/ib": "8", "pods": "110",
        "ephemeral-storage": "100G", "hugepages-2Mi": "1Gi"}
H100_B = {"cpu": "95500m", "memory": "1900Gi", "nvidia.com/gpu": "8", "rdma/ib": "16",
          "pods": "110", "ephemeral-storage": "200G", "hugepages-2Mi": "512Mi"}
A100 = {"cpu": "64", "memory": "512Gi", "nvidia.com/gpu": "4", "pods": "110",
        "ephemeral-storage": "50Gi"}
CPU = {"cpu": "16", "memory": "64Gi", "pods": "110"}


# -- objects ---------------------------------------------------------------------------------

def node(name, cls=None, alloc=None, os_name="linux", ready=True, cordoned=False, labels=None,
         finalizers=()):
    """A Node as a kubelet registers it (harness.aggregator.node plus OS and finalizers)."""
    n = agg_node(name, cls, dict(alloc or CPU), ready=ready, unschedulable=cordoned,
                 extra_labels=labels)
    n["metadata"]["labels"]["kubernetes.io/os"] = os_name
    if finalizers:
        n["metadata"]["finalizers"] = list(finalizers)
    return n


def team(name, quota=None):
    spec = {"quota": quota} if quota else {}
    return {"apiVersion": "tau.azure.com/v1alpha1", "kind": "TauTeam",
            "metadata": {"name": name, "namespace": SYS_NS}, "spec": spec}


def tau_cluster(mode="Reconcile", capacity_team="research", selector=None):
    spec = {"managementMode": mode, "queues": {}}
    if capacity_team:
        spec["queues"]["capacityTeamRef"] = {"name": capacity_team}
    if selector is not None:
        spec["nodes"] = {"selector": selector}
    return {"apiVersion": "tau.azure.com/v1alpha1", "kind": "TauCluster",
            "metadata": {"name": "cluster"}, "spec": spec}


def leader_election_binding():
    return {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
            "metadata": {"name": "tau-aggregator-leader-election", "namespace": SYS_NS},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role",
                        "name": "tau-aggregator-leader-election"},
            "subjects": [{"kind": "ServiceAccount", "name": "tau-aggregator",
                          "namespace": SYS_NS}]}


_DNS_SUBDOMAIN = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")


def flavor_name(cls):
    """Our ResourceFlavor's name for a class, as aggregator/budget/names.c makes it: a name
    that is no DNS-1123 subdomain is lowercased, cleaned up ('-' for every character but
    alphanumerics and a '.' between them) and suffixed with 8 hex of the class's SHA-256."""
    prefix = "taugrid-gpu-"
    if len(prefix + cls) <= 253 and _DNS_SUBDOMAIN.match(prefix + cls):
        return prefix + cls
    low = cls.lower()[:253 - len(prefix) - 9]
    out = "".join(ch if ch.isascii() and ch.isalnum() or (
        ch == "." and 0 < i < len(low) - 1 and low[i - 1].isalnum() and low[i + 1].isalnum())
        else "-" for i, ch in enumerate(low))
    return "%s%s-%s" % (prefix, out, hashlib.sha256(cls.encode()).hexdigest()[:8])


def cohort_name(team_name):
    return "tau-team-" + team_name


def cq_name(ws):
    return "tau-ws-" + ws


# -- expected budget -------------------------------------------------------------------------

QTY_FIELDS = ("nominalQuota", "borrowingLimit", "lendingLimit")


def qty(v):
    """A quantity read back, by value (Kueue re-serialises them); unparsable ones stay visible."""
    try:
        return qparse(str(v))
    except ValueError:
        return ("unparsable", v)


def norm_groups(groups):
    """resourceGroups with every quantity field parsed; all other keys kept, so an unexpected
    borrowingLimit or lendingLimit shows up as a difference."""
    out = []
    for g in groups or []:
        g = dict(g)
        g["flavors"] = [dict(f, resources=[{k: qty(v) if k in QTY_FIELDS else v
                                            for k, v in r.items()}
                                           for r in f.get("resources") or []])
                        for f in g.get("flavors") or []]
        out.append(g)
    return out


def dump(x):
    return json.dumps(x, sort_keys=True, default=lambda f: str(f))


class Shape:
    """The shape one team Cohort has grown to: flavors and covered resources never leave it
    (P6: a class whose nodes all disappear stays at 0, a resource that disappears stays
    covered at 0).  groups(pool) is the resourceGroups the Cohort must hold for that pool."""

    def __init__(self):
        self.classes = set()
        self.resources = set()

    def groups(self, pool, zero=False):
        self.classes |= set(pool)
        for f in pool.values():
            self.resources |= set(f["resources"])
        if not self.classes or not self.resources:
            return []
        covered = sorted(self.resources)
        flavors = []
        for cls in sorted(self.classes, key=flavor_name):
            have = pool.get(cls, {}).get("resources", {})
            flavors.append({"name": flavor_name(cls), "resources": [
                {"name": r, "nominalQuota": Fraction(0) if zero else have.get(r, Fraction(0))}
                for r in covered]})
        return [{"coveredResources": covered, "flavors": flavors}]


def is_zeroed(groups):
    return bool(groups) and all(r.get("nominalQuota") == 0 for g in groups
                                for f in g["flavors"] for r in f["resources"])


def cohort_diffs(obj, team_name, team_uid, want_groups):
    """Differences between a Cohort read back and the desired one, on the fields we own."""
    if obj is None:
        return ["Cohort %s does not exist" % cohort_name(team_name)]
    d = _owner_diffs(obj, {MANAGED_BY: "taugrid", TEAM_LABEL: team_name}, {TEAM_UID: team_uid})
    spec = obj.get("spec") or {}
    if "parentName" in spec:
        d.append("Cohort has spec.parentName %r" % spec["parentName"])
    got = norm_groups(spec.get("resourceGroups"))
    if got != want_groups:
        d.append("Cohort spec.resourceGroups is\n  %s\nwant\n  %s" % (dump(got), dump(want_groups)))
    return d


def cq_diffs(obj, ws, ws_uid, team_name, ns, cohort_groups):
    """A workspace ClusterQueue: the Cohort's shape at zero quota, no borrowingLimit, the
    resolved namespace, the team's Cohort."""
    if obj is None:
        return ["ClusterQueue %s does not exist" % cq_name(ws)]
    d = _owner_diffs(obj, {MANAGED_BY: "taugrid", TEAM_LABEL: team_name, WS_LABEL: ws},
                     {WS_UID: ws_uid})
    spec = obj.get("spec") or {}
    if spec.get("cohortName") != cohort_name(team_name):
        d.append("ClusterQueue spec.cohortName %r, want %r" % (spec.get("cohortName"),
                                                              cohort_name(team_name)))
    sel = {"matchLabels": {"kubernetes.io/metadata.name": ns}}
    if spec.get("namespaceSelector") != sel:
        d.append("ClusterQueue spec.namespaceSelector %s, want %s" % (
            dump(spec.get("namespaceSelector")), dump(sel)))
    want = [{"coveredResources": g["coveredResources"],
             "flavors": [{"name": f["name"],
                          "resources": [{"name": r["name"], "nominalQuota": Fraction(0)}
                                        for r in f["resources"]]} for f in g["flavors"]]}
            for g in cohort_groups]
    got = norm_groups(spec.get("resourceGroups"))
    if got != want:
        d.append("ClusterQueue spec.resourceGroups is\n  %s\nwant\n  %s" % (dump(got), dump(want)))
    return d


def rf_diffs(obj, cls, cluster_uid, selector=None):
    """Our flavor of `cls`: its nodeLabels are the class, the OS and the TauCluster's node
    selector (docs/budget.md, "Flavors reach only the pool")."""
    if obj is None:
        return ["ResourceFlavor %s does not exist" % flavor_name(cls)]
    d = _owner_diffs(obj, {MANAGED_BY: "taugrid", GPU_CLASS: cls}, {CLUSTER_UID: cluster_uid})
    want = dict(selector or {})
    want.update({GPU_CLASS: cls, "kubernetes.io/os": "linux"})
    got = (obj.get("spec") or {}).get("nodeLabels")
    if got != want:
        d.append("ResourceFlavor %s spec.nodeLabels %s, want %s" % (
            obj["metadata"]["name"], dump(got), dump(want)))
    if obj["metadata"].get("deletionTimestamp"):
        d.append("ResourceFlavor %s is being deleted" % obj["metadata"]["name"])
    return d


def _owner_diffs(obj, labels, annotations):
    md = obj["metadata"]
    d = []
    for k, v in labels.items():
        if (md.get("labels") or {}).get(k) != v:
            d.append("%s label %s=%r, want %r" % (md["name"], k, (md.get("labels") or {}).get(k), v))
    for k, v in annotations.items():
        if (md.get("annotations") or {}).get(k) != v:
            d.append("%s annotation %s=%r, want %r" % (
                md["name"], k, (md.get("annotations") or {}).get(k), v))
    return d


def cond_diffs(obj, ctype, status, reason=None, text=None):
    """A condition's status/reason, and that its message names `text` (str or list)."""
    c = wst.cond(obj, ctype)
    if c is None:
        return ["%s: no %s condition (status %s)" % (_name(obj), ctype,
                                                     dump((obj or {}).get("status")))]
    d = []
    if c.get("status") != status or (reason is not None and c.get("reason") != reason):
        d.append("%s: %s is %s/%s (%r), want %s/%s" % (_name(obj), ctype, c.get("status"),
                                                       c.get("reason"), c.get("message"),
                                                       status, reason))
    for t in ([text] if isinstance(text, str) else text or []):
        if t not in (c.get("message") or ""):
            d.append("%s: %s message %r does not name %r" % (_name(obj), ctype,
                                                             c.get("message"), t))
    return d


def _name(obj):
    md = (obj or {}).get("metadata") or {}
    return "%s %s" % ((obj or {}).get("kind", "?"), md.get("name", "?"))


def capacity_of(cluster_obj):
    """TauCluster status.discoveredCapacity as {(flavor, resource): Fraction}, zero entries
    left out (a class lacking a resource may list it at 0 or not at all)."""
    out = {}
    for e in ((cluster_obj or {}).get("status") or {}).get("discoveredCapacity") or []:
        v = qty(e.get("capacity"))
        if v != 0:
            out[(e.get("flavor"), e.get("resource"))] = v
    return out


def budget_passes(agg):
    """The aggregator's tau_budget_passes_total: budget passes ended, each after its writes."""
    m = re.search(r"^tau_budget_passes_total (\d+)$", agg.metrics(), re.M)
    assert m is not None, "no tau_budget_passes_total in the aggregator's /metrics"
    return int(m.group(1))


def pool_capacity(pool):
    """The same shape from the oracle's pool: flavors by their ResourceFlavor name."""
    return {(flavor_name(cls), r): v for cls, f in pool.items()
            for r, v in f["resources"].items() if v != 0}


# -- the harness -----------------------------------------------------------------------------

class Cluster:
    """kube-sim (workspace.Env) plus real aggregators and fake agents, with the API and
    wait helpers the budget scenarios use."""

    def __init__(self, agent_nodes=(), sim_args=()):
        """agent_nodes: the nodes fake agents may report for; sim_args: more kube-sim flags."""
        self.env = wst.Env(start=False, agent_nodes=agent_nodes, sim_args=sim_args)
        self.sim = self.env.sim
        self.aggs = []
        self.agents = {}

    def stop(self):
        for a in list(self.agents.values()):
            if not a.done:
                a.cancel()
        for a in self.aggs:
            a.stop()  # a killed one is only reaped
        self.env.stop()

    def stop_checked(self, agg):
        """Stop everything; `agg` must have exited 0 on SIGTERM (the sanitizer build fails it
        on a leak). Returns its log."""
        rc = agg.stop() if agg.p.poll() is None else agg.p.returncode
        log = agg.log()
        self.stop()
        assert rc == 0, "aggregator exit code %s after SIGTERM:\n%s" % (rc, log[-3000:])
        return log

    # -- processes --
    def start_aggregator(self, name, *extra, expect_ready=True):
        a = self.env.aggregator(name, list(extra), expect_ready)
        self.aggs.append(a)
        return a

    def start_agent(self, agg, node_obj, wait=True):
        """A fake agent on `agg` reporting node_obj (as read back from the API)."""
        name = node_obj["metadata"]["name"]
        old = self.agents.pop(name, None)
        if old is not None and not old.done:
            old.cancel()
        pb = proto.inventory()
        a = FakeAgent(pb, agg.channel, agent_token(name), inventory_from_node(pb, node_obj))
        self.agents[name] = a
        if wait:
            ack = a.wait_ack(1)
            assert ack.status == pb.ACK_STATUS_OK, ack.message
        return a

    def report(self, node_obj):
        """The node's agent sends a new full inventory (node_obj as it should now read)."""
        a = self.agents[node_obj["metadata"]["name"]]
        pb = proto.inventory()
        ack = a.wait_ack(a.send_inventory(inventory_from_node(pb, node_obj)))
        assert ack.status == pb.ACK_STATUS_OK, ack.message

    def log_tail(self, n=6000):
        parts = []
        for a in self.aggs:
            try:
                parts.append("--- %s:\n%s" % (os.path.basename(a.log_path), a.log()[-n:]))
            except OSError:
                pass
        return "\n".join(parts)

    # -- API (admin) --
    def get(self, path):
        return self.env.get(path)

    def create(self, obj, path):
        return self.sim.ok("POST", path, obj)

    def merge(self, path, patch):
        return self.sim.ok("PATCH", path, patch, ctype="application/merge-patch+json")

    def delete(self, path):
        return self.sim.ok("DELETE", path, expect=(200, 202))

    def items(self, path):
        return self.sim.ok("GET", path)["items"]

    def names(self, path):
        return sorted(o["metadata"]["name"] for o in self.items(path))

    def cohort(self, team_name):
        return self.get(COHORTS + "/" + cohort_name(team_name))

    def team(self, name):
        return self.get(TEAMS + "/" + name)

    def cluster(self):
        return self.get(CLUSTER)

    def ours(self, path):
        """Names of the objects at `path` labelled managed-by taugrid."""
        return sorted(o["metadata"]["name"] for o in self.items(path)
                      if (o["metadata"].get("labels") or {}).get(MANAGED_BY) == "taugrid")

    def pool(self, selector=None):
        """The exact pool by rules P1-P2, from the Nodes the API holds now."""
        live = [n for n in self.items(NODES) if not n["metadata"].get("deletionTimestamp")]
        return expected_pool(live, selector)

    def stats(self):
        return self.env.stats()

    def reset_stats(self):
        self.env.reset_stats()

    def writes(self, kinds):
        """Write requests counted by kube-sim on `kinds` (and their subresources)."""
        return {k: v for k, v in self.stats().items()
                if v and k.split("/")[0] in wst.WRITE_VERBS and k.split("/")[1] in kinds}

    def faults(self, method, body=None):
        st, obj = self.sim.req(method, "/sim/faults", body, token=False)
        assert st == 200, (st, obj)
        return obj

    def events(self, reason=None):
        """Events about the TauCluster or a TauTeam, as (kind, name, reason, message)."""
        out = []
        for e in self.items("/api/v1/events"):
            io = e.get("involvedObject") or e.get("regarding") or {}
            if io.get("kind") in ("TauCluster", "TauTeam") and (reason is None or
                                                              e.get("reason") == reason):
                out.append((io.get("kind"), io.get("name"), e.get("reason"), e.get("message")))
        return out

    # -- status --
    def team_ready_diffs(self, name):
        """TauTeam `name` says its Cohort holds the pool (QuotaReady True BudgetApplied)."""
        t, co = self.team(name), self.cohort(name)
        if t is None:
            return ["TauTeam %s does not exist" % name]
        st = t.get("status") or {}
        d = cond_diffs(t, "QuotaReady", "True", "BudgetApplied")
        if st.get("phase") != "Ready":
            d.append("TauTeam %s phase %r, want Ready" % (name, st.get("phase")))
        if st.get("cohort") != cohort_name(name):
            d.append("TauTeam %s status.cohort %r" % (name, st.get("cohort")))
        if co is None or st.get("cohortUID") != co["metadata"]["uid"]:
            d.append("TauTeam %s status.cohortUID %r, Cohort uid %r" % (
                name, st.get("cohortUID"), co and co["metadata"]["uid"]))
        if st.get("observedGeneration") != t["metadata"].get("generation"):
            d.append("TauTeam %s observedGeneration %r, generation %r" % (
                name, st.get("observedGeneration"), t["metadata"].get("generation")))
        return d

    def cluster_ready_diffs(self, pool, managed=None):
        """TauCluster status: conditions all good, discoveredCapacity = pool, and (when given)
        managedResources = `managed`, a list of (kind, name)."""
        o = self.cluster()
        d = []
        for ctype, status, reason in (("InventoryEstablished", "True", None),
                                      ("NodeSelectorValid", "True", None),
                                      ("BudgetReady", "True", "BudgetApplied"),
                                      ("ConflictDetected", "False", None)):
            d += cond_diffs(o, ctype, status, reason)
        st = (o or {}).get("status") or {}
        if st.get("phase") != "Ready":
            d.append("TauCluster phase %r, want Ready" % st.get("phase"))
        if st.get("observedGeneration") != (o or {}).get("metadata", {}).get("generation"):
            d.append("TauCluster observedGeneration %r" % st.get("observedGeneration"))
        cap, want = capacity_of(o), pool_capacity(pool)
        if cap != want:
            d.append("TauCluster discoveredCapacity %s, want %s" % (
                dump(sorted(cap.items())), dump(sorted(want.items()))))
        if managed is not None:
            got = sorted((m.get("kind"), m.get("name")) for m in st.get("managedResources") or [])
            if got != sorted(managed):
                d.append("TauCluster managedResources %s, want %s" % (got, sorted(managed)))
        return d

    # -- waits --
    def wait_ok(self, check, msg, timeout=TIMEOUT):
        """Wait until check() returns no differences; fail with the last ones and the logs."""
        last = [[]]

        def ok():
            last[0] = check()
            return not last[0]
        try:
            wait_for(ok, timeout=timeout, what=msg, interval=0.1)
        except AssertionError as e:
            raise AssertionError("%s\n%s\n%s" % (e, "\n".join(last[0]), self.log_tail()))

    def wait_gone(self, path, timeout=TIMEOUT):
        self.wait_ok(lambda: [] if self.sim.req("GET", path)[0] == 404 else
                     ["%s still exists" % path], "%s gone" % path, timeout)


class Recorder:
    """Every watch event of a collection from now on, with its arrival time: a waits.EventLog
    of (monotonic arrival, type, decode(object)); decode defaults to the object itself (a
    bench with many events keeps only what it needs of each)."""

    def __init__(self, sim, path, decode=None):
        self.decode = decode or (lambda obj: obj)
        # limit=1: the collection's resourceVersion without reading every object.
        rv = sim.ok("GET", path + "?limit=1")["metadata"]["resourceVersion"]
        self.w = WatchStream(sim, "%s?watch=1&resourceVersion=%s" % (path, rv),
                                     timeout=900)
        self.log = EventLog()
        self.t = threading.Thread(target=self._read, daemon=True)
        self.t.start()

    def _read(self):
        try:
            for ev in iter(self.w.next, None):
                self.log.append((time.monotonic(), ev.get("type"),
                                 self.decode(ev.get("object") or {})))
        except (OSError, ValueError, http.client.HTTPException):
            pass  # closed
        finally:
            self.log.end()

    def snapshot(self):
        return self.log.snapshot()

    def close(self):
        # Shut the socket first: closing the response would wait for the reader's lock.
        try:
            self.w.c.sock.shutdown(socket.SHUT_RDWR)
        except (AttributeError, OSError):
            pass
        self.t.join(10)
        self.w.close()


# -- cases sharing one cluster -------------------------------------------------------------------

def quota(cohort, cls, resource):
    """The nominalQuota of `resource` in the flavor of GPU class `cls` of a Cohort, or None."""
    for g in norm_groups((cohort or {}).get("spec", {}).get("resourceGroups")):
        for f in g["flavors"]:
            if f["name"] == flavor_name(cls):
                for r in f["resources"]:
                    if r["name"] == resource:
                        return r["nominalQuota"]
    return None


class OneCluster:
    """Mixin of a TestCase whose cases share one kube-sim and one aggregator (AGG_ARGS), set up
    with populate(), a TauTeam research and a TauCluster in Reconcile mode naming it."""
    AGENT_NODES = ()
    AGG_ARGS = ()

    @classmethod
    def populate(cls, c):
        pass

    @classmethod
    def setUpClass(cls):
        c = cls.c = Cluster(agent_nodes=cls.AGENT_NODES)
        try:
            cls.populate(c)
            c.create(team("research"), TEAMS)
            c.create(tau_cluster(), TAU + "/clusters")
            cls.agg = c.start_aggregator("aggregator", *cls.AGG_ARGS)
        except BaseException:
            c.stop()
            raise
        cls.shape = Shape()
        cls.fault_spans = []  # where in the log writes failed on purpose

    @classmethod
    def tearDownClass(cls):
        log = cls.c.stop_checked(cls.agg)
        # Every object it wrote passed kube-sim's Kueue admission rules and the CRD schemas:
        # no write failed but those the fault case made fail on purpose.
        for start, end in reversed(cls.fault_spans):
            log = log[:start] + log[end:]
        refused = [line for line in log.splitlines()
                   if "budget write failed" in line or "admission webhook" in line]
        assert not refused, "writes refused:\n" + "\n".join(refused[:20])


def require_all():
    """What a budget suite needs (its setUpModule): the aggregator, the CLI, and protoc for the
    message classes."""
    require.binary(paths.AGG_BIN, "TAU_AGGREGATOR_BIN")
    require.binary(paths.CLI_BIN, "TAU_CLI")
    proto.inventory()
