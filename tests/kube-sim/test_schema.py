"""Tests for kubesim.schema: CRD pruning, defaulting and validation.

Run from tests/kube-sim:  python3 -m unittest test_schema -v

Expected texts are those of a Kubernetes 1.32 apiserver (kube-openapi
messages wrapped in field.Error, see kubesim/schema.py).
"""
import copy
import json
import os
import time
import unittest

from kubesim import schema, yamlmini

HERE = os.path.dirname(os.path.abspath(__file__))
FIXTURES = os.path.join(HERE, "..", "fixtures", "kueue")

QUANTITY_PATTERN = ("^(\\+|-)?(([0-9]+(\\.[0-9]*)?)|(\\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|"
                    "([eE](\\+|-)?(([0-9]+(\\.[0-9]*)?)|(\\.[0-9]+))))?$")
DNS_SUBDOMAIN = "^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$"


_CRDS = {}


def load_crd(plural):
    # kube-sim's own YAML loader reads the fixtures exactly as PyYAML does (test_yamlmini).
    if plural not in _CRDS:
        with open(os.path.join(FIXTURES, "kueue.x-k8s.io_%s.yaml" % plural)) as f:
            _CRDS[plural] = yamlmini.load_all(f.read())[0]
    return json.loads(json.dumps(_CRDS[plural]))


def version_schema(crd, version):
    for v in crd["spec"]["versions"]:
        if v["name"] == version:
            return v["schema"]["openAPIV3Schema"]
    raise KeyError(version)


def spec_schema(props, required=None, **extra):
    """A CR root schema whose spec has the given properties."""
    spec = {"type": "object", "properties": props}
    if required:
        spec["required"] = required
    spec.update(extra)
    return {"type": "object", "properties": {
        "apiVersion": {"type": "string"}, "kind": {"type": "string"},
        "metadata": {"type": "object"}, "spec": spec}}


def cr(spec):
    return {"apiVersion": "example.com/v1", "kind": "Thing",
            "metadata": {"name": "t"}, "spec": spec}


def c(reason, message, field):
    return {"reason": reason, "message": message, "field": field}


class Helpers(unittest.TestCase):
    def run_spec(self, props, spec, required=None, mode="Strict", **extra):
        return schema.validate(spec_schema(props, required, **extra), cr(spec), mode)

    def assertCauses(self, result, expected):
        self.assertEqual(result.causes, expected)

    def assertClean(self, result):
        self.assertEqual(result.causes, [])
        self.assertEqual(result.strict_errors, [])
        self.assertEqual(result.warnings, [])


# ---------------------------------------------------------------------------
# value rendering
# ---------------------------------------------------------------------------

class RenderingTest(unittest.TestCase):
    def test_go_value_scalars(self):
        self.assertEqual(schema.go_value("a\"b\n"), '"a\\"b\\n"')
        self.assertEqual(schema.go_value(True), "true")
        self.assertEqual(schema.go_value(17), "17")
        self.assertEqual(schema.go_value(None), '"null"')
        self.assertEqual(schema.go_value(0.5), "0.5")
        self.assertEqual(schema.go_value(2.0), "2")
        self.assertEqual(schema.go_value(100000.0), "100000")
        self.assertEqual(schema.go_value(1e6), "1e+06")
        self.assertEqual(schema.go_value(1234567.0), "1.234567e+06")
        self.assertEqual(schema.go_value(0.0001), "0.0001")
        self.assertEqual(schema.go_value(0.00001), "1e-05")
        self.assertEqual(schema.go_value(-1.5), "-1.5")

    def test_go_value_compound_is_percent_sharp_v(self):
        self.assertEqual(schema.go_value({"name": "x"}),
                         'map[string]interface {}{"name":"x"}')
        self.assertEqual(schema.go_value({"protocol": "TCP", "containerPort": 8000}),
                         'map[string]interface {}{"containerPort":8000, "protocol":"TCP"}')
        self.assertEqual(schema.go_value(["a", 1, None, True]),
                         '[]interface {}{"a", 1, interface {}(nil), true}')
        self.assertEqual(schema.go_value({}), "map[string]interface {}{}")

    def test_go_quote_escapes(self):
        self.assertEqual(schema.go_quote("tab\there\\"), '"tab\\there\\\\"')
        self.assertEqual(schema.go_quote("\x01é"), '"\\x01é"')


# ---------------------------------------------------------------------------
# keyword by keyword
# ---------------------------------------------------------------------------

