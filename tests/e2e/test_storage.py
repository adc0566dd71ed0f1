"""`tau storage check` against kube-sim seeded with the GPU node fixtures: a CSI driver must be
registered (CSINode) on every Ready, schedulable node the selector picks."""
import json
import os
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "tests", "kube-sim"))
from simtest import SimProcess  # noqa: E402

FIXTURES = os.path.join(ROOT, "tests", "fixtures", "kube")
CLI = os.environ.get("TAU_WS_CLI", os.path.join(ROOT, "build", "tau"))
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
        cls.sim = SimProcess(["--seed", seed])

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

    def test_selector_narrows_to_nodes_that_have_it(self):
        r = self.tau("--driver", "disk.csi.azure.com", "--selector",
                     "tau.azure.com/gpu-class=h100-ib", "-o", "json")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertTrue(json.loads(r.stdout)["ok"])

    def test_table_names_the_missing_node(self):
        r = self.tau("--driver", "nfs.csi.k8s.io")
        self.assertEqual(r.returncode, 1)
        lines = r.stdout.splitlines()
        self.assertEqual(lines[0].split(), ["NODE", "REGISTERED"])
        self.assertIn([ND, "no"], [l.split() for l in lines[1:]])
        self.assertIn([FLEX, "yes"], [l.split() for l in lines[1:]])
        self.assertIn("missing on 1 of 2 eligible nodes", r.stdout)

    def test_usage_error(self):
        r = self.tau()
        self.assertEqual(r.returncode, 2)
        self.assertIn("--driver", r.stderr)


if __name__ == "__main__":
    unittest.main()
