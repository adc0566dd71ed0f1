"""CRD validation rules (x-kubernetes-validations) in kube-sim: the CEL engine, the API
server's error texts, CRD compilation, and every rule of taugrid's own CRDs."""
import copy
import json
import os
import subprocess
import sys
import tempfile
import unittest

from kubesim import celrules, yamlmini
from simtest import SimProcess

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
OUR_CRDS = os.path.join(ROOT, "charts", "taugrid", "crds")


def crd(schema, name="widgets.example.com", versions=("v1",)):
    return {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": name},
            "spec": {"group": "example.com", "scope": "Namespaced",
                     "names": {"plural": "widgets", "singular": "widget", "kind": "Widget",
                               "listKind": "WidgetList"},
                     "versions": [{"name": v, "served": True, "storage": i == 0,
                                   "schema": {"openAPIV3Schema": copy.deepcopy(schema)}}
                                  for i, v in enumerate(versions)]}}


def spec_schema(props, rules=(), spec_rules=()):
    return {"type": "object", "x-kubernetes-validations": list(rules), "properties": {
        "spec": {"type": "object", "properties": props,
                 "x-kubernetes-validations": list(spec_rules)}}}


def obj(spec, name="w"):
    return {"apiVersion": "example.com/v1", "kind": "Widget",
            "metadata": {"name": name, "namespace": "default"}, "spec": spec}


def causes_of(schema, new, old=None, schema_causes=()):
    tree = celrules.rule_tree(schema)
    causes, warnings = celrules.validate(tree, new, old, list(schema_causes))
    return [(c["field"], c["message"]) for c in causes], warnings


