"""yamlmini: the YAML subset loader used for --crds and YAML bodies."""
import glob
import os
import json
import unittest

from kubesim import patch, yamlmini

try:
    import yaml as pyyaml  # only for cross-checking when present
except ImportError:  # pragma: no cover
    pyyaml = None


class YamlMiniTest(unittest.TestCase):
    def test_block_structures(self):
        doc = yamlmini.load(
            "a: 1\nb:\n  c: [x, 'y z', \"q\\n\"]\n  d: {}\nlist:\n- k: v\n  n: null\n- plain text\n"
            "- - nested\nindentless:\n- 1\n- true\nempty:\nquoted: 'it''s'\n")
        self.assertEqual(doc, {"a": 1, "b": {"c": ["x", "y z", "q\n"], "d": {}},
                               "list": [{"k": "v", "n": None}, "plain text", ["nested"]],
                               "indentless": [1, True], "empty": None, "quoted": "it's"})

    def test_scalars_and_block_scalars(self):
        doc = yamlmini.load(
            "lit: |\n  line1\n   line2\n\nfold: >-\n  a\n  b\n\n  c\nkeep: |+\n  x\n\n"
            "strip: |-\n  y\nmulti: this is\n  continued  # comment\nf: 1.5\ns: '010'\nv: v1\n")
        self.assertEqual(doc["lit"], "line1\n line2\n")
        self.assertEqual(doc["fold"], "a b\nc")
        self.assertEqual(doc["keep"], "x\n\n")
        self.assertEqual(doc["strip"], "y")
        self.assertEqual(doc["multi"], "this is continued")
        self.assertEqual((doc["f"], doc["s"], doc["v"]), (1.5, "010", "v1"))

    def test_documents(self):
        docs = yamlmini.load_all("---\na: 1\n---\n# only a comment\n---\nb: 2\n...\n")
        self.assertEqual(docs, [{"a": 1}, {"b": 2}])

    def test_errors(self):
        with self.assertRaises(yamlmini.YamlError):
            yamlmini.load("a: &x 1\nb: *x\n")
        with self.assertRaises(yamlmini.YamlError):
            yamlmini.load("a: 'unterminated\n")

    @unittest.skipUnless(pyyaml, "PyYAML not available for cross-checking")
    def test_fixture_crds_match_pyyaml(self):
        root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
        files = sorted(glob.glob(os.path.join(root, "tests", "fixtures", "*", "*.yaml")) +
                       glob.glob(os.path.join(root, "charts", "taugrid", "crds", "*.yaml")))
        self.assertTrue(files)
        for f in files:
            with open(f) as fh:
                text = fh.read()
            mine = yamlmini.load_all(text)
            ref = [d for d in pyyaml.safe_load_all(text) if d is not None]
            self.assertEqual(json.dumps(mine, sort_keys=True), json.dumps(ref, sort_keys=True), f)


class PatchTest(unittest.TestCase):
    def test_merge_patch(self):
        self.assertEqual(patch.merge_patch({"a": {"b": 1, "c": 2}, "l": [1]}, {"a": {"b": None, "d": 3}, "l": [2]}),
                         {"a": {"c": 2, "d": 3}, "l": [2]})

    def test_json_patch(self):
        doc = {"a": [1, 2], "b": {"c": 1}}
        out = patch.json_patch(doc, [{"op": "add", "path": "/a/-", "value": 3},
                                     {"op": "move", "from": "/b/c", "path": "/d"},
                                     {"op": "test", "path": "/d", "value": 1}])
        self.assertEqual(out, {"a": [1, 2, 3], "b": {}, "d": 1})
        with self.assertRaises(patch.PatchError):
            patch.json_patch(doc, [{"op": "remove", "path": "/zzz"}])

    def test_strategic_merge(self):
        orig = {"metadata": {"finalizers": ["a"]},
                "spec": {"containers": [{"name": "x", "image": "1", "ports": [{"containerPort": 80}]},
                                        {"name": "y", "image": "1"}],
                         "volumes": [{"name": "v", "emptyDir": {}}],
                         "tolerations": [{"key": "t"}]}}
        p = {"metadata": {"finalizers": ["b"]},
             "spec": {"$setElementOrder/containers": [{"name": "y"}, {"name": "x"}],
                      "containers": [{"name": "x", "image": "2", "ports": [{"containerPort": 81}]},
                                     {"name": "y", "$patch": "delete"}],
                      "volumes": [{"name": "v", "$retainKeys": ["name", "hostPath"], "hostPath": {"path": "/p"}}],
                      "tolerations": [{"key": "u"}]}}
        out = patch.strategic_merge_patch(orig, p)
        self.assertEqual(out["metadata"]["finalizers"], ["a", "b"])
        self.assertEqual(out["spec"]["containers"],
                         [{"name": "x", "image": "2", "ports": [{"containerPort": 80}, {"containerPort": 81}]}])
        self.assertEqual(out["spec"]["volumes"], [{"name": "v", "hostPath": {"path": "/p"}}])
        self.assertEqual(out["spec"]["tolerations"], [{"key": "u"}])
        out = patch.strategic_merge_patch(orig, {"spec": {"containers": [{"$patch": "replace"}, {"name": "z"}]}})
        self.assertEqual(out["spec"]["containers"], [{"name": "z"}])
        out = patch.strategic_merge_patch(orig, {"metadata": {"$deleteFromPrimitiveList/finalizers": ["a"]}})
        self.assertEqual(out["metadata"]["finalizers"], [])


if __name__ == "__main__":
    unittest.main()
