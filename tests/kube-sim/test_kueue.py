"""The real Kueue CRDs installed in kube-sim, with Kueue's admission webhooks and finalizer
controllers played by kubesim/kueue.py: what the real Kueue refuses is refused with its words,
what it rewrites is rewritten, and its finalizers come and go as its controllers do it."""
import json
import os
import unittest

from simtest import SimProcess, wait_for

HERE = os.path.dirname(os.path.abspath(__file__))
KUEUE_CRDS = os.path.join(HERE, "..", "fixtures", "kueue")

API = "/apis/kueue.x-k8s.io/v1beta2/"
API_V1BETA1 = "/apis/kueue.x-k8s.io/v1beta1/"
FIN = "kueue.x-k8s.io/resource-in-use"
QNAME = ("name part must consist of alphanumeric characters, '-', '_' or '.', and must start and "
         "end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex "
         "used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')")
LABEL_VALUE = ("a valid label must be an empty string or consist of alphanumeric characters, '-', "
               "'_' or '.', and must start and end with an alphanumeric character (e.g. "
               "'MyValue',  or 'my_value',  or '12345', regex used for validation is "
               "'(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')")
QUANTITY_RE = "'^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"

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
        nominalQuota: "2"
"""

# docs/budget.md: the team's root Cohort holds the pool; each workspace queue has 0 nominal.
TEAM = """
apiVersion: kueue.x-k8s.io/v1beta2
kind: ResourceFlavor
metadata: {name: gpu-a100}
spec:
  nodeLabels: {node.kubernetes.io/instance-type: a100}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: Cohort
metadata: {name: team-ml}
spec:
  resourceGroups:
  - coveredResources: ["cpu", "memory", "nvidia.com/gpu"]
    flavors:
    - name: gpu-a100
      resources:
      - {name: cpu, nominalQuota: 256}
      - {name: memory, nominalQuota: 2048Gi}
      - {name: nvidia.com/gpu, nominalQuota: "32"}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata: {name: team-ml-ws1}
spec:
  cohortName: team-ml
  namespaceSelector: {matchLabels: {kubernetes.io/metadata.name: ws1}}
  resourceGroups:
  - coveredResources: ["cpu", "memory", "nvidia.com/gpu"]
    flavors:
    - name: gpu-a100
      resources:
      - {name: cpu, nominalQuota: "0"}
      - {name: memory, nominalQuota: 0}
      - {name: nvidia.com/gpu, nominalQuota: "0", borrowingLimit: 8}