class TypeTest(Helpers):
    def test_integer_rejects_string(self):
        r = self.run_spec({"x": {"type": "integer"}}, {"x": "string"})
        self.assertCauses(r, [c("FieldValueTypeInvalid",
                                'Invalid value: "string": spec.x in body must be of type integer: "string"',
                                "spec.x")])

    def test_each_json_type_name(self):
        cases = [("string", 1, "integer"), ("object", [], "array"), ("array", {}, "object"),
                 ("boolean", 1.5, "number"), ("number", "1", "string"),
                 ("integer", True, "boolean")]
        for want, value, got in cases:
            with self.subTest(want=want):
                r = self.run_spec({"x": {"type": want}}, {"x": value})
                self.assertEqual(r.causes[0]["message"],
                                 'Invalid value: "%s": spec.x in body must be of type %s: "%s"'
                                 % (got, want, got))
                self.assertEqual(r.causes[0]["reason"], "FieldValueTypeInvalid")

    def test_good_values(self):
        props = {"i": {"type": "integer"}, "n": {"type": "number"}, "s": {"type": "string"},
                 "b": {"type": "boolean"}, "a": {"type": "array"}, "o": {"type": "object"}}
        r = self.run_spec(props, {"i": 3, "n": 1.5, "s": "x", "b": False, "a": [], "o": {}})
        self.assertClean(r)

    def test_integral_float_is_an_integer_and_int_is_a_number(self):
        r = self.run_spec({"i": {"type": "integer"}, "n": {"type": "number"}},
                          {"i": 2.0, "n": 3})
        self.assertClean(r)

    def test_null_property_without_nullable_is_dropped(self):
        r = self.run_spec({"x": {"type": "string"}}, {"x": None})
        self.assertClean(r)
        self.assertNotIn("x", r.obj["spec"])

    def test_nullable_keeps_null(self):
        r = self.run_spec({"x": {"type": "string", "nullable": True}}, {"x": None})
        self.assertClean(r)
        self.assertIsNone(r.obj["spec"]["x"])

    def test_null_array_item(self):
        r = self.run_spec({"l": {"type": "array", "items": {"type": "string"}}},
                          {"l": ["a", None]})
        self.assertCauses(r, [c("FieldValueTypeInvalid",
                                'Invalid value: "null": spec.l[1] in body must be of type string: "null"',
                                "spec.l[1]")])

    def test_int32_format_rejects_fraction(self):
        r = self.run_spec({"x": {"type": "integer", "format": "int32"}}, {"x": 1.5})
        self.assertCauses(r, [c("FieldValueTypeInvalid",
                                'Invalid value: "float64": spec.x in body must be of type int32: "float64"',
                                "spec.x")])

    def test_int32_range_is_not_checked_like_the_real_server(self):
        r = self.run_spec({"x": {"type": "integer", "format": "int32"}}, {"x": 2 ** 40})
        self.assertClean(r)


class RequiredEnumTest(Helpers):
    def test_required(self):
        r = self.run_spec({"a": {"type": "string"}, "b": {"type": "string"}}, {},
                          required=["a", "b"])
        self.assertCauses(r, [c("FieldValueRequired", "Required value", "spec.a"),
                              c("FieldValueRequired", "Required value", "spec.b")])

    def test_required_is_presence_only(self):
        r = self.run_spec({"a": {"type": "string"}}, {"a": ""}, required=["a"])
        self.assertClean(r)

    def test_metadata_name_rules_from_schema(self):
        s = spec_schema({})
        s["properties"]["metadata"] = {"type": "object", "properties": {
            "name": {"type": "string", "maxLength": 10}}}
        obj = cr({})
        obj["metadata"]["name"] = "much-too-long-name"
        r = schema.validate(s, obj)
        self.assertCauses(r, [c("FieldValueTooLong", "Too long: may not be more than 10 bytes",
                                "metadata.name")])
        self.assertEqual(r.strict_errors, [])

    def test_default_mode_is_strict(self):
        r = schema.validate(spec_schema({}), cr({"x": 1}))
        self.assertEqual(r.strict_errors, ['unknown field "spec.x"'])

    def test_required_top_level(self):
        s = spec_schema({})
        s["required"] = ["spec"]
        r = schema.validate(s, {"apiVersion": "v", "kind": "K", "metadata": {"name": "x"}})
        self.assertCauses(r, [c("FieldValueRequired", "Required value", "spec")])

    def test_enum_string(self):
        r = self.run_spec({"q": {"type": "string", "enum": ["StrictFIFO", "BestEffortFIFO"]}},
                          {"q": "x"})
        self.assertCauses(r, [c("FieldValueNotSupported",
                                'Unsupported value: "x": supported values: "StrictFIFO", "BestEffortFIFO"',
                                "spec.q")])

    def test_enum_ints_and_type_error_together(self):
        r = self.run_spec({"n": {"type": "integer", "enum": [1, 2]},
                           "s": {"type": "string", "enum": ["a", "b"]}},
                          {"n": "x", "s": True})
        self.assertCauses(r, [
            c("FieldValueTypeInvalid",
              'Invalid value: "string": spec.n in body must be of type integer: "string"', "spec.n"),
            c("FieldValueNotSupported", 'Unsupported value: "x": supported values: "1", "2"',
              "spec.n"),
            c("FieldValueTypeInvalid",
              'Invalid value: "boolean": spec.s in body must be of type string: "boolean"', "spec.s"),
            c("FieldValueNotSupported", 'Unsupported value: true: supported values: "a", "b"',
              "spec.s"),
        ])

    def test_enum_ok(self):
        self.assertClean(self.run_spec({"n": {"type": "integer", "enum": [1, 2]}}, {"n": 2}))


