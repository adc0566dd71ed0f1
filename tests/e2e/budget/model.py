#!/usr/bin/python3
"""Randomized model test of the team budget (issue 24): seeded sequences of operations against
kube-sim and the real tau-aggregator, every write checked from kube-sim's write history.

    /usr/bin/python3 tests/e2e/budget/model.py [--build DIR] [--seeds 4] [--first-seed 1]
        [--ops 14] [--lag 10] [--shrink 12] [--no-lifecycle] [--no-dra]
        [--seed N --sequence JSON] [--keep]

For each seed: kube-sim (the budget e2e harness's, with --history-events, as bench/soak.py sets
it up: harness.budget.Cluster with a write history), the real aggregator (MultipleWorkspaces=true) on a fixed gRPC port, the
harness.churn's agent swarm (one Report stream per Node, following the Node as the model changes it),
three GPU nodes, the capacity team `research` with one workspace. Then --ops operations drawn by
random.Random(seed), each applied at once or after the previous one settled (the seed decides):

  nodes       added (class h100/a100, rack r0/r1), cordoned/uncordoned, relabelled (rack,
              class), deleted
  teams       explicit teams ml/vision created with quota on our h100 flavor or on a foreign
              flavor, their quota changed, deleted
  workspaces  created in a team, moved to another existing team, deleted (when their queue
              holds no admitted work, see held out)
  capacity    capacityTeamRef set, moved to another team, removed
  selector    TauCluster spec.nodes.selector {tau.test/rack: r1} set or removed
  foreign     a ResourceFlavor over rack r1 or r9, a Cohort with quota on our flavor, a
              ClusterQueue holding a reservation on it: created and deleted
  work        a workspace ClusterQueue gets admitted work (status.flavorsReservation, as
              Kueue writes it)
  restart     the aggregator SIGKILLed and started again on the same port

Invariants, replayed from GET /sim/history (every committed write) after the sequence, each
event applied in order and checked against the state it leaves:

  B1 pool bound   per flavor and resource, a write that raises what one of our Cohorts or
                  ClusterQueues holds leaves the sum over every Cohort and ClusterQueue we own
                  at most the pool of the counted nodes the flavor reaches (Ready, schedulable,
                  Linux, matching TauCluster spec.nodes.selector AND carrying all the flavor's
                  nodeLabels), the largest such pool over the --lag seconds before the write
                  (the stated staleness window: coalescing, the 1 s pass spacing, a restarted
                  aggregator waiting for its inventory). An explicit allocation admitted against
                  a larger pool that shrank later is not a raise (E4: reductions are never
                  forced), so only raises are checked for it.
  B2 follows      the automatic Cohort alone never holds more than that pool for longer than
                  --lag seconds: checked at every event and at the end.
  F1 confined     a flavor of ours that holds quota reaches (carries the nodeLabels of) no
                  Ready, schedulable Linux node the pool leaves out (spec.nodes.selector), for
                  longer than --lag seconds: Kueue puts admitted pods on the nodes counted.
  Q1 no drop      no ClusterQueue whose status holds a reservation is deleted.
  L1 no loop      after the last operation the owned objects go quiet (no write for 3 s)
                  within 30 s.
  B3 exact        then, while the TauCluster's BudgetReady is True BudgetApplied for its
                  generation, the capacity team's Cohort holds exactly the pool each of its
                  flavors reaches (as B1 counts it), within 20 s: what B1 bounds from above
                  is really counted (DRA devices included).

A failing seed is shrunk (greedy: drop one operation at a time while the same invariant still
breaks, at most --shrink runs) and printed as a command that replays it:
  model.py --seed N --sequence '[...]'
Exit 0 when every seed held, 1 with each broken invariant and its evidence, 2 on bad usage.

Lifecycle operations (issue 24's findings 1 and 4), drawn too unless --no-lifecycle: the
capacity team deleted, managementMode Observe, the TauCluster deleted and recreated, a workspace
with admitted work deleted or moved out of every team, or its explicit team deleted, spec.quota
on a capacity-team workspace. Observe writes nothing by design, so there B2 accepts an automatic
Cohort above the pool only while the TauCluster's BudgetReady is Unknown ObserveOnly and names,
for that Cohort, the cell with its live value and a wanted value within the pool
("taugrid-gpu-h100/nvidia.com/gpu holds 24, want 16"): frozen, and the status says so and by
how much it is off. F1 likewise accepts, in Observe, a flavor of ours that BudgetReady names
as not following the pool (a node selector set while nothing is written).

DRA operations (issue 26), drawn too unless --no-dra, from a second random stream of the seed
(random.Random("dra-<seed>")) and put between the others, so --no-dra draws exactly the
sequence the seed drew before them: nodes d-0..d-2 whose GPUs come only through
resource.k8s.io/v1 ResourceSlices (no nvidia.com/gpu in allocatable; driver gpu.nvidia.com, one
pool per node, the shape of tests/fixtures/dra) added and deleted with their slices, relabelled
(rack); a pool's slices deleted, its generation bumped with only the first of two slices
published (an update in flight), the missing slices published; the DeviceClass gpu.nvidia.com
(extendedResourceName nvidia.com/gpu) changed (its selector to MIG devices, which select none
of these; its extendedResourceName to example.com/gpu) and back, deleted and created again.
B1, B2 and F1 then count, on each counted node, the devices of complete pools that a class
selects under that class's extendedResourceName, by the rules of docs/budget.md "How DRA
devices count" (node-local only, the highest generation only and only when all its
resourceSliceCount slices are seen with no device name twice, each device once under the first
selecting class by name, nothing for a resource the node has non-zero in allocatable).
"""
import argparse
import json
import os
import random
import re
import signal
import socket
import sys
import time
from fractions import Fraction

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(HERE)))
sys.path.insert(0, os.path.dirname(HERE))  # tests/e2e, the harness package's folder
from harness import budget as h  # noqa: E402
from harness import paths, proto  # noqa: E402
from harness import workspace as wst  # noqa: E402
from harness.aggregator import expected_pool  # noqa: E402
from harness.churn import Api, Failed, Swarm  # noqa: E402
from harness.quantity import parse as qparse  # noqa: E402

