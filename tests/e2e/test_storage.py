"""`tau storage check` against kube-sim seeded with the GPU node fixtures: a CSI driver must be
registered (CSINode) on every Ready, schedulable node the selector picks, and no Flex or other
externally registered node may rely on the AKS-managed addon for it (the reference's Flex rule).
"""
import copy
import json
import os
import subprocess
import tempfile
import unittest

import yaml

from harness import paths, require
from harness.kubesim import KubeSim

ROOT = paths.ROOT

FIXTURES = os.path.join(ROOT, "tests", "fixtures", "kube")
CLI = require.binary(os.environ.get("TAU_WS_CLI", os.path.join(ROOT, "build", "tau")),
                     "TAU_WS_CLI")
ND, FLEX = "aks-ndh100-35817294-vmss000000", "edge-gpu-01"


class StorageCheck(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        items = []
        for shape in ("nd-h100-v5", "nc-a100-v4-mig", "flex-h100"):
            for kind in ("node", "csinode"):
                with open(os.path.join(FIXTURES, "%s-%s.json" % (kind, shape))) as f:
                    items.append(json.load(f))
        cls.tmp = tempfile.mkdtemp(prefix="tau-storage-")
        seed = os.path.join(cls.tmp, "seed.json")
        with open(seed, "w") as f:
            json.dump({"kind": "List", "items": items}, f)
        cls.sim = KubeSim(["--seed", seed])

    @classmethod
    def tearDownClass(cls):
        cls.sim.stop()

    def tau(self, *args):
        return subprocess.run([CLI, "--kubeconfig", self.sim.kubeconfig, "storage", "check"] +
                              list(args), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              universal_newlines=True, timeout=60)

    def test_disk_driver_missing_on_flex_node(self):
        r = self.tau("--driver", "disk.csi.azure.com", "-o", "json")
        self.assertEqual(r.returncode, 1, r.stderr)
        out = json.loads(r.stdout)
        # the cordoned NC A100 node is not eligible; the Flex node has no Azure Disk driver
        self.assertEqual({n["name"]: n["registered"] for n in out["nodes"]},
                         {ND: True, FLEX: False})
        self.assertEqual((out["eligible"], out["missing"], out["ok"]), (2, 1, False))

    def test_yaml_is_the_json_document(self):
        js = self.tau("--driver", "disk.csi.azure.com", "-o", "json")
        ym = self.tau("--driver", "disk.csi.azure.com", "-o", "yaml")
        self.assertEqual((ym.returncode, ym.stderr), (js.returncode, js.stderr))
        self.assertEqual(yaml.safe_load(ym.stdout), json.loads(js.stdout))

    def test_selector_narrows_to_nodes_that_have_it(self):
        r = self.tau("--driver", "disk.csi.azure.com", "--selector",
                     "tau.azure.com/gpu-class=h100-ib", "-o", "json")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertTrue(json.loads(r.stdout)["ok"])

    def test_table_names_the_missing_node(self):
        r = self.tau("--driver", "nfs.csi.k8s.io")
        self.assertEqual(r.returncode, 1)
        lines = r.stdout.splitlines()
        self.assertEqual(lines[0].split(), ["NODE", "REGISTERED", "KIND", "MANAGED-BY"])
        # kind comes from the Node; who deployed the driver is read only off agent pools, and
        # no pod on the Flex node serves nfs.csi.k8s.io here
        self.assertIn([ND, "no", "AgentPool", "-"], [l.split() for l in lines[1:]])
        self.assertIn([FLEX, "yes", "Flex", "Unknown"], [l.split() for l in lines[1:]])
        self.assertIn("missing on 1 of 2 eligible nodes", r.stdout)

    def test_usage_error(self):
        r = self.tau()
        self.assertEqual(r.returncode, 2)
        self.assertIn("--driver", r.stderr)


def load(name):
    with open(os.path.join(FIXTURES, name)) as f:
        return json.load(f)


def daemonset(name, labels):
    """The DaemonSet owning driver pods (kube-sim's garbage collector removes orphans)."""
    return {"apiVersion": "apps/v1", "kind": "DaemonSet",
            "metadata": {"name": name, "namespace": "kube-system", "uid": name + "-ds",
                         "labels": labels},
            "spec": {"selector": {"matchLabels": {"app": labels["app"]}},
                     "template": {"metadata": {"labels": {"app": labels["app"]}},
                                  "spec": {"containers": [{"name": "c", "image": "i"}]}}}}


def driver_pod(name, node, driver, labels, user_agent):
    """A CSI driver's node pod, shaped like the upstream and AKS DaemonSets' pods."""
    return {
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "namespace": "kube-system", "labels": labels,
                     "ownerReferences": [{"apiVersion": "apps/v1", "kind": "DaemonSet",
                                          "name": labels["app"],
                                          "uid": labels["app"] + "-ds",
                                          "controller": True}]},
        "spec": {"nodeName": node, "containers": [
            {"name": "node-driver-registrar", "image": "registrar",
             "args": ["--kubelet-registration-path=/var/lib/kubelet/plugins/%s/csi.sock" %
                      driver]},
            {"name": "driver", "image": "driver",
             "args": ["--user-agent-suffix=" + user_agent]}]},
        "status": {"phase": "Running"}}


