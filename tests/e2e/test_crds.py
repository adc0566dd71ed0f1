"""Static and live checks of taugrid's Kubernetes API (charts/taugrid).

What is checked, without a cluster:
  * every CRD in charts/taugrid/crds parses and names the right group, kind, plural, short
    names, scope, version and status subresource;
  * every schema is structural (each node typed, no properties next to additionalProperties,
    logical junctors only in the int-or-string form, list-map keys required or defaulted, only
    known keywords, defaults valid for their own schema);
  * printer columns point at declared fields;
  * the published TauGrid sample manifests (tests/fixtures/taugrid) and taugrid's own samples
    (charts/taugrid/samples) validate against the schemas: every field they use is declared,
    types, enums, patterns and bounds hold;
  * invalid objects are rejected, defaults are what docs/api.md says;
  * the RBAC manifests (charts/tau-aggregator/rbac, charts/tau-node-agent/rbac) grant what the
    components need and nothing broad.

With kube-sim (tests/kube-sim/kube-sim) present, a live test applies the CRDs and samples
with kubectl and reads them back through the short names and printer columns; kube-sim compiles
the CRDs' CEL rules and evaluates them on every sample (tests/kube-sim/test_cel.py has an object
breaking and one keeping each rule).

Standard library only. YAML comes from PyYAML when importable, otherwise from kube-sim's own
standard-library loader (tests/kube-sim/kubesim/yamlmini.py).
"""
import copy
import os
import re
import shutil
import subprocess
import tempfile
import unittest

from harness import paths, require
from harness.kubesim import KubeSim

ROOT = paths.ROOT
CHART = os.path.join(ROOT, "charts", "taugrid")
CRD_DIR = os.path.join(CHART, "crds")
SAMPLES_DIR = os.path.join(CHART, "samples")
# The RBAC manifests live in the component charts that render them.
RBAC_DIRS = tuple(os.path.join(ROOT, "charts", c, "rbac") for c in ("tau-aggregator",
                                                                      "tau-node-agent"))
TEMPLATES_DIR = os.path.join(CHART, "templates")
PUBLISHED_DIR = os.path.join(ROOT, "tests", "fixtures", "taugrid")
PUBLISHED_SAMPLES = ("tau.azure.com_v1alpha1_taucluster.yaml",
                     "tau.azure.com_v1alpha1_tauworkspace.yaml")

# --- YAML ------------------------------------------------------------------------------------

try:
    import yaml as _pyyaml  # noqa: F401
except ImportError:
    _pyyaml = None

from kubesim import celrules as _celrules  # noqa: E402  (the harness put tests/kube-sim on sys.path)
from kubesim import yamlmini as _yamlmini  # noqa: E402


def load_all(path):
    with open(path, encoding="utf-8") as f:
        text = f.read()
    if _pyyaml is not None:
        return [d for d in _pyyaml.safe_load_all(text) if d is not None]
    return _yamlmini.load_all(text)


def load_one(path):
    docs = load_all(path)
    if len(docs) != 1:
        raise AssertionError("%s: expected one YAML document, found %d" % (path, len(docs)))
    return docs[0]


def yaml_files(d):
    return sorted(os.path.join(d, n) for n in os.listdir(d) if n.endswith((".yaml", ".yml")))


# --- CRD expectations ------------------------------------------------------------------------

EXPECTED = {
    "TauWorkspace": dict(file="tau.azure.com_workspaces.yaml", plural="workspaces",
                         singular="workspace", short=["tw"], scope="Namespaced",
                         columns=["Phase", "Namespace", "Queue", "Age"]),
    "TauTeam": dict(file="tau.azure.com_teams.yaml", plural="teams", singular="team",
                    short=["tt"], scope="Namespaced", columns=["Phase", "Cohort", "Age"]),
    "TauCluster": dict(file="tau.azure.com_clusters.yaml", plural="clusters",
                       singular="cluster", short=["tc"], scope="Cluster",
                       columns=["Mode", "Age"]),
}
GROUP = "tau.azure.com"
VERSION = "v1alpha1"

# Keywords an apiextensions.k8s.io/v1 schema node may carry (JSONSchemaProps), minus the
# ones CRDs reject ($ref, definitions, patternProperties, dependencies, additionalItems, id,
# $schema, uniqueItems: true). A typo such as `maxlength` fails the structural test.
KNOWN_KEYWORDS = {
    "type", "format", "title", "description", "default", "maximum", "exclusiveMaximum",
    "minimum", "exclusiveMinimum", "maxLength", "minLength", "pattern", "maxItems", "minItems",
    "multipleOf", "enum", "maxProperties", "minProperties", "required", "items", "allOf",
    "oneOf", "anyOf", "not", "properties", "additionalProperties", "nullable", "example",
    "externalDocs", "x-kubernetes-preserve-unknown-fields", "x-kubernetes-embedded-resource",
    "x-kubernetes-int-or-string", "x-kubernetes-list-map-keys", "x-kubernetes-list-type",
    "x-kubernetes-map-type", "x-kubernetes-validations",
}
JUNCTORS = ("allOf", "anyOf", "oneOf", "not")
INT_OR_STRING_ANYOF = [{"type": "integer"}, {"type": "string"}]


def crd_path(kind):
    return os.path.join(CRD_DIR, EXPECTED[kind]["file"])


_CRD_CACHE = {}


def crd(kind):
    if kind not in _CRD_CACHE:
        _CRD_CACHE[kind] = load_one(crd_path(kind))
    return _CRD_CACHE[kind]


def root_schema(kind):
    return crd(kind)["spec"]["versions"][0]["schema"]["openAPIV3Schema"]


def walk_schema(node, path="", at_root=True):
    """Yield (path, schema node) for every schema node, depth first."""
    yield path, node
    for k, sub in (node.get("properties") or {}).items():
        yield from walk_schema(sub, path + "." + k, False)
    ap = node.get("additionalProperties")
    if isinstance(ap, dict):
        yield from walk_schema(ap, path + ".*", False)
    if isinstance(node.get("items"), dict):
        yield from walk_schema(node["items"], path + "[]", False)


