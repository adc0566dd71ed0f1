"""DeviceClass and ResourceSlice (resource.k8s.io/v1): the fixtures accepted, the API server's
validation (each rule broken once, with its text), discovery, field selectors and watches over
raw HTTP, and kubectl apply/get of the same objects."""
import copy
import json
import os
import shutil
import tempfile
import unittest

from simtest import KUBECTL, SimProcess, WatchStream

DRA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "fixtures", "dra")
SLICES = "/apis/resource.k8s.io/v1/resourceslices"
CLASSES = "/apis/resource.k8s.io/v1/deviceclasses"


def fixture(name):
    with open(os.path.join(DRA, name)) as f:
        return json.load(f)


def slice_obj(name, node="node-a", driver="gpu.nvidia.com", gen=1, count=1, devices=None):
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice",
            "metadata": {"name": name},
            "spec": {"driver": driver, "nodeName": node,
                     "pool": {"name": node, "generation": gen, "resourceSliceCount": count},
                     "devices": devices if devices is not None else [
                         {"name": "gpu-0", "attributes": {"type": {"string": "gpu"}},
                          "capacity": {"memory": {"value": "80Gi"}}}]}}


class DraApiTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.sim = SimProcess([])

    @classmethod
    def tearDownClass(cls):
        cls.sim.stop()

    def create_invalid(self, path, body):
        st, out = self.sim.req("POST", path, body)
        self.assertEqual(st, 422, out)
        self.assertEqual(out["reason"], "Invalid")
        return out

    def causes(self, out):
        return {(c["field"], c["message"]) for c in out["details"]["causes"]}

    def test_discovery(self):
        st, d = self.sim.req("GET", "/apis/resource.k8s.io/v1")
        self.assertEqual(st, 200)
        res = {r["name"]: r for r in d["resources"]}
        for plural, kind in (("deviceclasses", "DeviceClass"), ("resourceslices", "ResourceSlice")):
            self.assertEqual(res[plural]["kind"], kind)
            self.assertFalse(res[plural]["namespaced"])
            self.assertIn("watch", res[plural]["verbs"])
        st, groups = self.sim.req("GET", "/apis")
        names = [g["name"] for g in groups["groups"]]
        self.assertIn("resource.k8s.io", names)

    def test_fixtures_accepted(self):
        for name in ("deviceclass-gpu.nvidia.com.json", "deviceclass-mig.nvidia.com.json"):
            obj = fixture(name)
            got = self.sim.ok("POST", CLASSES, obj)
            self.assertEqual(got["spec"], obj["spec"])
            self.assertEqual(got["metadata"]["generation"], 1)
            self.sim.ok("DELETE", CLASSES + "/" + obj["metadata"]["name"])
        for name in ("resourceslice-h100-complete.json", "resourceslice-h100-inflight.json"):
            obj = fixture(name)
            got = self.sim.ok("POST", SLICES, obj)
            self.assertEqual(got["spec"], obj["spec"])
            self.sim.ok("DELETE", SLICES + "/" + obj["metadata"]["name"])

    def test_pool_rules(self):
        bad = slice_obj("pool-bad")
        bad["spec"]["pool"] = {"name": "Node_A", "generation": -1, "resourceSliceCount": 0}
        out = self.create_invalid(SLICES, bad)
        c = self.causes(out)
        self.assertIn(("spec.pool.resourceSliceCount",
                       "Invalid value: 0: must be greater than zero"), c)
        self.assertIn(("spec.pool.generation",
                       "Invalid value: -1: must be greater than or equal to zero"), c)
        self.assertTrue(any(f == "spec.pool.name" and "lowercase RFC 1123 subdomain" in m
                            for f, m in c), c)
        self.assertIn('ResourceSlice.resource.k8s.io "pool-bad" is invalid', out["message"])
        missing = slice_obj("pool-missing")
        missing["spec"]["pool"] = {}
        c = self.causes(self.create_invalid(SLICES, missing))
        self.assertIn(("spec.pool.name", "Required value"), c)
        self.assertIn(("spec.pool.resourceSliceCount",
                       "Invalid value: 0: must be greater than zero"), c)
        # a pool name is DNS subdomains joined by slashes
        ok = slice_obj("pool-slashes")
        ok["spec"]["pool"]["name"] = "rack-1/node-a"
        self.sim.ok("POST", SLICES, ok)

    def test_driver_name(self):
        c = self.causes(self.create_invalid(SLICES, slice_obj("drv-bad", driver="GPU_nvidia")))
        self.assertTrue(any(f == "spec.driver" and "RFC 1123 subdomain" in m for f, m in c), c)
        c = self.causes(self.create_invalid(SLICES, slice_obj("drv-long", driver="a" * 64 + ".com")))
        self.assertIn(("spec.driver", "Too long: may not be more than 63 bytes"), c)
        c = self.causes(self.create_invalid(SLICES, slice_obj("drv-none", driver="")))
        self.assertIn(("spec.driver", "Required value"), c)

    def test_node_selection_exactly_one(self):
        none = slice_obj("sel-none")
        del none["spec"]["nodeName"]
        c = self.causes(self.create_invalid(SLICES, none))
        self.assertIn(("spec", "Required value: exactly one of `nodeName`, `nodeSelector`, "
                               "`allNodes`, `perDeviceNodeSelection` is required"), c)
        two = slice_obj("sel-two")
        two["spec"]["allNodes"] = True
        c = self.causes(self.create_invalid(SLICES, two))
        self.assertIn(("spec", 'Invalid value: "{`nodeName`, `allNodes`}": exactly one of '
                               '`nodeName`, `nodeSelector`, `allNodes`, `perDeviceNodeSelection` '
                               'is required, but multiple fields are set'), c)
        false = slice_obj("sel-false")
        del false["spec"]["nodeName"]
        false["spec"]["allNodes"] = False
        c = self.causes(self.create_invalid(SLICES, false))
        self.assertIn(("spec.allNodes", "Invalid value: false: must be either unset or set to true"), c)
        terms = slice_obj("sel-terms")
        del terms["spec"]["nodeName"]
        terms["spec"]["nodeSelector"] = {"nodeSelectorTerms": []}
        c = self.causes(self.create_invalid(SLICES, terms))
        self.assertIn(("spec.nodeSelector.nodeSelectorTerms",
                       "Invalid value: []: must have exactly one node selector term"), c)
        # the network-attached shapes are accepted
        for name, sel in (("sel-all", {"allNodes": True}),
                          ("sel-selector", {"nodeSelector": {"nodeSelectorTerms": [
                              {"matchExpressions": [{"key": "rack", "operator": "In",
                                                     "values": ["r1"]}]}]}})):
            o = slice_obj(name)
            del o["spec"]["nodeName"]
            o["spec"].update(sel)
            self.sim.ok("POST", SLICES, o)

    def test_per_device_node_selection(self):
        o = slice_obj("per-dev")
        del o["spec"]["nodeName"]
        o["spec"]["perDeviceNodeSelection"] = True
        c = self.causes(self.create_invalid(SLICES, o))
        self.assertIn(("spec.devices[0]", "Required value: exactly one of `nodeName`, "
                       "`nodeSelector`, or `allNodes` is required when `perDeviceNodeSelection` "
                       "is set to true in the ResourceSlice spec"), c)
        o["spec"]["devices"][0]["nodeName"] = "node-a"
        self.sim.ok("POST", SLICES, o)
        stray = slice_obj("per-dev-stray")
        stray["spec"]["devices"][0]["allNodes"] = True
        c = self.causes(self.create_invalid(SLICES, stray))
        self.assertIn(("spec.devices[0]", "Invalid value: null: `nodeName`, `nodeSelector` and "
                       "`allNodes` can only be set if `perDeviceNodeSelection` is set to true in "
                       "the ResourceSlice spec"), c)

    def test_devices(self):
        dev = {"name": "gpu-0", "attributes": {"type": {"string": "gpu"}}}
        c = self.causes(self.create_invalid(SLICES, slice_obj("dup", devices=[dev, dict(dev)])))
        self.assertIn(("spec.devices[1]", 'Duplicate value: "gpu-0"'), c)
        c = self.causes(self.create_invalid(SLICES, slice_obj("dname", devices=[{"name": "GPU.0"}])))
        self.assertTrue(any(f == "spec.devices[0].name" and "RFC 1123 label" in m for f, m in c), c)
        many = [{"name": "gpu-%d" % i} for i in range(129)]
        c = self.causes(self.create_invalid(SLICES, slice_obj("many", devices=many)))
        self.assertIn(("spec.devices", "Too many: 129: must have at most 128 items"), c)
        self.sim.ok("POST", SLICES, slice_obj("max", devices=many[:128]))
        tainted = [{"name": "gpu-%d" % i} for i in range(65)]
        tainted[0]["taints"] = [{"key": "k", "effect": "NoSchedule"}]
        c = self.causes(self.create_invalid(SLICES, slice_obj("tainted", devices=tainted)))
        self.assertIn(("spec.devices", "Too many: 65: must have at most 64 items"), c)

    def test_attributes_and_capacity(self):
        attrs = {
            "two": {"string": "a", "int": 1},
            "none": {},
            "long": {"string": "x" * 65},
            "ver": {"version": "9.0"},
            "bad-name": {"bool": True},
            "Example.COM/ok": {"bool": True},
            "example.com/": {"bool": True},
        }
        c = self.causes(self.create_invalid(SLICES, slice_obj("attrs", devices=[
            {"name": "gpu-0", "attributes": attrs}])))
        p = "spec.devices[0].attributes"
        # (the real text prints the Go struct there; kube-sim the JSON)
        self.assertTrue(any(f == p + "[two]" and m.endswith(": exactly one value must be specified")
                            for f, m in c), c)
        self.assertIn((p + "[none]", 'Invalid value: "": exactly one value must be specified'), c)
        self.assertIn((p + "[long].string", "Too long: may not be more than 64 bytes"), c)
        self.assertIn((p + "[ver].version", 'Invalid value: "9.0": must be a string compatible '
                       "with semver.org spec 2.0.0"), c)
        self.assertTrue(any(f == p + "[bad-name]" and "a valid C identifier" in m for f, m in c), c)
        self.assertIn((p + "[example.com/]", 'Invalid value: "": the name must not be empty'), c)
        self.assertFalse(any(f == p + "[Example.COM/ok]" for f, _ in c), c)
        too_many = {"a%d" % i: {"int": i} for i in range(20)}
        caps = {"c%d" % i: {"value": "1"} for i in range(13)}
        c = self.causes(self.create_invalid(SLICES, slice_obj("count", devices=[
            {"name": "gpu-0", "attributes": too_many, "capacity": caps}])))
        self.assertIn(("spec.devices[0]", "Invalid value: 33: the total number of attributes and "
                       "capacities must not exceed 32"), c)
        # a quantity that does not parse fails the decode: 400, not 422
        st, out = self.sim.req("POST", SLICES, slice_obj("qty", devices=[
            {"name": "gpu-0", "capacity": {"memory": {"value": "80 GB"}}}]))
        self.assertEqual(st, 400, out)
        self.assertIn('ResourceSlice in version "v1" cannot be handled as a ResourceSlice: '
                      "quantities must match the regular expression", out["message"])
        self.assertEqual(self.sim.req("GET", SLICES + "/qty")[0], 404)

    def test_update_immutable_fields(self):
        self.sim.ok("POST", SLICES, slice_obj("immut", node="node-b"))
        cur = self.sim.ok("GET", SLICES + "/immut")
        gen0 = cur["metadata"]["generation"]
        changed = copy.deepcopy(cur)
        changed["spec"]["pool"]["generation"] = 2
        changed["spec"]["devices"].append({"name": "gpu-1"})
        got = self.sim.ok("PUT", SLICES + "/immut", changed)
        self.assertEqual(got["metadata"]["generation"], gen0 + 1)
        bad = copy.deepcopy(got)
        bad["spec"]["driver"] = "other.example.com"
        bad["spec"]["nodeName"] = "node-c"
        bad["spec"]["pool"]["name"] = "node-c"
        st, out = self.sim.req("PUT", SLICES + "/immut", bad)
        self.assertEqual(st, 422, out)
        c = self.causes(out)
        for f, v in (("spec.driver", "other.example.com"), ("spec.nodeName", "node-c"),
                     ("spec.pool.name", "node-c")):
            self.assertIn((f, 'Invalid value: "%s": field is immutable' % v), c)
        self.assertEqual(self.sim.ok("GET", SLICES + "/immut")["spec"]["driver"], "gpu.nvidia.com")

    def test_device_class_rules(self):
        dc = fixture("deviceclass-gpu.nvidia.com.json")
        dc["metadata"]["name"] = "bad-class"
        dc["spec"]["extendedResourceName"] = "gpu"
        dc["spec"]["selectors"].append({"cel": {"expression": "device.driver == "}})
        dc["spec"]["selectors"].append({})
        dc["spec"]["config"] = [{"opaque": {"driver": "gpu.nvidia.com", "parameters": [1]}}]
        c = self.causes(self.create_invalid(CLASSES, dc))
        self.assertIn(("spec.extendedResourceName",
                       'Invalid value: "gpu": must be a valid extended resource name'), c)
        self.assertIn(("spec.selectors[2].cel", "Required value"), c)
        self.assertIn(("spec.config[0].opaque.parameters",
                       'Invalid value: "<value omitted>": must be a valid JSON object'), c)
        cel = [m for f, m in c if f == "spec.selectors[1].cel.expression"]
        self.assertEqual(len(cel), 1, c)
        self.assertTrue(cel[0].startswith('Invalid value: "device.driver == ": compilation '
                                          "failed: ERROR: <input>:1:"), cel)
        for ern in ("kubernetes.io/gpu", "requests.example.com/gpu"):
            dc2 = fixture("deviceclass-mig.nvidia.com.json")
            dc2["metadata"]["name"] = "ern-" + ern.split("/")[0].replace(".", "-")
            dc2["spec"]["extendedResourceName"] = ern
            self.create_invalid(CLASSES, dc2)
        many = fixture("deviceclass-mig.nvidia.com.json")
        many["metadata"]["name"] = "many-selectors"
        many["spec"]["selectors"] = many["spec"]["selectors"] * 33
        c = self.causes(self.create_invalid(CLASSES, many))
        self.assertIn(("spec.selectors", "Too many: 33: must have at most 32 items"), c)
        long = fixture("deviceclass-mig.nvidia.com.json")
        long["metadata"]["name"] = "long-selector"
        long["spec"]["selectors"] = [{"cel": {"expression": "'" + "x" * 10240 + "' != ''"}}]
        c = self.causes(self.create_invalid(CLASSES, long))
        self.assertIn(("spec.selectors[0].cel.expression",
                       "Too long: may not be more than 10240 bytes"), c)

    def test_device_class_update_bumps_generation(self):
        dc = fixture("deviceclass-gpu.nvidia.com.json")
        dc["metadata"]["name"] = "gen-class"
        got = self.sim.ok("POST", CLASSES, dc)
        got["spec"]["selectors"][0]["cel"]["expression"] += " && device.capacity['gpu.nvidia.com'].memory.compareTo(quantity('40Gi')) >= 0"
        got = self.sim.ok("PUT", CLASSES + "/gen-class", got)
        self.assertEqual(got["metadata"]["generation"], 2)
        del got["spec"]["extendedResourceName"]
        got = self.sim.ok("PUT", CLASSES + "/gen-class", got)
        self.assertNotIn("extendedResourceName", got["spec"])
        self.assertEqual(got["metadata"]["generation"], 3)

    def test_field_selectors_and_watch(self):
        st, lst = self.sim.req("GET", SLICES + "?fieldSelector=spec.nodeName%3Dnode-w")
        rv = lst["metadata"]["resourceVersion"]
        w = WatchStream(self.sim, SLICES + "?watch=1&resourceVersion=%s"
                        "&fieldSelector=spec.nodeName%%3Dnode-w,spec.driver%%3Dgpu.nvidia.com" % rv)
        try:
            self.sim.ok("POST", SLICES, slice_obj("w-other-node", node="node-x"))
            self.sim.ok("POST", SLICES, slice_obj("w-other-driver", node="node-w",
                                                  driver="net.example.com"))
            self.sim.ok("POST", SLICES, slice_obj("w-match", node="node-w"))
            ev = w.next()
            self.assertEqual((ev["type"], ev["object"]["metadata"]["name"]), ("ADDED", "w-match"))
            self.sim.ok("DELETE", SLICES + "/w-match")
            ev = w.next()
            self.assertEqual((ev["type"], ev["object"]["metadata"]["name"]), ("DELETED", "w-match"))
        finally:
            w.close()
        st, lst = self.sim.req("GET", SLICES + "?fieldSelector=spec.driver%3Dnet.example.com")
        self.assertEqual([i["metadata"]["name"] for i in lst["items"]], ["w-other-driver"])
        self.assertEqual(lst["kind"], "ResourceSliceList")
        st, out = self.sim.req("GET", SLICES + "?fieldSelector=spec.pool.name%3Dx")
        self.assertEqual(st, 400, out)
        self.assertIn('field label not supported: spec.pool.name', out["message"])


