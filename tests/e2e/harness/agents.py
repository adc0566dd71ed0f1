"""Agents for the e2e suites: fake ones that speak the protocol, the real one as a child, and
what stands around the real one (a recording aggregator, a fake host root, fake node plugins).

- FakeAgent: InventoryService.Report with grpcio when the real agent is not part of the test;
  it sends exactly what the protocol asks (a full inventory with seq 1, heartbeats carrying the
  digest, Stopping on purpose) or exactly the bad report a case needs, and records every ack.
  inventory_from_node() builds the inventory an agent would send for a Node object.
- Recorder: a grpcio InventoryService that stands in for the aggregator; it records every
  AgentReport with its stream number and bearer token and acks each one with a short heartbeat
  interval.
- HostTree: a fake --host-root (GPU device nodes, InfiniBand ports, kubelet plugin registry);
  write_atomic() and fake_nvml_config() feed the fakes that read a file on every call;
  FakePlugin starts one of tests/fakes (fake_kubelet, fake_csi_driver) and kubelet_config()
  writes what the fake kubelet serves.
- Agent: the tau-node-agent binary as a child process, stderr kept in a file; RealAgent: the
  same for one node of kube-sim with an empty host root, as a Proc.

Run with /usr/bin/python3 (Debian's python3-grpcio is installed for it only).
"""

import concurrent.futures
import hashlib
import json
import os
import queue
import signal
import socket
import subprocess
import tempfile
import threading
import time

import grpc

from harness import paths, require
from harness.procs import Proc
from harness.tokens import agent_token
from harness.waits import wait_on

REPORT = "/tau.inventory.v1.InventoryService/Report"
ND_NODE = "aks-ndh100-35817294-vmss000000"
FAKE_GPUS = ["GPU-%08d-h100" % i for i in range(8)]  # the fake NVML's and kubelet's GPUs
DISK = "disk.csi.azure.com"
DRA_DRIVER = "gpu.nvidia.com"


def require_all(fakes=(), kubectl=True):
    """What an agent suite needs (its setUpModule): the agent, protoc, grpc, kubectl unless
    told otherwise, and `fakes` (paths under the build tree, e.g. fakes/bin/fake_kubelet)."""
    require.binary(paths.AGENT_BIN, "TAU_AGENT_BIN")
    for fake in fakes:
        require.binary(paths.build(fake), "TAU_BUILD_DIR")
    require.tool("protoc", "protobuf-compiler", "TAU_PROTOC")
    if kubectl:
        require.tool("kubectl", "kubernetes-client", "KUBECTL")
    require.module("grpc", "python3-grpcio")


# --------------------------------------------------------------------------- fake agent

def inventory_from_node(pb, node):
    """NodeInventory for a Node object, as the agent would build it."""
    md = node["metadata"]
    labels = md.get("labels", {})
    conds = {c["type"]: c["status"] for c in node.get("status", {}).get("conditions", [])}
    alloc = node.get("status", {}).get("allocatable", {})
    inv = pb.NodeInventory(
        node_name=md["name"], node_uid=md.get("uid", ""),
        gpu_class=labels.get("tau.azure.com/gpu-class", ""),
        ready=conds.get("Ready") == "True",
        schedulable=not node.get("spec", {}).get("unschedulable", False),
        deleting=False, os=labels.get("kubernetes.io/os", ""),
        resource_version=md.get("resourceVersion", ""), agent_version="fake-0",
    )
    for k, v in labels.items():
        inv.labels[k] = v
    for name in sorted(alloc):
        inv.allocatable.add(name=name, quantity=alloc[name])
    digest_src = json.dumps([md["name"], sorted(labels.items()), sorted(alloc.items()),
                             inv.ready, inv.schedulable], sort_keys=True)
    inv.digest = hashlib.sha256(digest_src.encode()).hexdigest()
    inv.observed_unix_ms = int(time.time() * 1000)
    return inv



