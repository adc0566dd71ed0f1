#!/usr/bin/env python3
"""End-to-end tests of libtau's Kubernetes client against kube-sim.

Each test starts its own kube-sim process, then runs one of the C test
programs built from tests/e2e/kube_*.c (cmocka suites, or the leader
election candidate) with the kube-sim kubeconfig in KUBE_SIM_KUBECONFIG.

Where the programs are: $KUBE_E2E_BIN_DIR (set by cmake/kube-tests.cmake),
else build/tests/e2e under the repository.  Waits are loops on a condition
with generous deadlines (the CI machine has two busy cores), never fixed
sleeps standing in for synchronisation.
"""
import base64
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import unittest

from harness import paths, require
from harness.kubesim import KubeSim
from harness.waits import wait_for

ROOT = paths.ROOT
KUBE_SIM = paths.KUBE_SIM
BIN_DIR = os.environ.get("KUBE_E2E_BIN_DIR", os.path.join(ROOT, "build", "tests", "e2e"))
SLOW = float(os.environ.get("KUBE_E2E_SLOWDOWN", "1"))  # scale deadlines (sanitizers)

SA_TOKENS = {
    "sa-token-1": {
        "username": "system:serviceaccount:tau-system:tau-agent",
        "uid": "sa-uid-1",
        "groups": ["system:serviceaccounts", "system:serviceaccounts:tau-system",
                   "system:authenticated"],
        "extra": {"authentication.kubernetes.io/pod-name": ["tau-agent-7d9f"],
                  "authentication.kubernetes.io/pod-uid": ["pod-uid-1"],
                  "authentication.kubernetes.io/node-name": ["node-a"]},
        "audiences": ["https://kubernetes.default.svc.cluster.local"],
    }
}


def binary(name):
    return require.binary(os.path.join(BIN_DIR, name), "KUBE_E2E_BIN_DIR")