BLOB = "blob.csi.azure.com"
TAU_SYSTEM = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "tau-system"}}


def flavor(gpu_class):
    return {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ResourceFlavor",
            "metadata": {"name": gpu_class},
            "spec": {"nodeLabels": {"tau.azure.com/gpu-class": gpu_class}}}


def workspace(name, flavors):
    """A Ready TauWorkspace (status as the controller writes it), its ClusterQueue drawing on
    `flavors`, and a Bound PVC "data" of storage class azureblob in its namespace."""
    ns, cq = "ml-" + name, "tau-ws-" + name
    return [
        {"apiVersion": "tau.azure.com/v1alpha1", "kind": "TauWorkspace",
         "metadata": {"name": name, "namespace": "tau-system", "generation": 1},
         "spec": {"authorization": {"mode": "workspace-rbac"},
                  "principalRef": {"provider": "entra", "name": name},
                  "kubernetesSubject": {"kind": "Group", "name": name},
                  "role": "researcher", "target": {"namespace": ns}, "queue": name,
                  "teamRef": {"name": "research"}},
         "status": {"phase": "Ready", "observedGeneration": 1,
                    "target": {"resolvedNamespace": ns},
                    "queue": {"localQueue": name, "clusterQueue": cq}}},
        {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ClusterQueue",
         "metadata": {"name": cq},
         "spec": {"namespaceSelector": {}, "resourceGroups": [
             {"coveredResources": ["nvidia.com/gpu"], "flavors": [
                 {"name": f, "resources": [{"name": "nvidia.com/gpu", "nominalQuota": 0}]}
                 for f in flavors]}]}},
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}},
        {"apiVersion": "v1", "kind": "PersistentVolumeClaim",
         "metadata": {"name": "data", "namespace": ns},
         "spec": {"accessModes": ["ReadWriteMany"], "storageClassName": "azureblob",
                  "resources": {"requests": {"storage": "1Gi"}}},
         "status": {"phase": "Bound"}}]


KUBE_SYSTEM = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "kube-system"}}
AKS_ADDON = {"addonmanager.kubernetes.io/mode": "Reconcile",
             "kubernetes.io/cluster-service": "true"}
HELM = {"app.kubernetes.io/managed-by": "Helm", "helm.sh/chart": "azurefile-csi-driver-v1.30.0"}