class StringTest(Helpers):
    def test_pattern(self):
        r = self.run_spec({"n": {"type": "string", "pattern": DNS_SUBDOMAIN}}, {"n": "Team_A"})
        self.assertCauses(r, [c("FieldValueInvalid",
                                "Invalid value: \"Team_A\": spec.n in body should match '%s'"
                                % DNS_SUBDOMAIN, "spec.n")])

    def test_pattern_dollar_is_end_of_text(self):
        # Python's '$' would also match before a final newline; RE2's does not.
        r = self.run_spec({"n": {"type": "string", "pattern": "^abc$"}}, {"n": "abc\n"})
        self.assertEqual(len(r.causes), 1)
        self.assertClean(self.run_spec({"n": {"type": "string", "pattern": "^abc$"}}, {"n": "abc"}))

    def test_pattern_is_a_search(self):
        self.assertClean(self.run_spec({"n": {"type": "string", "pattern": "b"}}, {"n": "abc"}))

    def test_pattern_posix_class_and_named_group(self):
        p = "^[[:alpha:]]+(?<num>[[:digit:]]*)$"
        self.assertClean(self.run_spec({"n": {"type": "string", "pattern": p}}, {"n": "ab12"}))
        self.assertEqual(len(self.run_spec({"n": {"type": "string", "pattern": p}},
                                           {"n": "1ab"}).causes), 1)

    def test_pattern_backslash_s_is_ascii_only(self):
        p = "^\\s$"
        self.assertClean(self.run_spec({"n": {"type": "string", "pattern": p}}, {"n": " "}))
        self.assertEqual(len(self.run_spec({"n": {"type": "string", "pattern": p}},
                                           {"n": "\v"}).causes), 1)

    def test_pattern_digits_are_ascii(self):
        r = self.run_spec({"n": {"type": "string", "pattern": "^\\d+$"}}, {"n": "\u0663"})
        self.assertEqual(len(r.causes), 1)

    def test_max_length(self):
        r = self.run_spec({"n": {"type": "string", "maxLength": 3}}, {"n": "abcd"})
        self.assertCauses(r, [c("FieldValueTooLong", "Too long: may not be more than 3 bytes",
                                "spec.n")])
        r = self.run_spec({"n": {"type": "string", "maxLength": 1}}, {"n": "ab"})
        self.assertEqual(r.causes[0]["message"], "Too long: may not be more than 1 byte")

    def test_max_length_counts_characters(self):
        self.assertClean(self.run_spec({"n": {"type": "string", "maxLength": 2}}, {"n": "éé"}))

    def test_first_string_failure_only(self):
        r = self.run_spec({"n": {"type": "string", "maxLength": 3, "pattern": "^[a-z]+$"}},
                          {"n": "ABCDEF"})
        self.assertCauses(r, [c("FieldValueTooLong", "Too long: may not be more than 3 bytes",
                                "spec.n")])

    def test_min_length(self):
        r = self.run_spec({"n": {"type": "string", "minLength": 1}}, {"n": ""})
        self.assertCauses(r, [c("FieldValueInvalid",
                                'Invalid value: "": spec.n in body should be at least 1 chars long',
                                "spec.n")])

    def test_date_time_format(self):
        props = {"t": {"type": "string", "format": "date-time"}}
        self.assertClean(self.run_spec(props, {"t": "2025-01-02T03:04:05Z"}))
        self.assertClean(self.run_spec(props, {"t": "2025-01-02T03:04:05.123456+02:00"}))
        r = self.run_spec(props, {"t": "yesterday"})
        self.assertCauses(r, [c("FieldValueTypeInvalid",
                                'Invalid value: "yesterday": spec.t in body must be of type date-time: "yesterday"',
                                "spec.t")])
        self.assertEqual(len(self.run_spec(props, {"t": "2025-02-30T00:00:00Z"}).causes), 1)

    def test_unknown_format_is_ignored(self):
        self.assertClean(self.run_spec({"t": {"type": "string", "format": "nonsense"}},
                                       {"t": "anything"}))


class NumberTest(Helpers):
    def test_maximum_and_minimum(self):
        props = {"n": {"type": "integer", "minimum": 1, "maximum": 16}}
        r = self.run_spec(props, {"n": 17})
        self.assertCauses(r, [c("FieldValueInvalid",
                                "Invalid value: 17: spec.n in body should be less than or equal to 16",
                                "spec.n")])
        r = self.run_spec(props, {"n": 0})
        self.assertCauses(r, [c("FieldValueInvalid",
                                "Invalid value: 0: spec.n in body should be greater than or equal to 1",
                                "spec.n")])
        self.assertClean(self.run_spec(props, {"n": 16}))

    def test_exclusive_bounds(self):
        props = {"n": {"type": "number", "minimum": 0, "exclusiveMinimum": True,
                       "maximum": 1.5, "exclusiveMaximum": True}}
        r = self.run_spec(props, {"n": 1.5})
        self.assertCauses(r, [c("FieldValueInvalid",
                                "Invalid value: 1.5: spec.n in body should be less than 1.5",
                                "spec.n")])
        r = self.run_spec(props, {"n": 0})
        self.assertCauses(r, [c("FieldValueInvalid",
                                "Invalid value: 0: spec.n in body should be greater than 0",
                                "spec.n")])

    def test_multiple_of(self):
        r = self.run_spec({"n": {"type": "integer", "multipleOf": 5}}, {"n": 12})
        self.assertCauses(r, [c("FieldValueInvalid",
                                "Invalid value: 12: spec.n in body should be a multiple of 5",
                                "spec.n")])
        self.assertClean(self.run_spec({"n": {"type": "number", "multipleOf": 0.5}}, {"n": 2.5}))


