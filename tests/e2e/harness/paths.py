"""Where things are: the source tree, the binaries under test and the tools the suites run.

Binaries come from the environment when set (cmake/*-tests.cmake sets them for ctest), else
from build/. Read them as paths.X at call time: a bench points them at another build.
"""
import os
import shutil
import sys

HARNESS = os.path.dirname(os.path.abspath(__file__))
E2E = os.path.dirname(HARNESS)
ROOT = os.path.dirname(os.path.dirname(E2E))
BUILD = os.environ.get("TAU_BUILD_DIR") or os.path.join(ROOT, "build")


def _bin(envs, default):
    for e in envs:
        if os.environ.get(e):
            return os.environ[e]
    return os.path.join(ROOT, "build", default)


AGG_BIN = _bin(("TAU_AGGREGATOR_BIN",), "tau-aggregator")
AGENT_BIN = _bin(("TAU_AGENT_BIN",), "tau-node-agent")
CLI_BIN = _bin(("TAU_CLI_BIN", "TAU_CLI"), "tau")
RPC_CLIENT = _bin(("TAU_RPC_TEST_CLIENT",), "tests/e2e/rpc_test_client")

KUBE_SIM = os.path.join(ROOT, "tests", "kube-sim", "kube-sim")
# kube-sim needs only the standard library; any python3 runs it.
SIM_PYTHON = os.environ.get("TAU_SIM_PYTHON") or shutil.which("python3") or sys.executable
KUBECTL = os.environ.get("KUBECTL") or shutil.which("kubectl") or "/usr/bin/kubectl"
TOOLS = os.path.join(ROOT, ".tools", "bin")
HELM = os.environ.get("HELM") or os.path.join(TOOLS, "helm")

FIXTURES = os.path.join(ROOT, "tests", "fixtures")
KUBE_FIXTURES = os.path.join(FIXTURES, "kube")
KUEUE_CRDS = os.path.join(FIXTURES, "kueue")
TAU_CRDS = os.path.join(ROOT, "charts", "taugrid", "crds")
PROTO_DIR = os.environ.get("TAU_PROTO_DIR") or os.path.join(ROOT, "proto")
GRPC_PROTO_DIR = os.environ.get("TAU_GRPC_PROTO_DIR") or "/usr/share/grpc-proto"


def build(*parts):
    """A path under the build tree (TAU_BUILD_DIR, else build/)."""
    return os.path.join(BUILD, *parts)