class FlexRule(unittest.TestCase):
    """The Flex node carries blob.csi.azure.com from the AKS addon and file.csi.azure.com from a
    Helm release; the agent-pool node has both from the AKS addon, as AKS installs them."""

    @classmethod
    def setUpClass(cls):
        nd, nd_csi = load("node-nd-h100-v5.json"), load("csinode-nd-h100-v5.json")
        flex, flex_csi = load("node-flex-h100.json"), load("csinode-flex-h100.json")
        for csinode, node in ((nd_csi, ND), (flex_csi, FLEX)):
            have = {d["name"] for d in csinode["spec"]["drivers"]}
            for drv in ("blob.csi.azure.com", "file.csi.azure.com"):
                if drv not in have:
                    d = copy.deepcopy(csinode["spec"]["drivers"][0])
                    d.update({"name": drv, "nodeID": node})
                    d.pop("allocatable", None)
                    csinode["spec"]["drivers"].append(d)
        pods = [
            driver_pod("csi-blob-node-nd", ND, "blob.csi.azure.com",
                       dict(AKS_ADDON, app="csi-blob-node"), "AKS"),
            driver_pod("csi-azurefile-node-nd", ND, "file.csi.azure.com",
                       dict(AKS_ADDON, app="csi-azurefile-node"), "AKS"),
            driver_pod("csi-blob-node-flex", FLEX, "blob.csi.azure.com",
                       dict(AKS_ADDON, app="csi-blob-node"), "AKS"),
            driver_pod("csi-azurefile-node-flex", FLEX, "file.csi.azure.com",
                       dict(HELM, app="csi-azurefile-node"), "OSS-helm"),
        ]
        # One DaemonSet per app name stands for the two of each kind (AKS's and Helm's).
        owners = [daemonset(a, dict(AKS_ADDON, app=a)) for a in ("csi-blob-node",
                                                                  "csi-azurefile-node")]
        # Two workspaces for `tau workspace check --data-pvc`: alpha's ClusterQueue can place
        # work on both GPU classes, beta's on the agent-pool class only.
        workspaces = (workspace("alpha", ["h100-ib", "h100-flex"]) +
                      workspace("beta", ["h100-ib"]) +
                      [flavor("h100-ib"), flavor("h100-flex"), TAU_SYSTEM,
                       {"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass",
                        "metadata": {"name": "azureblob"}, "provisioner": BLOB}])
        cls.tmp = tempfile.mkdtemp(prefix="tau-storage-flex-")
        seed = os.path.join(cls.tmp, "seed.json")
        with open(seed, "w") as f:
            json.dump({"kind": "List",
                       "items": [nd, nd_csi, flex, flex_csi, KUBE_SYSTEM] + owners + pods +
                       workspaces}, f)
        cls.sim = KubeSim(["--seed", seed,
                              "--crds", os.path.join(ROOT, "charts", "taugrid", "crds"),
                              "--crds", os.path.join(ROOT, "tests", "fixtures", "kueue")])

    @classmethod
    def tearDownClass(cls):
        cls.sim.stop()

    tau = StorageCheck.tau

    def test_aks_addon_on_flex_node_fails_naming_the_node(self):
        r = self.tau("--driver", "blob.csi.azure.com")
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
        self.assertIn("node %s (Flex) relies on the AKS-managed addon for blob.csi.azure.com"
                      % FLEX, r.stdout)
        self.assertIn("a deployment-managed driver is required there", r.stdout)
        # the agent-pool node relies on the same addon, as it may
        self.assertNotIn("node %s" % ND, r.stdout)

    def test_aks_addon_on_flex_node_json(self):
        r = self.tau("--driver", "blob.csi.azure.com", "-o", "json")
        self.assertEqual(r.returncode, 1, r.stderr)
        out = json.loads(r.stdout)
        got = {n["name"]: (n["registered"], n["nodeKind"], n["managedBy"], n["supported"])
               for n in out["nodes"]}
        self.assertEqual(got, {ND: (True, "AgentPool", None, True),
                               FLEX: (True, "Flex", "AKSAddon", False)})
        self.assertEqual((out["eligible"], out["missing"], out["unsupported"], out["ok"]),
                         (2, 0, 1, False))
        self.assertEqual(len(out["problems"]), 1)
        self.assertIn(FLEX, out["problems"][0])

    def ws_check(self, name, *extra):
        return subprocess.run([CLI, "--kubeconfig", self.sim.kubeconfig, "workspace", "check",
                               name, "--data-pvc", "data"] + list(extra),
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              universal_newlines=True, timeout=60)

    def test_workspace_check_fails_addon_on_flex_node_its_queue_uses(self):
        r = self.ws_check("alpha")
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
        self.assertIn("node %s (Flex) relies on the AKS-managed addon for %s" % (FLEX, BLOB),
                      r.stdout)
        self.assertIn("a deployment-managed driver is required there", r.stdout)
        r = self.ws_check("alpha", "-o", "json")
        self.assertEqual(r.returncode, 1, r.stderr)
        csi = json.loads(r.stdout)["csi"]
        self.assertEqual(csi["clusterQueue"], "tau-ws-alpha")
        self.assertEqual(sorted(n["name"] for n in csi["nodes"]), sorted([ND, FLEX]))
        self.assertEqual((csi["eligible"], csi["missing"], csi["unsupported"], csi["ok"]),
                         (2, 0, 1, False))

    def test_workspace_check_ignores_nodes_its_queue_cannot_use(self):
        # beta's queue places work on the agent-pool class only: the Flex node is not eligible
        r = self.ws_check("beta", "-o", "json")
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        csi = json.loads(r.stdout)["csi"]
        self.assertEqual([n["name"] for n in csi["nodes"]], [ND])
        self.assertTrue(csi["ok"])

    def test_deployment_managed_driver_on_flex_node_passes(self):
        r = self.tau("--driver", "file.csi.azure.com", "-o", "json")
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        out = json.loads(r.stdout)
        got = {n["name"]: (n["nodeKind"], n["managedBy"], n["supported"]) for n in out["nodes"]}
        self.assertEqual(got, {ND: ("AgentPool", None, True), FLEX: ("Flex", "Deployment", True)})
        self.assertEqual(out["problems"], [])


if __name__ == "__main__":
    unittest.main()
