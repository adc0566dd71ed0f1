"""The real tau-aggregator for the e2e suites, and the pool oracle its answers are checked with.

    Aggregator(kubeconfig, workdir, name, extra=...)   tau-aggregator as a Proc: its "ready"
        line awaited, gRPC QueryService calls (admin token), /metrics and /readyz
    PoolWatcher   every Pool WatchPool pushes
    ServiceProxy  a TCP stand-in for a ClusterIP Service in front of replicas (routes each new
        connection to a replica whose /readyz answers 200)
    node(), make_nodes(), gpu_nodes()   Node objects: the fixtures plus generated ones
    expected_pool(nodes), pool_values(pool)   the pool by rules P1-P2 in exact Fractions,
        independent of the C code, and a Pool message in the same shape
"""
import glob
import http.client
import json
import os
import socket
import importlib
import threading

from harness import paths, proto, require
from harness.procs import Proc
from harness.quantity import parse as qparse
from harness.waits import wait_on

QRY = "/tau.inventory.v1.QueryService/"


def _grpc():
    """grpc, imported when a gRPC call is made: suites run with an interpreter without it use
    Aggregator for its process, logs and /metrics only."""
    return importlib.import_module("grpc")


def require_all():
    """What an aggregator suite needs (its setUpModule): the aggregator, the CLI, the agent,
    protoc and openssl."""
    require.binary(paths.AGG_BIN, "TAU_AGGREGATOR_BIN")
    require.binary(paths.CLI_BIN, "TAU_CLI_BIN")
    require.binary(paths.AGENT_BIN, "TAU_AGENT_BIN")
    require.tool("protoc", "protobuf-compiler", "TAU_PROTOC")
    require.tool("openssl", "openssl", "TAU_OPENSSL")


class Aggregator:
    """tau-aggregator against kube-sim. `extra`: more flags; `token`: the bearer token queries
    carry (default: the kubeconfig's, which must then be kube-sim's admin); `ca`: serve-side CA
    file when --tls-* flags are in `extra`; log_level=None: no --log-level (its default, and a
    TauCluster may set it); expect_ready=False: do not wait for "ready" (a configuration it
    must refuse)."""

    def __init__(self, kubeconfig, workdir, name="aggregator", extra=(), sync_timeout="60s",
                 log_level="debug", token=None, ca=None, expect_ready=True):
        level = ["--log-level", log_level] if log_level else []
        self.proc = Proc([paths.AGG_BIN, "--kubeconfig", kubeconfig, "--grpc-listen",
                          "127.0.0.1:0", "--http-listen", "127.0.0.1:0",
                          "--initial-sync-timeout", sync_timeout, *level, *extra], name, workdir)
        self.log_path = self.proc.log_path
        self._channel = None
        if not expect_ready:
            return
        try:
            line = self.proc.wait_line("ready ")
        except BaseException:
            self.proc.stop()
            raise
        self.ports = dict(kv.split("=") for kv in line.split()[1:])
        self.grpc_port, self.http_port = int(self.ports["grpc"]), int(self.ports["http"])
        self.addr = "127.0.0.1:%d" % self.grpc_port
        if token is None:
            with open(kubeconfig) as f:
                token = json.load(f)["users"][0]["user"]["token"]
        # Queries carry this token: TokenReview + SubjectAccessReview.
        self.md = (("authorization", "Bearer " + token),)
        self.ca = ca

    @property
    def channel(self):
        """The gRPC channel to it (TLS with `ca`), made at first use."""
        if self._channel is None:
            grpc = _grpc()
            if self.ca:
                with open(self.ca, "rb") as f:
                    creds = grpc.ssl_channel_credentials(root_certificates=f.read())
                self._channel = grpc.secure_channel(self.addr, creds)
            else:
                self._channel = grpc.insecure_channel(self.addr)
        return self._channel

    @property
    def p(self):
        """The child (subprocess.Popen)."""
        return self.proc.p

    def log(self):
        return self.proc.logs()

    # -- gRPC --
    def unary(self, method, req, resp_cls, timeout=10):
        fn = self.channel.unary_unary(QRY + method, request_serializer=lambda m: m.SerializeToString(),
                                      response_deserializer=resp_cls.FromString)
        return fn(req, timeout=timeout, metadata=self.md)

    def pool(self):
        qpb = proto.query()
        return self.unary("GetPool", qpb.GetPoolRequest(), qpb.Pool)

    def nodes(self, **kw):
        """Every node, following ListNodes pages."""
        qpb = proto.query()
        out, token = [], ""
        while True:
            r = self.unary("ListNodes", qpb.ListNodesRequest(page_token=token, **kw),
                           qpb.ListNodesResponse)
            out += r.nodes
            if not r.next_page_token:
                return out
            token = r.next_page_token

    def list_workspaces(self):
        qpb = proto.query()
        return self.unary("ListWorkspaces", qpb.ListWorkspacesRequest(),
                          qpb.ListWorkspacesResponse).workspaces

    def get_workspace(self, name):
        qpb = proto.query()
        return self.unary("GetWorkspace", qpb.GetWorkspaceRequest(name=name),
                          qpb.WorkspaceSummary)

    @staticmethod
    def rpc_error(fn, *args):
        """The grpc.RpcError fn(*args) raises, or None."""
        try:
            fn(*args)
        except _grpc().RpcError as e:
            return e
        return None

    # -- HTTP --
    def http(self, path):
        """(status, body) of a GET on its HTTP port."""
        c = http.client.HTTPConnection("127.0.0.1", self.http_port, timeout=10)
        c.request("GET", path)
        r = c.getresponse()
        body = r.read().decode()
        c.close()
        return r.status, body

    def metrics(self):
        return self.http("/metrics")[1]

    def metric(self, sample):
        """The value of one sample of /metrics, e.g. 'name{label="v"}'."""
        return [int(float(line[len(sample) + 1:])) for line in self.metrics().splitlines()
                if line.startswith(sample + " ")][0]

    def is_leader(self):
        return "tau_aggregator_leader 1\n" in self.metrics()

    def close_channel(self):
        """Close the gRPC channel, if one was made (a killed replica's, say)."""
        if self._channel is not None:
            self._channel.close()
            self._channel = None

    def stop(self, timeout=30):
        self.close_channel()
        return self.proc.stop(timeout)


