"""Dynamic Resource Allocation in the running aggregator: GPUs published only through DRA count in
the budget exactly when a consumer may use them (docs/budget.md, "How DRA devices count").

kube-sim (`--authz rbac`, the chart's RBAC: resource.k8s.io list/watch and Kueue's ConfigMap in
kueue-system) is seeded from tests/fixtures/dra: the DeviceClass gpu.nvidia.com
(extendedResourceName nvidia.com/gpu), two DRA-only H100 nodes (class h100-ib, no nvidia.com/gpu
in allocatable), node 0's complete ResourceSlice (8 GPUs), node 1's slice of a generation in
flight (1 of 2 slices) and Kueue's manager ConfigMap (deviceClassMappings gpu.nvidia.com ->
nvidia.com/gpu).  The real tau-aggregator with a capacity team research:

  DraBudgetTest  the Cohort holds exactly 8 nvidia.com/gpu in flavor taugrid-gpu-h100-ib (the
                 complete node; the in-flight one counts 0); the missing slice of node 1's
                 generation is added -> 16; the DeviceClass is deleted -> 0, the nodes stay.

Waits are wait-for-condition loops (budget/harness.py Cluster.wait_ok), never fixed sleeps.
"""
import copy
import json
import os
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(ROOT, "tests", "kube-sim"))
import test_aggregator_workspaces as taw  # noqa: E402
from budget import harness as h  # noqa: E402
from budget.harness import NODES  # noqa: E402
from test_budget import OneClusterTest, quota  # noqa: E402

FIXTURES = os.path.join(ROOT, "tests", "fixtures", "dra")
DRA = "/apis/resource.k8s.io/v1"
CLASS = "gpu.nvidia.com"
GPU_CLASS = "h100-ib"  # the fixture nodes' tau.azure.com/gpu-class


def setUpModule():
    taw.setUpModule()


def tearDownModule():
    taw.tearDownModule()


def fixture(name):
    with open(os.path.join(FIXTURES, name)) as f:
        return json.load(f)


def missing_slice():
    """The other slice of node 1's generation 2 (devices gpu-4..gpu-7, their own UUIDs and bus
    IDs): with it the pool has its resourceSliceCount slices and is complete."""
    s = copy.deepcopy(fixture("resourceslice-h100-inflight.json"))
    s["metadata"]["name"] = s["metadata"]["name"][:-5] + "r2x8z"
    for i, d in enumerate(s["spec"]["devices"]):
        d["name"] = "gpu-%d" % (i + 4)
        a = d["attributes"]
        a["uuid"]["string"] = a["uuid"]["string"][:-1] + str(i + 4)
        a["pcieBusID"]["string"] = "000%d:00:00.0" % (i + 5)
        a["resource.kubernetes.io/pcieRoot"]["string"] = "pci000%d:00" % (i + 5)
    return s


class DraBudgetTest(OneClusterTest, unittest.TestCase):
    """test_budget's one kube-sim + one aggregator (research team, TauCluster in Reconcile mode;
    no budget write refused), populated with the DRA fixtures."""
    AGG_ARGS = ("--budget-resync", "3600s")

    @classmethod
    def populate(cls, c):
        c.create(fixture("deviceclass-gpu.nvidia.com.json"), DRA + "/deviceclasses")
        for n in ("node-dra-h100-0.json", "node-dra-h100-1.json"):
            c.create(fixture(n), NODES)
        for s in ("resourceslice-h100-complete.json", "resourceslice-h100-inflight.json"):
            c.create(fixture(s), DRA + "/resourceslices")
        cm = fixture("configmap-kueue-manager-config.json")
        c.create({"apiVersion": "v1", "kind": "Namespace",
                  "metadata": {"name": cm["metadata"]["namespace"]}}, "/api/v1/namespaces")
        c.create(cm, "/api/v1/namespaces/%s/configmaps" % cm["metadata"]["namespace"])

    def wait_gpus(self, want, msg):
        def diffs():
            cohort = self.c.cohort("research")
            got = quota(cohort, GPU_CLASS, "nvidia.com/gpu")
            # No node of the flavor has the resource any more: the Cohort drops it or says 0.
            val = h.qty(got) if got is not None else (0 if want == 0 else None)
            return [] if cohort is not None and val == want else [
                "Cohort tau-team-research %s nvidia.com/gpu: %r, want %d" % (
                    h.flavor_name(GPU_CLASS), got, want)]
        self.c.wait_ok(diffs, msg)

    def test_dra_gpus_follow_slices_and_class(self):
        # Only the complete pool counts: 8, never 12 (the in-flight generation's 4).
        self.wait_gpus(8, "the complete DRA node's 8 GPUs in the Cohort")
        self.c.create(missing_slice(), DRA + "/resourceslices")
        self.wait_gpus(16, "node 1's generation complete: 16 GPUs")
        self.c.delete(DRA + "/deviceclasses/" + CLASS)
        self.wait_gpus(0, "DeviceClass deleted: no DRA GPU counts")
        self.assertEqual(len(self.c.names(NODES)), 2, "the nodes themselves stay")


if __name__ == "__main__":
    unittest.main()