class Evaluation(unittest.TestCase):
    """celrules.validate against hand-made schemas: paths, texts, oldSelf, ratcheting."""

    def test_paths_and_texts(self):
        s = spec_schema({
            "items": {"type": "array", "items": {
                "type": "object", "properties": {"n": {"type": "integer"}},
                "x-kubernetes-validations": [{"rule": "self.n > 0", "message": "n positive"}]}},
            "labels": {"type": "object", "additionalProperties": {
                "type": "string", "x-kubernetes-validations": [{"rule": "self != ''"}]}},
        }, rules=[{"rule": "self.metadata.name.startsWith('w')"}])
        got, _ = causes_of(s, obj({"items": [{"n": 1}, {"n": 0}], "labels": {"a": "", "b": "x"}},
                                  name="x"))
        self.assertEqual(got, [
            ("<nil>", 'Invalid value: "object": failed rule: self.metadata.name.startsWith(\'w\')'),
            ("spec.items[1]", 'Invalid value: "object": n positive'),
            ("spec.labels[a]", "Invalid value: \"string\": failed rule: self != ''"),
        ])
        self.assertEqual(causes_of(s, obj({"items": [{"n": 2}], "labels": {"b": "x"}}))[0], [])

    def test_reason_field_path_and_message_expression(self):
        s = spec_schema({"min": {"type": "integer"}, "max": {"type": "integer"}}, spec_rules=[
            {"rule": "self.min <= self.max", "messageExpression":
             "'min ' + string(self.min) + ' is above max ' + string(self.max)",
             "fieldPath": ".min", "reason": "FieldValueForbidden"},
            {"rule": "self.max < 100", "messageExpression": "'   '", "message": "max too big"},
            {"rule": "self.max < 50", "reason": "FieldValueRequired", "message": "m"},
        ])
        got, _ = causes_of(s, obj({"min": 300, "max": 200}))
        self.assertEqual(got, [("spec.min", "Forbidden: min 300 is above max 200"),
                               ("spec", 'Invalid value: "object": max too big'),
                               ("spec", "Required value: m")])

    def test_evaluation_errors(self):
        s = spec_schema({"a": {"type": "string"}, "l": {"type": "array",
                                                        "items": {"type": "string"}}},
                        spec_rules=[{"rule": "self.a == 'x'", "message": "a must be x"},
                                    {"rule": "self.l[3] == 'x'"}])
        got, _ = causes_of(s, obj({"l": []}))
        self.assertEqual(got, [
            ("spec", 'Invalid value: "object": no such key: a evaluating rule: a must be x'),
            ("spec", "Invalid value: \"object\": index out of bounds: 3 evaluating rule: "
                     "self.l[3] == 'x'")])

    def test_int_or_string_is_dynamic(self):
        s = spec_schema({"q": {"x-kubernetes-int-or-string": True, "x-kubernetes-validations": [
            {"rule": "!string(self).startsWith('-')", "message": "not negative"}]}})
        self.assertEqual(causes_of(s, obj({"q": -1}))[0],
                         [("spec.q", 'Invalid value: "": not negative')])
        self.assertEqual(causes_of(s, obj({"q": "-1"}))[0],
                         [("spec.q", 'Invalid value: "": not negative')])
        self.assertEqual(causes_of(s, obj({"q": 3}))[0], [])
        self.assertEqual(causes_of(s, obj({"q": "3Gi"}))[0], [])

    def test_transition_rules_need_an_old_value(self):
        s = spec_schema({"queue": {"type": "string", "x-kubernetes-validations": [
            {"rule": "self == oldSelf", "message": "field is immutable"}]},
            "size": {"type": "integer", "x-kubernetes-validations": [{"rule": "self==oldSelf"}]}})
        old = obj({"queue": "a", "size": 1})
        self.assertEqual(causes_of(s, old)[0], [])   # create: not evaluated
        self.assertEqual(causes_of(s, old, old)[0], [])
        self.assertEqual(causes_of(s, obj({"queue": "b", "size": 2}), old)[0], [
            ("spec.queue", 'Invalid value: "string": field is immutable'),
            ("spec.size", 'Invalid value: "integer": failed rule: self==oldSelf')])
        # set for the first time, or removed: no old (or no new) value there
        self.assertEqual(causes_of(s, obj({"queue": "b"}), obj({}))[0], [])
        self.assertEqual(causes_of(s, obj({}), old)[0], [])

    def test_list_correlation(self):
        item = {"type": "object", "properties": {"name": {"type": "string"},
                                                 "v": {"type": "integer"}},
                "x-kubernetes-validations": [{"rule": "self.v >= oldSelf.v", "message": "no"}]}
        s = spec_schema({
            "m": {"type": "array", "x-kubernetes-list-type": "map",
                  "x-kubernetes-list-map-keys": ["name"], "items": item},
            "atomic": {"type": "array", "items": copy.deepcopy(item)}})
        old = obj({"m": [{"name": "a", "v": 5}, {"name": "b", "v": 5}],
                   "atomic": [{"name": "a", "v": 5}]})
        new = obj({"m": [{"name": "b", "v": 4}, {"name": "a", "v": 6}],
                   "atomic": [{"name": "a", "v": 1}]})
        # map items correlate by key (whatever their order); atomic list items never do
        self.assertEqual(causes_of(s, new, old)[0], [("spec.m[0]", 'Invalid value: "object": no')])

    def test_ratcheting_unchanged_values(self):
        s = spec_schema({"a": {"type": "string", "x-kubernetes-validations": [
            {"rule": "self.size() < 3", "message": "too long"}]}, "b": {"type": "string"}})
        old = obj({"a": "long", "b": "x"})
        got, warnings = causes_of(s, obj({"a": "long", "b": "y"}), old)
        self.assertEqual(got, [])
        self.assertEqual(warnings, ['spec.a: Invalid value: "string": too long'])
        self.assertEqual(causes_of(s, obj({"a": "longer", "b": "y"}), old)[0],
                         [("spec.a", 'Invalid value: "string": too long')])

    def test_blocking_schema_error_skips_rules(self):
        s = spec_schema({"a": {"type": "string"}}, spec_rules=[{"rule": "false"}])
        got, _ = causes_of(s, obj({}), schema_causes=[{"reason": "FieldValueRequired"}])
        self.assertEqual(got, [("<nil>", 'Invalid value: "null": some validation rules were not '
                                         'checked because the object was invalid; correct the '
                                         'existing errors to complete validation')])
        self.assertEqual(causes_of(s, obj({}), schema_causes=[{"reason": "FieldValueInvalid"}])[0],
                         [("spec", 'Invalid value: "object": failed rule: false')])

    def test_kubernetes_libraries(self):
        exprs = [
            # lists
            "[1, 2, 3].sum() == 6", "[3, 1, 2].min() == 1", "[3, 1, 2].max() == 3",
            "[1, 2, 2].isSorted()", "![2, 1].isSorted()", "['a', 'b', 'a'].indexOf('a') == 0",
            "['a', 'b', 'a'].lastIndexOf('a') == 2", "[1].indexOf(5) == -1",
            # regex
            "'abc 123 45'.find('[0-9]+') == '123'", "'abc'.find('[0-9]+') == ''",
            "'a1b2c3'.findAll('[0-9]') == ['1', '2', '3']",
            "'a1b2c3'.findAll('[0-9]', 2) == ['1', '2']",
            # quantity
            "quantity('1000m') == quantity('1')", "isQuantity('1.5Gi')", "!isQuantity('1.5.5')",
            "quantity('1Gi').isGreaterThan(quantity('1G'))", "quantity('1').isLessThan(quantity('2'))",
            "quantity('1.5').add(1).compareTo(quantity('2500m')) == 0",
            "quantity('2k').sub(quantity('1k')) == quantity('1000')",
            "quantity('-3').sign() == -1", "quantity('0').sign() == 0",
            "quantity('2k').asInteger() == 2000", "quantity('1500m').isInteger() == false",
            "quantity('1500m').asApproximateFloat() == 1.5",
            # strings extension
            "'AbC'.lowerAscii() == 'abc'", "'a,b'.split(',') == ['a', 'b']",
            "'hello'.substring(1, 3) == 'el'", "' x '.trim() == 'x'", "['a', 'b'].join('-') == 'a-b'",
            "'abc'.indexOf('c') == 2", "'a.b'.replace('.', '-') == 'a-b'", "'ab'.charAt(1) == 'b'",
            # the standard environment
            "'abc'.matches('^a.c$')", "'x'.startsWith('x') && 'x'.endsWith('x')",
            "[1, 2].exists_one(x, x == 1)", "{'a': 1}.size() == 1", "'a' in {'a': 1}",
        ]
        s = spec_schema({}, spec_rules=[{"rule": e} for e in exprs])
        self.assertEqual(causes_of(s, obj({}))[0], [])
        broken = spec_schema({}, spec_rules=[{"rule": "quantity('5').asInteger() == 4"},
                                             {"rule": "quantity('1500m').asInteger() == 1"},
                                             {"rule": "[1].min() == [].min()"}])
        self.assertEqual(causes_of(broken, obj({}))[0], [
            ("spec", "Invalid value: \"object\": failed rule: quantity('5').asInteger() == 4"),
            ("spec", "Invalid value: \"object\": cannot convert value to integer evaluating rule: "
                     "quantity('1500m').asInteger() == 1"),
            ("spec", "Invalid value: \"object\": min called on empty list evaluating rule: "
                     "[1].min() == [].min()")])