class ArrayObjectTest(Helpers):
    def test_max_items(self):
        r = self.run_spec({"l": {"type": "array", "maxItems": 16, "items": {"type": "integer"}}},
                          {"l": list(range(17))})
        self.assertCauses(r, [c("FieldValueTooMany", "Too many: 17: must have at most 16 items",
                                "spec.l")])
        r = self.run_spec({"l": {"type": "array", "maxItems": 1}}, {"l": [1, 2]})
        self.assertEqual(r.causes[0]["message"], "Too many: 2: must have at most 1 item")

    def test_min_items(self):
        r = self.run_spec({"l": {"type": "array", "minItems": 1}}, {"l": []})
        self.assertCauses(r, [c("FieldValueInvalid",
                                "Invalid value: 0: spec.l in body should have at least 1 items",
                                "spec.l")])

    def test_items_then_size_errors(self):
        r = self.run_spec({"l": {"type": "array", "maxItems": 1, "items": {"type": "string"}}},
                          {"l": [1, "a"]})
        self.assertEqual([x["field"] for x in r.causes], ["spec.l[0]", "spec.l"])

    def test_nested_paths(self):
        props = {"groups": {"type": "array", "items": {
            "type": "object", "required": ["name"],
            "properties": {"name": {"type": "string"},
                           "flavors": {"type": "array", "items": {"type": "string"}}}}}}
        r = self.run_spec(props, {"groups": [{"name": "a", "flavors": ["x", 2]}, {}]})
        self.assertCauses(r, [
            c("FieldValueTypeInvalid",
              'Invalid value: "integer": spec.groups[0].flavors[1] in body must be of type string: "integer"',
              "spec.groups[0].flavors[1]"),
            c("FieldValueRequired", "Required value", "spec.groups[1].name"),
        ])

    def test_max_and_min_properties(self):
        props = {"m": {"type": "object", "maxProperties": 2,
                       "additionalProperties": {"type": "string"}}}
        r = self.run_spec(props, {"m": {"a": "1", "b": "2", "c": "3"}})
        self.assertCauses(r, [c("FieldValueTooMany", "Too many: 3: must have at most 2 items",
                                "spec.m")])
        props = {"m": {"type": "object", "minProperties": 1,
                       "additionalProperties": {"type": "string"}}}
        r = self.run_spec(props, {"m": {}})
        self.assertCauses(r, [c("FieldValueInvalid",
                                "Invalid value: 0: spec.m in body should have at least 1 properties",
                                "spec.m")])

    def test_property_counts_do_not_stop_other_checks(self):
        props = {"m": {"type": "object", "maxProperties": 1,
                       "additionalProperties": {"type": "string"}}}
        r = self.run_spec(props, {"m": {"a": "1", "b": 2}})
        self.assertEqual([x["reason"] for x in r.causes],
                         ["FieldValueTooMany", "FieldValueTypeInvalid"])

    def test_additional_properties_schema(self):
        props = {"labels": {"type": "object", "additionalProperties": {"type": "string"}}}
        r = self.run_spec(props, {"labels": {"ok": "v", "bad": 3}})
        self.assertCauses(r, [c("FieldValueTypeInvalid",
                                'Invalid value: "integer": spec.labels.bad in body must be of type string: "integer"',
                                "spec.labels.bad")])
        self.assertEqual(r.strict_errors, [])

    def test_additional_properties_false_prunes(self):
        props = {"o": {"type": "object", "properties": {"a": {"type": "string"}},
                       "additionalProperties": False}}
        r = self.run_spec(props, {"o": {"a": "x", "b": "y"}})
        self.assertEqual(r.causes, [])
        self.assertEqual(r.strict_errors, ['unknown field "spec.o.b"'])
        self.assertEqual(r.obj["spec"]["o"], {"a": "x"})


class CombinatorTest(Helpers):
    INT_OR_STRING = {"x-kubernetes-int-or-string": True,
                     "anyOf": [{"type": "integer"}, {"type": "string"}],
                     "pattern": QUANTITY_PATTERN}

    def test_int_or_string_values(self):
        for v in (3, "500m", "2Gi", "1e3"):
            self.assertClean(self.run_spec({"q": self.INT_OR_STRING}, {"q": v}))

    def test_int_or_string_pattern(self):
        r = self.run_spec({"q": self.INT_OR_STRING}, {"q": "1x"})
        self.assertCauses(r, [c("FieldValueInvalid",
                                "Invalid value: \"1x\": spec.q in body should match '%s'"
                                % QUANTITY_PATTERN, "spec.q")])

    def test_int_or_string_wrong_type(self):
        r = self.run_spec({"q": self.INT_OR_STRING}, {"q": True})
        self.assertCauses(r, [
            c("FieldValueTypeInvalid",
              'Invalid value: "boolean": spec.q in body must be of type integer,string: "boolean"',
              "spec.q"),
            c("FieldValueInvalid",
              'Invalid value: "": "spec.q" must validate at least one schema (anyOf)', "<nil>"),
            c("FieldValueTypeInvalid",
              'Invalid value: "boolean": spec.q in body must be of type integer: "boolean"',
              "spec.q"),
        ])

    def test_all_of(self):
        props = {"x": {"type": "integer", "allOf": [{"minimum": 1}, {"maximum": 3}]}}
        self.assertClean(self.run_spec(props, {"x": 2}))
        r = self.run_spec(props, {"x": 5})
        self.assertCauses(r, [
            c("FieldValueInvalid",
              "Invalid value: 5: spec.x in body should be less than or equal to 3", "spec.x"),
            c("FieldValueInvalid", 'Invalid value: "": "spec.x" must validate all the schemas (allOf)',
              "<nil>"),
        ])

    def test_one_of(self):
        props = {"x": {"type": "object", "properties": {"a": {"type": "string"},
                                                         "b": {"type": "string"}},
                       "oneOf": [{"required": ["a"]}, {"required": ["b"]}]}}
        self.assertClean(self.run_spec(props, {"x": {"a": "1"}}))
        r = self.run_spec(props, {"x": {"a": "1", "b": "2"}})
        self.assertCauses(r, [c("FieldValueInvalid",
                                'Invalid value: "": "spec.x" must validate one and only one schema (oneOf). Found 2 valid alternatives',
                                "<nil>")])
        r = self.run_spec(props, {"x": {}})
        self.assertEqual(r.causes[0]["message"],
                         'Invalid value: "": "spec.x" must validate one and only one schema (oneOf). Found none valid')
        self.assertEqual(r.causes[1], c("FieldValueRequired", "Required value", "spec.x.a"))

    def test_not(self):
        props = {"x": {"type": "string", "not": {"enum": ["forbidden"]}}}
        self.assertClean(self.run_spec(props, {"x": "fine"}))
        r = self.run_spec(props, {"x": "forbidden"})
        self.assertCauses(r, [c("FieldValueInvalid",
                                'Invalid value: "": "spec.x" must not validate the schema (not)',
                                "<nil>")])