class PoolWatcher:
    """Collects every Pool pushed by WatchPool."""

    def __init__(self, channel, metadata):
        qpb = proto.query()
        fn = channel.unary_stream(QRY + "WatchPool", request_serializer=lambda m: m.SerializeToString(),
                                  response_deserializer=qpb.Pool.FromString)
        self.call = fn(qpb.WatchPoolRequest(), metadata=metadata)
        self.pools = []
        self.cond = threading.Condition()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        try:
            for p in self.call:
                with self.cond:
                    self.pools.append(p)
                    self.cond.notify_all()
        except _grpc().RpcError:
            pass

    def wait(self, pred, timeout=30):
        def match():
            for p in self.pools:
                if pred(p):
                    return p
            return None
        return wait_on(self.cond, match, timeout, "a matching pool",
                       lambda: "%d pushed" % len(self.pools))

    def cancel(self):
        self.call.cancel()


class ServiceProxy:
    """A TCP stand-in for a ClusterIP Service: each accepted connection goes to one backend
    whose /readyz answers 200 at that moment (the first Ready one in a rotating order); with no
    Ready backend the connection is closed at once, like a Service without endpoints."""

    def __init__(self, backends):
        self.backends = backends          # [Aggregator]
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(256)
        self.addr = "127.0.0.1:%d" % self.sock.getsockname()[1]
        self.routed = {}                  # backend grpc port -> connections routed
        self.turn = 0
        self.closed = False
        threading.Thread(target=self._accept, daemon=True).start()

    def ready(self):
        out = []
        for b in self.backends:
            if b.proc.p.poll() is not None:
                continue
            try:
                if b.http("/readyz")[0] == 200:
                    out.append(b)
            except OSError:
                pass
        return out

    def _accept(self):
        while not self.closed:
            try:
                c, _ = self.sock.accept()
            except OSError:
                return
            threading.Thread(target=self._route, args=(c,), daemon=True).start()

    def _route(self, client):
        ready = self.ready()
        if not ready:
            client.close()
            return
        self.turn += 1
        b = ready[self.turn % len(ready)]
        try:
            up = socket.create_connection(("127.0.0.1", b.grpc_port), timeout=5)
        except OSError:
            client.close()
            return
        up.settimeout(None)
        self.routed[b.grpc_port] = self.routed.get(b.grpc_port, 0) + 1
        for src, dst in ((client, up), (up, client)):
            threading.Thread(target=self._pipe, args=(src, dst), daemon=True).start()

    @staticmethod
    def _pipe(src, dst):
        try:
            while True:
                data = src.recv(65536)
                if not data:
                    break
                dst.sendall(data)
        except OSError:
            pass
        for s in (src, dst):
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            s.close()

    def close(self):
        self.closed = True
        self.sock.close()