NODE_NAMES = ["m-%d" % i for i in range(10)]
GPU = "nvidia.com/gpu"
KUEUE_API = "kueue.x-k8s.io/v1beta2"
H100F = h.flavor_name("h100")
RACK = "tau.test/rack"
HIST = ("nodes", "cohorts", "clusterqueues", "resourceflavors", "clusters", "deviceclasses",
        "resourceslices")
OWNED_KINDS = ("cohorts", "clusterqueues", "resourceflavors")
ALLOC = {"h100": h.H100, "a100": h.A100}
LIFECYCLE = ("team-delete-capacity", "observe", "cluster-recreate", "ws-quota-capacity")
DRA = "/apis/resource.k8s.io/v1"
DRA_NODES = ["d-0", "d-1", "d-2"]
DRIVER = "gpu.nvidia.com"
DRA_CLASS = "gpu.nvidia.com"


# -- one run ------------------------------------------------------------------------------------

class Run:
    """One seed's cluster: set up, apply a sequence, replay the history, tear down."""

    def __init__(self, a, seed):
        self.a, self.seed = a, seed
        self.c = self.swarm = self.agg = None
        self.port = None
        self.aggs = 0
        self.b3 = ""

    # set-up and tear-down
    def start(self):
        self.c = h.Cluster(NODE_NAMES + DRA_NODES, ["--history-events", "400000"])
        self.api = Api(self.c.sim, None)
        self.rv0 = int(self.c.sim.req("GET", "/sim/state", token=False)[1]["resourceVersion"])
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        self.port = s.getsockname()[1]
        s.close()
        self.swarm = Swarm("127.0.0.1:%d" % self.port, random.Random(self.seed), 2)
        for name, cls, rack in (("m-0", "h100", "r0"), ("m-1", "h100", "r1"),
                                ("m-2", "a100", "r1")):
            self.node_add({"name": name, "cls": cls, "rack": rack})
        self.c.create(h.team("research"), h.TEAMS)
        self.c.create(wst.workspace("alpha", ns="ml-alpha", team="research"), h.WORKSPACES)
        self.c.create(h.tau_cluster(), h.TAU + "/clusters")
        if not self.a.no_dra:
            self.c.create(device_class("gpu", GPU), DRA + "/deviceclasses")
        self.dra_gen = {}  # DRA node -> the generation its driver publishes
        self.start_aggregator()
        self.swarm.start()
        uid = self.c.team("research")["metadata"]["uid"]
        want = h.Shape().groups(self.c.pool())
        self.c.wait_ok(lambda: h.cohort_diffs(self.c.cohort("research"), "research", uid, want),
                       "seed %d: the first Cohort holds the pool" % self.seed, timeout=90)
        # Every sequence starts from the same state: alpha's queue is there too.
        self.c.wait_ok(lambda: [] if self.get(h.CQS + "/" + h.cq_name("alpha")) else
                       ["no ClusterQueue %s yet" % h.cq_name("alpha")],
                       "seed %d: alpha's ClusterQueue" % self.seed, timeout=90)

    def start_aggregator(self):
        self.aggs += 1
        self.agg = self.c.start_aggregator(
            "agg-%02d" % self.aggs, "--grpc-listen", "127.0.0.1:%d" % self.port,
            "--initial-sync-timeout", "3s", "--feature-gates", "MultipleWorkspaces=true")

    def stop(self):
        if self.swarm is not None:
            self.swarm.close()
        if self.c is not None:
            if not self.a.keep:
                self.c.stop()
            else:
                print("model: kept %s" % self.c.env.tmp, file=sys.stderr)

    # operations
    def get(self, path):
        st, obj = self.api.call("GET", path, ok=(200, 404))
        return obj if st == 200 else None

    def node_add(self, o):
        if self.get(h.NODES + "/" + o["name"]) is not None:
            return
        n = h.node(o["name"], o["cls"], dict(ALLOC[o["cls"]]), labels={RACK: o["rack"]})
        self.swarm.set_node(o["name"], self.api.must("POST", h.NODES, n))

    def node_merge(self, name, patch):
        if self.get(h.NODES + "/" + name) is None:
            return
        self.swarm.set_node(name, self.api.merge(h.NODES + "/" + name, patch))

    def apply(self, o):
        op, api = o["op"], self.api
        if op == "node-add":
            self.node_add(o)
        elif op == "node-cordon":
            self.node_merge(o["name"], {"spec": {"unschedulable": True if o["on"] else None}})
        elif op == "node-rack":
            self.node_merge(o["name"], {"metadata": {"labels": {RACK: o["rack"]}}})
        elif op == "node-class":
            self.node_merge(o["name"], {"metadata": {"labels": {h.GPU_CLASS: o["cls"]}}})
        elif op == "node-delete":
            api.call("DELETE", h.NODES + "/" + o["name"], ok=(200, 202, 404))
            self.swarm.set_node(o["name"], None)
        elif op == "team-create":
            if self.get(h.TEAMS + "/" + o["team"]) is None:
                api.must("POST", h.TEAMS, h.team(o["team"], quota=quota(o)))
        elif op == "team-quota":
            if self.get(h.TEAMS + "/" + o["team"]) is not None:
                api.merge(h.TEAMS + "/" + o["team"], {"spec": {"quota": quota(o)}})
        elif op in ("team-delete", "team-delete-capacity"):
            api.call("DELETE", h.TEAMS + "/" + o["team"], ok=(200, 202, 404))
        elif op == "ws-create":
            if self.get(h.WORKSPACES + "/" + o["ws"]) is None:
                api.must("POST", h.WORKSPACES,
                         wst.workspace(o["ws"], ns="ml-" + o["ws"], team=o["team"]))
        elif op == "ws-move":
            if self.get(h.WORKSPACES + "/" + o["ws"]) is not None:
                api.merge(h.WORKSPACES + "/" + o["ws"], {"spec": {"teamRef": {"name": o["team"]}}})
        elif op == "ws-quota-capacity":
            if self.get(h.WORKSPACES + "/" + o["ws"]) is not None:
                api.merge(h.WORKSPACES + "/" + o["ws"], {"spec": {"quota": [
                    {"flavor": H100F, "resource": GPU, "nominalQuota": "1"}]}})
        elif op == "ws-delete":
            api.call("DELETE", h.WORKSPACES + "/" + o["ws"], ok=(200, 202, 404))
        elif op == "capref":
            ref = {"name": o["team"]} if o["team"] else None
            api.merge(h.TAU + "/clusters/cluster", {"spec": {"queues": {"capacityTeamRef": ref}}})
        elif op == "selector":
            sel = {"selector": {RACK: o["rack"]}} if o["rack"] else None
            api.merge(h.TAU + "/clusters/cluster", {"spec": {"nodes": sel}})
        elif op == "observe":
            api.merge(h.TAU + "/clusters/cluster",
                      {"spec": {"managementMode": "Observe" if o["on"] else "Reconcile"}})
        elif op == "cluster-recreate":
            cur = self.get(h.TAU + "/clusters/cluster")
            api.call("DELETE", h.TAU + "/clusters/cluster", ok=(200, 202, 404))
            body = h.tau_cluster()
            if cur is not None:
                body["spec"] = cur["spec"]
            api.call("POST", h.TAU + "/clusters", body, ok=(200, 201, 409))
        elif op == "foreign-flavor":
            self.toggle(h.RFS, "other-" + o["rack"], {
                "apiVersion": KUEUE_API, "kind": "ResourceFlavor",
                "metadata": {"name": "other-" + o["rack"]},
                "spec": {"nodeLabels": {RACK: o["rack"]}}})
        elif op == "foreign-cohort":
            self.toggle(h.COHORTS, "other-budget", {
                "apiVersion": KUEUE_API, "kind": "Cohort", "metadata": {"name": "other-budget"},
                "spec": {"resourceGroups": [groups(H100F, "1")]}})
        elif op == "foreign-queue":
            if self.toggle(h.CQS, "other-cq", {
                    "apiVersion": KUEUE_API, "kind": "ClusterQueue",
                    "metadata": {"name": "other-cq"},
                    "spec": {"namespaceSelector": {}, "resourceGroups": [groups(H100F, "0")]}}):
                api.merge(h.CQS + "/other-cq/status", reservation(H100F, "2"))
        elif op == "admit":
            cq = self.get(h.CQS + "/" + h.cq_name(o["ws"]))
            flavors = [f["name"] for g in h.norm_groups((cq or {}).get("spec", {}).get(
                "resourceGroups")) for f in g["flavors"]]
            if cq is not None and not cq["metadata"].get("deletionTimestamp") and flavors:
                api.call("PATCH", h.CQS + "/" + h.cq_name(o["ws"]) + "/status",
                         reservation(flavors[0], "1"), "application/merge-patch+json",
                         ok=(200, 404, 409))
        elif op == "restart":
            self.agg.p.send_signal(signal.SIGKILL)
            self.agg.p.wait(30)
            self.agg.close_channel()
            self.start_aggregator()
        elif op.startswith("dra-"):
            self.apply_dra(o)
        else:
            raise ValueError("unknown operation %r" % op)

    def slices_of(self, node):
        st, lst = self.api.call("GET", DRA + "/resourceslices", ok=(200,))
        return [x for x in lst.get("items") or [] if (x.get("spec") or {}).get("nodeName") == node]

    def publish(self, node, gen, count, index, devs):
        """Slice `index` of `count` of node's pool at generation `gen`, `devs` GPUs."""
        self.api.call("POST", DRA + "/resourceslices",
                      resource_slice(node, gen, count, index, devs), ok=(201, 409))

    def apply_dra(self, o):
        op, api, name = o["op"], self.api, o.get("name")
        if op == "dra-node-add":
            if self.get(h.NODES + "/" + name) is not None:
                return
            alloc = {k: v for k, v in ALLOC[o["cls"]].items() if k != GPU}
            n = h.node(name, o["cls"], alloc, labels={RACK: o["rack"]})
            self.swarm.set_node(name, api.must("POST", h.NODES, n))
            self.dra_gen[name] = self.dra_gen.get(name, 0) + 1
            for x in self.slices_of(name):  # a driver starting again publishes afresh
                api.call("DELETE", DRA + "/resourceslices/" + x["metadata"]["name"],
                         ok=(200, 202, 404))
            self.publish(name, self.dra_gen[name], 1, 0, o["devs"])
        elif op == "dra-node-delete":
            api.call("DELETE", h.NODES + "/" + name, ok=(200, 202, 404))
            self.swarm.set_node(name, None)
            for x in self.slices_of(name):
                api.call("DELETE", DRA + "/resourceslices/" + x["metadata"]["name"],
                         ok=(200, 202, 404))
        elif op == "dra-node-rack":
            self.node_merge(name, {"metadata": {"labels": {RACK: o["rack"]}}})
        elif op == "dra-slice-delete":
            for x in self.slices_of(name):
                api.call("DELETE", DRA + "/resourceslices/" + x["metadata"]["name"],
                         ok=(200, 202, 404))
        elif op == "dra-slice-add":
            # The missing slices of the pool's newest generation (or a fresh one-slice pool).
            have = self.slices_of(name)
            if self.get(h.NODES + "/" + name) is None:
                return
            if not have:
                self.dra_gen[name] = self.dra_gen.get(name, 0) + 1
                self.publish(name, self.dra_gen[name], 1, 0, o["devs"])
                return
            top = max(x["spec"]["pool"]["generation"] for x in have)
            cur = [x for x in have if x["spec"]["pool"]["generation"] == top]
            count = cur[0]["spec"]["pool"]["resourceSliceCount"]
            devs = len(cur[0]["spec"].get("devices") or [])
            for i in range(count):
                self.publish(name, top, count, i, devs)
        elif op == "dra-generation":
            if self.get(h.NODES + "/" + name) is None:
                return
            self.dra_gen[name] = max([self.dra_gen.get(name, 0)] + [
                x["spec"]["pool"]["generation"] for x in self.slices_of(name)]) + 1
            self.publish(name, self.dra_gen[name], 2, 0, o["devs"])
        elif op == "dra-class":
            if self.get(DRA + "/deviceclasses/" + DRA_CLASS) is not None:
                api.merge(DRA + "/deviceclasses/" + DRA_CLASS,
                          {"spec": device_class(o["type"], o["resource"])["spec"]})
        elif op == "dra-class-delete":
            self.toggle(DRA + "/deviceclasses", DRA_CLASS, device_class("gpu", GPU))
        else:
            raise ValueError("unknown operation %r" % op)

    def items(self, coll):
        return (self.api.call("GET", coll, ok=(200,))[1] or {}).get("items") or []

    def exact_diffs(self):
        """B3: at rest, with BudgetReady True BudgetApplied for the TauCluster's generation,
        every cell of the capacity team's Cohort is exactly the pool its flavor reaches
        (allocatable and DRA devices, as B1 counts them): the DRA devices are really counted,
        not only never over-counted.  [] when the budget is not in that state."""
        chk = Checker(0)
        chk.cluster = cl = self.get(h.TAU + "/clusters/cluster")
        self.b3 = "B3 not checked (no BudgetApplied at rest)"
        if cl is None or (cl.get("spec") or {}).get("managementMode") == "Observe":
            return []
        cond = [c for c in (cl.get("status") or {}).get("conditions") or []
                if c.get("type") == "BudgetReady"]
        team = ((cl["spec"].get("queues") or {}).get("capacityTeamRef") or {}).get("name")
        if not cond or cond[0].get("reason") != "BudgetApplied" or not team or \
                cond[0].get("observedGeneration") != cl["metadata"].get("generation"):
            return []
        cohort = self.get(h.COHORTS + "/" + h.cohort_name(team))
        if cohort is None or not owned(cohort):
            return []
        chk.nodes = {n["metadata"]["name"]: n for n in self.items(h.NODES)}
        chk.flavors = {f["metadata"]["name"]: f for f in self.items(h.RFS) if owned(f)}
        if not self.a.no_dra:
            chk.classes = {x["metadata"]["name"]: x for x in self.items(DRA + "/deviceclasses")}
            chk.slices = {x["metadata"]["name"]: x for x in self.items(DRA + "/resourceslices")}
        pool, have = chk.reach(), cells(cohort)
        dra = sum(k for n in chk.dra_devices().values() for k in n.values())
        self.b3 = "B3 checked, %d DRA devices published in complete pools" % dra
        return ["Cohort %s %s/%s holds %s, the pool is %s" % (
            h.cohort_name(team), k[0], k[1], have.get(k, 0), pool.get(k, 0))
            for k in sorted(set(pool) | set(have))
            if k[0] in chk.flavors and have.get(k, 0) != pool.get(k, 0)]

    def toggle(self, coll, name, body):
        """Create `body` when absent (True), delete it when present."""
        if self.get(coll + "/" + name) is None:
            self.api.must("POST", coll, body)
            return True
        self.api.call("DELETE", coll + "/" + name, ok=(200, 202, 404))
        return False

    def owned_write_rv(self):
        st, hist = self.c.sim.req("GET", "/sim/history?resource=%s&since=%d" % (
            ",".join(OWNED_KINDS), self.rv0), token=False)
        assert st == 200, st
        items = [e for e in hist["items"]
                 if (e["object"]["metadata"].get("labels") or {}).get(h.MANAGED_BY) == "taugrid"]
        return (int(items[-1]["resourceVersion"]) if items else 0), len(items)

    def settle(self, quiet, limit):
        """Wait until no owned object has been written for `quiet` seconds; False after
        `limit` seconds without such a pause (a write loop)."""
        t0 = last_t = time.monotonic()
        last = self.owned_write_rv()[0]
        while time.monotonic() - t0 < limit:
            time.sleep(0.2)
            rv = self.owned_write_rv()[0]
            if rv != last:
                last, last_t = rv, time.monotonic()
            elif time.monotonic() - last_t >= quiet:
                return True
        return False

    def history(self):
        st, hist = self.c.sim.req("GET", "/sim/history?resource=%s&since=%d" % (
            ",".join(HIST), self.rv0), token=False)
        assert st == 200 and hist["complete"], (st, hist.get("complete"))
        return hist["items"]