class FakeAgent:
    def __init__(self, pb, channel, token, inventory=None):
        self.pb = pb
        self.q = queue.Queue()
        self.cond = threading.Condition()
        self.acks = []
        self.error = None
        self.done = False
        self.seq = 0
        self.digest = ""
        md = [("authorization", "Bearer " + token)] if token else None
        # Deterministic: map entries in key order, as the real agent sends its labels (Python's
        # own order varies between serializations, so the aggregator could never recognise an
        # unchanged inventory by its bytes).
        fn = channel.stream_stream(REPORT,
                                   request_serializer=lambda m: m.SerializeToString(
                                       deterministic=True),
                                   response_deserializer=pb.ReportAck.FromString)
        self.call = fn(self._requests(), metadata=md)
        self.t = threading.Thread(target=self._read, daemon=True)
        self.t.start()
        if inventory is not None:
            self.send_inventory(inventory)

    def _requests(self):
        while True:
            m = self.q.get()
            if m is None:
                return
            yield m

    def _read(self):
        try:
            for ack in self.call:
                with self.cond:
                    self.acks.append(ack)
                    self.cond.notify_all()
        except grpc.RpcError as e:
            with self.cond:
                self.error = e
        finally:
            with self.cond:
                self.done = True
                self.cond.notify_all()

    def send_inventory(self, inv):
        self.seq += 1
        self.digest = inv.digest
        self.q.put(self.pb.AgentReport(seq=self.seq, inventory=inv))
        return self.seq

    def heartbeat(self, digest=None, seq=None):
        self.seq = seq if seq is not None else self.seq + 1
        hb = self.pb.Heartbeat(sent_unix_ms=int(time.time() * 1000),
                               digest=self.digest if digest is None else digest)
        self.q.put(self.pb.AgentReport(seq=self.seq, heartbeat=hb))
        return self.seq

    def wait_ack(self, seq, timeout=15):
        def acked():
            for a in self.acks:
                if a.seq == seq:
                    return a
            if self.done:
                raise AssertionError("no ack for seq %d: the stream ended (error: %s)"
                                     % (seq, self.error))
            return None
        return wait_on(self.cond, acked, timeout, "the ack of seq %d" % seq,
                       lambda: "error: %s" % self.error)

    def wait_done(self, timeout=15):
        wait_on(self.cond, lambda: self.done, timeout, "the end of the report stream")
        return self.error

    def stop(self, reason="SIGTERM"):
        """Purposeful shutdown: Stopping, half-close, wait for the server's OK."""
        if not self.done:
            self.seq += 1
            self.q.put(self.pb.AgentReport(seq=self.seq, stopping=self.pb.Stopping(reason=reason)))
            self.q.put(None)
        return self.wait_done()

    def cancel(self):
        self.call.cancel()
        self.q.put(None)
        self.wait_done()


# --------------------------------------------------------------------------- recorder

class Recorder:
    """InventoryService.Report that records every AgentReport and acks it."""

    def __init__(self, pb, port=0, heartbeat_s=1, tls=None):
        """tls: (certificate file, key file) to serve TLS with (make_tls); None: plaintext."""
        self.tls = None
        if tls is not None:
            with open(tls[0], "rb") as c, open(tls[1], "rb") as k:
                self.tls = grpc.ssl_server_credentials([(k.read(), c.read())])
        self.grpc = grpc
        self.pb = pb
        self.heartbeat_s = heartbeat_s
        self.cond = threading.Condition()
        self.reports = []  # (stream number, bearer token, AgentReport, monotonic time)
        self.streams = 0
        self.stream_tokens = {}
        self.ended = []  # stream numbers whose request stream ended (half-close or cancel)
        self._start(port)

    def _start(self, port):
        grpc = self.grpc
        self.server = grpc.server(concurrent.futures.ThreadPoolExecutor(max_workers=8))
        handler = grpc.method_handlers_generic_handler("tau.inventory.v1.InventoryService", {
            "Report": grpc.stream_stream_rpc_method_handler(
                self._report, self.pb.AgentReport.FromString, lambda m: m.SerializeToString())})
        self.server.add_generic_rpc_handlers((handler,))
        addr = "127.0.0.1:%d" % port
        self.port = (self.server.add_secure_port(addr, self.tls) if self.tls is not None
                     else self.server.add_insecure_port(addr))
        if self.port == 0:
            raise RuntimeError("recorder cannot bind port %d" % port)
        self.server.start()

    def restart(self):
        """Stop serving (cancelling open streams) and serve again on the same port."""
        self.server.stop(0).wait()
        self._start(self.port)

    def stop(self):
        self.server.stop(0).wait()

    def _report(self, request_iterator, context):
        # Headers at once: the agent counts the stream as connected when they arrive.
        context.send_initial_metadata(())
        token = None
        for k, v in context.invocation_metadata():
            if k == "authorization" and v.startswith("Bearer "):
                token = v[len("Bearer "):]
        with self.cond:
            self.streams += 1
            stream = self.streams
            self.stream_tokens[stream] = token
            self.cond.notify_all()
        try:
            for r in request_iterator:
                with self.cond:
                    self.reports.append((stream, token, r, time.monotonic()))
                    self.cond.notify_all()
                yield self.pb.ReportAck(seq=r.seq, heartbeat_interval_seconds=self.heartbeat_s,
                                        status=self.pb.ACK_STATUS_OK)
        finally:
            with self.cond:
                self.ended.append(stream)
                self.cond.notify_all()

    # -- queries ---------------------------------------------------------------------------
    def wait(self, pred, timeout=20, what="condition"):
        """Wait until pred(self) is truthy (called with the lock held); return its value."""
        return wait_on(self.cond, lambda: pred(self), timeout, "recorder: " + what,
                       lambda: "%d reports: %s" % (len(self.reports), self.summary()))

    def summary(self):
        return [(s, r.seq, r.WhichOneof("body")) for s, _, r, _ in self.reports[-12:]]

    def inventories(self):
        with self.cond:
            return [r.inventory for _, _, r, _ in self.reports if r.WhichOneof("body") == "inventory"]

    def count(self, body):
        with self.cond:
            return sum(1 for _, _, r, _ in self.reports if r.WhichOneof("body") == body)

    def of_stream(self, stream):
        with self.cond:
            return [r for s, _, r, _ in self.reports if s == stream]

    def wait_inventory(self, pred, after, timeout=20, what="inventory"):
        """Wait for an inventory (index >= after) matching pred; returns (index, inventory)."""
        def find(rec):
            invs = [r.inventory for _, _, r, _ in rec.reports if r.WhichOneof("body") == "inventory"]
            for i in range(after, len(invs)):
                if pred(invs[i]):
                    return (i, invs[i])
            return None
        return self.wait(find, timeout, what)

    def settle(self, heartbeats=2, timeout=20):
        """Let the agent run for `heartbeats` more heartbeats (the settle window is measured by
        the agent's own clock ticks, not by a sleep)."""
        start = self.count("heartbeat")
        self.wait(lambda rec: sum(1 for _, _, r, _ in rec.reports
                                  if r.WhichOneof("body") == "heartbeat") >= start + heartbeats,
                  timeout, "%d heartbeats" % heartbeats)