class Compilation(unittest.TestCase):
    """celrules.compile_crd: what a real API server refuses, and what kube-sim cannot run."""

    def test_rule_that_does_not_compile(self):
        bad = crd(spec_schema({"name": {"type": "string"}}, spec_rules=[
            {"rule": "self.nam == 'x'", "message": "m"}]))
        causes, unsupported = celrules.compile_crd(bad)
        self.assertEqual(unsupported, [])
        self.assertEqual(causes, [{
            "reason": "FieldValueInvalid",
            "field": "spec.validation.openAPIV3Schema.properties[spec].x-kubernetes-validations[0]"
                     ".rule",
            "message": 'Invalid value: apiextensions.ValidationRule{Rule:"self.nam == \'x\'", '
                       'Message:"m", MessageExpression:"", '
                       'Reason:(*apiextensions.FieldValueErrorReason)(nil), FieldPath:"", '
                       'OptionalOldSelf:(*bool)(nil)}: compilation failed: ERROR: <input>:1:5: '
                       "undefined field 'nam'\n | self.nam == 'x'\n | ....^"}])

    def test_compile_errors(self):
        cases = {
            "self.a ==": "Syntax error",
            "nosuch(self)": "undeclared reference to 'nosuch' (in container '')",
            "self.a.all(x, x.b == 1)": "undefined field 'b'",
            "self.metadata.namespace == 'x'": None,   # only at the root: see below
            "other == 1": "undeclared reference to 'other' (in container '')",
        }
        for rule, want in cases.items():
            if want is None:
                continue
            s = spec_schema({"a": {"type": "array", "items": {
                "type": "object", "properties": {"c": {"type": "integer"}}}}},
                spec_rules=[{"rule": rule}])
            causes, _ = celrules.compile_crd(crd(s))
            self.assertEqual(len(causes), 1, rule)
            self.assertIn(want, causes[0]["message"], rule)
        root = crd({"type": "object", "x-kubernetes-validations": [
            {"rule": "self.metadata.namespace == 'x'"}, {"rule": "self.metadata.name == 'x'"}]})
        causes, _ = celrules.compile_crd(root)
        self.assertEqual([c["field"] for c in causes],
                         ["spec.validation.openAPIV3Schema.x-kubernetes-validations[0].rule"])
        self.assertIn("undefined field 'namespace'", causes[0]["message"])

    def test_message_expression_and_versions(self):
        s1 = spec_schema({}, spec_rules=[{"rule": "true", "messageExpression": "self.x +"}])
        s2 = spec_schema({"b": {"type": "string"}}, spec_rules=[{"rule": "true"}])
        c = crd(s1, versions=("v1", "v2"))
        c["spec"]["versions"][1]["schema"]["openAPIV3Schema"] = s2
        causes, _ = celrules.compile_crd(c)
        self.assertEqual([x["field"] for x in causes], [
            "spec.versions[0].schema.openAPIV3Schema.properties[spec].x-kubernetes-validations[0]"
            ".messageExpression"])
        self.assertIn("messageExpression compilation failed: ERROR: <input>:1:",
                      causes[0]["message"])

    def test_rules_kube_sim_cannot_evaluate(self):
        s = spec_schema({"ip": {"type": "string"}}, spec_rules=[
            {"rule": "isIP(self.ip)"}, {"rule": "self.?ip.orValue('') != 'x'"},
            {"rule": "oldSelf.hasValue()", "optionalOldSelf": True}])
        causes, unsupported = celrules.compile_crd(crd(s))
        self.assertEqual(causes, [])
        self.assertEqual(len(unsupported), 3, unsupported)
        self.assertIn("function 'isIP'", unsupported[0])
        self.assertIn("optional field selection", unsupported[1])
        self.assertIn("optionalOldSelf", unsupported[2])