# --- a small validator for the subset of OpenAPI the CRDs use ----------------------------------

def type_ok(value, schema):
    if schema.get("x-kubernetes-int-or-string"):
        return isinstance(value, (int, str)) and not isinstance(value, bool)
    t = schema.get("type")
    if t == "object":
        return isinstance(value, dict)
    if t == "array":
        return isinstance(value, list)
    if t == "string":
        return isinstance(value, str)
    if t == "integer":
        return isinstance(value, int) and not isinstance(value, bool)
    if t == "number":
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if t == "boolean":
        return isinstance(value, bool)
    return t is None


def apply_defaults(value, schema):
    """Apply schema defaults in place the way the API server does: parents first."""
    if isinstance(value, dict):
        props = schema.get("properties") or {}
        for k, sub in props.items():
            if k not in value and "default" in sub:
                value[k] = copy.deepcopy(sub["default"])
            if k in value:
                apply_defaults(value[k], sub)
        ap = schema.get("additionalProperties")
        if isinstance(ap, dict):
            for k in value:
                if k not in props:
                    apply_defaults(value[k], ap)
    elif isinstance(value, list) and isinstance(schema.get("items"), dict):
        for item in value:
            apply_defaults(item, schema["items"])
    return value


def validate(value, schema, path="", errors=None, is_root=True):
    """Return a list of 'path: problem' strings; empty when value fits schema."""
    if errors is None:
        errors = []
    where = path or "<root>"
    if not type_ok(value, schema):
        errors.append("%s: %r is not of type %s" % (where, value, schema.get("type")))
        return errors
    if "enum" in schema and value not in schema["enum"]:
        errors.append("%s: %r not in %r" % (where, value, schema["enum"]))
    if isinstance(value, str):
        if "maxLength" in schema and len(value) > schema["maxLength"]:
            errors.append("%s: longer than %d" % (where, schema["maxLength"]))
        if "minLength" in schema and len(value) < schema["minLength"]:
            errors.append("%s: shorter than %d" % (where, schema["minLength"]))
        if "pattern" in schema and re.search(schema["pattern"], value) is None:
            errors.append("%s: %r does not match %s" % (where, value, schema["pattern"]))
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        if "minimum" in schema and value < schema["minimum"]:
            errors.append("%s: below minimum %s" % (where, schema["minimum"]))
        if "maximum" in schema and value > schema["maximum"]:
            errors.append("%s: above maximum %s" % (where, schema["maximum"]))
    if isinstance(value, dict):
        if "maxProperties" in schema and len(value) > schema["maxProperties"]:
            errors.append("%s: more than %d properties" % (where, schema["maxProperties"]))
        if "minProperties" in schema and len(value) < schema["minProperties"]:
            errors.append("%s: fewer than %d properties" % (where, schema["minProperties"]))
        for req in schema.get("required") or []:
            if req not in value:
                errors.append("%s: missing required field %s" % (where, req))
        props = schema.get("properties") or {}
        ap = schema.get("additionalProperties")
        for k, v in value.items():
            sub_path = path + "." + k
            if k in props:
                if is_root and k == "metadata":
                    continue  # ObjectMeta is validated by the API server itself
                validate(v, props[k], sub_path, errors, False)
            elif isinstance(ap, dict):
                validate(v, ap, sub_path, errors, False)
            else:
                errors.append("%s: unknown field (not declared in the schema)" % sub_path)
    if isinstance(value, list):
        if "maxItems" in schema and len(value) > schema["maxItems"]:
            errors.append("%s: more than %d items" % (where, schema["maxItems"]))
        if "minItems" in schema and len(value) < schema["minItems"]:
            errors.append("%s: fewer than %d items" % (where, schema["minItems"]))
        items = schema.get("items") or {}
        for i, item in enumerate(value):
            validate(item, items, "%s[%d]" % (path, i), errors, False)
        lt = schema.get("x-kubernetes-list-type")
        if lt == "map":
            keys = schema.get("x-kubernetes-list-map-keys") or []
            seen = set()
            for item in value:
                if isinstance(item, dict):
                    k = tuple(repr(item.get(x)) for x in keys)
                    if k in seen:
                        errors.append("%s: duplicate entry for keys %s=%s" % (where, keys, k))
                    seen.add(k)
        elif lt == "set":
            if len({repr(x) for x in value}) != len(value):
                errors.append("%s: duplicate entries in a set" % where)
    # x-kubernetes-validations rules are CEL: check_object evaluates them with kube-sim's engine
    return errors


def kind_of(obj):
    return obj.get("kind")


def check_object(obj):
    """Default and validate a tau.azure.com object against its CRD; return errors."""
    kind = kind_of(obj)
    if kind not in EXPECTED:
        return ["unexpected kind %r" % kind]
    if obj.get("apiVersion") != GROUP + "/" + VERSION:
        return ["apiVersion %r is not %s/%s" % (obj.get("apiVersion"), GROUP, VERSION)]
    schema = root_schema(kind)
    o = apply_defaults(copy.deepcopy(obj), schema)
    errs = validate(o, schema)
    if not errs:  # as the API server: CEL rules run once the schema checks pass
        causes, _ = _celrules.validate(_celrules.rule_tree(schema), o, None, [])
        errs.extend("%s: %s" % (c["field"], c["message"]) for c in causes)
    if EXPECTED[kind]["scope"] == "Cluster" and "namespace" in obj.get("metadata", {}):
        errs.append("metadata.namespace set on a cluster-scoped object")
    return errs


def field_paths(value, path=()):
    """Every field path a manifest uses, as tuples of keys; list elements become "[]"."""
    if isinstance(value, dict):
        for k, v in value.items():
            p = path + (k,)
            yield p
            yield from field_paths(v, p)
    elif isinstance(value, list):
        for v in value:
            yield from field_paths(v, path + ("[]",))