def quota(o):
    if o.get("n") is None:
        return None
    return [{"flavor": o.get("flavor", H100F), "resource": GPU, "nominalQuota": str(o["n"])}]


def groups(flavor, n):
    return {"coveredResources": [GPU], "flavors": [{"name": flavor, "resources": [
        {"name": GPU, "nominalQuota": n}]}]}


def reservation(flavor, n):
    return {"status": {"flavorsReservation": [{"name": flavor, "resources": [
        {"name": GPU, "total": n, "borrowed": "0"}]}]}}


def device_class(dtype, resource):
    """DeviceClass gpu.nvidia.com as NVIDIA's chart writes it (tests/fixtures/dra), selecting
    devices of attribute type `dtype` and counting under `resource`."""
    return {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass",
            "metadata": {"name": DRA_CLASS},
            "spec": {"selectors": [{"cel": {"expression": (
                "device.driver == '%s' && device.attributes['%s'].type == '%s'" % (
                    DRIVER, DRIVER, dtype))}}],
                "extendedResourceName": resource}}


def resource_slice(node, gen, count, index, devs):
    """Slice `index` of `count` of node's pool at generation `gen`: `devs` whole GPUs named
    gpu-<index * devs>..., attributes and capacity as the driver publishes them."""
    devices = [{"name": "gpu-%d" % (index * devs + i),
                "attributes": {"type": {"string": "gpu"},
                               "uuid": {"string": "GPU-%s-%d-%d" % (node, gen, index * devs + i)},
                               "productName": {"string": "NVIDIA H100 80GB HBM3"}},
                "capacity": {"memory": {"value": "81559Mi"}}} for i in range(devs)]
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice",
            "metadata": {"name": "%s-%s-g%d-%d" % (node, DRIVER, gen, index)},
            "spec": {"driver": DRIVER, "nodeName": node,
                     "pool": {"name": node, "generation": gen, "resourceSliceCount": count},
                     "devices": devices}}


