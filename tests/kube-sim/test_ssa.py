"""Server-side apply and field ownership (metadata.managedFields) in kube-sim, over raw HTTP
and with the real kubectl (`apply --server-side`, `--force-conflicts`, the migration from
client-side apply)."""
import json
import os
import re
import tempfile
import unittest

from simtest import SimProcess

CM = "/api/v1/namespaces/default/configmaps"
DEP = "/apis/apps/v1/namespaces/default/deployments"
APPLY = "application/apply-patch+yaml"
MERGE = "application/merge-patch+json"
TIME = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$")

CRD = {
    "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
    "metadata": {"name": "widgets.ssa.example.com"},
    "spec": {"group": "ssa.example.com", "scope": "Namespaced",
             "names": {"plural": "widgets", "singular": "widget", "kind": "Widget",
                       "listKind": "WidgetList"},
             "versions": [{"name": "v1", "served": True, "storage": True,
                           "subresources": {"status": {}},
                           "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                               "spec": {"type": "object", "properties": {
                                   "size": {"type": "integer"},
                                   "parts": {"type": "array", "x-kubernetes-list-type": "map",
                                             "x-kubernetes-list-map-keys": ["name"],
                                             "items": {"type": "object", "required": ["name"],
                                                       "properties": {
                                                           "name": {"type": "string"},
                                                           "count": {"type": "integer"}}}},
                                   "tags": {"type": "array", "x-kubernetes-list-type": "set",
                                            "items": {"type": "string"}},
                                   "args": {"type": "array", "items": {"type": "string"}},
                                   "owner": {"type": "object", "properties": {
                                       "name": {"type": "string"},
                                       "team": {"type": "string"}}}}},
                               "status": {"type": "object", "properties": {
                                   "conditions": {"type": "array",
                                                  "x-kubernetes-list-type": "map",
                                                  "x-kubernetes-list-map-keys": ["type"],
                                                  "items": {"type": "object", "properties": {
                                                      "type": {"type": "string"},
                                                      "status": {"type": "string"}}}}}}}}}}]}}
WIDGETS = "/apis/ssa.example.com/v1/namespaces/default/widgets"


def cm(name, data, labels=None):
    m = {"name": name}
    if labels:
        m["labels"] = labels
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": m, "data": data}


def dep(name, **spec):
    s = {"selector": {"matchLabels": {"app": name}},
         "template": {"metadata": {"labels": {"app": name}},
                      "spec": {"containers": [{"name": "main", "image": "img:1"}]}}}
    s.update(spec)
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name}, "spec": s}


def entries(obj):
    return {(e["manager"], e["operation"]): e for e in obj["metadata"].get("managedFields", [])}


class SsaTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.sim = SimProcess()
        cls.sim.ok("POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", CRD)

    @classmethod
    def tearDownClass(cls):
        cls.sim.stop()

    def apply(self, path, body, manager, force=None, expect=(200, 201), extra=""):
        q = "?fieldManager=" + manager + ("&force=%s" % force if force is not None else "") + extra
        st, obj = self.sim.req("PATCH", path + q, body, ctype=APPLY)
        if expect is not None and st not in expect:
            raise AssertionError("apply %s -> %s %r" % (path, st, obj))
        return st, obj

    def get(self, path):
        return self.sim.ok("GET", path)

    # -- create, update, shape ---------------------------------------------------------------
    def test_create_via_apply_and_the_entry_shape(self):
        st, o = self.apply(CM + "/c-create", cm("c-create", {"a": "1"}, {"x": "y"}), "alice")
        self.assertEqual(st, 201)
        mf = o["metadata"]["managedFields"]
        self.assertEqual(len(mf), 1)
        e = mf[0]
        self.assertEqual(list(e.keys()), ["manager", "operation", "apiVersion", "time",
                                          "fieldsType", "fieldsV1"])
        self.assertEqual((e["manager"], e["operation"], e["apiVersion"], e["fieldsType"]),
                         ("alice", "Apply", "v1", "FieldsV1"))
        self.assertRegex(e["time"], TIME)
        self.assertEqual(e["fieldsV1"], {"f:data": {"f:a": {}},
                                         "f:metadata": {"f:labels": {"f:x": {}}}})
        self.assertEqual(self.get(CM + "/c-create")["metadata"]["managedFields"], mf)

    def test_update_via_apply_and_noop(self):
        _, o1 = self.apply(CM + "/c-upd", cm("c-upd", {"a": "1"}), "alice")
        st, o2 = self.apply(CM + "/c-upd", cm("c-upd", {"a": "2", "b": "3"}), "alice")
        self.assertEqual(st, 200)
        self.assertEqual(o2["data"], {"a": "2", "b": "3"})
        self.assertNotEqual(o1["metadata"]["resourceVersion"], o2["metadata"]["resourceVersion"])
        self.assertEqual(entries(o2)[("alice", "Apply")]["fieldsV1"],
                         {"f:data": {"f:a": {}, "f:b": {}}})
        # The same configuration again changes nothing, not even the resourceVersion.
        _, o3 = self.apply(CM + "/c-upd", cm("c-upd", {"a": "2", "b": "3"}), "alice")
        self.assertEqual(o3["metadata"]["resourceVersion"], o2["metadata"]["resourceVersion"])

    def test_field_manager_required_and_validated(self):
        st, err = self.sim.req("PATCH", CM + "/c-x", cm("c-x", {}), ctype=APPLY)
        self.assertEqual(st, 422)
        self.assertEqual(err["message"], 'PatchOptions.meta.k8s.io "" is invalid: fieldManager: '
                                         'Required value: is required for apply patch')
        st, err = self.sim.req("POST", CM + "?fieldManager=" + "m" * 129, cm("c-long", {}))
        self.assertEqual(st, 422)
        self.assertIn("fieldManager: Too long: may not be more than 128 bytes", err["message"])
        st, err = self.sim.req("PATCH", CM + "/c-x?fieldManager=a&force=true", {"data": {}},
                               ctype=MERGE)
        self.assertEqual(st, 422)
        self.assertIn("force: Forbidden: may not be specified for non-apply patch", err["message"])
        st, err = self.sim.req("PATCH", CM + "/c-x?fieldManager=a",
                               dict(cm("c-x", {}), metadata={"name": "c-x", "managedFields": [
                                   {"manager": "a", "operation": "Apply"}]}), ctype=APPLY)
        self.assertEqual((st, err["message"]), (400, "metadata.managedFields must be nil"))
        st, err = self.sim.req("PATCH", CM + "/c-x?fieldManager=a", {"data": {}}, ctype=APPLY)
        self.assertEqual((st, err["message"]), (400, "Incorrect version specified in apply patch. "
                                                     "Specified patch version: , expected: v1"))
        st, err = self.sim.req("PATCH", DEP + "/d-x?fieldManager=a",
                               dict(dep("d-x"), apiVersion="apps/v1beta1"), ctype=APPLY)
        self.assertEqual((st, err["message"]), (400, "Incorrect version specified in apply patch. "
                                                     "Specified patch version: apps/v1beta1, "
                                                     "expected: apps/v1"))

    def test_update_entries_for_non_apply_writes(self):
        o = self.sim.ok("POST", CM + "?fieldManager=creator", cm("c-upd-entries", {"a": "1"}))
        self.assertEqual(entries(o)[("creator", "Update")]["fieldsV1"],
                         {"f:data": {".": {}, "f:a": {}}})
        # Without fieldManager the manager is the User-Agent up to its first "/".
        st, o = self.sim.req("PATCH", CM + "/c-upd-entries", {"data": {"b": "2"}}, ctype=MERGE,
                             headers={"User-Agent": "tau-tool/1.2 (linux/amd64)"})
        self.assertEqual(st, 200)
        e = entries(o)
        self.assertEqual(e[("tau-tool", "Update")]["fieldsV1"], {"f:data": {"f:b": {}}})
        self.assertEqual(e[("tau-tool", "Update")]["apiVersion"], "v1")
        # A PUT by the creator that changes a takes nothing from tau-tool.
        o["data"]["a"] = "9"
        o = self.sim.ok("PUT", CM + "/c-upd-entries?fieldManager=creator", o)
        e = entries(o)
        self.assertEqual(e[("creator", "Update")]["fieldsV1"], {"f:data": {".": {}, "f:a": {}}})
        self.assertIn(("tau-tool", "Update"), e)
        # managedFields: [{}] clears them.
        o = self.sim.ok("PATCH", CM + "/c-upd-entries", {"metadata": {"managedFields": [{}]}}, MERGE)
        self.assertNotIn("managedFields", o["metadata"])
        # ... and an object without managedFields is not tracked by updates again,
        o = self.sim.ok("PATCH", CM + "/c-upd-entries?fieldManager=x", {"data": {"c": "3"}}, MERGE)
        self.assertNotIn("managedFields", o["metadata"])
        # ... until an apply: what exists then belongs to "before-first-apply".
        _, o = self.apply(CM + "/c-upd-entries", cm("c-upd-entries", {"d": "4"}), "alice")
        e = entries(o)
        self.assertEqual(e[("alice", "Apply")]["fieldsV1"], {"f:data": {"f:d": {}}})
        self.assertEqual(e[("before-first-apply", "Update")]["fieldsV1"],
                         {"f:data": {".": {}, "f:a": {}, "f:b": {}, "f:c": {}}})
        # Apply entries come first.
        self.assertEqual([x["operation"] for x in o["metadata"]["managedFields"]],
                         ["Apply", "Update"])

    # -- removal, sharing ------------------------------------------------------------------------
    def test_field_removed_when_no_longer_applied(self):
        self.apply(CM + "/c-rm", cm("c-rm", {"a": "1", "b": "2"}, {"l1": "x", "l2": "y"}), "alice")
        self.apply(CM + "/c-rm", cm("c-rm", {"c": "3"}), "bob")
        _, o = self.apply(CM + "/c-rm", cm("c-rm", {"a": "1"}, {"l1": "x"}), "alice")
        self.assertEqual(o["data"], {"a": "1", "c": "3"})
        self.assertEqual(o["metadata"]["labels"], {"l1": "x"})
        # All labels dropped: the map goes.
        _, o = self.apply(CM + "/c-rm", cm("c-rm", {"a": "1"}), "alice")
        self.assertNotIn("labels", o["metadata"])
        # A field someone else changed by update is theirs: alice dropping it keeps it.
        self.sim.ok("PATCH", CM + "/c-rm?fieldManager=editor", {"data": {"a": "7"}}, MERGE)
        _, o = self.apply(CM + "/c-rm", cm("c-rm", {"e": "5"}), "alice")
        self.assertEqual(o["data"], {"a": "7", "c": "3", "e": "5"})

    def test_two_managers_share_a_field(self):
        self.apply(CM + "/c-share", cm("c-share", {"a": "1", "b": "1"}), "alice")
        _, o = self.apply(CM + "/c-share", cm("c-share", {"a": "1"}), "bob")  # same value: shared
        e = entries(o)
        self.assertEqual(e[("alice", "Apply")]["fieldsV1"], {"f:data": {"f:a": {}, "f:b": {}}})
        self.assertEqual(e[("bob", "Apply")]["fieldsV1"], {"f:data": {"f:a": {}}})
        _, o = self.apply(CM + "/c-share", cm("c-share", {"b": "1"}), "alice")
        self.assertEqual(o["data"], {"a": "1", "b": "1"})  # bob still owns a
        _, o = self.apply(CM + "/c-share", cm("c-share", {"z": "1"}), "bob")
        self.assertEqual(o["data"], {"b": "1", "z": "1"})  # nobody owns a any more

    # -- conflicts, force --------------------------------------------------------------------
    def test_conflict_with_an_updater_and_force(self):
        self.sim.ok("POST", DEP + "?fieldManager=creator", dep("d-conf", replicas=1))
        st, err = self.apply(DEP + "/d-conf", dep("d-conf", replicas=3), "alice", force="false",
                             expect=None)
        self.assertEqual(st, 409)
        self.assertEqual(err["reason"], "Conflict")
        self.assertEqual(err["message"], 'Apply failed with 1 conflict: conflict with "creator" '
                                         'using apps/v1: .spec.replicas')
        self.assertEqual(err["details"], {"causes": [{
            "reason": "FieldManagerConflict", "message": 'conflict with "creator" using apps/v1',
            "field": ".spec.replicas"}]})
        self.assertEqual(self.get(DEP + "/d-conf")["spec"]["replicas"], 1)
        # The same value is no conflict (shared ownership).
        self.apply(DEP + "/d-conf", dep("d-conf", replicas=1), "sharer")
        # force takes the field over.
        _, o = self.apply(DEP + "/d-conf", dep("d-conf", replicas=3), "alice", force="true")
        self.assertEqual(o["spec"]["replicas"], 3)
        e = entries(o)
        self.assertIn("f:replicas", e[("alice", "Apply")]["fieldsV1"]["f:spec"])
        self.assertNotIn("f:replicas", e[("creator", "Update")]["fieldsV1"]["f:spec"])
        self.assertNotIn("f:replicas", e[("sharer", "Apply")]["fieldsV1"]["f:spec"])

    def test_conflicts_with_appliers_list_every_path(self):
        self.apply(CM + "/c-multi", cm("c-multi", {"a": "1", "b": "1"}), "bob")
        self.apply(CM + "/c-multi", cm("c-multi", {"c": "1"}), "carol")
        st, err = self.apply(CM + "/c-multi", cm("c-multi", {"a": "2", "b": "2", "c": "2"}),
                             "alice", expect=None)
        self.assertEqual(st, 409)
        self.assertEqual(err["message"], 'Apply failed with 3 conflicts: conflicts with "bob":\n'
                                         '- .data.a\n- .data.b\nconflicts with "carol":\n- .data.c')
        self.assertEqual([(c["message"], c["field"]) for c in err["details"]["causes"]],
                         [('conflict with "bob"', ".data.a"), ('conflict with "bob"', ".data.b"),
                          ('conflict with "carol"', ".data.c")])

    def test_update_takes_ownership_then_apply_conflicts(self):
        self.apply(CM + "/c-edit", cm("c-edit", {"a": "1"}), "alice")
        o = self.sim.ok("PATCH", CM + "/c-edit?fieldManager=editor", {"data": {"a": "2"}}, MERGE)
        e = entries(o)
        self.assertNotIn(("alice", "Apply"), e)  # alice owned only data.a
        self.assertEqual(e[("editor", "Update")]["fieldsV1"], {"f:data": {"f:a": {}}})
        st, err = self.apply(CM + "/c-edit", cm("c-edit", {"a": "3"}), "alice", expect=None)
        self.assertEqual(st, 409)
        self.assertIn('conflict with "editor" using v1: .data.a', err["message"])

    # -- associative lists --------------------------------------------------------------------
    def test_keyed_lists_merge_by_key(self):
        main = {"name": "main", "image": "img:1", "args": ["--a"],
                "ports": [{"containerPort": 8080}],
                "env": [{"name": "A", "value": "1"}]}
        self.apply(DEP + "/d-list", dep("d-list", template={
            "metadata": {"labels": {"app": "d-list"}}, "spec": {"containers": [main]}}), "alice")
        side = {"name": "side", "image": "side:1", "env": [{"name": "S", "value": "s"}]}
        patch = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d-list"},
                 "spec": {"template": {"spec": {"containers": [
                     side, {"name": "main", "image": "img:1",
                            "env": [{"name": "B", "value": "2"}]}]}}}}
        _, o = self.apply(DEP + "/d-list", patch, "bob")
        cs = o["spec"]["template"]["spec"]["containers"]
        self.assertEqual([c["name"] for c in cs], ["main", "side"])
        self.assertEqual(cs[0]["env"], [{"name": "A", "value": "1"}, {"name": "B", "value": "2"}])
        self.assertEqual(cs[0]["image"], "img:1")
        fields = entries(o)[("alice", "Apply")]["fieldsV1"]["f:spec"]["f:template"]["f:spec"]
        item = fields["f:containers"]['k:{"name":"main"}']
        self.assertEqual(item["."], {})
        self.assertEqual(item["f:args"], {})  # an atomic list is one field
        self.assertEqual(item["f:ports"], {'k:{"containerPort":8080,"protocol":"TCP"}': {
            ".": {}, "f:containerPort": {}}})
        self.assertEqual(item["f:env"], {'k:{"name":"A"}': {".": {}, "f:name": {}, "f:value": {}}})
        # An atomic list is replaced whole, so another value is a conflict on the list.
        patch["spec"]["template"]["spec"]["containers"] = [
            {"name": "main", "image": "img:1", "args": ["--b"]}]
        st, err = self.apply(DEP + "/d-list", patch, "bob", expect=None)
        self.assertEqual(st, 409)
        self.assertEqual(err["details"]["causes"][0]["field"],
                         '.spec.template.spec.containers[name="main"].args')
        # alice dropping her container: bob still owns fields in it (name, image, env B), so
        # the item stays without what only alice owned... until bob drops it as well.
        side_only = dep("d-list", template={"metadata": {"labels": {"app": "d-list"}},
                                            "spec": {"containers": [side]}})
        _, o = self.apply(DEP + "/d-list", side_only, "alice")
        cs = o["spec"]["template"]["spec"]["containers"]
        self.assertEqual([c["name"] for c in cs], ["main", "side"])
        self.assertEqual(cs[0]["env"], [{"name": "B", "value": "2"}])
        self.assertEqual(cs[0]["image"], "img:1")
        self.assertNotIn("args", cs[0])
        self.assertNotIn("ports", cs[0])
        patch["spec"]["template"]["spec"]["containers"] = [side]
        _, o = self.apply(DEP + "/d-list", patch, "bob")
        self.assertEqual([c["name"] for c in o["spec"]["template"]["spec"]["containers"]], ["side"])

    def test_custom_resource_list_types_and_status(self):
        w = {"apiVersion": "ssa.example.com/v1", "kind": "Widget", "metadata": {"name": "w1"},
             "spec": {"size": 1, "parts": [{"name": "p1", "count": 1}], "tags": ["a"],
                      "args": ["x"], "owner": {"name": "n", "team": "t"}},
             "status": {"conditions": [{"type": "Ready", "status": "True"}]}}
        st, o = self.apply(WIDGETS + "/w1", w, "alice")
        self.assertEqual(st, 201)
        self.assertNotIn("status", o)  # status subresource: not written through the main resource
        f = entries(o)[("alice", "Apply")]["fieldsV1"]
        self.assertNotIn("f:status", f)
        self.assertEqual(f["f:spec"]["f:tags"], {'v:"a"': {}})
        self.assertEqual(f["f:spec"]["f:parts"], {'k:{"name":"p1"}': {
            ".": {}, "f:count": {}, "f:name": {}}})
        bob = {"apiVersion": "ssa.example.com/v1", "kind": "Widget", "metadata": {"name": "w1"},
               "spec": {"parts": [{"name": "p2"}], "tags": ["b"]}}
        _, o = self.apply(WIDGETS + "/w1", bob, "bob")
        self.assertEqual(o["spec"]["parts"], [{"name": "p1", "count": 1}, {"name": "p2"}])
        self.assertEqual(o["spec"]["tags"], ["a", "b"])
        # alice stops applying owner: the struct goes (nobody else owns a field in it).
        del w["spec"]["owner"]
        _, o = self.apply(WIDGETS + "/w1", w, "alice")
        self.assertNotIn("owner", o["spec"])
        # Status through /status: a separate entry with subresource "status".
        st_cfg = {"apiVersion": "ssa.example.com/v1", "kind": "Widget",
                  "metadata": {"name": "w1"},
                  "status": {"conditions": [{"type": "Ready", "status": "True"}]}}
        _, o = self.apply(WIDGETS + "/w1/status", st_cfg, "ctrl")
        self.assertEqual(o["status"]["conditions"], [{"type": "Ready", "status": "True"}])
        e = [x for x in o["metadata"]["managedFields"] if x["manager"] == "ctrl"][0]
        self.assertEqual(e["subresource"], "status")
        self.assertEqual(e["fieldsV1"], {"f:status": {"f:conditions": {'k:{"type":"Ready"}': {
            ".": {}, "f:status": {}, "f:type": {}}}}})

    def test_update_managers_capped_at_ten(self):
        self.sim.ok("POST", CM + "?fieldManager=m00", cm("c-cap", {"k00": "v"}))
        for i in range(1, 12):
            self.sim.ok("PATCH", CM + "/c-cap?fieldManager=m%02d" % i,
                        {"data": {"k%02d" % i: "v"}}, MERGE)
        o = self.get(CM + "/c-cap")
        names = sorted(e["manager"] for e in o["metadata"]["managedFields"])
        self.assertEqual(len(names), 10)
        self.assertIn("ancient-changes", names)
        self.assertIn("m11", names)
        ancient = entries(o)[("ancient-changes", "Update")]["fieldsV1"]["f:data"]
        self.assertGreaterEqual(len([k for k in ancient if k.startswith("f:")]), 2)
        owned = set()
        for e in o["metadata"]["managedFields"]:
            owned |= {k for k in e["fieldsV1"]["f:data"] if k.startswith("f:")}
        self.assertEqual(owned, {"f:k%02d" % i for i in range(12)})  # nothing lost

    def test_bad_associative_list_in_a_configuration(self):
        bad = dep("d-bad", template={"metadata": {"labels": {"app": "d-bad"}}, "spec": {
            "containers": [{"image": "img:1"}]}})
        st, err = self.apply(DEP + "/d-bad", bad, "alice", expect=None)
        self.assertEqual((st, err["reason"]), (500, "InternalError"))
        self.assertEqual(err["message"], 'Internal error occurred: failed to create typed patch '
                         'object (apps/v1, Kind=Deployment): .spec.template.spec.containers: '
                         'element 0: associative list with keys has an element that omits key '
                         'field "name" (and doesn\'t have default value)')
        bad["spec"]["template"]["spec"]["containers"] = [{"name": "a"}, {"name": "a"}]
        st, err = self.apply(DEP + "/d-bad", bad, "alice", expect=None)
        self.assertEqual(st, 500)
        self.assertIn('.spec.template.spec.containers: duplicate entries for key [name="a"]',
                      err["message"])

    def test_dry_run(self):
        self.apply(CM + "/c-dry", cm("c-dry", {"a": "1"}), "alice")
        _, o = self.apply(CM + "/c-dry", cm("c-dry", {"a": "1", "b": "2"}), "bob", force="true",
                          extra="&dryRun=All")
        self.assertEqual(o["data"], {"a": "1", "b": "2"})
        self.assertIn(("bob", "Apply"), entries(o))
        cur = self.get(CM + "/c-dry")
        self.assertEqual(cur["data"], {"a": "1"})
        self.assertNotIn(("bob", "Apply"), entries(cur))
        st, err = self.apply(CM + "/c-dry", cm("c-dry", {"a": "2"}), "bob", expect=None,
                             extra="&dryRun=All")
        self.assertEqual(st, 409)  # a dry run reports conflicts too

    # -- kubectl ---------------------------------------------------------------------------------
    def test_kubectl_server_side_apply(self):
        tmp = tempfile.mkdtemp(prefix="ssa-kubectl-", dir=self.sim.tmp)
        path = os.path.join(tmp, "cm.yaml")

        def write(data):
            with open(path, "w") as f:
                json.dump(cm("k-cm", data, {"app": "k"}), f)
        write({"a": "1", "b": "2"})
        r = self.sim.kubectl("apply", "--server-side", "-f", path)
        self.assertIn("configmap/k-cm serverside-applied", r.stdout)
        write({"a": "1"})
        self.sim.kubectl("apply", "--server-side", "-f", path)
        o = json.loads(self.sim.kubectl("get", "cm", "k-cm", "-o", "json",
                                        "--show-managed-fields").stdout)
        self.assertEqual(o["data"], {"a": "1"})
        self.assertEqual(entries(o)[("kubectl", "Apply")]["fieldsV1"]["f:data"], {"f:a": {}})
        self.sim.kubectl("patch", "cm", "k-cm", "--type", "merge", "-p", '{"data":{"a":"9"}}')
        write({"a": "2"})
        r = self.sim.kubectl("apply", "--server-side", "-f", path, check=False)
        self.assertNotEqual(r.returncode, 0)
        self.assertIn('Apply failed with 1 conflict: conflict with "kubectl-patch" using v1: '
                      '.data.a', r.stderr)
        self.sim.kubectl("apply", "--server-side", "--force-conflicts", "-f", path)
        self.assertEqual(self.get(CM + "/k-cm")["data"], {"a": "2"})

    def test_kubectl_client_side_then_server_side(self):
        tmp = tempfile.mkdtemp(prefix="ssa-kubectl-", dir=self.sim.tmp)
        path = os.path.join(tmp, "cm.yaml")
        with open(path, "w") as f:
            json.dump(cm("k-csa", {"a": "1", "b": "2"}), f)
        self.sim.kubectl("apply", "-f", path)
        o = self.get(CM + "/k-csa")
        self.assertIn(("kubectl-client-side-apply", "Update"), entries(o))
        with open(path, "w") as f:
            json.dump(cm("k-csa", {"a": "1"}), f)
        # kubectl moves the client-side apply ownership to its server-side manager first, so
        # b (applied before, no longer) is removed and nothing conflicts.
        self.sim.kubectl("apply", "--server-side", "-f", path)
        o = self.get(CM + "/k-csa")
        self.assertEqual(o["data"], {"a": "1"})
        e = entries(o)
        self.assertIn(("kubectl", "Apply"), e)
        self.assertNotIn(("kubectl-client-side-apply", "Update"), e)
        last = json.loads(o["metadata"]["annotations"][
            "kubectl.kubernetes.io/last-applied-configuration"])
        self.assertEqual(last["data"], {"a": "1"})


if __name__ == "__main__":
    unittest.main(verbosity=2)