def path_text(parts):
    return "".join(p if p == "[]" else "." + p for p in parts)


def schema_has_path(schema, path):
    """Schema node at path (a tuple of keys and "[]", or a simple ".a.b" string), or None."""
    parts = tuple(path[1:].split(".")) if isinstance(path, str) else path
    node = schema
    for part in parts:
        if part == "[]":
            node = node.get("items")
        else:
            name = part
            props = node.get("properties") or {}
            if name in props:
                node = props[name]
            elif isinstance(node.get("additionalProperties"), dict):
                node = node["additionalProperties"]
            else:
                return None
        if node is None:
            return None
    return node


# --- tests: CRD files --------------------------------------------------------------------------

class CrdFilesTest(unittest.TestCase):
    def test_one_file_per_kind(self):
        names = sorted(n for n in os.listdir(CRD_DIR) if n.endswith(".yaml"))
        self.assertEqual(names, sorted(e["file"] for e in EXPECTED.values()))

    def test_names_scope_versions(self):
        for kind, exp in EXPECTED.items():
            with self.subTest(kind=kind):
                c = crd(kind)
                self.assertEqual(c["apiVersion"], "apiextensions.k8s.io/v1")
                self.assertEqual(c["kind"], "CustomResourceDefinition")
                self.assertEqual(c["metadata"]["name"], exp["plural"] + "." + GROUP)
                spec = c["spec"]
                self.assertEqual(spec["group"], GROUP)
                self.assertEqual(spec["scope"], exp["scope"])
                names = spec["names"]
                self.assertEqual(names["kind"], kind)
                self.assertEqual(names["listKind"], kind + "List")
                self.assertEqual(names["plural"], exp["plural"])
                self.assertEqual(names["singular"], exp["singular"])
                self.assertEqual(names["shortNames"], exp["short"])
                self.assertIn("tau", names.get("categories", []))
                self.assertEqual(len(spec["versions"]), 1)
                v = spec["versions"][0]
                self.assertEqual(v["name"], VERSION)
                self.assertIs(v["served"], True)
                self.assertIs(v["storage"], True)
                self.assertEqual(v["subresources"], {"status": {}})

    def test_loaders_agree(self):
        pyyaml = require.module("yaml", "python3-yaml")
        files = (yaml_files(CRD_DIR) + yaml_files(SAMPLES_DIR)
                 + sum(map(yaml_files, RBAC_DIRS), [])
                 + [os.path.join(CHART, "values.yaml"), os.path.join(CHART, "Chart.yaml")])
        for path in files:
            with self.subTest(file=os.path.relpath(path, ROOT)):
                with open(path, encoding="utf-8") as f:
                    text = f.read()
                a = [d for d in pyyaml.safe_load_all(text) if d is not None]
                self.assertEqual(a, _yamlmini.load_all(text))