class EveryCrdInTheRepository(unittest.TestCase):
    def test_compiles_and_is_evaluable(self):
        """No CRD the repository ships or serves in tests has a rule kube-sim skips."""
        dirs = [os.path.join(ROOT, "charts", c, "crds") for c in sorted(os.listdir(
            os.path.join(ROOT, "charts"))) if os.path.isdir(os.path.join(ROOT, "charts", c, "crds"))]
        dirs.append(os.path.join(ROOT, "tests", "fixtures", "kueue"))
        seen = 0
        for d in dirs:
            for f in sorted(os.listdir(d)):
                if not f.endswith(".yaml"):
                    continue
                with open(os.path.join(d, f), encoding="utf-8") as fh:
                    for doc in yamlmini.load_all(fh.read()):
                        if isinstance(doc, dict) and doc.get("kind") == "CustomResourceDefinition":
                            with self.subTest(file=os.path.join(d, f)):
                                self.assertEqual(celrules.compile_crd(doc), ([], []))
                            seen += 1
        self.assertGreaterEqual(seen, 9)  # our 3 CRDs and the 6 Kueue fixtures, at least


class Serving(unittest.TestCase):
    """Through kube-sim's API: CRD refusal, refusing to serve, a missing runtime."""

    @classmethod
    def setUpClass(cls):
        cls.sim = SimProcess()

    @classmethod
    def tearDownClass(cls):
        cls.sim.stop()

    CRDS = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"

    def test_crd_with_a_rule_that_does_not_compile_is_refused(self):
        bad = crd(spec_schema({}, spec_rules=[{"rule": "self.x.y("}]), name="widgets.example.com")
        st, body = self.sim.req("POST", self.CRDS, bad)
        self.assertEqual(st, 422, body)
        self.assertTrue(body["message"].startswith(
            'CustomResourceDefinition.apiextensions.k8s.io "widgets.example.com" is invalid: '
            "spec.validation.openAPIV3Schema.properties[spec].x-kubernetes-validations[0].rule: "
            'Invalid value: apiextensions.ValidationRule{Rule:"self.x.y("'), body["message"])
        self.assertIn("compilation failed: ERROR: <input>:1:", body["message"])
        self.assertEqual(self.sim.req("GET", self.CRDS + "/widgets.example.com")[0], 404)

    def test_crd_with_a_rule_kube_sim_cannot_evaluate_is_not_served(self):
        c = crd(spec_schema({"a": {"type": "string"}}, spec_rules=[{"rule": "isURL(self.a)"}]),
                name="gadgets.example.com")
        c["spec"]["names"] = {"plural": "gadgets", "singular": "gadget", "kind": "Gadget"}
        st, body = self.sim.req("POST", self.CRDS, c)
        self.assertEqual(st, 201, body)
        est = [x for x in body["status"]["conditions"] if x["type"] == "Established"][0]
        self.assertEqual((est["status"], est["reason"]),
                         ("False", "KubeSimUnsupportedValidationRule"))
        self.assertIn("function 'isURL'", est["message"])
        self.assertEqual(self.sim.req("GET", "/apis/example.com/v1/namespaces/default/gadgets")[0],
                         404)
        self.assertIn("not serving CRD gadgets.example.com", self.sim.stderr())

    def test_start_fails_with_such_a_crd(self):
        c = crd(spec_schema({"a": {"type": "string"}}, spec_rules=[{"rule": "isCIDR(self.a)"}]))
        with tempfile.TemporaryDirectory() as d:
            with open(os.path.join(d, "crd.json"), "w") as f:
                json.dump(c, f)
            p = subprocess.run([sys.executable, os.path.join(HERE, "kube-sim"), "--listen",
                                "127.0.0.1:0", "--kubeconfig-out", os.path.join(d, "kc"),
                                "--crds", d], capture_output=True, text=True, timeout=120)
        self.assertEqual(p.returncode, 2, p.stderr)
        self.assertEqual(p.stdout, "")
        self.assertIn("widgets.example.com", p.stderr)
        self.assertIn("function 'isCIDR'", p.stderr)

    def test_missing_runtime_is_a_hard_failure(self):
        with tempfile.TemporaryDirectory() as d:
            env = dict(os.environ, KUBESIM_CEL_RUNTIME=os.path.join(d, "absent"))
            p = subprocess.run([sys.executable, os.path.join(HERE, "kube-sim"), "--listen",
                                "127.0.0.1:0", "--kubeconfig-out", os.path.join(d, "kc")],
                               capture_output=True, text=True, timeout=60, env=env)
        self.assertEqual(p.returncode, 2, p.stderr)
        self.assertEqual(p.stdout, "")
        self.assertIn("kube-sim's CEL runtime (@bufbuild/cel", p.stderr)
        self.assertIn("run scripts/install-tools", p.stderr)