class ListTypeTest(Helpers):
    MAP = {"type": "array", "x-kubernetes-list-type": "map",
           "x-kubernetes-list-map-keys": ["name"],
           "items": {"type": "object", "required": ["name"],
                     "properties": {"name": {"type": "string"}, "v": {"type": "integer"}}}}

    def test_map_duplicate_reports_key_only(self):
        r = self.run_spec({"l": self.MAP},
                          {"l": [{"name": "x", "v": 1}, {"name": "y"}, {"name": "x", "v": 2}]})
        self.assertCauses(r, [c("FieldValueDuplicate",
                                'Duplicate value: map[string]interface {}{"name":"x"}', "spec.l[2]")])

    def test_map_only_second_occurrence_is_reported(self):
        r = self.run_spec({"l": self.MAP}, {"l": [{"name": "x"}, {"name": "x"}, {"name": "x"}]})
        self.assertEqual([x["field"] for x in r.causes], ["spec.l[1]"])

    def test_map_multiple_keys(self):
        s = {"type": "array", "x-kubernetes-list-type": "map",
             "x-kubernetes-list-map-keys": ["containerPort", "protocol"],
             "items": {"type": "object", "properties": {
                 "containerPort": {"type": "integer"}, "protocol": {"type": "string"},
                 "name": {"type": "string"}}}}
        r = self.run_spec({"p": s}, {"p": [
            {"containerPort": 8000, "protocol": "TCP", "name": "a"},
            {"containerPort": 8000, "protocol": "UDP"},
            {"containerPort": 8000, "protocol": "TCP", "name": "b"}]})
        self.assertCauses(r, [c("FieldValueDuplicate",
                                'Duplicate value: map[string]interface {}{"containerPort":8000, "protocol":"TCP"}',
                                "spec.p[2]")])

    def test_map_missing_key_counts_as_unspecified(self):
        s = dict(self.MAP, items={"type": "object", "properties": {"name": {"type": "string"},
                                                                   "v": {"type": "integer"}}})
        r = self.run_spec({"l": s}, {"l": [{"v": 1}, {"v": 2}]})
        self.assertCauses(r, [c("FieldValueDuplicate", "Duplicate value: map[string]interface {}{}",
                                "spec.l[1]")])

    def test_map_item_must_be_object(self):
        s = {"type": "array", "x-kubernetes-list-type": "map",
             "x-kubernetes-list-map-keys": ["name"]}
        r = self.run_spec({"l": s}, {"l": [{"name": "a"}, "b"]})
        self.assertCauses(r, [c("FieldValueInvalid",
                                'Invalid value: "b": must be an object for an array of list-type map',
                                "spec.l[1]")])

    def test_set(self):
        s = {"type": "array", "x-kubernetes-list-type": "set", "items": {"type": "string"}}
        r = self.run_spec({"l": s}, {"l": ["a", "b", "a"]})
        self.assertCauses(r, [c("FieldValueDuplicate", 'Duplicate value: "a"', "spec.l[2]")])
        self.assertClean(self.run_spec({"l": s}, {"l": ["a", "b"]}))

    def test_set_distinguishes_types(self):
        s = {"type": "array", "x-kubernetes-list-type": "set"}
        self.assertEqual(self.run_spec({"l": s}, {"l": [1, True, "1", 1.5]}).causes, [])

    def test_atomic_allows_duplicates(self):
        s = {"type": "array", "x-kubernetes-list-type": "atomic", "items": {"type": "string"}}
        self.assertClean(self.run_spec({"l": s}, {"l": ["a", "a"]}))

    def test_list_type_errors_come_after_schema_errors(self):
        r = self.run_spec({"l": self.MAP, "z": {"type": "integer"}},
                          {"l": [{"name": "x"}, {"name": "x"}], "z": "no"})
        self.assertEqual([x["reason"] for x in r.causes],
                         ["FieldValueTypeInvalid", "FieldValueDuplicate"])

    def test_duplicates_under_additional_properties_use_key_paths(self):
        s = {"type": "object", "additionalProperties": {
            "type": "array", "x-kubernetes-list-type": "set", "items": {"type": "string"}}}
        r = self.run_spec({"m": s}, {"m": {"k": ["a", "a"]}})
        self.assertEqual(r.causes[0]["field"], "spec.m[k][1]")