class Candidate:
    """A kube_elector process whose stdout lines are collected with timestamps."""

    def __init__(self, sim, identity, extra):
        self.identity = identity
        self.lines = []
        self.lock = threading.Lock()
        self.proc = subprocess.Popen(
            [binary("kube_elector"), "--kubeconfig", sim.kubeconfig, "--identity", identity]
            + extra, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        for line in self.proc.stdout:
            with self.lock:
                self.lines.append((time.monotonic(), line.split()))

    def first(self, word):
        with self.lock:
            for t, parts in self.lines:
                if parts and parts[0] == word:
                    return t
        return None

    def stop(self):
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()
        self.proc.stdout.close()


class KubeClientE2E(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="tau-kube-e2e-")
        self.sims = []

    def tearDown(self):
        for s in self.sims:
            s.stop()

    def sim(self, *args):
        s = KubeSim(args, start_timeout=60 * SLOW)
        self.sims.append(s)
        return s

    def run_suite(self, name, env, timeout=600):
        e = dict(os.environ)
        e.update(env)
        r = subprocess.run([binary(name)], env=e, stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, text=True, timeout=timeout * SLOW)
        sys.stderr.write(r.stdout)
        self.assertEqual(r.returncode, 0, "%s failed:\n%s" % (name, r.stdout))
        # cmocka exits 0 when a test calls skip(); none of these programs may skip.
        self.assertNotIn("[  SKIPPED ]", r.stdout, "%s skipped a test:\n%s" % (name, r.stdout))

    def test_crud_errors_retries_tokenreview(self):
        tokens = os.path.join(self.tmp, "tokens.json")
        with open(tokens, "w") as f:
            json.dump(SA_TOKENS, f)
        s = self.sim("--tokens", tokens)
        self.run_suite("kube_crud", {"KUBE_SIM_KUBECONFIG": s.kubeconfig,
                                     "KUBE_SIM_SA_TOKEN": "sa-token-1"})

    def test_informer_exact_under_faults(self):
        s = self.sim("--bookmark-interval", "1")
        self.run_suite("kube_watch", {"KUBE_SIM_KUBECONFIG": s.kubeconfig})

    def test_dra_watch_reads_fixtures(self):
        dra = os.path.join(ROOT, "tests", "fixtures", "dra")
        seeds = []
        for name in ("deviceclass-gpu.nvidia.com.json", "resourceslice-h100-complete.json",
                     "resourceslice-h100-inflight.json", "configmap-kueue-manager-config.json"):
            seeds += ["--seed", os.path.join(dra, name)]
        s = self.sim(*seeds)
        self.run_suite("dra_watch", {"KUBE_SIM_KUBECONFIG": s.kubeconfig})

    def test_tls_client_certificate(self):
        s = self.sim("--tls", "--authz", "rbac")
        prefix = os.path.join(self.tmp, "client")
        subprocess.run([sys.executable, KUBE_SIM, "mint-client-cert", "--kubeconfig",
                        s.kubeconfig, "--cn", "tau-tester", "--org", "system:masters",
                        "--out", prefix], check=True, stdout=subprocess.DEVNULL)
        # Beside the kubeconfigs written below: a relative path resolves against their folder.
        ca = shutil.copy(s.kubeconfig + ".ca.crt", self.tmp)

        def b64(path):
            with open(path, "rb") as f:
                return base64.b64encode(f.read()).decode()

        def write(name, cluster, user):
            path = os.path.join(self.tmp, name)
            with open(path, "w") as f:
                f.write("apiVersion: v1\nkind: Config\ncurrent-context: sim\n"
                        "clusters:\n- name: sim\n  cluster:\n    server: %s\n%s"
                        "users:\n- name: me\n  user:\n%s"
                        "contexts:\n- name: sim\n  context: {cluster: sim, user: me}\n"
                        % (s.server, cluster, user or "    {}\n"))
            return path

        # Relative paths resolve against the kubeconfig's directory.
        files = write("files.yaml", "    certificate-authority: %s\n" % os.path.basename(ca),
                      "    client-certificate: client.crt\n    client-key: client.key\n")
        data = write("data.yaml", "    certificate-authority-data: %s\n" % b64(ca),
                     "    client-certificate-data: %s\n    client-key-data: %s\n"
                     % (b64(prefix + ".crt"), b64(prefix + ".key")))
        noca = write("noca.yaml", "", "    client-certificate: client.crt\n"
                                      "    client-key: client.key\n")
        anon = write("anon.yaml", "    certificate-authority: %s\n" % ca, None)
        self.run_suite("kube_tls", {"KUBE_SIM_TLS_FILES": files, "KUBE_SIM_TLS_DATA": data,
                                    "KUBE_SIM_TLS_NOCA": noca, "KUBE_SIM_TLS_ANON": anon})

    def test_leader_election_two_processes(self):
        s = self.sim()
        lease_ms, renew_ms, retry_ms = 3000, 2000, 500
        extra = ["--lease", "tau-e2e", "--namespace", "default", "--lease-ms", str(lease_ms),
                 "--renew-ms", str(renew_ms), "--retry-ms", str(retry_ms)]
        a = Candidate(s, "cand-a", extra)
        b = Candidate(s, "cand-b", extra)
        try:
            wait_for(lambda: a.first("started") or b.first("started"), 60 * SLOW,
                     "a first leader")
            leader, other = (a, b) if a.first("started") else (b, a)
            # Exactly one leader: the other stays a follower for several lease durations
            # while the leader keeps renewing.
            t_watch = time.monotonic()
            wait_for(lambda: time.monotonic() - t_watch > 3 * lease_ms / 1000.0, 30 * SLOW,
                     "three lease durations")
            self.assertIsNone(other.first("started"), "two leaders at once")
            self.assertIsNone(leader.first("stopped"), "the leader lost its lease")
            code, lease = s.req("GET", "/apis/coordination.k8s.io/v1/namespaces/default/"
                                           "leases/tau-e2e")
            self.assertEqual(code, 200)
            self.assertEqual(lease["spec"]["holderIdentity"], leader.identity)
            self.assertEqual(lease["spec"]["leaseDurationSeconds"], 3)
            # Kill the leader: the other takes over within lease duration + retry jitter.
            leader.proc.send_signal(signal.SIGKILL)
            t_kill = time.monotonic()
            leader.proc.wait()
            t_new = wait_for(lambda: other.first("started"), 60 * SLOW, "a takeover")
            took = t_new - t_kill
            sys.stderr.write("leader election: takeover after %.2f s\n" % took)
            budget = (lease_ms + 2.2 * retry_ms) / 1000.0
            # The bound is the algorithm's; allow scheduling slack on a busy machine.
            self.assertLessEqual(took, budget + 4.0 * SLOW)
            code, lease = s.req("GET", "/apis/coordination.k8s.io/v1/namespaces/default/"
                                           "leases/tau-e2e")
            self.assertEqual(lease["spec"]["holderIdentity"], other.identity)
            self.assertGreaterEqual(lease["spec"].get("leaseTransitions", 0), 1)
            # Make renewals fail: the leader must stop by itself within the renew deadline
            # (before the lease could expire for anyone else) and exit with status 3.
            s.req("PUT", "/sim/faults", {"rules": [
                {"verb": "get,update,create,patch", "resource": "leases", "status": 500}]})
            t_fault = time.monotonic()
            t_stop = wait_for(lambda: other.first("stopped"), 60 * SLOW,
                              "the leader to step down")
            sys.stderr.write("leader election: stepped down %.2f s after renewals began "
                             "failing\n" % (t_stop - t_fault))
            self.assertLessEqual(t_stop - t_fault, (renew_ms + 2 * retry_ms) / 1000.0 + 4 * SLOW)
            self.assertEqual(other.proc.wait(timeout=30 * SLOW), 3)
        finally:
            a.stop()
            b.stop()

    def test_demo_lists_nodes(self):
        s = self.sim("--seed", os.path.join(paths.KUBE_FIXTURES, "node-nd-h100-v5.json"),
                     "--seed", os.path.join(paths.KUBE_FIXTURES, "node-flex-h100.json"))
        r = subprocess.run([binary("tau-kube-demo"), "--kubeconfig", s.kubeconfig],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                           timeout=120 * SLOW)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("aks-ndh100-35817294-vmss000000", r.stdout)
        self.assertIn("edge-gpu-01", r.stdout)
        # A missing context is a clear configuration error (exit 2).
        r = subprocess.run([binary("tau-kube-demo"), "--kubeconfig", s.kubeconfig,
                            "--context", "nope"], stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, text=True, timeout=60)
        self.assertEqual(r.returncode, 2)
        self.assertIn('context "nope" does not exist', r.stderr)


if __name__ == "__main__":
    unittest.main()
