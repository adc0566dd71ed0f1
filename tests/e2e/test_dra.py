"""Dynamic Resource Allocation in the running aggregator: GPUs published only through DRA count in
the budget exactly when a consumer may use them (docs/budget.md, "How DRA devices count").

kube-sim (`--authz rbac`, the chart's RBAC: resource.k8s.io list/watch, and the ConfigMap
kueue-manager-config by name) is seeded from tests/fixtures/dra: the DeviceClass gpu.nvidia.com
(extendedResourceName nvidia.com/gpu), two DRA-only H100 nodes (class h100-ib, no nvidia.com/gpu
in allocatable), node 0's complete ResourceSlice (8 GPUs) and node 1's slice of a generation in
flight (1 of 2 slices). There is no kueue-system namespace at first: no Kueue configuration, so
the class counts through its extendedResourceName. The real tau-aggregator with a capacity team
research; each case goes on from where the one before left the cluster:

  test_1  the DRA-only node counts exactly: 8 nvidia.com/gpu in flavor taugrid-gpu-h100-ib of the
          Cohort and in `tau inventory pool` (all of them through DRA: draResources, node
          0's in `tau inventory nodes`, VIA-DRA in `tau team status`); node 1's generation in
          flight counts 0 and `tau inventory explain` says dra.pool-complete; DRAClassesUsable
          True
  test_2  node 1's missing slice appears -> 16; node 0's driver starts generation 2 (1 of 2
          slices) -> node 0 counts nothing (8), its second slice -> 16
  test_3  the DeviceClass's selector narrowed to one GPU's UUID -> 1; a selector outside the CEL
          subset -> 0, and the TauCluster's DRAClassesUsable False (UnusableDeviceClass) quoting
          the expression and the offset; widened again -> 16, True
  test_4  the DeviceClass's extendedResourceName changed to example.com/gpu -> 16 example.com/gpu,
          no nvidia.com/gpu
  test_5  Kueue's namespace and ConfigMap appear, deviceClassMappings gpu.nvidia.com ->
          nvidia.com/gpu (Kueue's mapping wins) -> 16 nvidia.com/gpu; the mapping changed in the
          ConfigMap to example.com/h100 -> 16 example.com/h100; a Configuration that does not
          read -> 0 and DRAClassesUsable False (KueueConfigUnreadable); the ConfigMap deleted ->
          back to the class's extendedResourceName
  test_6  the DeviceClass deleted -> no DRA GPU counts; the nodes stay in the pool;
          DRAClassesUsable True (NoMappedClasses); an unusable class that selects nothing
          anyway -> DRAClassesUsable False naming it (no count moved)

Waits are wait-for-condition loops (harness/budget.py Cluster.wait_ok), never fixed sleeps.
"""
import copy
import json
import os
import subprocess
import unittest

from harness import budget as h
from harness import paths
from harness.budget import NODES, OneCluster, quota

FIXTURES = os.path.join(paths.FIXTURES, "dra")
CLI = paths.CLI_BIN
DRA = "/apis/resource.k8s.io/v1"
CLASSES = DRA + "/deviceclasses"
SLICES = DRA + "/resourceslices"
CLASS = "gpu.nvidia.com"
GPU_CLASS = "h100-ib"  # the fixture nodes' tau.azure.com/gpu-class
GPU = "nvidia.com/gpu"
NODE0, NODE1 = "aks-ndh100dra-20914731-vmss000000", "aks-ndh100dra-20914731-vmss000001"
KUEUE_NS = "kueue-system"
KUEUE_CMS = "/api/v1/namespaces/%s/configmaps" % KUEUE_NS
KUEUE_CM = KUEUE_CMS + "/kueue-manager-config"
KUEUE_KEY = "controller_manager_config.yaml"


def setUpModule():
    h.require_all()


def fixture(name):
    with open(os.path.join(FIXTURES, name)) as f:
        return json.load(f)


def second_slice(s, suffix, first_index, pci_base):
    """The other slice of `s`'s pool generation: four more GPUs (their own names, UUIDs and bus
    IDs) so that with it the pool has its resourceSliceCount slices and is complete."""
    s = copy.deepcopy(s)
    s["metadata"]["name"] = s["metadata"]["name"][:-5] + suffix
    for i, d in enumerate(s["spec"]["devices"]):
        d["name"] = "gpu-%d" % (first_index + i)
        a = d["attributes"]
        a["uuid"]["string"] = a["uuid"]["string"][:-2] + "%02d" % (first_index + i)
        a["pcieBusID"]["string"] = "%04x:00:00.0" % (pci_base + i)
        a["resource.kubernetes.io/pcieRoot"]["string"] = "pci%04x:00" % (pci_base + i)
    return s