class KnownDifferences(unittest.TestCase):
    """Each difference from kube-apiserver that tests/kube-sim/README.md lists, pinned."""

    def test_no_overload_or_result_type_check_at_compile(self):
        s = spec_schema({"a": {"type": "string"}}, spec_rules=[{"rule": "self.a + 1 == 2"},
                                                               {"rule": "self.a"}])
        self.assertEqual(celrules.compile_crd(crd(s)), ([], []))   # a real server refuses both
        self.assertEqual(causes_of(s, obj({"a": "x"}))[0], [
            ("spec", "Invalid value: \"object\": 'no such overload': call arguments did not match "
                     "a supported operator, function or macro signature for rule: "
                     "self.a + 1 == 2"),
            ("spec", 'Invalid value: "object": rule did not evaluate to a bool evaluating rule: '
                     'self.a')])

    def test_no_cost_estimate(self):
        s = spec_schema({"l": {"type": "array", "items": {"type": "string"}}}, spec_rules=[
            {"rule": "self.l.all(x, self.l.all(y, self.l.all(z, x + y + z != '')))"}])
        self.assertEqual(celrules.compile_crd(crd(s)), ([], []))   # a real server refuses it

    def test_syntax_error_texts_are_the_engines(self):
        causes, _ = celrules.compile_crd(crd(spec_schema({}, spec_rules=[{"rule": "self.a +"}])))
        self.assertIn("compilation failed: ERROR: <input>:1:8: Syntax error: found + but "
                      "expecting end of input", causes[0]["message"])

    def test_set_and_map_lists_compare_in_order(self):
        s = spec_schema({"s": {"type": "array", "x-kubernetes-list-type": "set",
                               "items": {"type": "string"}}},
                        spec_rules=[{"rule": "self.s == oldSelf.s", "message": "same set"}])
        got, _ = causes_of(s, obj({"s": ["b", "a"]}), obj({"s": ["a", "b"]}))
        self.assertEqual(got, [("spec", 'Invalid value: "object": same set')])  # equal in a real server

    def test_uncorrelatable_old_self_is_not_refused(self):
        s = spec_schema({"l": {"type": "array", "items": {"type": "string",
                                                          "x-kubernetes-validations": [
                                                              {"rule": "self == oldSelf"}]}}})
        self.assertEqual(celrules.compile_crd(crd(s)), ([], []))   # a real server refuses it
        self.assertEqual(causes_of(s, obj({"l": ["b"]}), obj({"l": ["a"]}))[0], [])

    def test_integers_beyond_53_bits(self):
        s = spec_schema({"n": {"type": "integer"}},
                        spec_rules=[{"rule": "self.n == 9007199254740993"}])
        self.assertEqual(len(causes_of(s, obj({"n": 9007199254740993}))[0]), 1)


