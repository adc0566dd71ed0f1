"""The e2e harness: one home for what the end-to-end suites and the benches start and wait on.

    paths      the tree, the binaries under test (TAU_*_BIN overrides) and the tools
    require    what a suite needs, checked so that a missing piece fails it, never skips it
    waits      wait_for(cond, timeout, what) and wait_on(condition, pred, timeout, what)
    procs      Proc (a child, its stdout lines collected), free_port, http_get, /proc readers
    kubesim    KubeSim (kube-sim as a child, seeded, TLS or not), WatchStream, kube_request
    tokens     JWT-shaped tokens, the agent's projected ServiceAccount token, token tables
    tls        make_tls: throwaway CAs and a server certificate
    proto      the tau.inventory.v1 and grpc.health.v1 message classes, made with protoc
    agents     FakeAgent, the recording aggregator, the fake host root, the real agent
    aggregator Aggregator (the real tau-aggregator), PoolWatcher, the pool oracle
    quantity   Kubernetes quantities as exact Fractions
    workspace  kube-sim with the shipped RBAC and the workspace controller (Env)
    budget     the team budget's objects, expected shapes, Cluster and OneCluster

How it is found: ctest runs every Python suite from tests/e2e (run_suite.py puts the working
directory on sys.path, as `python3 -m unittest` does), so `import harness` works in a test
module; bench/*.py import bench/harness_path.py first, which puts tests/e2e there. This package
puts tests/kube-sim on sys.path once, for kube-sim's own helpers (simtest, kubesim).
"""
import os
import sys

_KUBE_SIM_DIR = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.dirname(os.path.abspath(__file__))))), "tests", "kube-sim")
if _KUBE_SIM_DIR not in sys.path:
    sys.path.append(_KUBE_SIM_DIR)
