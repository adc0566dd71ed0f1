"""kube-sim, the Kubernetes API stand-in (tests/kube-sim), for the e2e suites.

    KubeSim(args, objects=None, tls=False)   kube-sim as a child on a free port: kubeconfig,
                 token (admin), req()/ok() over HTTP(S), kubectl(); seeded with `objects`
    WatchStream  a raw watch; fixture(name): a tests/fixtures/kube object
    kube_request(port, token, method, path)  one plain-HTTP request, for a kube-sim started
                 as a Proc (suites that need its stdout or restart it)

KubeSim is kube-sim's own test helper (tests/kube-sim/simtest.py SimProcess) plus what the
e2e suites add; this module is the e2e suites' only way to it.
"""
import http.client
import json
import os
import tempfile

import simtest
from harness import paths

WatchStream = simtest.WatchStream
MERGE = "application/merge-patch+json"


def fixture(name):
    with open(os.path.join(paths.KUBE_FIXTURES, name)) as f:
        return json.load(f)


class KubeSim(simtest.SimProcess):
    """kube-sim with more flags (`args`, e.g. --authz rbac --tokens FILE) and, with `objects`,
    seeded with those objects (--seed)."""

    def __init__(self, args=(), objects=None, tls=False, start_timeout=60.0):
        self._seed = None
        args = list(args)
        if objects is not None:
            fd, self._seed = tempfile.mkstemp(prefix="kube-sim-seed-", suffix=".json")
            with os.fdopen(fd, "w") as f:
                json.dump({"apiVersion": "v1", "kind": "List", "items": list(objects)}, f)
            args += ["--seed", self._seed]
        try:
            super().__init__(args, tls=tls, start_timeout=start_timeout)
        except BaseException:
            self._unseed()
            raise

    def _unseed(self):
        if self._seed:
            os.unlink(self._seed)
            self._seed = None

    def stop(self):
        super().stop()
        self._unseed()

    def kubeconfig_for(self, token, name):
        """A kubeconfig like kube-sim's that presents `token` instead of the admin's."""
        with open(self.kubeconfig) as f:
            cfg = json.load(f)
        cfg["users"][0]["user"] = {"token": token}
        path = os.path.join(self.tmp, "kubeconfig-" + name)
        with open(path, "w") as f:
            json.dump(cfg, f)
        return path

    def get(self, path):
        """The object at path (as admin); fails on any status but 200."""
        return self.ok("GET", path)

    def merge(self, path, patch):
        """A JSON merge patch (as admin); returns the object."""
        return self.ok("PATCH", path, patch, ctype=MERGE)


def kube_request(port, token, method, path, body=None, ctype="application/json"):
    """One request to kube-sim on plain HTTP: (status, decoded body or None)."""
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    c.request(method, path, body=json.dumps(body) if body is not None else None,
              headers={"Authorization": "Bearer " + token, "Content-Type": ctype})
    r = c.getresponse()
    data = r.read()
    c.close()
    return r.status, json.loads(data) if data else None