# ---------------------------------------------------------------------------
# taugrid's own CRDs: each rule has an object that breaks it and one that keeps it
# ---------------------------------------------------------------------------

NS = "tau-system"
API = "/apis/tau.azure.com/v1alpha1/"


def tc(name="cluster", **spec):
    return {"apiVersion": "tau.azure.com/v1alpha1", "kind": "TauCluster",
            "metadata": {"name": name}, "spec": spec}


def tt(name="ml", **spec):
    return {"apiVersion": "tau.azure.com/v1alpha1", "kind": "TauTeam",
            "metadata": {"name": name, "namespace": NS}, "spec": spec}


RBAC = {"principalRef": {"provider": "entra", "name": "ml-group"},
        "kubernetesSubject": {"kind": "Group", "name": "ml"}, "role": "researcher"}


def tw(name="alpha", **spec):
    full = dict(RBAC)
    full.update(spec)
    return {"apiVersion": "tau.azure.com/v1alpha1", "kind": "TauWorkspace",
            "metadata": {"name": name, "namespace": NS},
            "spec": {k: v for k, v in full.items() if v is not None}}


def quota(**q):
    out = {"flavor": "taugrid-gpu-a100", "resource": "nvidia.com/gpu", "nominalQuota": 4}
    out.update(q)
    return [out]


TEAM_NAME = ("a TauTeam name must be a DNS-1123 label (lower-case letters, digits and '-', at "
             "most 63 characters): it names the team's Cohort and is used as a label value")
WS_NAME = ("a TauWorkspace name must be a DNS-1123 label (lower-case letters, digits and '-', at "
           "most 63 characters): it is the default namespace name and a label value")
AUTH = ("authorization.mode workspace-rbac (the default) needs principalRef, kubernetesSubject "
        "and role; cluster-wide must leave all three unset")
CLUSTER_WIDE = {"authorization": {"mode": "cluster-wide"}, "principalRef": None,
                "kubernetesSubject": None, "role": None}

