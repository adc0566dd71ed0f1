"""Real kubectl against kube-sim: every command the project relies on."""
import json
import os
import shutil
import tempfile
import threading
import unittest

from simtest import KUBECTL, SimProcess, wait_for

FIXTURES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "fixtures")
NODE_FIXTURE = os.path.join(FIXTURES, "kube", "node-nd-h100-v5.json")

CRD_YAML = """\
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: widgets.test.example.com
spec:
  group: test.example.com
  names:
    kind: Widget
    listKind: WidgetList
    plural: widgets
    singular: widget
    shortNames: [wg]
    categories: [testing]
  scope: Namespaced
  versions:
  - name: v1
    served: true
    storage: true
    subresources:
      status: {}
    additionalPrinterColumns:
    - name: Size
      type: integer
      jsonPath: .spec.size
    - name: Phase
      type: string
      jsonPath: .status.phase
    - name: Age
      type: date
      jsonPath: .metadata.creationTimestamp
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            properties:
              size:
                type: integer
                minimum: 0
              color:
                type: string
                default: blue
          status:
            type: object
            properties:
              phase:
                type: string
              conditions:
                type: array
                items:
                  type: object
                  x-kubernetes-preserve-unknown-fields: true
"""

WIDGET = """\
apiVersion: test.example.com/v1
kind: Widget
metadata:
  name: %(name)s
  namespace: default
spec:
  size: %(size)d
"""


