"""The real Kueue CRDs installed in kube-sim, driven by kubectl: valid objects are stored with
their schema defaults; an invalid ClusterQueue is refused with the real server's message."""
import json
import os
import unittest

from simtest import SimProcess

HERE = os.path.dirname(os.path.abspath(__file__))
KUEUE_CRDS = os.path.join(HERE, "..", "fixtures", "kueue")

VALID = """
apiVersion: kueue.x-k8s.io/v1beta2
kind: ResourceFlavor
metadata:
  name: h100-ib
spec:
  nodeLabels:
    tau.azure.com/gpu-class: h100-ib
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: Cohort
metadata:
  name: research
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata:
  name: tau-ws-alpha
spec:
  cohortName: research
  namespaceSelector: {}
  resourceGroups:
  - coveredResources: ["cpu", "nvidia.com/gpu"]
    flavors:
    - name: h100-ib
      resources:
      - name: cpu
        nominalQuota: "94940m"
      - name: nvidia.com/gpu
        nominalQuota: 8
---
apiVersion: v1
kind: Namespace
metadata:
  name: alpha
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: LocalQueue
metadata:
  name: default
  namespace: alpha
spec:
  clusterQueue: tau-ws-alpha
"""

INVALID = """
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata:
  name: bad
spec:
  queueingStrategy: Sideways
  resourceGroups:
  - coveredResources: ["cpu"]
    flavors:
    - name: h100-ib
      resources:
      - name: cpu
        nominalQuota: "2 Gi"
"""


class KueueCRDs(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.sim = SimProcess(["--crds", KUEUE_CRDS])

    @classmethod
    def tearDownClass(cls):
        cls.sim.stop()

    def test_valid_objects_apply_with_defaults(self):
        self.sim.kubectl("apply", "-f", "-", input=VALID)
        cq = json.loads(self.sim.kubectl("get", "clusterqueue", "tau-ws-alpha", "-o",
                                         "json").stdout)
        # schema defaults applied by the server, quantities stored as written
        self.assertEqual(cq["spec"]["queueingStrategy"], "BestEffortFIFO")
        res = cq["spec"]["resourceGroups"][0]["flavors"][0]["resources"]
        self.assertEqual([r["nominalQuota"] for r in res], ["94940m", 8])
        lq = self.sim.kubectl("get", "localqueue", "-n", "alpha", "default", "-o",
                              "jsonpath={.spec.clusterQueue}").stdout
        self.assertEqual(lq, "tau-ws-alpha")

    def test_invalid_cluster_queue_refused_with_real_message(self):
        r = self.sim.kubectl("apply", "-f", "-", input=INVALID, check=False)
        self.assertEqual(r.returncode, 1)
        self.assertIn('The ClusterQueue "bad" is invalid:', r.stderr)
        self.assertIn('spec.queueingStrategy: Unsupported value: "Sideways": supported values: '
                      '"StrictFIFO", "BestEffortFIFO"', r.stderr)
        self.assertIn('spec.resourceGroups[0].flavors[0].resources[0].nominalQuota: Invalid '
                      'value: "2 Gi": spec.resourceGroups[0].flavors[0].resources[0].nominalQuota'
                      ' in body should match', r.stderr)
        # nothing was stored
        r = self.sim.kubectl("get", "clusterqueue", "bad", check=False)
        self.assertNotEqual(r.returncode, 0)
        self.assertIn('clusterqueues.kueue.x-k8s.io "bad" not found', r.stderr)

    def test_local_queue_cluster_queue_is_immutable(self):
        # the CRD's CEL transition rule `self == oldSelf`, enforced as the apiserver does
        self.sim.kubectl("apply", "-f", "-", input=VALID)
        r = self.sim.kubectl("patch", "localqueue", "-n", "alpha", "default", "--type", "merge",
                             "-p", '{"spec":{"clusterQueue":"other"}}', check=False)
        self.assertEqual(r.returncode, 1)
        self.assertIn('The LocalQueue "default" is invalid: spec.clusterQueue: Invalid value: '
                      '"string": field is immutable', r.stderr)
        # other fields still change
        self.sim.kubectl("label", "localqueue", "-n", "alpha", "default", "team=ml")
        lq = self.sim.kubectl("get", "localqueue", "-n", "alpha", "default", "-o",
                              "jsonpath={.spec.clusterQueue}").stdout
        self.assertEqual(lq, "tau-ws-alpha")

    def test_unknown_field_strict_error(self):
        bad = INVALID.replace("queueingStrategy: Sideways", "queueingStrategy: StrictFIFO\n"
                              "  colour: blue").replace('"2 Gi"', '"2Gi"')
        r = self.sim.kubectl("apply", "-f", "-", input=bad, check=False)
        self.assertEqual(r.returncode, 1)
        self.assertIn('unknown field "spec.colour"', r.stderr)


if __name__ == "__main__":
    unittest.main()