# -- the sequence -----------------------------------------------------------------------------

def pick(rng, kinds):
    """One operation kind of [(kind, weight)]."""
    return rng.choices([k for k, _ in kinds], [w for _, w in kinds])[0]


def draw(rng, n_ops, lifecycle):
    """A sequence of operations the model can apply (some may find nothing to act on)."""
    present = {"m-0": "h100", "m-1": "h100", "m-2": "a100"}
    teams, workspaces = {"research"}, {"alpha": "research"}
    admitted = set()
    ops = []
    kinds = [("node-add", 3), ("node-cordon", 3), ("node-rack", 2), ("node-class", 1),
             ("node-delete", 2), ("team-create", 2), ("team-quota", 2), ("team-delete", 1),
             ("ws-create", 2), ("ws-move", 2), ("ws-delete", 1), ("capref", 2),
             ("selector", 2), ("foreign-flavor", 1), ("foreign-cohort", 1),
             ("foreign-queue", 1), ("admit", 2), ("restart", 1)]
    if lifecycle:
        kinds += [(k, 1) for k in LIFECYCLE]
    while len(ops) < n_ops:
        op = pick(rng, kinds)
        o = {"op": op}
        free = [n for n in NODE_NAMES if n not in present]
        if op == "node-add" and free:
            o.update(name=free[0], cls=rng.choice(["h100", "h100", "a100"]),
                     rack=rng.choice(["r0", "r1"]))
            present[free[0]] = o["cls"]
        elif op in ("node-cordon", "node-rack", "node-class", "node-delete") and present:
            o["name"] = rng.choice(sorted(present))
            if op == "node-cordon":
                o["on"] = rng.random() < 0.6
            elif op == "node-rack":
                o["rack"] = rng.choice(["r0", "r1", "r2"])
            elif op == "node-class":
                o["cls"] = rng.choice(["h100", "a100"])
            else:
                del present[o["name"]]
        elif op in ("team-create", "team-quota"):
            choices = ["ml", "vision"] if op == "team-create" else sorted(teams - {"research"})
            if not choices:
                continue
            o.update(team=rng.choice(choices), n=rng.choice([None, 0, 4, 8, 16]),
                     flavor=rng.choice([H100F, H100F, "other-r9"]))
            teams.add(o["team"])
        elif op == "team-delete":
            busy = {t for w, t in workspaces.items() if w in admitted}
            choices = sorted(teams - {"research"} - (set() if lifecycle else busy))
            if not choices:
                continue
            o["team"] = rng.choice(choices)
            teams.discard(o["team"])
        elif op == "team-delete-capacity":
            o["team"] = "research"
        elif op == "ws-create":
            ws = "w%d" % len(ops)
            o.update(ws=ws, team=rng.choice(sorted(teams)))
            workspaces[ws] = o["team"]
        elif op == "ws-move" and workspaces:
            o["ws"] = rng.choice(sorted(workspaces))
            o["team"] = rng.choice(sorted(teams))
            workspaces[o["ws"]] = o["team"]
        elif op == "ws-delete" and workspaces:
            choices = sorted(w for w in workspaces if lifecycle or w not in admitted)
            if not choices:
                continue
            o["ws"] = rng.choice(choices)
            del workspaces[o["ws"]]
        elif op == "ws-quota-capacity" and workspaces:
            o["ws"] = rng.choice(sorted(workspaces))
        elif op == "capref":
            o["team"] = rng.choice(sorted(teams) + [None])
        elif op == "selector":
            o["rack"] = rng.choice(["r1", None])
        elif op == "foreign-flavor":
            o["rack"] = rng.choice(["r1", "r9"])
        elif op == "admit" and workspaces:
            o["ws"] = rng.choice(sorted(workspaces))
            admitted.add(o["ws"])
        elif op == "observe":
            o["on"] = rng.random() < 0.5
        elif op not in ("foreign-cohort", "foreign-queue", "restart", "cluster-recreate"):
            continue
        o["settle"] = rng.random() < 0.6
        ops.append(o)
    return ops