# (crd, rule text) -> (plural, object keeping it, [(object breaking it, field, message)])
OUR_RULES = {
    ("clusters.tau.azure.com", "self.metadata.name == 'cluster'"): (
        "clusters", tc(), [(tc("main"), "<nil>", 'Invalid value: "object": TauCluster is a '
                                                  'singleton and must be named cluster')]),
    ("clusters.tau.azure.com", "(has(self.namespaceMode) && self.namespaceMode == 'Operator') == "
                               "has(self.namespaceAllowlist)"): (
        "clusters", tc(workspaces={"namespaceMode": "Operator",
                                   "namespaceAllowlist": {"file": "/etc/tau/allow"}}),
        [(tc(workspaces={"namespaceMode": "Operator"}), "spec.workspaces",
          'Invalid value: "object": namespaceAllowlist is required in Operator namespace mode '
          'and not allowed in Managed mode'),
         (tc(workspaces={"namespaceAllowlist": {"file": "/etc/tau/allow"}}), "spec.workspaces",
          'Invalid value: "object": namespaceAllowlist is required in Operator namespace mode '
          'and not allowed in Managed mode')]),
    ("clusters.tau.azure.com", "has(self.selector) != has(self.file)"): (
        "clusters", tc(workspaces={"namespaceMode": "Operator", "namespaceAllowlist": {
            "selector": {"matchLabels": {"tau": "yes"}}}}),
        [(tc(workspaces={"namespaceMode": "Operator", "namespaceAllowlist": {
            "selector": {"matchLabels": {"tau": "yes"}}, "file": "/etc/tau/allow"}}),
          "spec.workspaces.namespaceAllowlist",
          'Invalid value: "object": set exactly one of selector and file'),
         (tc(workspaces={"namespaceMode": "Operator", "namespaceAllowlist": {}}),
          "spec.workspaces.namespaceAllowlist",
          'Invalid value: "object": set exactly one of selector and file')]),
    ("teams.tau.azure.com", "size(self.metadata.name) <= 63 && self.metadata.name.matches("
                            "'^[a-z0-9]([-a-z0-9]*[a-z0-9])?$')"): (
        "teams", tt("ml-" + "a" * 60), [
            (tt("ml.team"), "<nil>", 'Invalid value: "object": ' + TEAM_NAME),
            (tt("a" * 64), "<nil>", 'Invalid value: "object": ' + TEAM_NAME)]),
    ("teams.tau.azure.com", "!string(self).startsWith('-')#nominalQuota"): (
        "teams", tt(quota=quota(nominalQuota="8")), [
            (tt(quota=quota(nominalQuota=-8)), "spec.quota[0].nominalQuota",
             'Invalid value: "": nominalQuota cannot be negative')]),
    ("teams.tau.azure.com", "!string(self).startsWith('-')#borrowingLimit"): (
        "teams", tt(quota=quota(borrowingLimit=0)), [
            (tt(quota=quota(borrowingLimit=-1)), "spec.quota[0].borrowingLimit",
             'Invalid value: "": borrowingLimit cannot be negative')]),
    ("teams.tau.azure.com", "!string(self).startsWith('-')#lendingLimit"): (
        "teams", tt(quota=quota(lendingLimit="2")), [
            (tt(quota=quota(lendingLimit=-2)), "spec.quota[0].lendingLimit",
             'Invalid value: "": lendingLimit cannot be negative')]),
    ("workspaces.tau.azure.com", "size(self.metadata.name) <= 63 && self.metadata.name.matches("
                                 "'^[a-z0-9]([-a-z0-9]*[a-z0-9])?$')"): (
        "workspaces", tw("ws-" + "b" * 60), [
            (tw("ws.alpha"), "<nil>", 'Invalid value: "object": ' + WS_NAME),
            (tw("b" * 64), "<nil>", 'Invalid value: "object": ' + WS_NAME)]),
    ("workspaces.tau.azure.com", "(has(self.authorization) && has(self.authorization.mode) && "
                                 "self.authorization.mode == 'cluster-wide') ? "
                                 "!(has(self.principalRef) || has(self.kubernetesSubject) || "
                                 "has(self.role)) : (has(self.principalRef) && "
                                 "has(self.kubernetesSubject) && has(self.role))"): (
        "workspaces", tw(**CLUSTER_WIDE), [
            (tw(role=None), "spec", 'Invalid value: "object": ' + AUTH),
            (tw(authorization={"mode": "cluster-wide"}), "spec",
             'Invalid value: "object": ' + AUTH)]),
    ("workspaces.tau.azure.com", "!has(self.quota) || has(self.teamRef)"): (
        "workspaces", tw(quota=quota(), teamRef={"name": "ml"}), [
            (tw(quota=quota()), "spec", 'Invalid value: "object": quota is a share of a '
                                        "team's allocation, so it needs teamRef")]),
    ("workspaces.tau.azure.com", "self.kind != 'ServiceAccount' || (size(self.name) <= 253 && "
                                 "self.name.matches('^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\\\.[a-z0-9]"
                                 "([-a-z0-9]*[a-z0-9])?)*$'))"): (
        "workspaces", tw(kubernetesSubject={"kind": "ServiceAccount", "name": "trainer.v1"}), [
            (tw(kubernetesSubject={"kind": "ServiceAccount", "name": "Trainer"}),
             "spec.kubernetesSubject", 'Invalid value: "object": a ServiceAccount subject names '
                                       'an account in the workspace namespace and must be a '
                                       'DNS-1123 subdomain')]),
    ("workspaces.tau.azure.com", "self != 'default' && !self.startsWith('kube-')"): (
        "workspaces", tw(target={"namespace": "ml-alpha"}), [
            (tw(target={"namespace": "default"}), "spec.target.namespace",
             'Invalid value: "string": default and kube-* namespaces cannot host a workspace'),
            (tw(target={"namespace": "kube-ml"}), "spec.target.namespace",
             'Invalid value: "string": default and kube-* namespaces cannot host a workspace')]),
    ("workspaces.tau.azure.com", "!string(self).startsWith('-')#nominalQuota"): (
        "workspaces", tw(quota=quota(nominalQuota="1"), teamRef={"name": "ml"}), [
            (tw(quota=quota(nominalQuota=-1), teamRef={"name": "ml"}),
             "spec.quota[0].nominalQuota", 'Invalid value: "": nominalQuota cannot be negative')]),
    ("workspaces.tau.azure.com", "!string(self).startsWith('-')#borrowingLimit"): (
        "workspaces", tw(quota=quota(borrowingLimit=1), teamRef={"name": "ml"}), [
            (tw(quota=quota(borrowingLimit=-1), teamRef={"name": "ml"}),
             "spec.quota[0].borrowingLimit",
             'Invalid value: "": borrowingLimit cannot be negative')]),
    ("workspaces.tau.azure.com", "!string(self).startsWith('-')#lendingLimit"): (
        "workspaces", tw(quota=quota(lendingLimit="1"), teamRef={"name": "ml"}), [
            (tw(quota=quota(lendingLimit=-1), teamRef={"name": "ml"}),
             "spec.quota[0].lendingLimit", 'Invalid value: "": lendingLimit cannot be negative')]),
}