@unittest.skipUnless(os.path.exists(KUBECTL), "kubectl not installed")
class DraKubectlTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.sim = SimProcess(["--seed", os.path.join(DRA, "node-dra-h100-0.json")])
        cls.tmp = tempfile.mkdtemp(prefix="kube-sim-dra-")

    @classmethod
    def tearDownClass(cls):
        cls.sim.stop()
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def test_apply_get_and_field_selector(self):
        for name in ("deviceclass-gpu.nvidia.com.json", "deviceclass-mig.nvidia.com.json",
                     "resourceslice-h100-complete.json", "resourceslice-h100-inflight.json"):
            r = self.sim.kubectl("apply", "--validate=strict", "-f", os.path.join(DRA, name))
            self.assertIn("created", r.stdout)
        out = self.sim.kubectl("get", "resourceslices").stdout
        head = out.splitlines()[0].split()
        self.assertEqual(head, ["NAME", "NODE", "DRIVER", "POOL", "AGE"])
        self.assertIn("aks-ndh100dra-20914731-vmss000000-gpu.nvidia.com-7xk2p", out)
        self.assertIn("gpu.nvidia.com", self.sim.kubectl("get", "deviceclasses").stdout)
        got = json.loads(self.sim.kubectl(
            "get", "resourceslices", "-o", "json", "--field-selector",
            "spec.nodeName=aks-ndh100dra-20914731-vmss000001").stdout)
        self.assertEqual([i["spec"]["pool"]["generation"] for i in got["items"]], [2])
        # apply again with a changed class: configured, generation bumped, field dropped
        dc = fixture("deviceclass-gpu.nvidia.com.json")
        del dc["spec"]["extendedResourceName"]
        p = os.path.join(self.tmp, "dc.json")
        with open(p, "w") as f:
            json.dump(dc, f)
        r = self.sim.kubectl("apply", "-f", p)
        self.assertIn("deviceclass.resource.k8s.io/gpu.nvidia.com configured", r.stdout)
        got = json.loads(self.sim.kubectl("get", "deviceclass", "gpu.nvidia.com", "-o", "json").stdout)
        self.assertNotIn("extendedResourceName", got["spec"])
        self.assertEqual(got["metadata"]["generation"], 2)
        # server-side apply of a slice, and a refused one printed as kubectl prints it
        s = fixture("resourceslice-h100-complete.json")
        s["spec"]["pool"]["generation"] = 2
        p = os.path.join(self.tmp, "s.json")
        with open(p, "w") as f:
            json.dump(s, f)
        self.sim.kubectl("apply", "--server-side", "--force-conflicts", "-f", p)
        s["spec"]["pool"]["resourceSliceCount"] = 0
        with open(p, "w") as f:
            json.dump(s, f)
        r = self.sim.kubectl("apply", "-f", p, check=False)
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("spec.pool.resourceSliceCount: Invalid value: 0: must be greater than zero",
                      r.stderr)


if __name__ == "__main__":
    unittest.main()