def draw_dra(rng, n_ops):
    """The DRA operations (module docstring), drawn on their own stream."""
    present = {}   # DRA node -> its pool has slices
    ops = []
    kinds = [("dra-node-add", 3), ("dra-node-delete", 1), ("dra-node-rack", 1),
             ("dra-slice-delete", 2), ("dra-slice-add", 2), ("dra-generation", 2),
             ("dra-class", 2), ("dra-class-delete", 1)]
    while len(ops) < n_ops:
        op = pick(rng, kinds)
        o = {"op": op}
        if op == "dra-node-add" and len(present) < len(DRA_NODES):
            o["name"] = min(set(DRA_NODES) - set(present))
            o.update(cls=rng.choice(["h100", "h100", "a100"]), rack=rng.choice(["r0", "r1"]),
                     devs=rng.choice([2, 4, 8]))
            present[o["name"]] = True
        elif op in ("dra-node-delete", "dra-node-rack", "dra-slice-delete", "dra-slice-add",
                    "dra-generation") and present:
            o["name"] = rng.choice(sorted(present))
            if op == "dra-node-delete":
                del present[o["name"]]
            elif op == "dra-node-rack":
                o["rack"] = rng.choice(["r0", "r1", "r2"])
            elif op in ("dra-slice-add", "dra-generation"):
                o["devs"] = rng.choice([2, 4, 8])
        elif op == "dra-class":
            o["type"], o["resource"] = rng.choice([("gpu", GPU), ("mig", GPU),
                                                   ("gpu", "example.com/gpu"), ("gpu", GPU)])
        elif op != "dra-class-delete":
            continue
        o["settle"] = rng.random() < 0.6
        ops.append(o)
    return ops