@unittest.skipUnless(os.path.exists(KUBECTL), "kubectl not installed")
class KubectlTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.sim = SimProcess(["--seed", NODE_FIXTURE])
        cls.tmp = tempfile.mkdtemp(prefix="kubectl-test-")
        with open(NODE_FIXTURE) as f:
            cls.node = json.load(f)["metadata"]["name"]

    @classmethod
    def tearDownClass(cls):
        cls.sim.stop()
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def k(self, *args, **kw):
        return self.sim.kubectl(*args, **kw)

    def write(self, name, text):
        p = os.path.join(self.tmp, name)
        with open(p, "w") as f:
            f.write(text)
        return p

    def getj(self, *args):
        return json.loads(self.k("get", "-o", "json", *args).stdout)

    def ensure_crd(self):
        if getattr(KubectlTest, "_crd_done", False):
            return
        p = self.write("crd.yaml", CRD_YAML)
        self.k("apply", "-f", p)
        self.k("wait", "--for=condition=Established", "crd/widgets.test.example.com", "--timeout=60s")
        KubectlTest._crd_done = True

    # -- get ----------------------------------------------------------------------
    def test_get_table_json_yaml_jsonpath(self):
        out = self.k("get", "nodes").stdout
        self.assertIn("NAME", out.splitlines()[0])
        self.assertIn("STATUS", out.splitlines()[0])
        self.assertIn(self.node, out)
        self.assertIn("Ready", out)
        wide = self.k("get", "nodes", "-o", "wide").stdout
        self.assertIn("INTERNAL-IP", wide)
        lst = self.getj("nodes")
        self.assertEqual(lst["kind"], "List")
        self.assertEqual(lst["items"][0]["metadata"]["name"], self.node)
        self.assertEqual(lst["items"][0]["kind"], "Node")
        y = self.k("get", "node", self.node, "-o", "yaml").stdout
        self.assertIn("kind: Node", y)
        jp = self.k("get", "node", self.node, "-o", "jsonpath={.metadata.name}").stdout
        self.assertEqual(jp, self.node)
        ns = self.k("get", "ns").stdout
        for n in ("default", "kube-system"):
            self.assertIn(n, ns)
        self.assertIn("Active", ns)
        # label selector and field selector through kubectl
        self.assertIn(self.node, self.k("get", "nodes", "-l", "kubernetes.io/os=linux").stdout)
        r = self.k("get", "nodes", "-l", "nosuch=label")
        self.assertIn("No resources found", r.stderr)
        self.assertIn(self.node, self.k("get", "nodes", "--field-selector",
                                        "metadata.name=" + self.node).stdout)

    def test_get_not_found_message(self):
        r = self.k("get", "configmap", "does-not-exist", check=False)
        self.assertNotEqual(r.returncode, 0)
        self.assertIn('Error from server (NotFound): configmaps "does-not-exist" not found', r.stderr)

    # -- apply / create / delete --------------------------------------------------
    def test_apply_builtin_create_and_update(self):
        p = self.write("cm.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: applied\n"
                                  "data:\n  a: \"1\"\n  b: \"2\"\n")
        r = self.k("apply", "-f", p)
        self.assertIn("configmap/applied created", r.stdout)
        self.write("cm.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: applied\n"
                              "  labels:\n    xx: yy\ndata:\n  a: \"10\"\n")
        r = self.k("apply", "-f", p)
        self.assertIn("configmap/applied configured", r.stdout)
        cm = self.getj("configmap", "applied")
        self.assertEqual(cm["data"], {"a": "10"})       # b removed via last-applied SMP
        self.assertEqual(cm["metadata"]["labels"], {"xx": "yy"})
        r = self.k("apply", "-f", p)
        self.assertIn("unchanged", r.stdout)

    def test_apply_deployment_strategic_merge(self):
        dep = {"apiVersion": "apps/v1", "kind": "Deployment",
               "metadata": {"name": "web"},
               "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "web"}},
                        "template": {"metadata": {"labels": {"app": "web"}},
                                     "spec": {"containers": [
                                         {"name": "a", "image": "nginx:1", "env": [{"name": "X", "value": "1"}]},
                                         {"name": "b", "image": "busybox:1"}]}}}}
        p = self.write("dep.json", json.dumps(dep))
        self.k("apply", "-f", p)
        dep["spec"]["template"]["spec"]["containers"] = [
            {"name": "a", "image": "nginx:2", "env": [{"name": "Y", "value": "2"}]}]
        self.write("dep.json", json.dumps(dep))
        self.k("apply", "-f", p)
        got = self.getj("deployment", "web")
        cs = got["spec"]["template"]["spec"]["containers"]
        self.assertEqual([c["name"] for c in cs], ["a"])
        self.assertEqual(cs[0]["image"], "nginx:2")
        self.assertEqual(cs[0]["env"], [{"name": "Y", "value": "2"}])
        self.assertEqual(got["metadata"]["generation"], 2)
        self.assertIn("web", self.k("get", "deploy").stdout)

    def test_create_generators_and_file(self):
        self.k("create", "namespace", "gen-ns")
        self.k("create", "configmap", "gen-cm", "-n", "gen-ns", "--from-literal=k=v")
        self.k("create", "secret", "generic", "gen-secret", "-n", "gen-ns", "--from-literal=p=q")
        self.k("create", "serviceaccount", "gen-sa", "-n", "gen-ns")
        self.k("create", "role", "gen-role", "-n", "gen-ns", "--verb=get", "--resource=pods")
        self.k("create", "rolebinding", "gen-rb", "-n", "gen-ns", "--role=gen-role", "--user=alice")
        self.k("create", "deployment", "gen-dep", "-n", "gen-ns", "--image=nginx")
        self.assertEqual(self.getj("cm", "gen-cm", "-n", "gen-ns")["data"], {"k": "v"})
        self.assertEqual(self.getj("secret", "gen-secret", "-n", "gen-ns")["data"], {"p": "cQ=="})
        rb = self.getj("rolebinding", "gen-rb", "-n", "gen-ns")
        self.assertEqual(rb["roleRef"]["name"], "gen-role")
        self.assertEqual(rb["subjects"][0]["name"], "alice")
        role = self.getj("role", "gen-role", "-n", "gen-ns")
        self.assertEqual(role["rules"], [{"apiGroups": [""], "resources": ["pods"], "verbs": ["get"]}])
        p = self.write("lease.yaml", "apiVersion: coordination.k8s.io/v1\nkind: Lease\nmetadata:\n"
                                     "  name: l1\n  namespace: gen-ns\nspec:\n  holderIdentity: me\n"
                                     "  leaseDurationSeconds: 15\n")
        self.assertIn("created", self.k("create", "-f", p).stdout)
        r = self.k("create", "-f", p, check=False)
        self.assertIn("AlreadyExists", r.stderr)
        self.assertIn("me", self.k("get", "lease", "-n", "gen-ns").stdout)
        self.assertIn("yes", self.k("auth", "can-i", "list", "pods").stdout)

    def test_create_invalid_name(self):
        p = self.write("bad.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: Bad_Name\n")
        r = self.k("create", "-f", p, check=False)
        self.assertNotEqual(r.returncode, 0)
        self.assertIn('The ConfigMap "Bad_Name" is invalid: metadata.name: Invalid value: "Bad_Name": '
                      "a lowercase RFC 1123 subdomain", r.stderr)

    def test_delete_wait_with_finalizer(self):
        p = self.write("fin.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: fin\n"
                                   "  finalizers: [example.com/hold]\n")
        self.k("apply", "-f", p)
        proc = self.sim.kubectl_popen("delete", "configmap", "fin", "--timeout=120s")
        try:
            wait_for(lambda: self.getj("cm", "fin")["metadata"].get("deletionTimestamp"),
                     msg="deletionTimestamp")
            self.assertIsNone(proc.poll())
            self.k("patch", "configmap", "fin", "--type=json",
                   "-p", '[{"op":"remove","path":"/metadata/finalizers"}]')
            out, err = proc.communicate(timeout=120)
            self.assertEqual(proc.returncode, 0, err)
            self.assertIn('configmap "fin" deleted', out)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.communicate()
        r = self.k("get", "cm", "fin", check=False)
        self.assertIn("NotFound", r.stderr)

    def test_delete_namespace_with_contents(self):
        self.k("create", "namespace", "doomed")
        self.k("create", "configmap", "c1", "-n", "doomed")
        self.k("delete", "namespace", "doomed", "--timeout=120s")
        r = self.k("get", "ns", "doomed", check=False)
        self.assertIn("NotFound", r.stderr)

    # -- patch / label / annotate / cordon -------------------------------------
    def test_label_annotate_patch_node(self):
        n = self.node
        self.k("label", "node", n, "team=blue")
        self.k("annotate", "node", n, "example.com/note=hello")
        self.assertEqual(self.getj("node", n)["metadata"]["labels"]["team"], "blue")
        r = self.k("label", "node", n, "team=red", check=False)
        self.assertNotEqual(r.returncode, 0)
        self.k("label", "node", n, "team=red", "--overwrite")
        self.k("label", "node", n, "team-")
        node = self.getj("node", n)
        self.assertNotIn("team", node["metadata"]["labels"])
        self.assertEqual(node["metadata"]["annotations"]["example.com/note"], "hello")
        self.k("patch", "node", n, "--type=merge", "-p", '{"metadata":{"labels":{"m":"1"}}}')
        self.k("patch", "node", n, "--type=json", "-p", '[{"op":"add","path":"/metadata/labels/j","value":"2"}]')
        self.k("patch", "node", n, "-p", '{"metadata":{"labels":{"s":"3"}}}')  # strategic (default)
        labels = self.getj("node", n)["metadata"]["labels"]
        self.assertEqual((labels["m"], labels["j"], labels["s"]), ("1", "2", "3"))
        r = self.k("patch", "node", n, "--type=json", "-p",
                   '[{"op":"test","path":"/metadata/labels/m","value":"nope"}]', check=False)
        self.assertNotEqual(r.returncode, 0)

    def test_cordon_uncordon(self):
        n = self.node
        self.assertIn("cordoned", self.k("cordon", n).stdout)
        node = self.getj("node", n)
        self.assertTrue(node["spec"]["unschedulable"])
        self.assertIn("SchedulingDisabled", self.k("get", "node", n).stdout)
        wait_for(lambda: any(t["key"] == "node.kubernetes.io/unschedulable"
                             for t in self.getj("node", n)["spec"].get("taints", [])), msg="taint")
        self.assertIn("uncordoned", self.k("uncordon", n).stdout)
        self.assertFalse(self.getj("node", n)["spec"].get("unschedulable", False))

    # -- wait / watch ----------------------------------------------------------------
    def test_wait_for_condition(self):
        pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "waiter"},
               "spec": {"containers": [{"name": "c", "image": "busybox"}]}}
        self.k("apply", "-f", self.write("pod.json", json.dumps(pod)))
        proc = self.sim.kubectl_popen("wait", "--for=condition=Ready", "pod/waiter", "--timeout=120s")
        try:
            # patch only once kubectl is watching, so the watch path is what sees it
            wait_for(lambda: self.sim.ok("GET", "/sim/stats").get("watch/pods", 0) >= 1,
                     timeout=60, msg="kubectl wait to start watching")
            status = {"status": {"phase": "Running", "conditions": [
                {"type": "Ready", "status": "True", "lastTransitionTime": "2025-01-01T00:00:00Z"}]}}
            self.k("patch", "pod", "waiter", "--subresource=status", "--type=merge",
                   "-p", json.dumps(status))
            out, err = proc.communicate(timeout=120)
            self.assertEqual(proc.returncode, 0, err)
            self.assertIn("condition met", out)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.communicate()
        self.assertIn("Running", self.k("get", "pod", "waiter").stdout)
        r = self.k("wait", "--for=condition=Nope", "pod/waiter", "--timeout=1s", check=False)
        self.assertNotEqual(r.returncode, 0)

    def test_get_watch(self):
        proc = self.sim.kubectl_popen("get", "configmaps", "-n", "kube-public", "--watch")
        lines = []

        def reader():
            for line in proc.stdout:
                lines.append(line)
        t = threading.Thread(target=reader, daemon=True)
        t.start()
        try:
            self.sim.ok("POST", "/api/v1/namespaces/kube-public/configmaps",
                        {"metadata": {"name": "watched"}})
            wait_for(lambda: any(l.startswith("watched") for l in lines), msg="watched cm in -w output",
                     timeout=60)
            # this one can only arrive through the watch
            self.sim.ok("POST", "/api/v1/namespaces/kube-public/configmaps",
                        {"metadata": {"name": "watched2"}})
            wait_for(lambda: any(l.startswith("watched2") for l in lines), msg="watched2 in -w output",
                     timeout=60)
            self.sim.ok("DELETE", "/api/v1/namespaces/kube-public/configmaps/watched")
        except AssertionError:
            if proc.poll() is not None:
                raise AssertionError("kubectl get -w exited: %s" % proc.stderr.read())
            raise
        finally:
            proc.kill()
            proc.communicate()

    # -- custom resources ------------------------------------------------------------
    def test_crd_and_custom_resources(self):
        self.ensure_crd()
        self.assertIn("widgets", self.k("api-resources", "--api-group=test.example.com").stdout)
        p = self.write("w.yaml", WIDGET % {"name": "w1", "size": 3})
        self.assertIn("widget.test.example.com/w1 created", self.k("apply", "-f", p).stdout)
        self.write("w.yaml", WIDGET % {"name": "w1", "size": 5})
        self.assertIn("configured", self.k("apply", "-f", p).stdout)
        w = self.getj("widget", "w1")
        self.assertEqual(w["spec"], {"size": 5, "color": "blue"})    # defaulted
        self.assertEqual(w["metadata"]["generation"], 2)
        out = self.k("get", "wg").stdout                               # short name, printer columns
        self.assertIn("SIZE", out.splitlines()[0])
        self.assertIn("PHASE", out.splitlines()[0])
        self.assertRegex(out, r"w1\s+5\s")
        self.assertIn("w1", self.k("get", "testing").stdout)          # category
        self.k("patch", "widget", "w1", "--type=merge", "-p", '{"spec":{"size":7}}')
        self.k("patch", "widget", "w1", "--type=json", "-p", '[{"op":"replace","path":"/spec/color","value":"red"}]')
        self.k("patch", "widget", "w1", "--subresource=status", "--type=merge",
               "-p", '{"status":{"phase":"Ready","conditions":[{"type":"Ready","status":"True"}]}}')
        self.k("label", "widget", "w1", "tier=gold")
        self.k("annotate", "widget", "w1", "note=x")
        w = self.getj("widget", "w1")
        self.assertEqual(w["spec"], {"size": 7, "color": "red"})
        self.assertEqual(w["status"]["phase"], "Ready")
        self.assertEqual(w["metadata"]["labels"], {"tier": "gold"})
        self.assertEqual(w["metadata"]["generation"], 4)
        self.assertIn("Ready", self.k("get", "widget", "w1").stdout)
        self.k("wait", "--for=condition=Ready", "widget/w1", "--timeout=60s")
        # strategic merge is refused for CRs, as on a real server
        r = self.k("patch", "widget", "w1", "--type=strategic", "-p", '{"spec":{"size":1}}', check=False)
        self.assertIn("application/strategic-merge-patch+json is not supported", r.stderr)
        # schema validation and strict unknown fields
        r = self.k("apply", "-f", self.write("bad.yaml", WIDGET % {"name": "w2", "size": -1}), check=False)
        self.assertIn('The Widget "w2" is invalid: spec.size: Invalid value: -1', r.stderr)
        r = self.k("apply", "-f", self.write("bad2.yaml", (WIDGET % {"name": "w3", "size": 1}) + "  extra: 1\n"),
                   check=False)
        self.assertIn('strict decoding error: unknown field "spec.extra"', r.stderr)
        self.k("create", "-f", self.write("w4.yaml", WIDGET % {"name": "w4", "size": 1}))
        self.k("delete", "widget", "w4", "--wait=true", "--timeout=60s")
        self.k("delete", "-f", p)
        self.assertIn("NotFound", self.k("get", "widget", "w1", check=False).stderr)


if __name__ == "__main__":
    unittest.main()