class StructuralSchemaTest(unittest.TestCase):
    def check_node(self, path, node, problems):
        for key in node:
            if key not in KNOWN_KEYWORDS:
                problems.append("%s: unknown or forbidden keyword %r" % (path, key))
        int_or_string = node.get("x-kubernetes-int-or-string") is True
        if int_or_string:
            if "type" in node:
                problems.append("%s: int-or-string must not declare type" % path)
            if "anyOf" in node and node["anyOf"] != INT_OR_STRING_ANYOF:
                problems.append("%s: int-or-string anyOf must be exactly integer|string" % path)
        elif not node.get("type"):
            problems.append("%s: no type" % path)
        for j in JUNCTORS:
            if j in node and not (int_or_string and j == "anyOf"):
                problems.append("%s: logical junctor %s outside the int-or-string form" % (path, j))
        if "x-kubernetes-preserve-unknown-fields" in node:
            problems.append("%s: preserve-unknown-fields turns off pruning; declare the fields" % path)
        if node.get("type") == "object":
            if "properties" in node and "additionalProperties" in node:
                problems.append("%s: properties and additionalProperties together" % path)
            if "properties" not in node and "additionalProperties" not in node and path != ".metadata":
                problems.append("%s: object without properties prunes every field" % path)
            for req in node.get("required") or []:
                if req not in (node.get("properties") or {}):
                    problems.append("%s: required %r is not a property" % (path, req))
        if node.get("type") == "array":
            if not isinstance(node.get("items"), dict):
                problems.append("%s: array without items" % path)
            lt = node.get("x-kubernetes-list-type")
            if lt not in ("atomic", "set", "map"):
                problems.append("%s: arrays must say x-kubernetes-list-type" % path)
            items = node.get("items") or {}
            if lt == "map":
                keys = node.get("x-kubernetes-list-map-keys") or []
                if not keys or items.get("type") != "object":
                    problems.append("%s: list-map needs object items and map keys" % path)
                for k in keys:
                    sub = (items.get("properties") or {}).get(k)
                    if sub is None:
                        problems.append("%s: map key %r is not an item property" % (path, k))
                    elif k not in (items.get("required") or []) and "default" not in sub:
                        problems.append("%s: map key %r must be required or defaulted" % (path, k))
            if lt == "set" and items.get("type") in ("object", "array"):
                problems.append("%s: set items must be scalars" % path)
        elif "x-kubernetes-list-type" in node or "x-kubernetes-list-map-keys" in node:
            problems.append("%s: list-type on a non-array" % path)
        if "enum" in node:
            for v in node["enum"]:
                if not type_ok(v, node):
                    problems.append("%s: enum value %r does not match type" % (path, v))
        if "pattern" in node:
            try:
                re.compile(node["pattern"])
            except re.error as e:
                problems.append("%s: pattern does not compile: %s" % (path, e))
        if "default" in node:
            errs = validate(copy.deepcopy(node["default"]), node, path)
            problems.extend("%s: default invalid: %s" % (path, e) for e in errs)
        for rule in node.get("x-kubernetes-validations") or []:
            if not isinstance(rule.get("rule"), str) or not rule["rule"].strip():
                problems.append("%s: CEL rule missing" % path)
            if not rule.get("message"):
                problems.append("%s: CEL rule without message" % path)
        if path and "description" not in node and path not in (".apiVersion", ".kind", ".metadata"):
            # Every declared field explains itself in `kubectl explain`.
            if not path.endswith("[]") and not path.endswith(".*"):
                problems.append("%s: no description" % path)

    def test_structural(self):
        for kind in EXPECTED:
            with self.subTest(kind=kind):
                schema = root_schema(kind)
                self.assertEqual(schema.get("type"), "object")
                props = schema.get("properties") or {}
                for k in ("apiVersion", "kind", "metadata", "spec", "status"):
                    self.assertIn(k, props)
                self.assertEqual(props["metadata"], {"type": "object"},
                                 "metadata may not be restricted beyond type: object")
                problems = []
                for path, node in walk_schema(schema):
                    self.check_node(path, node, problems)
                self.assertEqual(problems, [])

    def test_conditions_shape(self):
        for kind in EXPECTED:
            with self.subTest(kind=kind):
                cond = root_schema(kind)["properties"]["status"]["properties"]["conditions"]
                self.assertEqual(cond["x-kubernetes-list-type"], "map")
                self.assertEqual(cond["x-kubernetes-list-map-keys"], ["type"])
                item = cond["items"]
                self.assertEqual(sorted(item["required"]),
                                 ["lastTransitionTime", "message", "reason", "status", "type"])
                props = item["properties"]
                self.assertEqual(props["status"]["enum"], ["True", "False", "Unknown"])
                self.assertEqual(props["lastTransitionTime"]["format"], "date-time")
                self.assertEqual(props["observedGeneration"]["type"], "integer")
                phase = root_schema(kind)["properties"]["status"]["properties"]["phase"]
                self.assertEqual(phase["enum"], ["Pending", "Ready", "Degraded"])

    def test_printer_columns(self):
        metadata_fields = {"creationTimestamp": "date", "name": "string", "namespace": "string"}
        for kind, exp in EXPECTED.items():
            with self.subTest(kind=kind):
                cols = crd(kind)["spec"]["versions"][0]["additionalPrinterColumns"]
                default_cols = [c["name"] for c in cols if not c.get("priority")]
                self.assertEqual(default_cols, exp["columns"])
                for c in cols:
                    jp = c["jsonPath"]
                    self.assertRegex(jp, r"^(\.[A-Za-z][A-Za-z0-9]*)+$", "simple path expected")
                    if jp.startswith(".metadata."):
                        field = jp[len(".metadata."):]
                        self.assertIn(field, metadata_fields)
                        self.assertEqual(c["type"], metadata_fields[field])
                        continue
                    node = schema_has_path(root_schema(kind), jp)
                    self.assertIsNotNone(node, "%s column %s: %s is not declared" %
                                         (kind, c["name"], jp))
                    want = {"string": "string", "integer": "integer", "boolean": "boolean",
                            "number": "number"}[c["type"]]
                    self.assertEqual(node.get("type"), want, "%s column %s" % (kind, c["name"]))


# --- tests: manifests against the schemas ------------------------------------------------------

class PublishedSamplesTest(unittest.TestCase):
    def test_every_field_is_declared(self):
        for name in PUBLISHED_SAMPLES:
            obj = load_one(os.path.join(PUBLISHED_DIR, name))
            schema = root_schema(kind_of(obj))
            for p in sorted(set(field_paths(obj))):
                if p[0] in ("apiVersion", "kind", "metadata"):
                    continue
                with self.subTest(sample=name, field=path_text(p)):
                    self.assertIsNotNone(schema_has_path(schema, p),
                                         "published sample uses %s, which the CRD lacks" %
                                         path_text(p))

    def test_samples_validate(self):
        for name in PUBLISHED_SAMPLES:
            with self.subTest(sample=name):
                obj = load_one(os.path.join(PUBLISHED_DIR, name))
                self.assertEqual(check_object(obj), [])


class OwnSamplesTest(unittest.TestCase):
    def test_samples_validate(self):
        kinds = set()
        for path in yaml_files(SAMPLES_DIR):
            for obj in load_all(path):
                kinds.add(kind_of(obj))
                with self.subTest(sample=os.path.basename(path), name=obj["metadata"]["name"]):
                    self.assertEqual(check_object(obj), [])
        self.assertEqual(kinds, set(EXPECTED))


def workspace(**spec):
    base = {
        "principalRef": {"provider": "entra", "name": "g"},
        "kubernetesSubject": {"kind": "Group", "name": "g"},
        "role": "researcher",
    }
    base.update(spec)
    return {"apiVersion": "tau.azure.com/v1alpha1", "kind": "TauWorkspace",
            "metadata": {"name": "ws", "namespace": "tau-system"},
            "spec": {k: v for k, v in base.items() if v is not None}}


def team(name="t", **spec):
    return {"apiVersion": "tau.azure.com/v1alpha1", "kind": "TauTeam",
            "metadata": {"name": name, "namespace": "tau-system"}, "spec": spec}


def cluster(name="cluster", **spec):
    return {"apiVersion": "tau.azure.com/v1alpha1", "kind": "TauCluster",
            "metadata": {"name": name}, "spec": spec}


