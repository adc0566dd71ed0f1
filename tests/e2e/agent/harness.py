"""Helpers of the tau-node-agent end-to-end tests and benchmark.

- load_messages(): Python message classes for tau.inventory.v1, made at run time with protoc
  --python_out (the same approach as tests/e2e/test_rpc_interop.py: no grpc_tools here).
- KubeSim: tests/kube-sim/kube-sim as a child process, with kubectl and a raw HTTP helper.
- Recorder: a grpcio InventoryService that stands in for the aggregator; it records every
  AgentReport with its stream number and bearer token and acks each one with a short heartbeat
  interval. Waits are on a condition variable, never bare sleeps.
- HostTree: a fake --host-root (GPU device nodes, InfiniBand ports, kubelet plugin registry);
  write_atomic() and fake_nvml_config() feed the fakes that read a file on every call.
- Agent: the tau-node-agent binary as a child process, stderr kept in a file.

Run with /usr/bin/python3 (Debian's python3-grpcio is installed for it only).
"""

import concurrent.futures
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
E2E = os.path.dirname(HERE)
ROOT = os.path.dirname(os.path.dirname(E2E))
KUBE_SIM = os.path.join(ROOT, "tests", "kube-sim", "kube-sim")
FIXTURES = os.path.join(ROOT, "tests", "fixtures", "kube")
PROTO_DIR = os.environ.get("TAU_PROTO_DIR", os.path.join(ROOT, "proto"))
PROTOC = os.environ.get("TAU_PROTOC") or shutil.which("protoc")
KUBECTL = os.environ.get("KUBECTL") or shutil.which("kubectl")
AGENT_BIN = os.environ.get("TAU_AGENT_BIN", os.path.join(ROOT, "build", "tau-node-agent"))
# kube-sim needs only the standard library; any python3 runs it.
SIM_PYTHON = os.environ.get("TAU_SIM_PYTHON", sys.executable)

ND_NODE = "aks-ndh100-35817294-vmss000000"

_pb = None


def load_messages(workdir):
    """Generate inventory_pb2 with protoc into workdir and import it (once per process)."""
    global _pb
    if _pb is not None:
        return _pb
    if not PROTOC:
        raise RuntimeError("protoc (protobuf-compiler) is needed")
    gen = os.path.join(workdir, "gen")
    os.makedirs(gen, exist_ok=True)
    subprocess.run([PROTOC, "-I" + PROTO_DIR, "--python_out=" + gen,
                    os.path.join(PROTO_DIR, "tau/inventory/v1/inventory.proto")], check=True)
    sys.path.insert(0, gen)
    from tau.inventory.v1 import inventory_pb2  # noqa: E402
    _pb = inventory_pb2
    return _pb


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def fixture(name):
    with open(os.path.join(FIXTURES, name)) as f:
        return json.load(f)


# --------------------------------------------------------------------------- kube-sim

class KubeSim:
    """kube-sim seeded with objects; kubectl() and req() talk to it (as its admin). `args`:
    more kube-sim flags (e.g. --authz rbac --tokens FILE)."""

    def __init__(self, workdir, objects, args=()):
        self.dir = tempfile.mkdtemp(prefix="sim-", dir=workdir)
        self.kubeconfig = os.path.join(self.dir, "kubeconfig")
        self.home = os.path.join(self.dir, "home")
        os.makedirs(self.home)
        seed = os.path.join(self.dir, "seed.json")
        with open(seed, "w") as f:
            json.dump({"apiVersion": "v1", "kind": "List", "items": objects}, f)
        self.stderr = open(os.path.join(self.dir, "stderr.log"), "w")
        self.proc = subprocess.Popen(
            [SIM_PYTHON, KUBE_SIM, "--listen", "127.0.0.1:0", "--kubeconfig-out",
             self.kubeconfig, "--seed", seed, *args],
            stdout=subprocess.PIPE, stderr=self.stderr, stdin=subprocess.DEVNULL, text=True)
        line = self.proc.stdout.readline().strip()
        if not line.startswith("ready "):
            self.stop()
            raise RuntimeError("kube-sim did not start: %r" % line)
        self.port = int(line.split()[1])
        with open(self.kubeconfig) as f:
            cfg = json.load(f)
        self.token = cfg["users"][0]["user"]["token"]
        self.server = cfg["clusters"][0]["cluster"]["server"]

    def kubeconfig_for(self, token, name):
        """A kubeconfig like kube-sim's that presents `token` instead of the admin's."""
        with open(self.kubeconfig) as f:
            cfg = json.load(f)
        cfg["users"][0]["user"] = {"token": token}
        path = os.path.join(self.dir, "kubeconfig-" + name)
        with open(path, "w") as f:
            json.dump(cfg, f)
        return path

    def kubectl(self, *args):
        env = dict(os.environ, KUBECONFIG=self.kubeconfig, HOME=self.home)
        r = subprocess.run([KUBECTL, *args], env=env, capture_output=True, text=True, timeout=60)
        if r.returncode != 0:
            raise AssertionError("kubectl %s failed: %s" % (" ".join(args), r.stderr))
        return r.stdout

    def req(self, method, path, body=None, ctype="application/merge-patch+json"):
        data = json.dumps(body).encode() if body is not None else None
        rq = urllib.request.Request(self.server + path, data=data, method=method)
        rq.add_header("Authorization", "Bearer " + self.token)
        rq.add_header("Accept", "application/json")
        if data is not None:
            rq.add_header("Content-Type", ctype)
        with urllib.request.urlopen(rq, timeout=30) as resp:
            return json.loads(resp.read())

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.proc.stdout.close()
        self.stderr.close()


