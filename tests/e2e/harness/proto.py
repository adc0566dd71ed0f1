"""Python message classes for tau.inventory.v1 (inventory, query) and grpc.health.v1, made at
run time with protoc --python_out (no grpc_tools on Debian's python3), once per process, into
a temporary directory removed at exit.

    inventory(), query(), health()   the inventory_pb2, query_pb2 and health_pb2 modules
"""
import atexit
import importlib
import os
import shutil
import subprocess
import sys
import tempfile

from harness import paths, require

_dir = None
_done = set()


def _generate(what):
    global _dir
    if what in _done:
        return
    protoc = require.tool("protoc", "protobuf-compiler", "TAU_PROTOC")
    if _dir is None:
        _dir = tempfile.mkdtemp(prefix="tau-e2e-proto-")
        atexit.register(shutil.rmtree, _dir, True)
    if what == "tau":
        gen = os.path.join(_dir, "gen")
        os.makedirs(gen)
        subprocess.run([protoc, "-I" + paths.PROTO_DIR, "--python_out=" + gen,
                        os.path.join(paths.PROTO_DIR, "tau/inventory/v1/inventory.proto"),
                        os.path.join(paths.PROTO_DIR, "tau/inventory/v1/query.proto")],
                       check=True)
        sys.path.insert(0, gen)
    else:
        gen = os.path.join(_dir, "hgen")
        os.makedirs(gen)
        subprocess.run([protoc, "-I" + paths.GRPC_PROTO_DIR, "--python_out=" + gen,
                        os.path.join(paths.GRPC_PROTO_DIR, "grpc/health/v1/health.proto")],
                       check=True)
        # The installed grpc package shadows grpc.health.v1: import health_pb2 from its folder.
        sys.path.insert(0, os.path.join(gen, "grpc/health/v1"))
    _done.add(what)


def inventory():
    _generate("tau")
    return importlib.import_module("tau.inventory.v1.inventory_pb2")


def query():
    _generate("tau")
    return importlib.import_module("tau.inventory.v1.query_pb2")


def health():
    _generate("health")
    return importlib.import_module("health_pb2")