class ValidationRulesTest(unittest.TestCase):
    def assertValid(self, obj):
        self.assertEqual(check_object(obj), [])

    def assertInvalid(self, obj, fragment):
        errs = check_object(obj)
        self.assertTrue(any(fragment in e for e in errs), "expected %r in %r" % (fragment, errs))

    def test_workspace_defaults(self):
        ws = apply_defaults(workspace(target={"namespace": "ml-a"}), root_schema("TauWorkspace"))
        self.assertEqual(ws["spec"]["authorization"], {"mode": "workspace-rbac"})
        self.assertEqual(ws["spec"]["target"],
                         {"namespace": "ml-a", "createNamespace": False, "adopt": False})

    def test_workspace_authorization(self):
        self.assertValid(workspace())
        self.assertInvalid(workspace(role=None), "authorization.mode workspace-rbac")
        self.assertInvalid(workspace(authorization={"mode": "cluster-wide"}),
                           "cluster-wide must leave")
        self.assertValid(workspace(authorization={"mode": "cluster-wide"}, role=None,
                                   principalRef=None, kubernetesSubject=None))
        self.assertInvalid(workspace(authorization={"mode": "namespace"}), "not in")
        self.assertInvalid(workspace(role="cluster-admin"), "not in")

    def test_workspace_subject(self):
        for kind in ("User", "Group", "ServiceAccount"):
            self.assertValid(workspace(kubernetesSubject={"kind": kind, "name": "runner"}))
        self.assertInvalid(workspace(kubernetesSubject={"kind": "Robot", "name": "x"}), "not in")
        self.assertInvalid(workspace(kubernetesSubject={"kind": "ServiceAccount",
                                                        "name": "Not_A_Name"}),
                           "ServiceAccount subject")
        self.assertValid(workspace(kubernetesSubject={"kind": "User",
                                                      "name": "alice@example.com"}))
        self.assertInvalid(workspace(kubernetesSubject={"kind": "User"}), "missing required")

    def test_workspace_names_and_target(self):
        self.assertValid(workspace(target={"namespace": "a" * 63}))
        self.assertInvalid(workspace(target={"namespace": "a" * 64}), "longer than 63")
        self.assertInvalid(workspace(target={"namespace": "ML_Alpha"}), "does not match")
        self.assertInvalid(workspace(target={"namespace": "kube-system"}), "kube-*")
        self.assertInvalid(workspace(target={"namespace": "default"}), "kube-*")
        ws = workspace()
        ws["metadata"]["name"] = "Alpha.Team"
        self.assertInvalid(ws, "DNS-1123 label")
        self.assertInvalid(workspace(queue="q" * 64), "longer than 63")
        self.assertInvalid(workspace(teamRef={}), "missing required field name")

    def test_workspace_quota_and_defaults(self):
        q = [{"flavor": "h100-80gb", "resource": "nvidia.com/gpu", "nominalQuota": 8}]
        self.assertValid(workspace(teamRef={"name": "research"}, quota=q))
        self.assertInvalid(workspace(quota=q), "needs teamRef")
        self.assertInvalid(workspace(defaults={"ttlSecondsAfterFinished": 60}), "below minimum")
        self.assertInvalid(workspace(defaults={"priority": "urgent"}), "not in")
        self.assertInvalid(workspace(defaults={"unknown": 1}), "unknown field")
        self.assertInvalid(workspace(workloadIdentity={"serviceAccountName": "sa"}),
                           "missing required field clientId")

    def test_unknown_fields_rejected(self):
        self.assertInvalid(workspace(namespace="x"), "unknown field")
        self.assertInvalid(cluster(queues={"capacityTeam": "research"}), "unknown field")

    def test_team_quota(self):
        self.assertValid(team())
        self.assertValid(team(name="research", **{}))
        good = [{"flavor": "a100-80gb", "resource": "memory", "nominalQuota": "1760Gi",
                 "borrowingLimit": "0", "lendingLimit": 0},
                {"flavor": "a100-80gb", "resource": "cpu", "nominalQuota": "191500m"},
                {"flavor": "a100-80gb", "resource": "x/y", "nominalQuota": "1e3"}]
        self.assertValid(team(quota=good))
        for bad, frag in (("-1", "does not match"), (-1, "cannot be negative"),
                          ("1.5 Gi", "does not match"), ("1K", "does not match"),
                          (True, "not of type")):
            with self.subTest(quantity=bad):
                self.assertInvalid(team(quota=[{"flavor": "f", "resource": "cpu",
                                                "nominalQuota": bad}]), frag)
        dup = [{"flavor": "f", "resource": "cpu", "nominalQuota": 1}] * 2
        self.assertInvalid(team(quota=dup), "duplicate entry")
        self.assertInvalid(team(quota=[{"flavor": "f", "nominalQuota": 1}]), "missing required")
        self.assertInvalid(team(name="Research"), "DNS-1123 label")

    def test_cluster_singleton_and_defaults(self):
        self.assertInvalid(cluster(name="prod"), "singleton")
        c = apply_defaults(cluster(), root_schema("TauCluster"))
        self.assertEqual(c["spec"]["managementMode"], "Observe")
        self.assertEqual(c["spec"]["deletionPolicy"], "Retain")
        self.assertEqual(c["spec"]["queues"], {"ownership": "External"})
        self.assertEqual(c["spec"]["workspaces"],
                         {"namespaceMode": "Managed", "allowSharedNamespaces": False})
        self.assertEqual(c["spec"]["workspaceDefaults"], {"defaultQueue": "jobqueue"})
        bare = {"apiVersion": "tau.azure.com/v1alpha1", "kind": "TauCluster",
                "metadata": {"name": "cluster"}}
        self.assertEqual(apply_defaults(bare, root_schema("TauCluster"))["spec"]["managementMode"],
                         "Observe")
        self.assertInvalid(cluster(managementMode="Auto"), "not in")

    def test_cluster_namespace_modes(self):
        sel = {"selector": {"matchLabels": {"tau.azure.com/workspace-allowed": "true"}}}
        self.assertValid(cluster(workspaces={"namespaceMode": "Operator",
                                             "namespaceAllowlist": sel}))
        self.assertValid(cluster(workspaces={"namespaceMode": "Operator",
                                             "namespaceAllowlist": {"file": "/etc/tau/ns.json"}}))
        self.assertInvalid(cluster(workspaces={"namespaceMode": "Operator"}),
                           "required in Operator")
        self.assertInvalid(cluster(workspaces={"namespaceAllowlist": sel}), "required in Operator")
        both = dict(sel, file="/etc/tau/ns.json")
        self.assertInvalid(cluster(workspaces={"namespaceMode": "Operator",
                                               "namespaceAllowlist": both}), "exactly one")
        self.assertValid(cluster(workspaces={"namespaceMap": {"alpha": "ml-alpha-prod"}}))
        self.assertInvalid(cluster(workspaces={"namespaceMap": {"alpha": "ML"}}), "does not match")

    def test_cluster_capacity_team(self):
        self.assertValid(cluster(managementMode="Reconcile",
                                 queues={"capacityTeamRef": {"name": "research"}}))
        self.assertInvalid(cluster(queues={"capacityTeamRef": {}}), "missing required field name")
        self.assertInvalid(cluster(nodes={"labelRules": [{"match": {"vmSizes": ["a"]}}]}),
                           "missing required field labels")
        self.assertInvalid(cluster(nodes={"labelRules": [{"labels": {}}]}), "fewer than 1")