# --------------------------------------------------------------------------- host tree

class HostTree:
    """A fake host root: /dev/nvidia<N>, /sys/class/infiniband, the plugin registry."""

    def __init__(self, workdir, gpus=8, ib_ports=8, sockets=("disk.csi.azure.com",)):
        self.root = tempfile.mkdtemp(prefix="host-", dir=workdir)
        self.registry = os.path.join(self.root, "var/lib/kubelet/plugins_registry")
        os.makedirs(self.registry)
        os.makedirs(os.path.join(self.root, "dev"))
        for name in ["nvidiactl", "nvidia-uvm"] + ["nvidia%d" % i for i in range(gpus)]:
            open(os.path.join(self.root, "dev", name), "w").close()
        for i in range(ib_ports):
            # What an ND H100 v5 NDR port shows in sysfs.
            port = os.path.join(self.root, "sys/class/infiniband/mlx5_%d/ports/1" % i)
            os.makedirs(os.path.join(port, "counters"))
            for name, text in (("state", "4: ACTIVE"), ("phys_state", "5: LinkUp"),
                               ("rate", "400 Gb/sec (4X NDR)"), ("link_layer", "InfiniBand"),
                               ("counters/link_downed", "0")):
                with open(os.path.join(port, name), "w") as f:
                    f.write(text + "\n")
        for s in sockets:
            self.add_socket(s)

    def add_socket(self, driver):
        path = os.path.join(self.registry, driver + "-reg.sock")
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.bind(path)
        s.close()  # the socket file stays, as node-driver-registrar's does while it runs
        return path

    def set_port_down(self, dev="mlx5_0", link_downed=1):
        """The link of a port goes down, as the HCA reports it: state DOWN, phys_state
        Disabled, the link_downed counter moved."""
        port = os.path.join(self.root, "sys/class/infiniband/%s/ports/1" % dev)
        for name, text in (("state", "1: DOWN"), ("phys_state", "3: Disabled"),
                           ("counters/link_downed", str(link_downed))):
            tmp = os.path.join(port, name + ".tmp")
            with open(tmp, "w") as f:
                f.write(text + "\n")
            os.replace(tmp, os.path.join(port, name))

    def break_port_state(self, dev="mlx5_0"):
        """Make a port's state file unreadable (a directory: read fails with EISDIR; root
        ignores permission bits, so chmod would not do)."""
        state = os.path.join(self.root, "sys/class/infiniband/%s/ports/1/state" % dev)
        os.unlink(state)
        os.makedirs(state)