def draw_all(seed, n_ops, lifecycle, dra):
    """The seed's sequence: draw() as before, and with `dra` about a third as many DRA
    operations from their own stream, each put at a position that stream picks."""
    ops = draw(random.Random(seed), n_ops, lifecycle)
    if not dra:
        return ops
    rng = random.Random("dra-%d" % seed)
    extra = draw_dra(rng, max(1, n_ops // 3))
    at = sorted(rng.randint(0, len(ops)) for _ in extra)  # their own order kept
    out = []
    for i, o in enumerate(ops + [None]):
        out += [extra[j] for j in range(len(extra)) if at[j] == i]
        if o is not None:
            out.append(o)
    return out


# -- the checker --------------------------------------------------------------------------------

def labels_of(o):
    return (o.get("metadata") or {}).get("labels") or {}


def owned(o):
    return labels_of(o).get(h.MANAGED_BY) == "taugrid"


def cells(obj):
    """{(flavor, resource): Fraction} of an object's nominalQuota."""
    out = {}
    for g in h.norm_groups(((obj or {}).get("spec") or {}).get("resourceGroups")):
        for f in g["flavors"]:
            for r in f["resources"]:
                try:
                    out[(f["name"], r["name"])] = qparse(str(r.get("nominalQuota", "0")))
                except ValueError:
                    pass
    return out


def reservations(cq):
    total = Fraction(0)
    for f in ((cq or {}).get("status") or {}).get("flavorsReservation") or []:
        for r in f.get("resources") or []:
            try:
                total += qparse(str(r.get("total", "0")))
            except ValueError:
                pass
    return total


class Checker:
    def __init__(self, lag):
        self.lag = lag
        self.nodes, self.flavors, self.objs, self.cluster = {}, {}, {}, None
        self.classes, self.slices = {}, {}  # DeviceClasses, ResourceSlices by name
        self.timeline = []   # (t, reach pool)
        self.failures = []
        self.auto_over = {}  # cell -> since when the automatic Cohort is above the pool
        self.escapes, self.escape_since = {}, {}  # F1

    def reach(self):
        """{(flavor, resource): Fraction}: per flavor we own, the pool of the counted nodes
        carrying all of its nodeLabels.  Also sets self.escapes: per flavor we own, the
        schedulable nodes it reaches that the pool does not count (F1)."""
        spec = (self.cluster or {}).get("spec") or {}
        sel = (spec.get("nodes") or {}).get("selector")
        live = [n for n in self.nodes.values() if not n["metadata"].get("deletionTimestamp")]
        usable = {n for f in expected_pool(live).values() for n in f["nodes"]}
        if sel is not None and not (isinstance(sel, dict) and
                                    all(isinstance(v, str) for v in sel.values())):
            live = []
        counted = {n for f in expected_pool(live, sel or None).values() for n in f["nodes"]}
        self.escapes = {}
        for name, rf in self.flavors.items():
            want = ((rf.get("spec") or {}).get("nodeLabels")) or {}
            out_of_pool = sorted(n for n in usable - counted
                                 if all(labels_of(self.nodes[n]).get(k) == v
                                        for k, v in want.items()))
            if out_of_pool:
                self.escapes[name] = out_of_pool
        dra = self.dra_devices()
        out = {}
        for name, rf in self.flavors.items():
            want = ((rf.get("spec") or {}).get("nodeLabels")) or {}
            for n in counted:
                node = self.nodes[n]
                if all(labels_of(node).get(k) == v for k, v in want.items()):
                    alloc = node["status"]["allocatable"]
                    for r, q in alloc.items():
                        out[(name, r)] = out.get((name, r), Fraction(0)) + qparse(q)
                    for r, k in dra.get(n, {}).items():
                        if qparse(alloc.get(r, "0")) == 0:  # allocatable wins, never both
                            out[(name, r)] = out.get((name, r), Fraction(0)) + k
        return out

    def dra_devices(self):
        """{node: {resource: devices}} by docs/budget.md "How DRA devices count", for the
        objects the model writes: classes whose selectors are `device.driver == D &&
        device.attributes['D'].type == T` (any other expression counts nothing here) under
        their extendedResourceName; node-local slices; a pool counts only at its highest
        generation with all resourceSliceCount slices seen, agreeing on the count, and no
        device name twice; a device counts once, under the first selecting class by name."""
        classes = []
        for cname in sorted(self.classes):
            spec = self.classes[cname].get("spec") or {}
            sels, ok = [], bool(spec.get("extendedResourceName"))
            for sel in spec.get("selectors") or []:
                m = re.fullmatch(r"device\.driver == '([^']*)' && device\.attributes\['([^']*)'\]"
                                 r"\.type == '([^']*)'", ((sel.get("cel") or {}).get("expression")
                                                         or ""))
                ok = ok and m is not None
                if m:
                    sels.append(m.groups())
            if ok:
                classes.append((sels, spec["extendedResourceName"]))
        pools = {}
        for x in self.slices.values():
            sp = x.get("spec") or {}
            pools.setdefault((sp.get("driver"), (sp.get("pool") or {}).get("name")), []).append(sp)
        out = {}
        for (driver, _), specs in pools.items():
            top = max(sp["pool"]["generation"] for sp in specs)
            cur = [sp for sp in specs if sp["pool"]["generation"] == top]
            counts = {sp["pool"]["resourceSliceCount"] for sp in cur}
            names = [d["name"] for sp in cur for d in sp.get("devices") or []]
            if len(counts) != 1 or len(cur) != counts.pop() or len(names) != len(set(names)):
                continue  # incomplete: an update in flight, or a slice missing
            for sp in cur:
                node = sp.get("nodeName")
                for d in sp.get("devices") or [] if node else []:
                    attrs = d.get("attributes") or {}
                    dtype = (attrs.get("type") or attrs.get(driver + "/type") or {}).get("string")
                    for sels, res in classes:
                        if all(dr == driver and dom == driver and dtype == t
                               for dr, dom, t in sels):
                            out.setdefault(node, {})
                            out[node][res] = out[node].get(res, 0) + 1
                            break
        return out

    def bound(self, t, k):
        vals, before = [], None
        for pt, pool in self.timeline:
            if pt <= t - self.lag:
                before = pool
            elif pt <= t:
                vals.append(pool)
        if before is not None:
            vals.append(before)
        return max((p.get(k, Fraction(0)) for p in vals), default=Fraction(0))

    def sums(self):
        out = {}
        for (kind, name), o in self.objs.items():
            for k, v in cells(o).items():
                if k[0] in self.flavors:
                    out[k] = out.get(k, Fraction(0)) + v
        return out

    def fail(self, inv, msg):
        self.failures.append((inv, msg))

    def event(self, ev):
        res, name, typ, obj, t = (ev["resource"], ev["name"], ev["type"], ev["object"],
                                  ev["time"])
        rv = int(ev["resourceVersion"])
        before = None
        if res == "nodes":
            if typ == "DELETED":
                self.nodes.pop(name, None)
            else:
                self.nodes[name] = obj
        elif res == "clusters":
            self.cluster = None if typ == "DELETED" else obj
        elif res in ("deviceclasses", "resourceslices"):
            store = self.classes if res == "deviceclasses" else self.slices
            if typ == "DELETED":
                store.pop(name, None)
            else:
                store[name] = obj
        elif res == "resourceflavors":
            if typ == "DELETED" or not owned(obj):
                self.flavors.pop(name, None)
            else:
                self.flavors[name] = obj
        elif res in ("cohorts", "clusterqueues"):
            key = (res, name)
            before = self.objs.get(key)
            if res == "clusterqueues" and reservations(before) > 0 and (
                    typ == "DELETED" or (obj["metadata"].get("deletionTimestamp") and
                                         not before["metadata"].get("deletionTimestamp"))):
                self.fail("Q1 no drop", "ClusterQueue %s with reservations %s %s at "
                          "resourceVersion %d" % (name, reservations(before),
                                                  "deleted" if typ == "DELETED" else
                                                  "marked for deletion", rv))
            if typ == "DELETED" or not owned(obj):
                self.objs.pop(key, None)
            else:
                self.objs[key] = obj
        pool = self.reach()
        if not self.timeline or self.timeline[-1][1] != pool:
            self.timeline.append((t, pool))
        sums = self.sums()
        if res in ("cohorts", "clusterqueues") and typ != "DELETED" and owned(obj):
            was, now = cells(before), cells(obj)
            for k, v in now.items():
                if k[0] in self.flavors and v > was.get(k, Fraction(0)) and \
                        sums.get(k, Fraction(0)) > self.bound(t, k):
                    self.fail("B1 pool bound", "%s %s raised %s/%s to %s at resourceVersion "
                              "%d: everything we own then holds %s, the flavor reaches %s "
                              "(the most over the %.0f s before)" % (
                                  res[:-1], name, k[0], k[1], v, rv, sums[k],
                                  self.bound(t, k), self.lag))
        self.check_auto(t, rv)
        self.check_escapes(t, rv, sums)

    def check_escapes(self, t, rv, sums):
        """F1: a flavor of ours with quota reaches no schedulable node the pool leaves out,
        for longer than the staleness window."""
        funded = {k[0] for k, v in sums.items() if v > 0}
        bad = {f: ns for f, ns in self.escapes.items() if f in funded}
        for f in list(self.escape_since):
            if f not in bad:
                del self.escape_since[f]
        for f, ns in bad.items():
            since = self.escape_since.setdefault(f, t)
            if t - since > self.lag and not self.observe_says("ResourceFlavor %s does not "
                                                              "follow the pool" % f):
                self.fail("F1 confined", "ResourceFlavor %s (nodeLabels %s) holds quota and "
                          "reaches nodes the pool does not count: %s, at resourceVersion %d, "
                          "for %.1f s" % (f, json.dumps((self.flavors[f].get("spec") or {})
                                                        .get("nodeLabels")), ns, rv, t - since))
                self.escape_since[f] = t

    def observe_says(self, text):
        """Observe: the TauCluster's BudgetReady is Unknown ObserveOnly and names `text` (F1:
        a flavor not rewritten for a new node selector is frozen, and said so)."""
        spec = (self.cluster or {}).get("spec") or {}
        cond = [c for c in ((self.cluster or {}).get("status") or {}).get("conditions") or []
                if c.get("type") == "BudgetReady"]
        return spec.get("managementMode") == "Observe" and bool(cond) and \
            cond[0].get("reason") == "ObserveOnly" and text in (cond[0].get("message") or "")

    def reported(self, k, live, pool):
        """Observe: the TauCluster's BudgetReady is Unknown ObserveOnly and says, for Cohort
        k[0], that cell k[1]/k[2] holds `live` and wants at most `pool` (the contract: frozen,
        and the status says so and by how much it is off)."""
        spec = (self.cluster or {}).get("spec") or {}
        if spec.get("managementMode") != "Observe":
            return False
        cond = [c for c in ((self.cluster.get("status") or {}).get("conditions") or [])
                if c.get("type") == "BudgetReady"]
        if not cond or cond[0].get("reason") != "ObserveOnly" or \
                cond[0].get("status") != "Unknown":
            return False
        msg = cond[0].get("message") or ""
        at = msg.find("Cohort %s " % k[0])
        if at < 0:
            return False
        end = msg.find("Cohort ", at + 1)
        part = msg[at:end if end > 0 else len(msg)]
        m = re.search(re.escape("%s/%s holds " % (k[1], k[2])) + r"(\S+), want ([^;)\s]+)",
                      part)
        if m is None:
            return False
        try:
            return qparse(m.group(1).rstrip(",")) == live and qparse(m.group(2)) <= pool
        except ValueError:
            return False

    def check_auto(self, t, rv):
        auto = [o for (kind, n), o in self.objs.items() if kind == "cohorts" and
                labels_of(o).get("tau.azure.com/quota-mode") != "explicit" and
                labels_of(o).get("tau.azure.com/team")]
        pool = self.timeline[-1][1] if self.timeline else {}
        over = {}
        for o in auto:
            for k, v in cells(o).items():
                if k[0] in self.flavors and v > pool.get(k, Fraction(0)):
                    over[(o["metadata"]["name"],) + k] = (v, pool.get(k, Fraction(0)))
        for k in list(self.auto_over):
            if k not in over:
                del self.auto_over[k]
        for k, (v, p) in over.items():
            since = self.auto_over.setdefault(k, t)
            if t - since > self.lag and not self.reported(k, v, p):
                self.fail("B2 follows", "Cohort %s holds %s of %s/%s at resourceVersion %d, "
                          "above the pool %s its flavor reaches since %.1f s" % (
                              k[0], v, k[1], k[2], rv, p, t - since))
                self.auto_over[k] = t  # once per lag


def run_once(a, seed, ops, notes=None):
    """Run `ops` on a fresh cluster; the failures (invariant, evidence) found.  `notes` (a
    list) receives what B3 could check."""
    r = Run(a, seed)
    try:
        r.start()
        for o in ops:
            r.apply(o)
            if o.get("settle"):
                r.settle(1.2, 15)
        looped = not r.settle(3.0, 30)
        # B3, waited for (an agent's report of the last change may still be on its way).
        t_exact, inexact = time.monotonic(), r.exact_diffs()
        while inexact and time.monotonic() - t_exact < 20:
            time.sleep(0.5)
            inexact = r.exact_diffs()
        end = time.time()
        chk = Checker(a.lag)
        for ev in r.history():
            chk.event(ev)
        # The end state, past every staleness window.
        chk.check_auto(end + a.lag + 1, -1)
        chk.check_escapes(end + a.lag + 1, -1, chk.sums())
        if notes is not None:
            notes.append(r.b3)
        for d in inexact[:5]:
            chk.fail("B3 exact at rest", d + " (BudgetReady BudgetApplied, 20 s after the "
                     "owned objects went quiet)")
        if looped:
            chk.fail("L1 no loop", "owned objects still written 30 s after the last "
                     "operation (%d owned writes in all)" % r.owned_write_rv()[1])
        return chk.failures
    except (Failed, AssertionError) as e:
        return [("run", str(e)[:3000])]
    finally:
        r.stop()


def shrink(a, seed, ops, failures):
    """Greedy: drop one operation at a time while the first invariant still breaks."""
    inv = failures[0][0]
    best, runs, i = list(ops), 0, 0
    while i < len(best) and runs < a.shrink:
        trial = best[:i] + best[i + 1:]
        runs += 1
        got = run_once(a, seed, trial)
        if any(f[0] == inv for f in got):
            best, failures = trial, got
        else:
            i += 1
    return best, failures


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--seeds", type=int, default=4, help="how many seeds (200 for the full run)")
    ap.add_argument("--first-seed", type=int, default=1)
    ap.add_argument("--ops", type=int, default=14, help="operations per seed")
    ap.add_argument("--lag", type=float, default=6.0,
                    help="the staleness window, seconds (B1, B2)")
    ap.add_argument("--shrink", type=int, default=12, help="most re-runs to shrink a failure")
    ap.add_argument("--no-lifecycle", action="store_true",
                    help="leave out the lifecycle operations (see the docstring)")
    ap.add_argument("--no-dra", action="store_true",
                    help="leave out the DRA nodes and operations (see the docstring)")
    ap.add_argument("--seed", type=int, help="replay this seed ...")
    ap.add_argument("--sequence", help="... with this JSON list of operations")
    ap.add_argument("--keep", action="store_true", help="keep kube-sim's folder and the logs")
    a = ap.parse_args()
    if a.seeds < 1 or a.ops < 1 or (a.sequence is not None and a.seed is None):
        ap.error("need --seeds >= 1, --ops >= 1, and --seed with --sequence")
    paths.AGG_BIN = os.path.join(a.build, "tau-aggregator")
    paths.CLI_BIN = os.path.join(a.build, "tau")
    if not os.access(paths.AGG_BIN, os.X_OK):
        print("model: %s is not built" % paths.AGG_BIN, file=sys.stderr)
        return 2
    proto.inventory()
    bad = 0
    if a.seed is not None:
        seeds = [(a.seed, json.loads(a.sequence) if a.sequence else
                  draw_all(a.seed, a.ops, not a.no_lifecycle, not a.no_dra))]
    else:
        seeds = [(s, draw_all(s, a.ops, not a.no_lifecycle, not a.no_dra))
                 for s in range(a.first_seed, a.first_seed + a.seeds)]
    t0 = time.monotonic()
    for seed, ops in seeds:
        t = time.monotonic()
        notes = []
        failures = run_once(a, seed, ops, notes)
        print("model: seed %d: %d operations, %s (%.1f s)%s" % (
            seed, len(ops), "ok" if not failures else "%d broken" % len(failures),
            time.monotonic() - t, "; " + notes[0] if notes else ""), flush=True)
        if not failures:
            continue
        bad += 1
        small, sfail = shrink(a, seed, ops, failures) if a.sequence is None else \
            (ops, failures)
        for inv, msg in sfail[:5]:
            print("model: seed %d INVARIANT %s BROKEN: %s" % (seed, inv, msg), flush=True)
        print("model: seed %d minimal reproduction (%d of %d operations):\n  %s --seed %d "
              "--sequence '%s'" % (seed, len(small), len(ops), sys.argv[0], seed,
                                   json.dumps(small)), flush=True)
        if len(small) < len(ops):
            print("model: seed %d as drawn: --sequence '%s'" % (seed, json.dumps(ops)),
                  flush=True)
    print("model: %d seeds, %d failed, %.0f s" % (len(seeds), bad, time.monotonic() - t0))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