# --- tests: chart and RBAC ---------------------------------------------------------------------

def allows(rules, group, resource, verb, name=None):
    for r in rules:
        if group not in r.get("apiGroups", []) or resource not in r.get("resources", []):
            continue
        if verb not in r.get("verbs", []):
            continue
        names = r.get("resourceNames")
        if names and name not in names:
            continue
        return True
    return False


def rbac_doc(filename, kind, name):
    for rbac in RBAC_DIRS:
        path = os.path.join(rbac, filename)
        for d in load_all(path) if os.path.exists(path) else []:
            if d["kind"] == kind and d["metadata"]["name"] == name:
                return d
    raise AssertionError("%s %s not in rbac/%s" % (kind, name, filename))


READ = ("get", "list", "watch")
CRUD = ("get", "list", "watch", "create", "update", "patch", "delete")
AGGREGATOR_NEEDS = [  # what its code uses; e2e/rbac-aggregator proves each verb needed
    ("", "nodes", ("list", "watch")),
    ("authentication.k8s.io", "tokenreviews", ("create",)),
    ("authorization.k8s.io", "subjectaccessreviews", ("create",)),
    ("tau.azure.com", "workspaces", READ + ("update",)),
    ("tau.azure.com", "teams", ("list", "watch", "update")),
    ("tau.azure.com", "clusters", ("list", "watch")),
    ("tau.azure.com", "workspaces/status", ("update",)),
    ("tau.azure.com", "teams/status", ("update",)),
    ("tau.azure.com", "clusters/status", ("update",)),
    ("", "namespaces", CRUD),
    ("rbac.authorization.k8s.io", "rolebindings", tuple(v for v in CRUD if v != "patch")),
    ("", "serviceaccounts", tuple(v for v in CRUD if v != "patch")),
    ("kueue.x-k8s.io", "localqueues", tuple(v for v in CRUD if v != "patch")),
    ("kueue.x-k8s.io", "clusterqueues", ("list", "watch", "create", "update", "delete")),
    ("kueue.x-k8s.io", "cohorts", ("list", "watch", "create", "update", "delete")),
    ("kueue.x-k8s.io", "resourceflavors", ("list", "watch", "create", "update", "delete")),
    ("kueue.x-k8s.io", "workloads", ("list",)),
    ("batch", "jobs", ("list",)), ("apps", "deployments", ("list",)),
    ("ray.io", "rayjobs", ("list",)), ("ray.io", "rayservices", ("list",)),
    ("", "events", ("create",)),
]


class RbacTest(unittest.TestCase):
    def no_wildcards(self, role):
        for r in role["rules"]:
            for field in ("apiGroups", "resources", "verbs"):
                self.assertNotIn("*", r.get(field, []), "wildcard in %s" % role["metadata"]["name"])
            for v in ("escalate", "impersonate"):
                self.assertNotIn(v, r.get("verbs", []))

    def test_aggregator_clusterrole(self):
        role = rbac_doc("aggregator-clusterrole.yaml", "ClusterRole", "tau-aggregator")
        rules = role["rules"]
        self.no_wildcards(role)
        for group, res, verbs in AGGREGATOR_NEEDS:
            for v in verbs:
                with self.subTest(group=group, resource=res, verb=v):
                    self.assertTrue(allows(rules, group, res, v))
        self.assertTrue(allows(rules, "rbac.authorization.k8s.io", "clusterroles", "bind",
                               "tau-researcher"))
        for denied in (("rbac.authorization.k8s.io", "clusterroles", "bind", "cluster-admin"),
                       ("rbac.authorization.k8s.io", "clusterroles", "create", None),
                       ("rbac.authorization.k8s.io", "clusterrolebindings", "create", None),
                       ("", "secrets", "get", None), ("", "nodes", "patch", None),
                       ("", "pods", "delete", None), ("batch", "jobs", "delete", None),
                       ("kueue.x-k8s.io", "workloads", "delete", None),
                       ("coordination.k8s.io", "leases", "get", None),
                       # granted once, used by no code (docs/SECURITY.md, "RBAC, rule by rule")
                       ("", "pods", "list", None), ("storage.k8s.io", "csinodes", "get", None),
                       ("rbac.authorization.k8s.io", "roles", "create", None),
                       ("tau.azure.com", "workspaces", "patch", None),
                       ("events.k8s.io", "events", "create", None)):
            with self.subTest(denied=denied):
                self.assertFalse(allows(rules, *denied))
        for r in rules:
            if "bind" in r["verbs"]:
                self.assertTrue(r.get("resourceNames"), "bind must be limited by resourceNames")

    def test_leader_election_role(self):
        role = rbac_doc("aggregator-leader-election-role.yaml", "Role",
                        "tau-aggregator-leader-election")
        self.assertEqual(role["metadata"]["namespace"], "tau-system")
        for v in ("get", "create", "update"):
            self.assertTrue(allows(role["rules"], "coordination.k8s.io", "leases", v))
        self.assertFalse(allows(role["rules"], "coordination.k8s.io", "leases", "delete"))

    def test_node_agent_clusterrole(self):
        role = rbac_doc("node-agent-clusterrole.yaml", "ClusterRole", "tau-node-agent")
        self.no_wildcards(role)
        granted = {(g, res, v) for r in role["rules"] for g in r["apiGroups"]
                   for res in r["resources"] for v in r["verbs"]}
        want = {("", "nodes", v) for v in READ} | {("storage.k8s.io", "csinodes", v) for v in READ}
        want |= {("", "pods", "list"), ("", "pods", "watch")}
        self.assertEqual(granted, want)

    def test_node_agent_node_conditions_clusterrole(self):
        # --node-conditions only: patch its Node's status, nothing else (not the Node itself).
        role = rbac_doc("node-agent-node-conditions-clusterrole.yaml", "ClusterRole",
                        "tau-node-agent-node-conditions")
        self.no_wildcards(role)
        granted = {(g, res, v) for r in role["rules"] for g in r["apiGroups"]
                   for res in r["resources"] for v in r["verbs"]}
        self.assertEqual(granted, {("", "nodes/status", "patch")})

    def test_researcher_clusterrole(self):
        role = rbac_doc("researcher-clusterrole.yaml", "ClusterRole", "tau-researcher")
        rules = role["rules"]
        self.no_wildcards(role)
        for need in (("batch", "jobs", "create"), ("batch", "jobs", "delete"),
                     ("batch", "jobs", "watch"), ("kueue.x-k8s.io", "workloads", "list"),
                     ("kueue.x-k8s.io", "localqueues", "get"), ("", "pods", "list"),
                     ("", "pods/log", "get"), ("", "events", "list"),
                     ("ray.io", "rayjobs", "create")):
            with self.subTest(need=need):
                self.assertTrue(allows(rules, *need))
        for denied in (("kueue.x-k8s.io", "localqueues", "create"),
                       ("kueue.x-k8s.io", "workloads", "update"),
                       ("kueue.x-k8s.io", "clusterqueues", "get"), ("", "secrets", "get"),
                       ("", "serviceaccounts", "create"),
                       ("rbac.authorization.k8s.io", "rolebindings", "create"),
                       ("", "namespaces", "get"), ("", "nodes", "get"), ("", "pods/exec", "create"),
                       ("", "resourcequotas", "update")):
            with self.subTest(denied=denied):
                self.assertFalse(allows(rules, *denied))