"""


def rg(covered, flavors, **quota):
    """One resource group: every flavor lists the covered resources in order."""
    return {"coveredResources": list(covered),
            "flavors": [{"name": f, "resources": [dict({"name": r, "nominalQuota": "1"}, **quota)
                                                  for r in covered]} for f in flavors]}


def cq(name, groups=(), **spec):
    s = {"resourceGroups": list(groups)}
    s.update(spec)
    return {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ClusterQueue",
            "metadata": {"name": name}, "spec": s}


def cohort(name, groups=(), **spec):
    s = {"resourceGroups": list(groups)}
    s.update(spec)
    return {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Cohort",
            "metadata": {"name": name}, "spec": s}


def rf(name, **spec):
    return {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ResourceFlavor",
            "metadata": {"name": name}, "spec": spec}


class KueueCRDs(unittest.TestCase):
    barriers = 0

    @classmethod
    def setUpClass(cls):
        cls.sim = SimProcess(["--crds", KUEUE_CRDS])

    @classmethod
    def tearDownClass(cls):
        cls.sim.stop()

    # -- helpers --------------------------------------------------------------------
    def create(self, plural, obj, api=API):
        return self.sim.req("POST", api + plural, obj)

    def denied(self, plural, obj, webhook, message, api=API):
        """The create is refused by a validating webhook exactly as the apiserver
        relays controller-runtime's admission.Denied: 403 Forbidden, no causes."""
        st, body = self.create(plural, obj, api)
        self.assertEqual(st, 403, body)
        self.assertEqual(body, {"kind": "Status", "apiVersion": "v1", "metadata": {},
                                "status": "Failure", "reason": "Forbidden", "code": 403,
                                "message": 'admission webhook "%s" denied the request: %s'
                                           % (webhook, message)})
        self.assertEqual(self.sim.req("GET", api + plural + "/" + obj["metadata"]["name"])[0], 404)

    def invalid(self, plural, obj, kind, causes):
        st, body = self.create(plural, obj)
        self.assertEqual(st, 422, body)
        self.assertEqual(body["reason"], "Invalid")
        got = [(c["field"], c["message"]) for c in body["details"]["causes"]]
        self.assertEqual(got, causes)
        joined = ["%s: %s" % c for c in causes]
        self.assertEqual(body["message"], '%s.kueue.x-k8s.io "%s" is invalid: %s' % (
            kind, obj["metadata"]["name"], joined[0] if len(joined) == 1 else
            "[" + ", ".join(joined) + "]"))

    def get(self, plural, name):
        st, body = self.sim.req("GET", API + plural + "/" + name)
        self.assertEqual(st, 200, body)
        return body

    def put(self, plural, obj, sub=""):
        return self.sim.req("PUT", API + plural + "/" + obj["metadata"]["name"] + sub, obj)

    def controller_pass(self):
        """Wait for a full pass of kube-sim's Kueue controller that started after now: a
        ClusterQueue written without its finalizer gets it back only from such a pass
        (one pass looks at every queue and flavor under the store lock)."""
        KueueCRDs.barriers += 1
        name = "barrier-%d" % KueueCRDs.barriers
        self.assertEqual(self.create("clusterqueues", cq(name))[0], 201)
        q = self.get("clusterqueues", name)
        q["metadata"]["finalizers"] = []
        st, body = self.put("clusterqueues", q)
        self.assertEqual(st, 200, body)
        wait_for(lambda: self.get("clusterqueues", name)["metadata"].get("finalizers") == [FIN],
                 timeout=10, msg="a Kueue controller pass")

    # -- schema (CRD) ---------------------------------------------------------------
    def test_valid_objects_apply_with_defaults(self):
        self.sim.kubectl("apply", "-f", "-", input=VALID)
        q = json.loads(self.sim.kubectl("get", "clusterqueue", "tau-ws-alpha", "-o",
                                        "json").stdout)
        self.assertEqual(q["spec"]["queueingStrategy"], "BestEffortFIFO")
        res = q["spec"]["resourceGroups"][0]["flavors"][0]["resources"]
        # the mutating webhook's Go round trip: the number 8 is stored as the string "8"
        self.assertEqual([r["nominalQuota"] for r in res], ["94940m", "8"])
        self.assertEqual(q["metadata"]["finalizers"], [FIN])
        lq = self.sim.kubectl("get", "localqueue", "-n", "alpha", "default", "-o",
                              "jsonpath={.spec.clusterQueue}").stdout
        self.assertEqual(lq, "tau-ws-alpha")
        # applying the manifest again is a write each time, as against the real Kueue: the
        # live "8" differs from the manifest's 8, and an UPDATE is not mutated
        out = self.sim.kubectl("apply", "-f", "-", input=VALID).stdout
        self.assertIn("clusterqueue.kueue.x-k8s.io/tau-ws-alpha configured", out)
        self.assertIn("cohort.kueue.x-k8s.io/research unchanged", out)
        q = json.loads(self.sim.kubectl("get", "clusterqueue", "tau-ws-alpha", "-o",
                                        "json").stdout)
        res = q["spec"]["resourceGroups"][0]["flavors"][0]["resources"]
        self.assertEqual([r["nominalQuota"] for r in res], ["94940m", 8])
        self.assertEqual(q["metadata"]["finalizers"], [FIN])

    def test_invalid_cluster_queue_refused_with_real_message(self):
        r = self.sim.kubectl("apply", "-f", "-", input=INVALID, check=False)
        self.assertEqual(r.returncode, 1)
        # a blocking schema error: the CEL rules are skipped, and the apiserver says so
        self.assertEqual(r.stderr, 'The ClusterQueue "bad" is invalid: \n* spec.queueingStrategy:'
                         ' Unsupported value: "Sideways": supported values: "StrictFIFO", '
                         '"BestEffortFIFO"\n* <nil>: Invalid value: "null": some validation rules '
                         'were not checked because the object was invalid; correct the existing '
                         'errors to complete validation\n')
        r = self.sim.kubectl("get", "clusterqueue", "bad", check=False)
        self.assertNotEqual(r.returncode, 0)
        self.assertIn('clusterqueues.kueue.x-k8s.io "bad" not found', r.stderr)

    def test_unparsable_quantity(self):
        # ClusterQueue create: the mutating webhook decodes the object before the schema
        # is checked, so Go's parse error comes first (400, no reason)
        bad = INVALID.replace("Sideways", "StrictFIFO").replace('"2"', '"2 Gi"')
        r = self.sim.kubectl("apply", "-f", "-", input=bad, check=False)
        self.assertEqual(r.returncode, 1)
        self.assertEqual(r.stderr.strip(), 'Error from server: error when creating "STDIN": '
                         'admission webhook "mclusterqueue.kb.io" denied the request: quantities '
                         'must match the regular expression ' + QUANTITY_RE)
        st, body = self.create("clusterqueues", cq("q-bad-qty", [rg(["cpu"], ["f"],
                                                                     nominalQuota="5ki")]))
        self.assertEqual((st, body.get("reason"), body["code"]), (400, None, 400))
        self.assertEqual(body["message"], 'admission webhook "mclusterqueue.kb.io" denied the '
                         "request: unable to parse quantity's suffix")
        # a Cohort has no mutating webhook: the CRD pattern answers (422)
        c = cohort("c-bad-qty", [rg(["cpu"], ["f"])])
        c["spec"]["resourceGroups"][0]["flavors"][0]["resources"][0]["nominalQuota"] = "2 Gi"
        st, body = self.create("cohorts", c)
        self.assertEqual(st, 422, body)
        self.assertEqual(body["details"]["causes"][0]["field"],
                         "spec.resourceGroups[0].flavors[0].resources[0].nominalQuota")
        self.assertIn('Invalid value: "2 Gi": spec.resourceGroups[0].flavors[0].resources[0].'
                      'nominalQuota in body should match', body["details"]["causes"][0]["message"])
        # a ClusterQueue update has no mutating webhook either
        self.assertEqual(self.create("clusterqueues", cq("q-upd-qty", [rg(["cpu"], ["f"])]))[0],
                         201)
        q = self.get("clusterqueues", "q-upd-qty")
        q["spec"]["resourceGroups"][0]["flavors"][0]["resources"][0]["nominalQuota"] = "2 Gi"
        st, body = self.put("clusterqueues", q)
        self.assertEqual((st, body["reason"]), (422, "Invalid"), body)

    def test_local_queue_cluster_queue_is_immutable(self):
        # the CRD's CEL transition rule `self == oldSelf`, enforced as the apiserver does
        self.sim.kubectl("apply", "-f", "-", input=VALID.replace("alpha", "beta"))
        r = self.sim.kubectl("patch", "localqueue", "-n", "beta", "default", "--type", "merge",
                             "-p", '{"spec":{"clusterQueue":"other"}}', check=False)
        self.assertEqual(r.returncode, 1)
        self.assertIn('The LocalQueue "default" is invalid: spec.clusterQueue: Invalid value: '
                      '"string": field is immutable', r.stderr)
        self.sim.kubectl("label", "localqueue", "-n", "beta", "default", "team=ml")
        lq = self.sim.kubectl("get", "localqueue", "-n", "beta", "default", "-o",
                              "jsonpath={.spec.clusterQueue}").stdout
        self.assertEqual(lq, "tau-ws-beta")

    def test_unknown_field_strict_error(self):
        bad = INVALID.replace("queueingStrategy: Sideways", "queueingStrategy: StrictFIFO\n"
                              "  colour: blue")
        r = self.sim.kubectl("apply", "-f", "-", input=bad, check=False)
        self.assertEqual(r.returncode, 1)
        self.assertIn('unknown field "spec.colour"', r.stderr)

    # -- CEL rules of the CRDs (422) --------------------------------------------------
    def test_cel_flavors_must_list_every_covered_resource(self):
        g = rg(["cpu", "memory"], ["f"])
        g["flavors"][0]["resources"].pop()
        self.invalid("cohorts", cohort("c-cel-count", [g]), "Cohort", [
            ("spec.resourceGroups[0]", 'Invalid value: "object": flavors must have the same '
                                       'number of resources as the coveredResources')])
        self.invalid("clusterqueues", cq("q-cel-count", [g]), "ClusterQueue", [
            ("spec.resourceGroups[0]", 'Invalid value: "object": flavors must have the same '
                                       'number of resources as the coveredResources')])

    def test_cel_cluster_queue_rules(self):
        self.invalid("clusterqueues", cq("q-cel-borrow", [rg(["cpu"], ["f"], borrowingLimit=1)]),
                     "ClusterQueue", [("spec", 'Invalid value: "object": borrowingLimit must be '
                                               'nil when cohort is empty')])
        self.invalid("clusterqueues", cq("q-cel-pre", preemption={
            "reclaimWithinCohort": "Never", "borrowWithinCohort": {"policy": "LowerPriority"}}),
            "ClusterQueue", [("spec.preemption", 'Invalid value: "object": reclaimWithinCohort='
                                                 'Never and borrowWithinCohort.Policy!=Never')])
        self.invalid("clusterqueues", cq("q-cel-ff", flavorFungibility={
            "preference": "BorrowingOverPreemption"}), "ClusterQueue", [
            ("spec.flavorFungibility", 'Invalid value: "object": preference can only be set when '
                                       'both whenCanBorrow and whenCanPreempt are TryNextFlavor')])
        # a blocking schema error: CEL is skipped, and the apiserver says so
        self.invalid("clusterqueues", cq("q-cel-skip", [rg(["cpu"], ["f"], borrowingLimit=1)],
                                         stopPolicy="Later"), "ClusterQueue", [
            ("spec.stopPolicy", 'Unsupported value: "Later": supported values: "None", "Hold", '
                                '"HoldAndDrain"'),
            ("<nil>", 'Invalid value: "null": some validation rules were not checked because the '
                      'object was invalid; correct the existing errors to complete validation')])

    def test_cel_resource_flavor_rules(self):
        self.invalid("resourceflavors", rf("rf-cel-effect", nodeTaints=[
            {"key": "k", "value": "v", "effect": "Sometimes"}]), "ResourceFlavor", [
            ("spec.nodeTaints", 'Invalid value: "array": supported taint effect values: '
                                "'NoSchedule', 'PreferNoSchedule', 'NoExecute'")])
        self.invalid("resourceflavors", rf("rf-cel-tol", tolerations=[
            {"operator": "Equal", "value": "x", "tolerationSeconds": 5, "effect": "NoSchedule"}]),
            "ResourceFlavor", [
                ("spec.tolerations", 'Invalid value: "array": operator must be Exists when '
                                     "'key' is empty, which means 'match all values and all keys'"),
                ("spec.tolerations", 'Invalid value: "array": effect must be \'NoExecute\' when '
                                     "'tolerationSeconds' is set")])
        self.invalid("resourceflavors", rf("rf-cel-topo", topologyName="default"),
                     "ResourceFlavor", [("spec", 'Invalid value: "object": no such key: nodeLabels '
                                                 'evaluating rule: at least one nodeLabel is '
                                                 'required when topology is set')])
        self.assertEqual(self.create("resourceflavors", rf("rf-cel-topo2", topologyName="t1",
                                                           nodeLabels={"a": "b"}))[0], 201)
        o = self.get("resourceflavors", "rf-cel-topo2")
        o["spec"]["topologyName"] = "t2"
        st, body = self.put("resourceflavors", o)
        self.assertEqual(st, 422, body)
        self.assertEqual(body["message"], 'ResourceFlavor.kueue.x-k8s.io "rf-cel-topo2" is '
                         'invalid: spec: Invalid value: "object": topologyName is immutable '
                         'when topologyName is set')

    def test_cel_topology_immutability(self):
        """Kueue v0.19.2's ResourceFlavor: nodeLabels and tolerations are fixed once topologyName
        is set (Kueue's main branch dropped both rules; a cluster runs the release)."""
        self.assertEqual(self.create("resourceflavors", rf(
            "rf-tas", topologyName="t1", nodeLabels={"a": "b"},
            tolerations=[{"key": "k", "operator": "Exists"}]))[0], 201)
        msg = 'ResourceFlavor.kueue.x-k8s.io "rf-tas" is invalid: spec: Invalid value: "object": '
        for field, value, words in (
                ("nodeLabels", {"a": "c"}, "nodeLabels are immutable when topologyName is set"),
                ("tolerations", [], "tolerations are immutable when topologyName is set")):
            with self.subTest(field=field):
                o = self.get("resourceflavors", "rf-tas")
                o["spec"][field] = value
                st, body = self.put("resourceflavors", o)
                self.assertEqual(st, 422, body)
                self.assertEqual(body["message"], msg + words)
        o = self.get("resourceflavors", "rf-tas")
        o["spec"]["nodeTaints"] = [{"key": "x", "value": "y", "effect": "NoSchedule"}]
        self.assertEqual(self.put("resourceflavors", o)[0], 200)
        # without topologyName the same changes are allowed
        self.assertEqual(self.create("resourceflavors", rf("rf-plain", nodeLabels={"a": "b"}))[0],
                         201)
        o = self.get("resourceflavors", "rf-plain")
        o["spec"]["nodeLabels"] = {"a": "c"}
        self.assertEqual(self.put("resourceflavors", o)[0], 200)

    # -- validating webhooks (403) ------------------------------------------------------
    def test_negative_quantities(self):
        self.denied("clusterqueues", cq("q-neg", [rg(["cpu"], ["f"], nominalQuota="-1")]),
                    "vclusterqueue.kb.io", 'spec.resourceGroups[0].flavors[0].resources[0].'
                    'nominalQuota: Invalid value: "-1": must be greater than or equal to 0')
        self.denied("cohorts", cohort("c-neg", [rg(["cpu"], ["f"], nominalQuota="-500m",
                                                     borrowingLimit="-1")], parentName="root"),
                    "vcohort.kb.io",
                    '[spec.resourceGroups[0].flavors[0].resources[0].nominalQuota: Invalid value: '
                    '"-500m": must be greater than or equal to 0, spec.resourceGroups[0].flavors[0]'
                    '.resources[0].borrowingLimit: Invalid value: "-1": must be greater than or '
                    'equal to 0]')
        self.denied("cohorts", cohort("c-neg-w", fairSharing={"weight": "-1"}), "vcohort.kb.io",
                    'spec.fairSharing: Invalid value: "-1": must be greater than or equal to 0')
        self.denied("clusterqueues", cq("q-tiny-w", fairSharing={"weight": "1n"}),
                    "vclusterqueue.kb.io", 'spec.fairSharing: Invalid value: "1n": When not 0, '
                    'weight must be > 10e-9')
        self.assertEqual(self.create("clusterqueues", cq("q-zero-w", fairSharing={
            "weight": 0}))[0], 201)

    def test_limits_need_a_cohort_or_parent(self):
        self.denied("clusterqueues", cq("q-lend", [rg(["cpu"], ["f"], lendingLimit="1")]),
                    "vclusterqueue.kb.io", 'spec.resourceGroups[0].flavors[0].resources[0].'
                    'lendingLimit: Invalid value: "1": must be nil when cohort is empty')
        self.denied("cohorts", cohort("c-root-limits", [rg(["cpu"], ["f"], borrowingLimit="1",
                                                             lendingLimit="2")]),
                    "vcohort.kb.io",
                    '[spec.resourceGroups[0].flavors[0].resources[0].borrowingLimit: Invalid '
                    'value: "1": must be nil when parent is empty, spec.resourceGroups[0].'
                    'flavors[0].resources[0].lendingLimit: Invalid value: "2": must be nil when '
                    'parent is empty]')
        # with a parent, a Cohort may lend more than its own nominal quota
        self.assertEqual(self.create("cohorts", cohort("c-child", [rg(
            ["cpu"], ["f"], borrowingLimit="1", lendingLimit="2000m")], parentName="root"))[0], 201)

    def test_lending_limit_above_nominal_quota(self):
        self.denied("clusterqueues", cq("q-lend-big", [rg(["cpu"], ["f"], lendingLimit="1001m")],
                                        cohortName="team"),
                    "vclusterqueue.kb.io", 'spec.resourceGroups[0].flavors[0].resources[0].'
                    'lendingLimit: Invalid value: "1001m": must be less than or equal to the '
                    'nominalQuota')
        self.assertEqual(self.create("clusterqueues", cq(
            "q-lend-eq", [rg(["cpu"], ["f"], lendingLimit="1000m")], cohortName="team"))[0], 201)

    def test_resource_names(self):
        self.denied("clusterqueues", cq("q-rname", [rg(["gpu!"], ["f"])]), "vclusterqueue.kb.io",
                    'spec.resourceGroups[0].coveredResources[0]: Invalid value: "gpu!": ' + QNAME)
        self.denied("cohorts", cohort("c-rname", [rg(["a/b/c"], ["f"])]), "vcohort.kb.io",
                    'spec.resourceGroups[0].coveredResources[0]: Invalid value: "a/b/c": a valid '
                    "label key must consist of alphanumeric characters, '-', '_' or '.', and must "
                    "start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  "
                    "or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?"
                    "[A-Za-z0-9]') with an optional DNS subdomain prefix and '/' (e.g. "
                    "'example.com/MyName')")
        g = rg(["cpu", "memory"], ["f"])
        g["flavors"][0]["resources"].reverse()
        self.denied("clusterqueues", cq("q-order", [g]), "vclusterqueue.kb.io",
                    '[spec.resourceGroups[0].flavors[0].resources[0].name: Invalid value: '
                    '"memory": must match the name in coveredResources, spec.resourceGroups[0].'
                    'flavors[0].resources[1].name: Invalid value: "cpu": must match the name in '
                    'coveredResources]')

    def test_resource_or_flavor_in_two_groups(self):
        self.denied("clusterqueues", cq("q-dup", [rg(["cpu"], ["f1"]),
                                                  rg(["cpu", "memory"], ["f2", "f1"])]),
                    "vclusterqueue.kb.io",
                    '[spec.resourceGroups[1].coveredResources[0]: Duplicate value: "cpu", '
                    'spec.resourceGroups[1].flavors[1].name: Duplicate value: "f1"]')
        self.denied("cohorts", cohort("c-dup", [rg(["cpu"], ["f1"]), rg(["cpu"], ["f2"])]),
                    "vcohort.kb.io",
                    'spec.resourceGroups[1].coveredResources[0]: Duplicate value: "cpu"')

    def test_cluster_queue_totals(self):
        many_flavors = [rg(["r%d" % g], ["f%d-%d" % (g, i) for i in range(17)])
                        for g in range(16)]
        self.denied("clusterqueues", cq("q-272-flavors", many_flavors), "vclusterqueue.kb.io",
                    "spec.resourceGroups: Invalid value: 272: total number of flavors across all "
                    "resourceGroups must be ≤ 256, got 272")
        many_res = [rg(["r%d-%d" % (g, i) for i in range(17)], ["f%d" % g]) for g in range(16)]
        self.denied("clusterqueues", cq("q-272-res", many_res), "vclusterqueue.kb.io",
                    "spec.resourceGroups: Invalid value: 272: total number of covered resources "
                    "across all resourceGroups must be ≤ 256, got 272")
        pairs = [rg(["r%d" % i for i in range(9)], ["f%d" % i for i in range(64)])]
        self.denied("clusterqueues", cq("q-576-pairs", pairs), "vclusterqueue.kb.io",
                    "spec.resourceGroups[0]: Invalid value: 576: number of flavor-resource "
                    "combinations in a resourceGroup must be ≤ 512, got 576")
        # the same shapes are fine on a Cohort (the limits are the ClusterQueue webhook's)
        self.assertEqual(self.create("cohorts", cohort("c-576-pairs", pairs))[0], 201)

    def test_admission_check_on_flavors(self):
        strategy = {"admissionChecks": [{"name": "prov", "onFlavors": ["f2", "nope"]}]}
        self.denied("clusterqueues", cq("q-acs", [rg(["cpu"], ["f2", "f1"])],
                                        admissionChecksStrategy=strategy),
                    "vclusterqueue.kb.io",
                    'spec.admissionChecksStrategy.admissionChecks[0].onFlavors[1]: Unsupported '
                    'value: "nope": supported values: "f1", "f2"')

    def test_namespace_selector(self):
        sel = {"matchLabels": {"bad key!": "ok", "k": "bad value!"},
               "matchExpressions": [{"key": "a", "operator": "In"},
                                    {"key": "b", "operator": "Near", "values": ["x"]}]}
        self.denied("clusterqueues", cq("q-nssel", namespaceSelector=sel), "vclusterqueue.kb.io",
                    '[spec.namespaceSelector.matchLabels: Invalid value: "bad key!": ' + QNAME +
                    ', spec.namespaceSelector.matchLabels: Invalid value: "bad value!": ' +
                    LABEL_VALUE + ', spec.namespaceSelector.matchExpressions[0].values: Required '
                    "value: must be specified when `operator` is 'In' or 'NotIn', "
                    'spec.namespaceSelector.matchExpressions[1].operator: Invalid value: "Near": '
                    'not a valid selector operator]')

    def test_resource_flavor_labels_and_taints(self):
        self.denied("resourceflavors", rf("rf-labels", nodeLabels={"gpu class": "a100"}),
                    "vresourceflavor.kb.io",
                    'spec.nodeLabels: Invalid value: "gpu class": ' + QNAME)
        self.denied("resourceflavors", rf("rf-values", nodeLabels={"gpu": "a 100"}),
                    "vresourceflavor.kb.io", 'spec.nodeLabels: Invalid value: "a 100": ' +
                    LABEL_VALUE)
        self.denied("resourceflavors", rf("rf-taints", nodeTaints=[
            {"key": "k", "value": "a", "effect": "NoSchedule"},
            {"key": "k", "value": "b", "effect": "NoExecute"},
            {"key": "k", "value": "c", "effect": "NoSchedule"}]), "vresourceflavor.kb.io",
            'spec.nodeTaints[2]: Duplicate value: v1.Taint{Key:"k", Value:"c", '
            'Effect:"NoSchedule", TimeAdded:<nil>}: taints must be unique by key and effect pair')
        self.denied("resourceflavors", rf("rf-tol", tolerations=[
            {"key": "bad/key/x", "operator": "Exists"}]), "vresourceflavor.kb.io",
            'spec.tolerations[0].key: Invalid value: "bad/key/x": a valid label key must consist '
            "of alphanumeric characters, '-', '_' or '.', and must start and end with an "
            "alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for "
            "validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]') with an optional DNS "
            "subdomain prefix and '/' (e.g. 'example.com/MyName')")

    def test_denial_through_kubectl_and_on_update(self):
        bad = TEAM.split("---")[2].replace("team-ml-ws1", "ws-kubectl").replace(
            'nominalQuota: "0"}', 'nominalQuota: "-2"}', 1)
        r = self.sim.kubectl("apply", "-f", "-", input=bad, check=False)
        self.assertEqual(r.returncode, 1)
        self.assertEqual(r.stderr.strip(), 'Error from server (Forbidden): error when creating '
                         '"STDIN": admission webhook "vclusterqueue.kb.io" denied the request: '
                         'spec.resourceGroups[0].flavors[0].resources[0].nominalQuota: Invalid '
                         'value: "-2": must be greater than or equal to 0')
        # UPDATE goes through the validating webhook too (PUT and merge patch)
        self.assertEqual(self.create("clusterqueues", cq("q-upd", [rg(["cpu"], ["f"])],
                                                         cohortName="t"))[0], 201)
        q = self.get("clusterqueues", "q-upd")
        del q["spec"]["cohortName"]
        q["spec"]["resourceGroups"][0]["flavors"][0]["resources"][0]["lendingLimit"] = "1"
        st, body = self.put("clusterqueues", q)
        self.assertEqual(st, 403, body)
        self.assertEqual(body["message"], 'admission webhook "vclusterqueue.kb.io" denied the '
                         'request: spec.resourceGroups[0].flavors[0].resources[0].lendingLimit: '
                         'Invalid value: "1": must be nil when cohort is empty')
        r = self.sim.kubectl("patch", "clusterqueue", "q-upd", "--type", "merge", "-p",
                             '{"spec":{"fairSharing":{"weight":"-3"}}}', check=False)
        self.assertEqual(r.returncode, 1)
        self.assertIn('admission webhook "vclusterqueue.kb.io" denied the request: '
                      'spec.fairSharing: Invalid value: "-3": must be greater than or equal to 0',
                      r.stderr)
        # status writes are not seen by the webhooks
        q = self.get("clusterqueues", "q-upd")
        q["status"] = {"pendingWorkloads": 1}
        self.assertEqual(self.put("clusterqueues", q, "/status")[0], 200)

    def test_v1beta1_is_converted_then_validated(self):
        q = cq("q-beta1", [rg(["cpu"], ["f"], lendingLimit="500m", nominalQuota=2)],
               cohort="team")
        q["apiVersion"] = "kueue.x-k8s.io/v1beta1"
        q["spec"]["flavorFungibility"] = {"whenCanBorrow": "Borrow"}
        st, body = self.create("clusterqueues", q, API_V1BETA1)
        self.assertEqual(st, 201, body)
        got = self.get("clusterqueues", "q-beta1")
        self.assertEqual(got["spec"]["cohortName"], "team")
        self.assertNotIn("cohort", got["spec"])
        self.assertEqual(got["spec"]["flavorFungibility"]["whenCanBorrow"], "MayStopSearch")
        self.assertEqual(got["spec"]["resourceGroups"][0]["flavors"][0]["resources"][0],
                         {"name": "cpu", "nominalQuota": "2", "lendingLimit": "500m"})
        q = cq("q-beta1-bad", [rg(["cpu"], ["f"], lendingLimit="1")])
        q["apiVersion"] = "kueue.x-k8s.io/v1beta1"
        self.denied("clusterqueues", q, "vclusterqueue.kb.io", 'spec.resourceGroups[0].flavors[0]'
                    '.resources[0].lendingLimit: Invalid value: "1": must be nil when cohort is '
                    'empty', api=API_V1BETA1)

    # -- mutation ---------------------------------------------------------------------------
    def test_team_cohort_and_zero_nominal_queue_accepted_with_defaults(self):
        self.sim.kubectl("apply", "-f", "-", input=TEAM)
        q = self.get("clusterqueues", "team-ml-ws1")
        self.assertEqual(q["metadata"]["finalizers"], [FIN])
        spec = q["spec"]
        self.assertEqual(spec["resourceGroups"][0]["flavors"][0]["resources"], [
            {"name": "cpu", "nominalQuota": "0"}, {"name": "memory", "nominalQuota": "0"},
            {"name": "nvidia.com/gpu", "nominalQuota": "0", "borrowingLimit": "8"}])
        self.assertEqual(spec["queueingStrategy"], "BestEffortFIFO")
        self.assertEqual(spec["stopPolicy"], "None")
        self.assertEqual(spec["flavorFungibility"], {"whenCanBorrow": "MayStopSearch",
                                                     "whenCanPreempt": "TryNextFlavor"})
        self.assertEqual(spec["preemption"], {"withinClusterQueue": "Never",
                                              "reclaimWithinCohort": "Never",
                                              "borrowWithinCohort": {"policy": "Never"}})
        self.assertNotIn("fairSharing", spec)
        # Kueue has no mutating webhook for Cohorts: quantities stay as written, no finalizer
        c = self.get("cohorts", "team-ml")
        self.assertNotIn("finalizers", c["metadata"])
        self.assertEqual([r["nominalQuota"] for r in
                          c["spec"]["resourceGroups"][0]["flavors"][0]["resources"]],
                         [256, "2048Gi", "32"])
        self.assertEqual(self.get("resourceflavors", "gpu-a100")["metadata"]["finalizers"], [FIN])

    def test_quantities_rewritten_as_go_prints_them(self):
        g = rg(["cpu", "memory", "a", "b", "c", "d"], ["f"])
        for r, v in zip(g["flavors"][0]["resources"], [12, "1000m", "1024Mi", "12000", 1.5,
                                                         "0.5Ki"]):
            r["nominalQuota"] = v
        st, body = self.create("clusterqueues", cq("q-canon", [g], fairSharing={}))
        self.assertEqual(st, 201, body)
        got = self.get("clusterqueues", "q-canon")
        self.assertEqual([r["nominalQuota"] for r in
                          got["spec"]["resourceGroups"][0]["flavors"][0]["resources"]],
                         ["12", "1", "1Gi", "12k", "1500m", "512"])
        # the CRD default weight 1 goes through the same round trip
        self.assertEqual(got["spec"]["fairSharing"], {"weight": "1"})

    def test_quantities_by_value_in_rules(self):
        # 1Gi of lending against 1024Mi of nominal quota: equal by value, accepted
        g = rg(["memory"], ["f"], nominalQuota="1024Mi", lendingLimit="1Gi")
        self.assertEqual(self.create("clusterqueues", cq("q-by-value", [g],
                                                         cohortName="t"))[0], 201)

    # -- finalizers ---------------------------------------------------------------------------
    def test_finalizer_put_back_by_controller(self):
        self.assertEqual(self.create("clusterqueues", cq("q-refin", [rg(["cpu"], ["f"])]))[0], 201)
        q = self.get("clusterqueues", "q-refin")
        q["metadata"].pop("finalizers")
        q["spec"]["resourceGroups"][0]["flavors"][0]["resources"][0]["nominalQuota"] = 3
        st, body = self.put("clusterqueues", q)
        self.assertEqual(st, 200, body)
        # the write is stored as sent (no mutating webhook on UPDATE) ...
        self.assertNotIn("finalizers", body["metadata"])
        self.assertEqual(body["spec"]["resourceGroups"][0]["flavors"][0]["resources"][0]
                         ["nominalQuota"], 3)
        # ... then Kueue's controller writes the object back with its finalizer (Go round trip)
        wait_for(lambda: self.get("clusterqueues", "q-refin")["metadata"].get("finalizers") ==
                 [FIN], timeout=10, msg="finalizer put back")
        after = self.get("clusterqueues", "q-refin")
        self.assertNotEqual(after["metadata"]["resourceVersion"], body["metadata"]["resourceVersion"])
        self.assertEqual(after["spec"]["resourceGroups"][0]["flavors"][0]["resources"][0]
                         ["nominalQuota"], "3")

    def test_resource_flavor_kept_while_a_queue_lists_it(self):
        self.assertEqual(self.create("resourceflavors", rf("rf-life"))[0], 201)
        self.assertEqual(self.get("resourceflavors", "rf-life")["metadata"]["finalizers"], [FIN])
        self.assertEqual(self.create("clusterqueues", cq("q-life", [rg(["cpu"], ["rf-life"])]))[0],
                         201)
        st, body = self.sim.req("DELETE", API + "resourceflavors/rf-life")
        self.assertEqual(st, 200, body)
        self.assertTrue(body["metadata"]["deletionTimestamp"])
        # Kueue's controller keeps it while q-life lists it
        self.controller_pass()
        self.assertEqual(self.get("resourceflavors", "rf-life")["metadata"]["finalizers"], [FIN])
        # the queue stops listing it: the finalizer goes and so does the flavor
        q = self.get("clusterqueues", "q-life")
        q["spec"]["resourceGroups"][0]["flavors"][0]["name"] = "other"
        self.assertEqual(self.put("clusterqueues", q)[0], 200)
        wait_for(lambda: self.sim.req("GET", API + "resourceflavors/rf-life")[0] == 404,
                 timeout=10, msg="flavor gone")

    def test_resource_flavor_freed_when_its_queue_is_deleted(self):
        self.assertEqual(self.create("resourceflavors", rf("rf-free"))[0], 201)
        self.assertEqual(self.create("clusterqueues", cq("q-free", [rg(["cpu"], ["rf-free"])]))[0],
                         201)
        self.assertEqual(self.sim.req("DELETE", API + "resourceflavors/rf-free")[0], 200)
        self.assertEqual(self.sim.req("DELETE", API + "clusterqueues/q-free")[0], 200)
        wait_for(lambda: self.sim.req("GET", API + "clusterqueues/q-free")[0] == 404,
                 timeout=10, msg="queue gone")
        wait_for(lambda: self.sim.req("GET", API + "resourceflavors/rf-free")[0] == 404,
                 timeout=10, msg="flavor gone")

    def test_cluster_queue_kept_while_workloads_reserve(self):
        self.assertEqual(self.create("clusterqueues", cq("q-busy", [rg(["cpu"], ["f"])]))[0], 201)
        q = self.get("clusterqueues", "q-busy")
        q["status"] = {"reservingWorkloads": 1, "admittedWorkloads": 1}
        self.assertEqual(self.put("clusterqueues", q, "/status")[0], 200)
        st, body = self.sim.req("DELETE", API + "clusterqueues/q-busy")
        self.assertEqual(st, 200, body)
        self.assertTrue(body["metadata"]["deletionTimestamp"])
        q = self.get("clusterqueues", "q-busy")
        self.assertEqual(q["metadata"]["finalizers"], [FIN])
        q["status"] = {"reservingWorkloads": 0, "admittedWorkloads": 1}
        self.assertEqual(self.put("clusterqueues", q, "/status")[0], 200)
        self.controller_pass()
        self.assertEqual(self.get("clusterqueues", "q-busy")["metadata"]["finalizers"], [FIN])
        q = self.get("clusterqueues", "q-busy")
        q["status"] = {"reservingWorkloads": 0, "admittedWorkloads": 0}
        self.assertEqual(self.put("clusterqueues", q, "/status")[0], 200)
        wait_for(lambda: self.sim.req("GET", API + "clusterqueues/q-busy")[0] == 404,
                 timeout=10, msg="queue gone")

    def test_cohort_deleted_at_once(self):
        self.assertEqual(self.create("cohorts", cohort("c-gone"))[0], 201)
        st, body = self.sim.req("DELETE", API + "cohorts/c-gone")
        self.assertEqual((st, body.get("status")), (200, "Success"), body)
        self.assertEqual(self.sim.req("GET", API + "cohorts/c-gone")[0], 404)


if __name__ == "__main__":
    unittest.main()