class PruningTest(Helpers):
    PROPS = {"a": {"type": "string"},
             "o": {"type": "object", "properties": {"b": {"type": "string"}}},
             "l": {"type": "array", "items": {"type": "object",
                                              "properties": {"c": {"type": "string"}}}}}
    SPEC = {"a": "1", "zzz": 1, "o": {"b": "2", "x": 3}, "l": [{"c": "3", "y": 4}], "aaa": {}}

    def test_strict_reports_sorted_unknown_fields(self):
        r = self.run_spec(self.PROPS, self.SPEC, mode="Strict")
        self.assertEqual(r.strict_errors, ['unknown field "spec.aaa"', 'unknown field "spec.l[0].y"',
                                           'unknown field "spec.o.x"', 'unknown field "spec.zzz"'])
        self.assertEqual(r.warnings, [])
        self.assertEqual(r.causes, [])
        self.assertEqual(r.obj["spec"], {"a": "1", "o": {"b": "2"}, "l": [{"c": "3"}]})

    def test_warn_and_ignore(self):
        r = self.run_spec(self.PROPS, self.SPEC, mode="Warn")
        self.assertEqual(len(r.warnings), 4)
        self.assertEqual(r.strict_errors, [])
        r = self.run_spec(self.PROPS, self.SPEC, mode="Ignore")
        self.assertEqual((r.warnings, r.strict_errors), ([], []))
        self.assertEqual(r.obj["spec"], {"a": "1", "o": {"b": "2"}, "l": [{"c": "3"}]})

    def test_missing_mode_means_warn(self):
        r = self.run_spec(self.PROPS, {"zzz": 1}, mode=None)
        self.assertEqual(r.warnings, ['unknown field "spec.zzz"'])

    def test_unknown_top_level_and_metadata(self):
        s = spec_schema({})
        obj = {"apiVersion": "v", "kind": "K", "metadata": {"name": "x", "spec": 1,
                                                             "labels": {"a": "b"}},
               "spec": {}, "extra": True}
        r = schema.validate(s, obj)
        self.assertEqual(r.strict_errors, ['unknown field "metadata.spec"',
                                           'unknown field "extra"'])
        self.assertEqual(r.obj["metadata"], {"name": "x", "labels": {"a": "b"}})
        self.assertNotIn("extra", r.obj)

    def test_owner_reference_unknown_field(self):
        obj = cr({})
        obj["metadata"]["ownerReferences"] = [{"apiVersion": "v1", "kind": "X", "name": "n",
                                               "uid": "u", "bogus": 1}]
        r = schema.validate(spec_schema({}), obj)
        self.assertEqual(r.strict_errors, ['unknown field "metadata.ownerReferences[0].bogus"'])

    def test_object_without_properties_loses_its_fields(self):
        r = self.run_spec({"o": {"type": "object"}}, {"o": {"k": 1}})
        self.assertEqual(r.strict_errors, ['unknown field "spec.o.k"'])
        self.assertEqual(r.obj["spec"]["o"], {})

    def test_preserve_unknown_fields(self):
        props = {"raw": {"type": "object", "x-kubernetes-preserve-unknown-fields": True,
                         "properties": {"known": {"type": "object",
                                                  "properties": {"k": {"type": "string"}}}}}}
        r = self.run_spec(props, {"raw": {"anything": {"deep": [1]}, "known": {"k": "v", "z": 1}}})
        self.assertEqual(r.obj["spec"]["raw"]["anything"], {"deep": [1]})
        self.assertEqual(r.obj["spec"]["raw"]["known"], {"k": "v"})
        self.assertEqual(r.strict_errors, ['unknown field "spec.raw.known.z"'])

    def test_preserve_unknown_fields_at_root(self):
        s = {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
        r = schema.validate(s, cr({"free": {"form": 1}}))
        self.assertClean(r)
        self.assertEqual(r.obj["spec"], {"free": {"form": 1}})

    def test_embedded_resource_keeps_type_and_object_meta(self):
        props = {"template": {"type": "object", "x-kubernetes-embedded-resource": True,
                              "properties": {"spec": {"type": "object",
                                                      "properties": {"a": {"type": "string"}}}}}}
        spec = {"template": {"apiVersion": "v1", "kind": "Pod",
                             "metadata": {"name": "p", "what": 1},
                             "spec": {"a": "x", "b": "y"}, "other": 1}}
        r = self.run_spec(props, spec)
        t = r.obj["spec"]["template"]
        self.assertEqual(t["apiVersion"], "v1")
        self.assertEqual(t["kind"], "Pod")
        self.assertEqual(t["metadata"], {"name": "p"})
        self.assertEqual(t["spec"], {"a": "x"})
        self.assertEqual(r.strict_errors, ['unknown field "spec.template.metadata.what"',
                                           'unknown field "spec.template.other"',
                                           'unknown field "spec.template.spec.b"'])

    def test_input_is_not_modified(self):
        spec = copy.deepcopy(self.SPEC)
        obj = cr(spec)
        before = copy.deepcopy(obj)
        self.run_spec(self.PROPS, spec)
        schema.validate(spec_schema(self.PROPS), obj)
        self.assertEqual(obj, before)

    def test_strict_decoding_message(self):
        self.assertEqual(
            schema.strict_decoding_message("ClusterQueue", "v1beta2",
                                           ['unknown field "spec.foo"', 'unknown field "spec.bar"']),
            'ClusterQueue in version "v1beta2" cannot be handled as a ClusterQueue: strict decoding '
            'error: unknown field "spec.foo", unknown field "spec.bar"')


class DefaultingTest(Helpers):
    PROPS = {"mode": {"type": "string", "default": "A"},
             "limits": {"type": "object", "default": {},
                        "properties": {"max": {"type": "integer", "default": 3},
                                       "min": {"type": "integer"}}},
             "items": {"type": "array", "items": {"type": "object", "properties": {
                 "w": {"type": "integer", "default": 1}}}},
             "nullable": {"type": "string", "nullable": True, "default": "d"}}

    def test_defaults_fill_missing_and_recurse(self):
        r = self.run_spec(self.PROPS, {"items": [{}, {"w": 5}]})
        self.assertClean(r)
        self.assertEqual(r.obj["spec"], {"items": [{"w": 1}, {"w": 5}], "mode": "A",
                                         "limits": {"max": 3}, "nullable": "d"})

    def test_present_values_win(self):
        r = self.run_spec(self.PROPS, {"mode": "B", "limits": {"max": 9}})
        self.assertEqual(r.obj["spec"]["mode"], "B")
        self.assertEqual(r.obj["spec"]["limits"], {"max": 9})

    def test_null_takes_default_unless_nullable(self):
        r = self.run_spec(self.PROPS, {"mode": None, "nullable": None})
        self.assertEqual(r.obj["spec"]["mode"], "A")
        self.assertIsNone(r.obj["spec"]["nullable"])

    def test_defaults_are_copies(self):
        r1 = self.run_spec(self.PROPS, {})
        r1.obj["spec"]["limits"]["max"] = 100
        r2 = self.run_spec(self.PROPS, {})
        self.assertEqual(r2.obj["spec"]["limits"]["max"], 3)

    def test_defaults_are_validated(self):
        r = self.run_spec({"n": {"type": "integer", "default": 1, "minimum": 2}}, {})
        self.assertEqual(len(r.causes), 1)

    def test_apply_defaults_keeps_unknown_fields(self):
        out = schema.apply_defaults(spec_schema(self.PROPS), cr({"other": 1}))
        self.assertEqual(out["spec"]["other"], 1)
        self.assertEqual(out["spec"]["mode"], "A")


# ---------------------------------------------------------------------------
# the real Kueue CRDs
# ---------------------------------------------------------------------------

def cluster_queue(spec):
    return {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ClusterQueue",
            "metadata": {"name": "team-ml-ws1"}, "spec": spec}


def rg(covered, flavors):
    return {"coveredResources": covered, "flavors": flavors}


def flavor(name, quotas):
    return {"name": name, "resources": [dict({"name": n}, **q) for n, q in quotas]}


VALID_CQ_SPEC = {
    "cohortName": "team-ml",
    "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "ws1"}},
    "resourceGroups": [rg(["cpu", "memory", "nvidia.com/gpu"], [
        flavor("gpu-a100", [("cpu", {"nominalQuota": "0"}),
                            ("memory", {"nominalQuota": "0"}),
                            ("nvidia.com/gpu", {"nominalQuota": "0", "borrowingLimit": "8"})])])],
}


class KueueCRDTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.crds = {p: load_crd(p) for p in ("clusterqueues", "localqueues", "resourceflavors",
                                             "cohorts", "workloads", "admissionchecks")}
        cls.cq = version_schema(cls.crds["clusterqueues"], "v1beta2")

    def test_all_crds_load_and_accept_a_bare_object(self):
        for plural, crd in self.crds.items():
            kind = crd["spec"]["names"]["kind"]
            for v in crd["spec"]["versions"]:
                s = v["schema"]["openAPIV3Schema"]
                obj = {"apiVersion": "kueue.x-k8s.io/" + v["name"], "kind": kind,
                       "metadata": {"name": "x"}}
                with self.subTest(crd=plural, version=v["name"]):
                    r = schema.validate(s, obj)
                    self.assertEqual(r.strict_errors, [])
                    self.assertEqual(r.causes, [])

    def test_valid_cluster_queue(self):
        r = schema.validate(self.cq, cluster_queue(VALID_CQ_SPEC))
        self.assertEqual((r.causes, r.strict_errors, r.warnings), ([], [], []))

    def test_cluster_queue_defaults(self):
        r = schema.validate(self.cq, cluster_queue(VALID_CQ_SPEC))
        spec = r.obj["spec"]
        self.assertEqual(spec["queueingStrategy"], "BestEffortFIFO")
        self.assertEqual(spec["stopPolicy"], "None")
        self.assertEqual(spec["preemption"], {"withinClusterQueue": "Never",
                                              "reclaimWithinCohort": "Never",
                                              "borrowWithinCohort": {"policy": "Never"}})
        self.assertEqual(spec["flavorFungibility"], {"whenCanBorrow": "MayStopSearch",
                                                     "whenCanPreempt": "TryNextFlavor"})
        self.assertNotIn("fairSharing", spec)
        # the namespace selector has no default: absent stays absent (selects nothing)
        r = schema.validate(self.cq, cluster_queue({}))
        self.assertNotIn("namespaceSelector", r.obj["spec"])
        # fairSharing.weight defaults only when fairSharing is present
        r = schema.validate(self.cq, cluster_queue({"fairSharing": {}}))
        self.assertEqual(r.obj["spec"]["fairSharing"], {"weight": 1})

    def test_valid_local_queue_resource_flavor_cohort(self):
        lq = {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "LocalQueue",
              "metadata": {"name": "default", "namespace": "ws1"},
              "spec": {"clusterQueue": "team-ml-ws1"}}
        rf = {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ResourceFlavor",
              "metadata": {"name": "gpu-a100"},
              "spec": {"nodeLabels": {"node.kubernetes.io/instance-type": "a100"}}}
        co = {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Cohort",
              "metadata": {"name": "team-ml"},
              "spec": {"resourceGroups": [rg(["cpu", "memory", "nvidia.com/gpu"], [
                  flavor("gpu-a100", [("cpu", {"nominalQuota": "256"}),
                                      ("memory", {"nominalQuota": "2Ti"}),
                                      ("nvidia.com/gpu", {"nominalQuota": 32})])])]}}
        for plural, obj in (("localqueues", lq), ("resourceflavors", rf), ("cohorts", co)):
            with self.subTest(plural):
                s = version_schema(self.crds[plural], "v1beta2")
                r = schema.validate(s, obj)
                self.assertEqual((r.causes, r.strict_errors), ([], []))
        r = schema.validate(version_schema(self.crds["localqueues"], "v1beta2"), lq)
        self.assertEqual(r.obj["spec"]["stopPolicy"], "None")

    def test_too_many_resource_groups(self):
        groups = [rg(["r%d" % i], [flavor("f%d" % i, [("r%d" % i, {"nominalQuota": 1})])])
                  for i in range(17)]
        r = schema.validate(self.cq, cluster_queue({"resourceGroups": groups}))
        self.assertEqual(r.causes, [c("FieldValueTooMany", "Too many: 17: must have at most 16 items",
                                      "spec.resourceGroups")])

    def test_too_many_flavors(self):
        flavors = [flavor("f%d" % i, [("cpu", {"nominalQuota": 1})]) for i in range(65)]
        r = schema.validate(self.cq, cluster_queue({"resourceGroups": [rg(["cpu"], flavors)]}))
        self.assertEqual(r.causes, [c("FieldValueTooMany", "Too many: 65: must have at most 64 items",
                                      "spec.resourceGroups[0].flavors")])

    def test_bad_quantity(self):
        spec = copy.deepcopy(VALID_CQ_SPEC)
        spec["resourceGroups"][0]["flavors"][0]["resources"][1]["nominalQuota"] = "2 Gi"
        r = schema.validate(self.cq, cluster_queue(spec))
        f = "spec.resourceGroups[0].flavors[0].resources[1].nominalQuota"
        self.assertEqual(r.causes, [c("FieldValueInvalid",
                                      "Invalid value: \"2 Gi\": %s in body should match '%s'"
                                      % (f, QUANTITY_PATTERN), f)])

    def test_missing_required(self):
        spec = {"resourceGroups": [{"coveredResources": ["cpu"],
                                    "flavors": [{"name": "f"}, {"resources": [{"name": "cpu"}]}]}]}
        r = schema.validate(self.cq, cluster_queue(spec))
        self.assertEqual(r.causes, [
            c("FieldValueRequired", "Required value", "spec.resourceGroups[0].flavors[0].resources"),
            c("FieldValueRequired", "Required value",
              "spec.resourceGroups[0].flavors[1].resources[0].nominalQuota"),
            c("FieldValueRequired", "Required value", "spec.resourceGroups[0].flavors[1].name"),
        ])

    def test_bad_queueing_strategy_and_stop_policy(self):
        r = schema.validate(self.cq, cluster_queue({"queueingStrategy": "FIFO",
                                                    "stopPolicy": "Pause"}))
        self.assertEqual(r.causes, [
            c("FieldValueNotSupported",
              'Unsupported value: "FIFO": supported values: "StrictFIFO", "BestEffortFIFO"',
              "spec.queueingStrategy"),
            c("FieldValueNotSupported",
              'Unsupported value: "Pause": supported values: "None", "Hold", "HoldAndDrain"',
              "spec.stopPolicy"),
        ])

    def test_cohort_name_too_long_and_bad(self):
        r = schema.validate(self.cq, cluster_queue({"cohortName": "a" * 254}))
        self.assertEqual(r.causes, [c("FieldValueTooLong", "Too long: may not be more than 253 bytes",
                                      "spec.cohortName")])
        r = schema.validate(self.cq, cluster_queue({"cohortName": "Team_ML"}))
        self.assertEqual(r.causes[0]["message"],
                         "Invalid value: \"Team_ML\": spec.cohortName in body should match '%s'"
                         % DNS_SUBDOMAIN)

    def test_duplicate_flavor_and_resource_names(self):
        spec = {"resourceGroups": [rg(["cpu"], [
            flavor("f", [("cpu", {"nominalQuota": 1}), ("cpu", {"nominalQuota": 2})]),
            flavor("f", [("cpu", {"nominalQuota": 1})])])]}
        r = schema.validate(self.cq, cluster_queue(spec))
        self.assertEqual(r.causes, [
            c("FieldValueDuplicate", 'Duplicate value: map[string]interface {}{"name":"f"}',
              "spec.resourceGroups[0].flavors[1]"),
            c("FieldValueDuplicate", 'Duplicate value: map[string]interface {}{"name":"cpu"}',
              "spec.resourceGroups[0].flavors[0].resources[1]"),
        ])

    def test_unknown_field_in_cluster_queue(self):
        spec = dict(VALID_CQ_SPEC, cohort="team-ml")  # the v1beta1 field name
        r = schema.validate(self.cq, cluster_queue(spec), "Strict")
        self.assertEqual(r.strict_errors, ['unknown field "spec.cohort"'])
        self.assertEqual(r.causes, [])
        self.assertEqual(
            schema.strict_decoding_message("ClusterQueue", "v1beta2", r.strict_errors),
            'ClusterQueue in version "v1beta2" cannot be handled as a ClusterQueue: '
            'strict decoding error: unknown field "spec.cohort"')

    def test_status_is_validated_and_pruned_like_any_field(self):
        obj = cluster_queue(VALID_CQ_SPEC)
        obj["status"] = {"pendingWorkloads": "many", "nonsense": 1}
        r = schema.validate(self.cq, obj, "Warn")
        self.assertEqual(r.warnings, ['unknown field "status.nonsense"'])
        self.assertEqual(r.causes[0]["field"], "status.pendingWorkloads")

    def test_workload_is_fast_enough(self):
        s = version_schema(self.crds["workloads"], "v1beta2")
        wl = {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Workload",
              "metadata": {"name": "w", "namespace": "ws1"},
              "spec": {"queueName": "default", "podSets": [{
                  "name": "main", "count": 3, "template": {"spec": {
                      "restartPolicy": "Never",
                      "containers": [{"name": "c", "image": "busybox",
                                      "env": [{"name": "A", "value": "1"},
                                              {"name": "A", "value": "2"}],
                                      "resources": {"requests": {"cpu": "1"}}}]}}}]}}
        t0 = time.time()
        r = schema.validate(s, wl)
        self.assertLess(time.time() - t0, 2.0)
        self.assertEqual(r.strict_errors, [])
        self.assertEqual(r.causes, [c(
            "FieldValueDuplicate", 'Duplicate value: map[string]interface {}{"name":"A"}',
            "spec.podSets[0].template.spec.containers[0].env[1]")])


if __name__ == "__main__":
    unittest.main()