class ChartTest(unittest.TestCase):
    def test_chart_metadata(self):
        chart = load_one(os.path.join(CHART, "Chart.yaml"))
        self.assertEqual(chart["apiVersion"], "v2")
        self.assertEqual(chart["name"], "taugrid")
        values = load_one(os.path.join(CHART, "values.yaml"))
        self.assertIn("capacityTeamRef", values["tauCluster"]["queues"])
        self.assertIn("name", values["tauCluster"]["queues"]["capacityTeamRef"])

    def test_values_render_a_valid_cluster(self):
        """The default tauCluster values, written as the template writes them, validate."""
        values = load_one(os.path.join(CHART, "values.yaml"))["tauCluster"]
        spec = {"managementMode": values["managementMode"],
                "deletionPolicy": values["deletionPolicy"],
                "queues": {"ownership": values["queues"]["ownership"]},
                "workspaces": {"namespaceMode": values["workspaces"]["namespaceMode"],
                               "allowSharedNamespaces":
                                   values["workspaces"]["allowSharedNamespaces"]},
                "workspaceDefaults": values["workspaceDefaults"]}
        self.assertEqual(check_object(cluster(**spec)), [])

    def test_templates_well_formed(self):
        opener = re.compile(r"{{-?\s*(if|with|range|define)\b")
        closer = re.compile(r"{{-?\s*end\b")
        for chart, path in chart_templates():
            name = os.path.relpath(path, os.path.join(ROOT, "charts"))
            with open(path, encoding="utf-8") as f:
                text = f.read()
            with self.subTest(template=name):
                self.assertEqual(text.count("{{"), text.count("}}"))
                self.assertEqual(len(opener.findall(text)), len(closer.findall(text)))
                for ref in re.findall(r'\.Files\.Get\s+"([^"]+)"', text):
                    self.assertTrue(os.path.isfile(os.path.join(chart, ref)), ref)

    def test_rbac_files_rendered_by_templates(self):
        text = {}
        for chart, path in chart_templates():
            with open(path, encoding="utf-8") as f:
                text[os.path.basename(chart)] = text.get(os.path.basename(chart), "") + f.read()
        for chart, name in (("tau-aggregator", "aggregator-clusterrole.yaml"),
                            ("tau-aggregator", "researcher-clusterrole.yaml"),
                            ("tau-aggregator", "inventory-reader-clusterrole.yaml"),
                            ("tau-node-agent", "node-agent-clusterrole.yaml"),
                            ("tau-node-agent", "node-agent-node-conditions-clusterrole.yaml")):
            self.assertIn('.Files.Get "rbac/%s"' % name, text[chart])


def chart_templates():
    """(chart directory, template file) of every chart's templates/, subfolders included."""
    for c in ("taugrid", "tau-aggregator", "tau-node-agent", "tau-lib"):
        chart = os.path.join(ROOT, "charts", c)
        for top, _, names in os.walk(os.path.join(chart, "templates")):
            for n in sorted(names):
                yield chart, os.path.join(top, n)


# --- live test against kube-sim ----------------------------------------------------------------