# --------------------------------------------------------------------------- recorder

def make_tls(workdir, openssl="openssl"):
    """A CA, a server certificate for 127.0.0.1 and localhost it signs, and a second CA that
    signs nothing: {"ca", "cert", "key", "other_ca"} file paths in a new directory under
    workdir. The one recipe of the e2e suites and benches."""
    d = tempfile.mkdtemp(prefix="tls-", dir=workdir)
    ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]

    def sh(*a):
        subprocess.run([openssl, *a], cwd=d, check=True, capture_output=True)
    for ca in ("ca", "other"):
        sh("req", "-x509", *ec, "-keyout", ca + ".key", "-out", ca + ".pem", "-days", "1",
           "-subj", "/CN=tau-test-" + ca)
    with open(os.path.join(d, "ext"), "w") as f:
        f.write("subjectAltName=DNS:localhost,IP:127.0.0.1\nextendedKeyUsage=serverAuth\n")
    sh("req", *ec, "-keyout", "srv.key", "-out", "srv.csr", "-subj", "/CN=localhost")
    sh("x509", "-req", "-in", "srv.csr", "-CA", "ca.pem", "-CAkey", "ca.key", "-CAcreateserial",
       "-out", "srv.pem", "-days", "1", "-extfile", "ext")
    return {k: os.path.join(d, v) for k, v in
            (("ca", "ca.pem"), ("cert", "srv.pem"), ("key", "srv.key"), ("other_ca", "other.pem"))}


class Recorder:
    """InventoryService.Report that records every AgentReport and acks it."""

    def __init__(self, pb, port=0, heartbeat_s=1, tls=None):
        """tls: (certificate file, key file) to serve TLS with (make_tls); None: plaintext."""
        import grpc
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
        deadline = time.monotonic() + timeout
        with self.cond:
            while True:
                v = pred(self)
                if v:
                    return v
                left = deadline - time.monotonic()
                if left <= 0:
                    raise AssertionError("recorder: timed out waiting for %s; %d reports: %s"
                                         % (what, len(self.reports), self.summary()))
                self.cond.wait(left)

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


# --------------------------------------------------------------------------- agent

class Agent:
    def __init__(self, workdir, args, env=None):
        self.log_path = tempfile.mktemp(prefix="agent-", suffix=".log", dir=workdir)
        self.log = open(self.log_path, "w")
        e = dict(os.environ)
        e["TAU_AGENT_NVML"] = "off"
        e.update(env or {})
        self.proc = subprocess.Popen([AGENT_BIN, *args], stdout=subprocess.DEVNULL,
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


def http_get(port, path, timeout=5):
    """(status, body) of GET http://127.0.0.1:port/path."""
    try:
        with urllib.request.urlopen("http://127.0.0.1:%d%s" % (port, path), timeout=timeout) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()


def proc_memory(pid):
    """{"VmRSS": KiB, "RssAnon": KiB, "RssFile": KiB, ...} from /proc/<pid>/status."""
    out = {}
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            k, _, v = line.partition(":")
            if k in ("VmRSS", "RssAnon", "RssFile", "RssShmem", "VmHWM"):
                out[k] = int(v.split()[0])
    return out


def proc_stats(pid):
    """(VmRSS in KiB, utime+stime in clock ticks) of a process."""
    rss = None
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmRSS:"):
                rss = int(line.split()[1])
    with open("/proc/%d/stat" % pid) as f:
        stat = f.read()
    fields = stat[stat.rindex(")") + 2:].split()
    return rss, int(fields[11]) + int(fields[12])