class FakePlugin:
    """One of our fake node plugins (tests/fakes: fake_kubelet, fake_csi_driver), started and
    waited for ("ready")."""

    def __init__(self, name, args):
        self.proc = subprocess.Popen([paths.build("fakes/bin", name), *args],
                                     stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                     stdin=subprocess.DEVNULL, text=True)
        line = self.proc.stdout.readline()
        if line.strip() != "ready":
            self.proc.kill()
            raise RuntimeError("%s did not start: %r" % (name, line))

    def stop(self):
        self.proc.terminate()
        self.proc.wait(10)


def kubelet_config(held=(), claimed=(), node=ND_NODE):
    """What the fake kubelet serves: FAKE_GPUS allocatable on two NUMA nodes; held: the
    device-plugin GPUs pod ml/train-0 holds; claimed: DRA devices (DRA_DRIVER, pool = the node)
    the ResourceClaim ml/infer-0-gpus of pod ml/infer-0 holds."""
    pods = []
    if held:
        pods.append({"namespace": "ml", "name": "train-0",
                     "containers": [{"name": "main", "devices": [
                         {"resource": "nvidia.com/gpu", "ids": list(held), "numa": 0}]}]})
    if claimed:
        pods.append({"namespace": "ml", "name": "infer-0",
                     "containers": [{"name": "server", "dynamic": [
                         {"claimNamespace": "ml", "claimName": "infer-0-gpus",
                          "devices": [{"driver": DRA_DRIVER, "pool": node, "device": d}
                                      for d in claimed]}]}]})
    return json.dumps({
        "allocatable": [{"resource": "nvidia.com/gpu", "ids": FAKE_GPUS[:4], "numa": 0},
                        {"resource": "nvidia.com/gpu", "ids": FAKE_GPUS[4:], "numa": 1}],
        "pods": pods})


def write_atomic(path, text):
    """Replace a file whole: the fakes (NVML, kubelet, CSI driver) read theirs on every call,
    so they must never see it half-written."""
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        f.write(text)
    os.replace(tmp, path)


def fake_nvml_config(uuids, sick=None):
    """The fake libnvidia-ml.so.1's file (TAU_FAKE_NVML_CONFIG): H100s with these UUIDs; the
    one at index `sick` has rows waiting for a remap (the GPU needs a reset)."""
    lines = ["driver 550.54.15", "cuda 12040"]
    for i, uuid in enumerate(uuids):
        extra = " remap_pending=1 unc=1" if i == sick else ""
        lines.append("gpu uuid=%s model=NVIDIA_H100_80GB_HBM3%s" % (uuid, extra))
    return "\n".join(lines) + "\n"


# --------------------------------------------------------------------------- real agent

class Agent:
    def __init__(self, workdir, args, env=None):
        self.log_path = tempfile.mktemp(prefix="agent-", suffix=".log", dir=workdir)
        self.log = open(self.log_path, "w")
        e = dict(os.environ)
        e["TAU_AGENT_NVML"] = "off"
        e.update(env or {})
        self.proc = subprocess.Popen([paths.AGENT_BIN, *args], stdout=subprocess.DEVNULL,
                                     stderr=self.log, stdin=subprocess.DEVNULL, env=e)

    def logs(self):
        with open(self.log_path) as f:
            return f.read()

    def alive(self):
        return self.proc.poll() is None

    def terminate(self, timeout=10):
        """SIGTERM; returns (exit code, seconds until exit)."""
        t0 = time.monotonic()
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        try:
            rc = self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            rc = self.proc.wait()
        elapsed = time.monotonic() - t0
        self.log.close()
        return rc, elapsed


class RealAgent:
    """tau-node-agent for one node of kube-sim, with an empty fake host root, as a Proc."""

    def __init__(self, workdir, name, agg_addr, kubeconfig):
        root = os.path.join(workdir, "host-" + name)
        os.makedirs(os.path.join(root, "dev"), exist_ok=True)
        token = os.path.join(workdir, "token-" + name)
        with open(token, "w") as f:
            f.write(agent_token(name))
        self.proc = Proc([paths.AGENT_BIN, "--node-name", name, "--aggregator", agg_addr,
                          "--kubeconfig", kubeconfig, "--host-root", root, "--token-file", token,
                          "--insecure", "--log-level", "debug"], "agent-" + name, workdir)

    def kill(self):
        """SIGKILL: the agent says nothing more, not even Stopping."""
        self.proc.p.kill()
        self.proc.p.wait(30)

    def stop(self):
        return self.proc.stop()