# -- nodes and the pool oracle -----------------------------------------------------------------

def node(name, cls, alloc, ready=True, unschedulable=False, extra_labels=None):
    """A Node: linux, GPU class `cls` (None: no class label), allocatable = capacity = alloc."""
    labels = {"kubernetes.io/os": "linux", "kubernetes.io/hostname": name}
    if cls:
        labels["tau.azure.com/gpu-class"] = cls
    labels.update(extra_labels or {})
    return {
        "apiVersion": "v1", "kind": "Node",
        "metadata": {"name": name, "labels": labels},
        "spec": {"unschedulable": True} if unschedulable else {},
        "status": {"allocatable": alloc, "capacity": alloc,
                   "conditions": [{"type": "Ready", "status": "True" if ready else "False"}]},
    }


def make_nodes():
    """The Node fixtures (tests/fixtures/kube/node-*.json) plus generated ones."""
    nodes = []
    for path in sorted(glob.glob(os.path.join(paths.KUBE_FIXTURES, "node-*.json"))):
        with open(path) as f:
            n = json.load(f)
        for k in ("resourceVersion", "uid", "creationTimestamp"):
            n["metadata"].pop(k, None)
        nodes.append(n)
    # Same class as the ND fixture, quantities written in other notations.
    nodes.append(node("gpu-ib-2", "h100-ib", {"cpu": "95", "memory": "1886Gi",
                                              "nvidia.com/gpu": "8", "rdma/ib": "8",
                                              "ephemeral-storage": "100G", "pods": "110"}))
    nodes.append(node("gpu-ib-3", "h100-ib", {"cpu": "1.5", "memory": "1024Mi",
                                              "nvidia.com/gpu": "4", "pods": "110"}))
    nodes.append(node("gpu-notready", "h100-ib", {"cpu": "8", "nvidia.com/gpu": "8"},
                      ready=False))
    nodes.append(node("cpu-only-1", None, {"cpu": "16", "memory": "64Gi"}))
    return nodes


def gpu_nodes(nodes):
    return [n for n in nodes if n["metadata"]["labels"].get("tau.azure.com/gpu-class")]


def expected_pool(nodes, selector=None):
    """{class: {"nodes": [names], "resources": {name: Fraction}}} by rules P1-P2."""
    pool = {}
    for n in nodes:
        labels = n["metadata"]["labels"]
        cls = labels.get("tau.azure.com/gpu-class")
        ready = any(c["type"] == "Ready" and c["status"] == "True"
                    for c in n["status"].get("conditions", []))
        if (labels.get("kubernetes.io/os") != "linux" or not cls or not ready
                or n.get("spec", {}).get("unschedulable")
                or (selector and any(labels.get(k) != v for k, v in selector.items()))):
            continue
        f = pool.setdefault(cls, {"nodes": [], "resources": {}})
        f["nodes"].append(n["metadata"]["name"])
        for r, q in n["status"]["allocatable"].items():
            f["resources"][r] = f["resources"].get(r, 0) + qparse(q)
    for f in pool.values():
        f["nodes"].sort()
    return pool


def pool_values(p):
    """The same shape from a Pool message (values parsed back exactly; node counts, since a Pool
    does not name its nodes: ListNodes does)."""
    return {f.name: {"nodes": f.node_count,
                     "resources": {k: qparse(v) for k, v in f.resources.items()}}
            for f in p.flavors}