def kueue_configmap(mapped_to):
    """Kueue's manager ConfigMap (the fixture's), its deviceClassMappings naming gpu.nvidia.com
    under `mapped_to`."""
    cm = fixture("configmap-kueue-manager-config.json")
    doc = cm["data"][KUEUE_KEY]
    assert "  - name: nvidia.com/gpu\n" in doc, doc
    cm["data"][KUEUE_KEY] = doc.replace("  - name: nvidia.com/gpu\n", "  - name: %s\n" % mapped_to)
    return cm


class DraBudgetTest(OneCluster, unittest.TestCase):
    """test_budget's one kube-sim + one aggregator (research team, TauCluster in Reconcile mode;
    no budget write refused), populated with the DRA fixtures."""
    AGG_ARGS = ("--budget-resync", "3600s")

    @classmethod
    def populate(cls, c):
        c.create(fixture("deviceclass-gpu.nvidia.com.json"), CLASSES)
        for n in ("node-dra-h100-0.json", "node-dra-h100-1.json"):
            c.create(fixture(n), NODES)
        for s in ("resourceslice-h100-complete.json", "resourceslice-h100-inflight.json"):
            c.create(fixture(s), SLICES)

    # -- what lands in the API and what tau says --

    def cohort_dra(self):
        """{resource: quantity} of the Cohort's h100-ib flavor for the resources DRA devices
        count under here (a resource no node of the flavor has is dropped or 0: left out)."""
        cohort = self.c.cohort("research")
        out = {}
        for res in (GPU, "example.com/gpu", "example.com/h100"):
            got = quota(cohort, GPU_CLASS, res)
            if got is not None and h.qty(got) != 0:
                out[res] = h.qty(got)
        return out

    def wait_cohort(self, want, msg):
        def diffs():
            got = self.cohort_dra()
            return [] if got == want else [
                "Cohort tau-team-research flavor %s: %s, want %s" % (
                    h.flavor_name(GPU_CLASS), got, want)]
        self.c.wait_ok(diffs, msg)

    def tau(self, *args):
        r = subprocess.run([CLI, "--kubeconfig", self.c.sim.kubeconfig, "inventory", *args,
                            "--aggregator", self.agg.addr, "-o", "json"],
                           capture_output=True, text=True, timeout=60)
        self.assertIn(r.returncode, (0, 1), r.stdout + r.stderr)
        return json.loads(r.stdout)

    def team_budget(self, by_env=False):
        """`tau team status research --aggregator ... -o json` (by_env: the aggregator named by
        TAU_AGGREGATOR instead, as every tau command reads it): {(flavor, resource): (pool,
        viaDra)} of the capacity team's budget rows, and its "dra" object."""
        env = dict(os.environ)
        env.pop("TAU_AGGREGATOR", None)
        argv = [CLI, "--kubeconfig", self.c.sim.kubeconfig, "team", "status", "research"]
        if by_env:
            env["TAU_AGGREGATOR"] = self.agg.addr
        else:
            argv += ["--aggregator", self.agg.addr]
        r = subprocess.run(argv + ["-o", "json"], env=env,
                           capture_output=True, text=True, timeout=60)
        self.assertIn(r.returncode, (0, 1), r.stdout + r.stderr)
        doc = json.loads(r.stdout)
        return {(b["flavor"], b["resource"]): (b["pool"], b.get("viaDra"))
                for b in doc["budget"]}, doc["dra"]

    def pool_flavor(self):
        return [f for f in self.tau("pool")["flavors"] if f["name"] == GPU_CLASS][0]

    def wait_condition(self, status, reason, text, msg):
        """The TauCluster's DRAClassesUsable (the budget controller's status write)."""
        self.c.wait_ok(lambda: h.cond_diffs(self.c.cluster(), "DRAClassesUsable", status,
                                            reason, text), msg)

    def rule(self, node, name):
        rules = [r for r in self.tau("explain", node)["rules"] if r["name"] == name]
        self.assertEqual(len(rules), 1, "explain %s: %s" % (node, rules))
        return rules[0]

    # -- the scenario --

    def test_1_dra_only_node_counts_exactly(self):
        for n in (NODE0, NODE1):
            self.assertNotIn(GPU, self.c.get(NODES + "/" + n)["status"]["allocatable"])
        # Only the complete pool counts: 8, never 12 (the in-flight generation's 4).
        self.wait_cohort({GPU: 8}, "the complete DRA node's 8 GPUs in the Cohort")
        f = self.pool_flavor()
        self.assertEqual((f["nodes"], f["resources"].get(GPU)), (2, "8"), f)
        # ... and the pool says all 8 come through DRA, node 0's (tau inventory nodes: 8 (DRA)).
        self.assertEqual(f["draResources"], {GPU: "8"}, f)
        nodes = {n["name"]: n for n in self.tau("nodes")}
        self.assertEqual(nodes[NODE0]["draResources"], {GPU: "8"})
        self.assertEqual(nodes[NODE1]["draResources"], {})
        # tau team status shows it beside the pool: all 8 of the pool's GPUs through DRA.
        rows, dra = self.team_budget()
        self.assertEqual((dra["checked"], dra["aggregator"]), (True, self.agg.addr), dra)
        self.assertEqual(rows[(h.flavor_name(GPU_CLASS), GPU)], ("8", "8"), rows)
        rows, dra = self.team_budget(by_env=True)
        self.assertEqual((dra["checked"], dra["aggregator"]), (True, self.agg.addr), dra)
        self.assertEqual(rows[(h.flavor_name(GPU_CLASS), GPU)], ("8", "8"), rows)
        r = self.rule(NODE1, "dra.pool-complete")
        self.assertFalse(r["pass"], r)
        self.assertIn("1 of 2 slices of generation 2 seen", r["detail"])
        self.assertEqual(self.rule(NODE0, "dra.devices")["detail"], "8 " + GPU)
        self.wait_condition("True", "Usable",
                            "1 DeviceClass maps to a quota resource; every one is usable",
                            "TauCluster DRAClassesUsable True")

    def test_2_generation_in_flight_counts_when_complete(self):
        inflight = fixture("resourceslice-h100-inflight.json")
        self.c.create(second_slice(inflight, "r2x8z", 4, 5), SLICES)
        self.wait_cohort({GPU: 16}, "node 1's generation complete: 16 GPUs")
        # Node 0's driver rewrites its pool as generation 2 in two slices: the first one alone
        # is an update in flight, so node 0 counts nothing until the second appears.
        name = fixture("resourceslice-h100-complete.json")["metadata"]["name"]
        cur = self.c.get(SLICES + "/" + name)
        half = copy.deepcopy(cur)
        half["spec"]["pool"].update({"generation": 2, "resourceSliceCount": 2})
        half["spec"]["devices"] = half["spec"]["devices"][:4]
        self.c.sim.ok("PUT", SLICES + "/" + name, half)
        self.wait_cohort({GPU: 8}, "node 0's generation 2 in flight: only node 1's 8")
        self.assertFalse(self.rule(NODE0, "dra.pool-complete")["pass"])
        rest = copy.deepcopy(cur)
        rest["spec"]["pool"].update({"generation": 2, "resourceSliceCount": 2})
        rest["spec"]["devices"] = rest["spec"]["devices"][4:]
        rest["metadata"] = {"name": name[:-5] + "q9w4c"}
        self.c.create(rest, SLICES)
        self.wait_cohort({GPU: 16}, "node 0's generation 2 complete: 16 again")
        self.assertEqual(self.pool_flavor()["resources"].get(GPU), "16")

    def test_3_class_selector_narrowed(self):
        path = CLASSES + "/" + CLASS
        uuid = fixture("resourceslice-h100-complete.json")["spec"]["devices"][0]["attributes"][
            "uuid"]["string"]
        wide = self.c.get(path)["spec"]["selectors"]
        narrow = "device.driver == 'gpu.nvidia.com' && device.attributes['gpu.nvidia.com'].uuid" \
                 " == '%s'" % uuid
        self.c.merge(path, {"spec": {"selectors": [{"cel": {"expression": narrow}}]}})
        self.wait_cohort({GPU: 1}, "the class selects one GPU by UUID: 1")
        self.assertEqual(self.pool_flavor()["resources"].get(GPU), "1")
        # A selector outside the CEL subset: the class counts nothing (fail closed) and the
        # TauCluster says which class, quoting the expression and the offset refused.
        unread = "device.attributes['gpu.nvidia.com'].productName.startsWith('NVIDIA')"
        self.c.merge(path, {"spec": {"selectors": [{"cel": {"expression": unread}}]}})
        self.wait_cohort({}, "a selector outside the CEL subset: the class counts nothing")
        self.wait_condition("False", "UnusableDeviceClass",
                            ["1 of 1 DeviceClasses that map to a quota resource count nothing",
                             "class gpu.nvidia.com: spec.selectors[0]: selector \"%s\" is "
                             "outside the CEL subset" % unread, " at offset "],
                            "TauCluster DRAClassesUsable False naming the class")
        self.c.merge(path, {"spec": {"selectors": wide}})
        self.wait_cohort({GPU: 16}, "the selector widened again: 16")
        self.wait_condition("True", "Usable", None, "DRAClassesUsable True again")

    def test_4_extended_resource_name_changed(self):
        self.c.merge(CLASSES + "/" + CLASS, {"spec": {"extendedResourceName": "example.com/gpu"}})
        self.wait_cohort({"example.com/gpu": 16}, "the class counts under example.com/gpu")
        f = self.pool_flavor()
        self.assertEqual((f["resources"].get("example.com/gpu"), f["resources"].get(GPU)),
                         ("16", None), f)
        self.assertEqual(f["draResources"], {"example.com/gpu": "16"}, f)

    def test_5_kueue_mapping_followed(self):
        c = self.c
        c.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": KUEUE_NS}},
                 "/api/v1/namespaces")
        c.create(kueue_configmap(GPU), KUEUE_CMS)
        # Kueue's mapping wins over the class's extendedResourceName (example.com/gpu).
        self.wait_cohort({GPU: 16}, "Kueue maps gpu.nvidia.com to nvidia.com/gpu")
        self.assertEqual(self.pool_flavor()["resources"].get("example.com/gpu"), None)
        cm = kueue_configmap("example.com/h100")
        c.merge(KUEUE_CM, {"data": cm["data"]})
        self.wait_cohort({"example.com/h100": 16}, "the mapping changed to example.com/h100")
        # A Configuration that does not read: no class may count (the name Kueue charges is
        # unknown), and the TauCluster says so.
        c.merge(KUEUE_CM, {"data": {KUEUE_KEY: "kind: NotAConfiguration\n"}})
        self.wait_cohort({}, "Kueue's configuration unreadable: nothing counts")
        self.wait_condition("False", "KueueConfigUnreadable",
                            "Kueue's configuration cannot be read, so no DeviceClass counts",
                            "TauCluster DRAClassesUsable False: Kueue's configuration")
        c.delete(KUEUE_CM)
        self.wait_cohort({"example.com/gpu": 16},
                         "no Kueue configuration: the class's extendedResourceName again")
        self.wait_condition("True", "Usable", None, "DRAClassesUsable True again")

    def test_6_class_deleted(self):
        self.c.delete(CLASSES + "/" + CLASS)
        self.wait_cohort({}, "DeviceClass deleted: no DRA GPU counts")
        f = self.pool_flavor()
        self.assertEqual(f["nodes"], 2, "the nodes themselves stay: %s" % f)
        self.assertEqual(f["draResources"], {}, f)
        rules = [r["name"] for r in self.tau("explain", NODE0)["rules"]]
        self.assertEqual([r for r in rules if r.startswith("dra.")], [], rules)
        self.wait_condition("True", "NoMappedClasses", "no DeviceClass maps to a quota resource",
                            "no class left: DRAClassesUsable True, NoMappedClasses")
        # An unusable class that would select nothing anyway moves no count: the TauCluster
        # still hears of it (a class change wakes the budget without a pool change).
        self.c.create({"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass",
                       "metadata": {"name": "nic.example.com"},
                       "spec": {"extendedResourceName": "example.com/nic",
                                "selectors": [{"cel": {"expression":
                                                       "device.driver.startsWith('nic')"}}]}},
                      CLASSES)
        self.wait_condition("False", "UnusableDeviceClass", "class nic.example.com: ",
                            "an unusable class that counts nothing yet is named")
        self.assertEqual(self.cohort_dra(), {})


if __name__ == "__main__":
    unittest.main()