def our_rules():
    """(crd name, rule text[#field for the quota rules]) of every rule in OUR_CRDS."""
    out = []
    for f in sorted(os.listdir(OUR_CRDS)):
        with open(os.path.join(OUR_CRDS, f), encoding="utf-8") as fh:
            for d in yamlmini.load_all(fh.read()):
                for v in d["spec"]["versions"]:
                    def walk(s, name):
                        for r in s.get("x-kubernetes-validations") or []:
                            suffix = "#" + name if name.endswith(("Quota", "Limit")) else ""
                            out.append((d["metadata"]["name"], r["rule"] + suffix))
                        for k, p in (s.get("properties") or {}).items():
                            walk(p, k)
                        if isinstance(s.get("items"), dict):
                            walk(s["items"], name)
                    walk(v["schema"]["openAPIV3Schema"], "")
    return out


class OurCrdRules(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.sim = SimProcess(["--crds", OUR_CRDS])
        cls.sim.ok("POST", "/api/v1/namespaces", {"metadata": {"name": NS}})

    @classmethod
    def tearDownClass(cls):
        cls.sim.stop()

    def test_every_rule_has_cases(self):
        self.assertEqual(sorted(our_rules()), sorted(OUR_RULES))

    def test_no_rule_is_skipped(self):
        self.assertNotIn("not enforced", self.sim.stderr())
        self.assertNotIn("not serving", self.sim.stderr())

    def path(self, plural, o):
        ns = "namespaces/%s/" % NS if plural != "clusters" else ""
        return API + ns + plural

    def test_each_rule_refuses_the_object_breaking_it(self):
        for (crd_name, rule), (plural, good, bad) in OUR_RULES.items():
            for o, field, message in bad:
                with self.subTest(rule=rule, name=o["metadata"]["name"], field=field):
                    st, body = self.sim.req("POST", self.path(plural, o), o)
                    self.assertEqual(st, 422, body)
                    causes = [(c["field"], c["message"]) for c in body["details"]["causes"]]
                    self.assertIn((field, message), causes)
                    self.assertIn("%s: %s" % (field, message), body["message"])
                    self.assertEqual(self.sim.req("GET", self.path(plural, o) + "/" +
                                                  o["metadata"]["name"])[0], 404)

    def test_each_rule_keeps_the_object_keeping_it(self):
        for (crd_name, rule), (plural, good, bad) in OUR_RULES.items():
            with self.subTest(rule=rule):
                st, body = self.sim.req("POST", self.path(plural, good) + "?dryRun=All", good)
                self.assertEqual(st, 201, body)

    def test_kubectl_shows_the_api_servers_message(self):
        p = self.sim.kubectl("apply", "-f", "-", input=json.dumps(tc("main")), check=False)
        self.assertNotEqual(p.returncode, 0)
        self.assertIn('The TauCluster "main" is invalid: <nil>: Invalid value: "object": '
                      "TauCluster is a singleton and must be named cluster", p.stderr)


if __name__ == "__main__":
    unittest.main()