class KubeSimApplyTest(unittest.TestCase):
    """kubectl apply of the CRDs and samples against kube-sim, read back by short name."""

    @classmethod
    def setUpClass(cls):
        require.tool("kubectl", "kubernetes-client")
        cls.tmp = tempfile.mkdtemp(prefix="tau-crds-")
        cls.sims = []
        try:
            cls.kubeconfig = cls.start_sim("plain")
        except BaseException:
            cls.tearDownClass()
            raise

    @classmethod
    def start_sim(cls, tag, *extra):
        """Start one kube-sim; return the kubeconfig it wrote."""
        sim = KubeSim(extra, start_timeout=30)
        cls.sims.append(sim)
        return sim.kubeconfig

    @classmethod
    def tearDownClass(cls):
        for sim in getattr(cls, "sims", []):
            sim.stop()
        cls.sims = []
        if getattr(cls, "tmp", None):
            shutil.rmtree(cls.tmp, ignore_errors=True)

    def kubectl(self, *args, check=True, kubeconfig=None):
        r = subprocess.run(["kubectl", "--kubeconfig", kubeconfig or self.kubeconfig, *args],
                           capture_output=True, text=True, timeout=60)
        if check and r.returncode != 0:
            self.fail("kubectl %s failed (%d): %s%s" % (" ".join(args), r.returncode,
                                                        r.stdout, r.stderr))
        return r

    def ensure_namespace(self, name):
        path = os.path.join(self.tmp, "ns-%s.yaml" % name)
        with open(path, "w", encoding="utf-8") as f:
            f.write("apiVersion: v1\nkind: Namespace\nmetadata:\n  name: %s\n" % name)
        self.kubectl("apply", "-f", path)

    def install_crds(self):
        self.kubectl("apply", "-f", CRD_DIR)
        for exp in EXPECTED.values():
            self.kubectl("wait", "--for=condition=Established", "--timeout=30s",
                         "crd/%s.%s" % (exp["plural"], GROUP))

    def test_apply_crds_and_samples(self):
        self.install_crds()
        self.ensure_namespace("tau-system")
        for name in PUBLISHED_SAMPLES:
            self.kubectl("apply", "-f", os.path.join(PUBLISHED_DIR, name))
        self.kubectl("apply", "-f", SAMPLES_DIR)

        out = self.kubectl("get", "tw", "-n", "tau-system", "--no-headers",
                           "-o", "custom-columns=NAME:.metadata.name").stdout.split()
        self.assertEqual(sorted(out), ["alpha", "aurora", "beta"])
        table = self.kubectl("get", "tw", "-n", "tau-system").stdout.splitlines()
        self.assertEqual(table[0].split(), ["NAME", "PHASE", "NAMESPACE", "QUEUE", "AGE"])
        out = self.kubectl("get", "tt", "-n", "tau-system", "--no-headers",
                           "-o", "custom-columns=NAME:.metadata.name").stdout.split()
        self.assertEqual(sorted(out), ["research", "vision"])
        table = self.kubectl("get", "tc").stdout.splitlines()
        self.assertEqual(table[0].split(), ["NAME", "MODE", "AGE"])
        self.assertEqual(table[1].split()[:2], ["cluster", "Reconcile"])
        # The published aurora sample omitted authorization: the default must be stored.
        mode = self.kubectl("get", "tw", "aurora", "-n", "tau-system",
                            "-o", "jsonpath={.spec.authorization.mode}").stdout
        self.assertEqual(mode, "workspace-rbac")

    def test_invalid_objects_rejected(self):
        """Schema checks and CEL rules kube-sim enforces, with the API server's words."""
        self.install_crds()
        self.ensure_namespace("tau-system")
        rbac = ("  principalRef: {provider: entra, name: g}\n  kubernetesSubject: {kind: Group, "
                "name: g}\n  role: researcher\n")
        bad = {
            "enum": ("spec:\n  authorization: {mode: namespace}\n", "spec.authorization.mode: "
                     'Unsupported value: "namespace"'),
            "unknown": ("spec:\n  bogus: 1\n", 'unknown field "spec.bogus"'),
            "pattern": ("spec:\n  target: {namespace: Bad_NS}\n", "spec.target.namespace: "
                        'Invalid value: "Bad_NS"'),
            "cel": ("spec:\n" + rbac + "  target: {namespace: kube-ml}\n",
                    'spec.target.namespace: Invalid value: "string": default and kube-* '
                    "namespaces cannot host a workspace"),
        }
        for tag, (spec, message) in bad.items():
            with self.subTest(case=tag):
                path = os.path.join(self.tmp, "bad-%s.yaml" % tag)
                with open(path, "w", encoding="utf-8") as f:
                    f.write("apiVersion: tau.azure.com/v1alpha1\nkind: TauWorkspace\n"
                            "metadata: {name: bad-%s, namespace: tau-system}\n%s" % (tag, spec))
                r = self.kubectl("apply", "-f", path, check=False)
                self.assertNotEqual(r.returncode, 0, r.stdout)
                self.assertIn(message, r.stderr)

    def test_crds_flag_loads_crds(self):
        kubeconfig = self.start_sim("crds", "--crds", CRD_DIR)
        names = self.kubectl("get", "crd", "--no-headers", "-o",
                             "custom-columns=NAME:.metadata.name",
                             kubeconfig=kubeconfig).stdout.split()
        for exp in EXPECTED.values():
            self.assertIn(exp["plural"] + "." + GROUP, names)
        self.kubectl("apply", "-f", os.path.join(SAMPLES_DIR, "taucluster.yaml"),
                     kubeconfig=kubeconfig)
        out = self.kubectl("get", "tau", "--no-headers", "-o",
                           "custom-columns=NAME:.metadata.name", kubeconfig=kubeconfig)
        self.assertEqual(out.stdout.split(), ["cluster"])

    def test_rbac_manifests_apply(self):
        self.ensure_namespace("tau-system")
        self.kubectl("apply", "-f", RBAC_DIRS[0], "-f", RBAC_DIRS[1])
        out = self.kubectl("get", "clusterrole", "tau-aggregator", "tau-node-agent",
                           "tau-researcher", "--no-headers",
                           "-o", "custom-columns=NAME:.metadata.name").stdout.split()
        self.assertEqual(sorted(out), ["tau-aggregator", "tau-node-agent", "tau-researcher"])


if __name__ == "__main__":
    unittest.main()
