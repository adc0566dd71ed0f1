"""Interoperability of lib/rpc with Python grpcio, both ways, plaintext and TLS.

Run with the system interpreter (Debian's python3-grpcio lives there):
    TAU_RPC_TEST_SERVER=build/tests/e2e/rpc_test_server \
    TAU_RPC_TEST_CLIENT=build/tests/e2e/rpc_test_client \
    /usr/bin/python3 -m unittest -v test_rpc_interop        (from tests/e2e)

Message classes are generated at set-up with protoc (protobuf-compiler) into a temporary
directory; a throwaway CA and certificates are made with the openssl CLI. Every wait is for a
condition (a line on a pipe, a process exit, an RPC answer), never a fixed sleep.
"""

import concurrent.futures
import itertools
import os
import queue
import subprocess
import threading
import time
import unittest

import grpc

from harness import paths, proto, require
from harness.procs import Proc, make_workdir, remove_workdir
from harness.tls import make_tls

ROOT = paths.ROOT
SERVER_BIN = os.environ.get("TAU_RPC_TEST_SERVER", os.path.join(ROOT, "build/tests/e2e/rpc_test_server"))
CLIENT_BIN = paths.RPC_CLIENT

TOKEN = "interop-token"
INV = "/tau.inventory.v1.InventoryService/"
QRY = "/tau.inventory.v1.QueryService/"
HEALTH = "/grpc.health.v1.Health/"

pb = None  # inventory_pb2
qpb = None  # query_pb2
hpb = None  # health_pb2
WORK = None
CERTS = {}


def _read(path):
    with open(path, "rb") as f:
        return f.read()


def setUpModule():
    global pb, qpb, hpb, WORK
    require.binary(SERVER_BIN, "TAU_RPC_TEST_SERVER")
    require.binary(CLIENT_BIN, "TAU_RPC_TEST_CLIENT")
    openssl = require.tool("openssl", "openssl", "TAU_OPENSSL")
    WORK = make_workdir("tau-rpc-interop-")
    pb, qpb, hpb = proto.inventory(), proto.query(), proto.health()
    # A CA, a server certificate for localhost/127.0.0.1, a node client certificate
    # (CN=SAN=gpu-node-1) and a second, unrelated CA: clients trusting it fail the handshake.
    t = make_tls(WORK, openssl, client_cn="gpu-node-1")
    CERTS.update({"ca.pem": t["ca"], "server.pem": t["cert"], "server.key": t["key"],
                  "client.pem": t["client_cert"], "client.key": t["client_key"],
                  "other.pem": t["other_ca"]})


def tearDownModule():
    remove_workdir(WORK)


_SERVERS = itertools.count(1)


def start_c_server(*args):
    proc = Proc([SERVER_BIN, "--listen", "127.0.0.1:0", *args],
                "rpc_test_server-%d" % next(_SERVERS), WORK)
    line = proc.wait_line(lambda l: l.startswith("ready "))
    return proc, int(line.split()[1])


def call_options(token=TOKEN):
    return [("authorization", "Bearer " + token)] if token else None


class PythonClientToCServer(unittest.TestCase):
    """A Python grpcio client calls every method of the C test server."""

    server_args = ("--token", TOKEN)

    @classmethod
    def setUpClass(cls):
        cls.proc, cls.port = start_c_server(*cls.server_args)
        cls.channel = cls.make_channel()

    @classmethod
    def make_channel(cls):
        return grpc.insecure_channel("127.0.0.1:%d" % cls.port)

    @classmethod
    def tearDownClass(cls):
        cls.channel.close()
        # Graceful shutdown exits 0.
        assert cls.proc.stop() == 0

    def unary(self, method, req, resp_cls, token=TOKEN, timeout=10):
        fn = self.channel.unary_unary(method, request_serializer=lambda m: m.SerializeToString(),
                                      response_deserializer=resp_cls.FromString)
        return fn(req, timeout=timeout, metadata=call_options(token))

    def test_query_methods(self):
        nodes = self.unary(QRY + "ListNodes", qpb.ListNodesRequest(), qpb.ListNodesResponse)
        self.assertEqual([n.name for n in nodes.nodes], ["gpu-node-1", "gpu-node-2"])
        self.assertEqual({(r.name, r.quantity) for r in nodes.nodes[0].allocatable},
                         {("cpu", "96"), ("nvidia.com/gpu", "8")})
        self.assertFalse(nodes.nodes[1].counted)
        node = self.unary(QRY + "GetNode", qpb.GetNodeRequest(name="n-\u00e9"), qpb.GetNodeResponse)
        self.assertEqual(node.status.name, "n-\u00e9")
        self.assertEqual(node.inventory.kind, pb.NODE_KIND_FLEX)
        self.assertEqual(node.inventory.labels["tau.azure.com/gpu-class"], "h100")
        self.assertEqual(node.inventory.csi_drivers[0].managed_by, pb.CSI_MANAGED_BY_AKS_ADDON)
        self.assertEqual(node.inventory.devices.rdma_ports_up, 7)
        with self.assertRaises(grpc.RpcError) as cm:
            self.unary(QRY + "GetNode", qpb.GetNodeRequest(name="missing"), qpb.GetNodeResponse)
        self.assertEqual(cm.exception.code(), grpc.StatusCode.NOT_FOUND)
        pool = self.unary(QRY + "GetPool", qpb.GetPoolRequest(), qpb.Pool)
        self.assertTrue(pool.established)
        self.assertEqual(dict(pool.flavors[0].resources), {"cpu": "192", "nvidia.com/gpu": "16"})
        watch = self.channel.unary_stream(QRY + "WatchPool", request_serializer=lambda m: m.SerializeToString(),
                                          response_deserializer=qpb.Pool.FromString)
        gens = [p.generation for p in watch(qpb.WatchPoolRequest(), timeout=10, metadata=call_options())]
        self.assertEqual(gens, [1, 2, 3])
        ex = self.unary(QRY + "ExplainNode", qpb.ExplainNodeRequest(name="gpu-node-2"), qpb.ExplainNodeResponse)
        self.assertEqual([(r.name, getattr(r, "pass")) for r in ex.rules],
                         [("P1.linux", True), ("P1.ready", False)])
        ws = self.unary(QRY + "ListWorkspaces", qpb.ListWorkspacesRequest(), qpb.ListWorkspacesResponse)
        self.assertEqual(ws.workspaces[0].conditions[0].type, "RBACReady")
        one = self.unary(QRY + "GetWorkspace", qpb.GetWorkspaceRequest(name="alpha"), qpb.WorkspaceSummary)
        self.assertEqual((one.phase, getattr(one, "namespace")), ("Ready", "alpha"))

    def report(self, reports, token=TOKEN):
        fn = self.channel.stream_stream(INV + "Report", request_serializer=lambda m: m.SerializeToString(),
                                        response_deserializer=pb.ReportAck.FromString)
        return list(fn(iter(reports), timeout=30, metadata=call_options(token)))

    def test_report_bidi(self):
        inv = pb.NodeInventory(node_name="gpu-node-1", gpu_class="h100", ready=True,
                               allocatable=[pb.ResourceQuantity(name="nvidia.com/gpu", quantity="8")])
        reports = [pb.AgentReport(seq=1, inventory=inv)]
        reports += [pb.AgentReport(seq=i, heartbeat=pb.Heartbeat(sent_unix_ms=i, digest="d"))
                    for i in range(2, 501)]
        acks = self.report(reports)
        self.assertEqual([a.seq for a in acks], list(range(1, 501)))
        self.assertTrue(all(a.status == pb.ACK_STATUS_OK and a.heartbeat_interval_seconds == 15 for a in acks))
        # A stream that starts with a heartbeat is asked for a full inventory.
        acks = self.report([pb.AgentReport(seq=1, heartbeat=pb.Heartbeat())])
        self.assertEqual(acks[0].status, pb.ACK_STATUS_RESEND_FULL)

    def test_bad_token(self):
        with self.assertRaises(grpc.RpcError) as cm:
            self.unary(QRY + "GetPool", qpb.GetPoolRequest(), qpb.Pool, token="wrong")
        self.assertEqual(cm.exception.code(), grpc.StatusCode.UNAUTHENTICATED)
        with self.assertRaises(grpc.RpcError) as cm:
            self.report([pb.AgentReport(seq=1)], token=None)
        self.assertEqual(cm.exception.code(), grpc.StatusCode.UNAUTHENTICATED)

    def test_health(self):
        S = hpb.HealthCheckResponse
        for service, want in (("", S.SERVING), ("tau.inventory.v1.InventoryService", S.SERVING),
                              ("tau.inventory.v1.QueryService", S.SERVING)):
            resp = self.unary(HEALTH + "Check", hpb.HealthCheckRequest(service=service),
                              hpb.HealthCheckResponse, token=None)
            self.assertEqual(resp.status, want, service)
        with self.assertRaises(grpc.RpcError) as cm:
            self.unary(HEALTH + "Check", hpb.HealthCheckRequest(service="nope"), hpb.HealthCheckResponse, token=None)
        self.assertEqual(cm.exception.code(), grpc.StatusCode.NOT_FOUND)
        watch = self.channel.unary_stream(HEALTH + "Watch", request_serializer=lambda m: m.SerializeToString(),
                                          response_deserializer=hpb.HealthCheckResponse.FromString)
        for service, want in (("tau.inventory.v1.InventoryService", S.SERVING), ("nope", S.SERVICE_UNKNOWN)):
            stream = watch(hpb.HealthCheckRequest(service=service), timeout=10)
            self.assertEqual(next(stream).status, want)
            stream.cancel()

    def raw_unary(self, method, data, timeout=10):
        fn = self.channel.unary_unary(method, request_serializer=lambda b: b, response_deserializer=lambda b: b)
        return fn(data, timeout=timeout, metadata=call_options())

    def test_unknown_method(self):
        start = time.monotonic()
        with self.assertRaises(grpc.RpcError) as cm:
            self.raw_unary(QRY + "NoSuchMethod", b"", timeout=20)
        self.assertEqual(cm.exception.code(), grpc.StatusCode.UNIMPLEMENTED)
        self.assertLess(time.monotonic() - start, 5)

    def test_bad_input_keeps_serving(self):
        for data, code in ((b"\x0a\x03n\xc3\x28", grpc.StatusCode.INVALID_ARGUMENT),  # bad UTF-8
                           (b"\x0a\xff\xff\xff\xff\x0f", grpc.StatusCode.INVALID_ARGUMENT),  # malformed
                           (b"\x0a\x80\x80\x40" + b"a" * (1 << 20), grpc.StatusCode.RESOURCE_EXHAUSTED)):
            with self.assertRaises(grpc.RpcError) as cm:
                self.raw_unary(QRY + "GetNode", data)
            self.assertEqual(cm.exception.code(), code)
        node = self.unary(QRY + "GetNode", qpb.GetNodeRequest(name="ok"), qpb.GetNodeResponse)
        self.assertEqual(node.status.name, "ok")


class LiveReport:
    """A Report stream kept open: reports are fed one at a time, acks read as they come."""

    def __init__(self, channel, token=TOKEN):
        fn = channel.stream_stream(INV + "Report", request_serializer=lambda m: m.SerializeToString(),
                                   response_deserializer=pb.ReportAck.FromString)
        self.q = queue.Queue()
        self.call = fn(iter(self.q.get, None), timeout=120, metadata=call_options(token))

    def ack(self, seq):
        """Send one report and wait for its ack."""
        if seq == 1:
            self.q.put(pb.AgentReport(seq=1, inventory=pb.NodeInventory(node_name="gpu-node-1")))
        else:
            self.q.put(pb.AgentReport(seq=seq, heartbeat=pb.Heartbeat(sent_unix_ms=seq)))
        return next(self.call)

    def close(self):
        self.q.put(None)
        return list(self.call)


class ServerLimits(unittest.TestCase):
    """Oversized request headers and the per-peer call cap: one stream refused, the rest of the
    connection and the peer's other calls untouched."""

    def check_health(self, channel, token=TOKEN):
        fn = channel.unary_unary(HEALTH + "Check", request_serializer=lambda m: m.SerializeToString(),
                                 response_deserializer=hpb.HealthCheckResponse.FromString)
        return fn(hpb.HealthCheckRequest(), timeout=10, metadata=call_options(token))

    def pool(self, channel, token=TOKEN):
        fn = channel.unary_unary(QRY + "GetPool", request_serializer=lambda m: m.SerializeToString(),
                                 response_deserializer=qpb.Pool.FromString)
        return fn(qpb.GetPoolRequest(), timeout=10, metadata=call_options(token))

    def test_oversized_token_fails_its_own_stream(self):
        proc, port = start_c_server("--token", TOKEN)
        try:
            channel = grpc.insecure_channel("127.0.0.1:%d" % port)
            good = LiveReport(channel)
            self.assertEqual(good.ack(1).status, pb.ACK_STATUS_OK)
            # 16 KiB, as docs promise: past the header caps, refused only for being wrong.
            with self.assertRaises(grpc.RpcError) as cm:
                self.pool(channel, token="t" * 16384)
            self.assertEqual(cm.exception.code(), grpc.StatusCode.UNAUTHENTICATED, cm.exception.details())
            seq = 2
            for size in (20 * 1024, 64 * 1024):
                with self.subTest(size=size):
                    with self.assertRaises(grpc.RpcError) as cm:
                        self.pool(channel, token="t" * size)
                    self.assertEqual(cm.exception.code(), grpc.StatusCode.RESOURCE_EXHAUSTED)
                    self.assertIn("request metadata over 20480 bytes", cm.exception.details())
                    # The stream sharing the connection still reports, the next call works.
                    self.assertEqual(good.ack(seq).seq, seq)
                    seq += 1
                    self.assertEqual(self.pool(channel).flavors[0].name, "h100")
            # A bearer token as a Report stream's own header: the same, on the same connection.
            bad = LiveReport(channel, token="t" * (64 * 1024))
            with self.assertRaises(grpc.RpcError) as cm:
                bad.ack(1)
            self.assertEqual(cm.exception.code(), grpc.StatusCode.RESOURCE_EXHAUSTED)
            self.assertEqual(good.ack(seq).seq, seq)
            self.assertEqual([a.seq for a in good.close()], [])
            # Past the core's own limit (128 KiB) grpc 1.51 refuses the stream too, but loses the
            # connection's header-compression state, so that connection may end (docs/SECURITY.md);
            # the server itself goes on serving new connections.
            with self.assertRaises(grpc.RpcError) as cm:
                self.pool(channel, token="t" * (200 * 1024))
            self.assertEqual(cm.exception.code(), grpc.StatusCode.RESOURCE_EXHAUSTED)
            channel.close()
            fresh = grpc.insecure_channel("127.0.0.1:%d" % port)
            self.assertEqual(self.pool(fresh).flavors[0].name, "h100")
            fresh.close()
        finally:
            self.assertEqual(proc.stop(), 0)
        stats = proc.wait_line(lambda l: l.startswith("stats "))
        self.assertIn("refused_metadata=3", stats)

    def test_calls_per_peer_cap(self):
        proc, port = start_c_server("--token", TOKEN, "--max-calls-per-peer", "3")
        try:
            channel = grpc.insecure_channel("127.0.0.1:%d" % port)
            # A second connection from the same host counts against the same peer.
            other = grpc.insecure_channel("127.0.0.1:%d" % port, options=[("grpc.use_local_subchannel_pool", 1)])
            open_ = [LiveReport(channel), LiveReport(channel), LiveReport(other)]
            for r in open_:
                self.assertEqual(r.ack(1).status, pb.ACK_STATUS_OK)
            with self.assertRaises(grpc.RpcError) as cm:
                self.pool(channel)
            self.assertEqual(cm.exception.code(), grpc.StatusCode.RESOURCE_EXHAUSTED)
            self.assertIn("too many calls open from ipv4:127.0.0.1 (at most 3 per peer)",
                          cm.exception.details())
            # The refusal ended nothing else; a call that ends frees its slot.
            self.assertEqual(open_[0].ack(2).seq, 2)
            open_[2].close()
            wait_for_ok = time.monotonic() + 20
            while True:
                try:
                    self.assertEqual(self.pool(other).flavors[0].name, "h100")
                    break
                except grpc.RpcError as e:
                    # The server may see the closed stream's end a moment after the client.
                    if e.code() != grpc.StatusCode.RESOURCE_EXHAUSTED or time.monotonic() > wait_for_ok:
                        raise
            for r in open_[:2]:
                r.close()
            channel.close()
            other.close()
        finally:
            self.assertEqual(proc.stop(), 0)
        stats = proc.wait_line(lambda l: l.startswith("stats "))
        self.assertNotIn("refused_peer_cap=0 ", stats)


class PythonClientToCServerTls(PythonClientToCServer):
    """The same calls over mTLS; the server sees the client's certificate identity."""

    server_args = ("--token", TOKEN)

    @classmethod
    def setUpClass(cls):
        cls.server_args = ("--token", TOKEN, "--tls-cert", CERTS["server.pem"], "--tls-key", CERTS["server.key"],
                           "--client-ca", CERTS["ca.pem"], "--require-client-cert")
        super().setUpClass()

    @classmethod
    def make_channel(cls, ca="ca.pem", with_cert=True):
        creds = grpc.ssl_channel_credentials(
            root_certificates=_read(CERTS[ca]),
            private_key=_read(CERTS["client.key"]) if with_cert else None,
            certificate_chain=_read(CERTS["client.pem"]) if with_cert else None)
        return grpc.secure_channel("localhost:%d" % cls.port, creds)

    def test_peer_identity(self):
        node = self.unary(QRY + "GetNode", qpb.GetNodeRequest(name="n"), qpb.GetNodeResponse)
        self.assertEqual(list(node.status.reasons), ["peer:gpu-node-1", "cn:gpu-node-1", "tls:1"])

    def test_handshake_failures(self):
        for kwargs in ({"with_cert": False}, {"ca": "other.pem"}):
            ch = self.make_channel(**kwargs)
            try:
                fn = ch.unary_unary(QRY + "GetPool", request_serializer=lambda m: m.SerializeToString(),
                                    response_deserializer=qpb.Pool.FromString)
                with self.assertRaises(grpc.RpcError) as cm:
                    fn(qpb.GetPoolRequest(), timeout=10, metadata=call_options())
                self.assertEqual(cm.exception.code(), grpc.StatusCode.UNAVAILABLE, kwargs)
            finally:
                ch.close()


class PyServer:
    """A Python grpcio server for Report, GetPool and Health/Check."""

    def __init__(self, port=0, tls=False):
        self.reports = []
        self.peers = set()
        self.lock = threading.Lock()
        self.server = grpc.server(concurrent.futures.ThreadPoolExecutor(max_workers=8))
        ser = lambda m: m.SerializeToString()  # noqa: E731
        inv = grpc.method_handlers_generic_handler("tau.inventory.v1.InventoryService", {
            "Report": grpc.stream_stream_rpc_method_handler(self.report, pb.AgentReport.FromString, ser)})
        qry = grpc.method_handlers_generic_handler("tau.inventory.v1.QueryService", {
            "GetPool": grpc.unary_unary_rpc_method_handler(self.get_pool, qpb.GetPoolRequest.FromString, ser)})
        hlt = grpc.method_handlers_generic_handler("grpc.health.v1.Health", {
            "Check": grpc.unary_unary_rpc_method_handler(
                lambda req, ctx: hpb.HealthCheckResponse(status=hpb.HealthCheckResponse.SERVING),
                hpb.HealthCheckRequest.FromString, ser)})
        self.server.add_generic_rpc_handlers((inv, qry, hlt))
        addr = "127.0.0.1:%d" % port
        if tls:
            creds = grpc.ssl_server_credentials([(_read(CERTS["server.key"]), _read(CERTS["server.pem"]))],
                                                root_certificates=_read(CERTS["ca.pem"]),
                                                require_client_auth=True)
            self.port = self.server.add_secure_port(addr, creds)
        else:
            self.port = self.server.add_insecure_port(addr)
        assert self.port, "cannot bind " + addr
        self.server.start()

    def _auth(self, context):
        if dict(context.invocation_metadata()).get("authorization") != "Bearer " + TOKEN:
            context.abort(grpc.StatusCode.UNAUTHENTICATED, "bad token")
        ids = context.peer_identities()
        if ids:
            with self.lock:
                self.peers.update(i.decode() for i in ids)

    def get_pool(self, req, context):
        self._auth(context)
        return qpb.Pool(established=True, flavors=[qpb.Flavor(name="h100", resources={"cpu": "8"})])

    def report(self, requests, context):
        self._auth(context)
        # lib/rpc streams count as connected when headers arrive: send them first.
        context.send_initial_metadata(())
        for rep in requests:
            with self.lock:
                self.reports.append((rep.seq, rep.WhichOneof("body")))
            yield pb.ReportAck(seq=rep.seq, heartbeat_interval_seconds=15, status=pb.ACK_STATUS_OK)

    def stop(self):
        self.server.stop(0).wait()


class CClientToPythonServer(unittest.TestCase):
    """The C client streams to a Python server."""

    def run_client(self, port, *args, count=1000):
        p = subprocess.run([CLIENT_BIN, "--target", "127.0.0.1:%d" % port,
                            "--token", TOKEN, "--count", str(count), *args],
                           capture_output=True, text=True, timeout=120)
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        return p.stdout

    def check_reports(self, srv, count):
        with srv.lock:
            seqs = [s for s, _ in srv.reports]
            kinds = [k for _, k in srv.reports]
        self.assertEqual(seqs, list(range(1, count + 2)))
        self.assertEqual(kinds[0], "inventory")
        self.assertEqual(kinds[-1], "stopping")

    def test_plaintext(self):
        srv = PyServer()
        try:
            out = self.run_client(srv.port, count=1000)
            self.assertIn("health 1", out)
            self.assertIn("pool flavors=1", out)
            self.assertIn("acks 1000", out)
            self.assertIn("closed OK", out)
            self.check_reports(srv, 1000)
        finally:
            srv.stop()

    def test_mtls(self):
        srv = PyServer(tls=True)
        try:
            out = self.run_client(srv.port, "--ca", CERTS["ca.pem"], "--cert", CERTS["client.pem"],
                                  "--key", CERTS["client.key"], count=200)
            self.assertIn("acks 200", out)
            self.check_reports(srv, 200)
            self.assertIn("gpu-node-1", srv.peers)
        finally:
            srv.stop()

    def test_reconnects_and_resends_inventory(self):
        srv = PyServer()
        port = srv.port
        client = Proc([CLIENT_BIN, "--target", "127.0.0.1:%d" % port, "--token", TOKEN, "--hold"],
                      "rpc_test_client", WORK)
        try:
            client.wait_line(lambda l: l == "connected 1")
            client.wait_line(lambda l: l == "acked 1")
            srv.stop()
            client.wait_line(lambda l: l.startswith("closed ") and not l.endswith("retry -1"))
            srv = PyServer(port=port)
            client.wait_line(lambda l: l == "connected 2", timeout=30)
            deadline = time.monotonic() + 20
            while True:
                with srv.lock:
                    got = list(srv.reports)
                if got or time.monotonic() > deadline:
                    break
                with client.cond:
                    client.cond.wait(0.1)
            self.assertEqual(got[:1], [(1, "inventory")])
        finally:
            rc = client.stop()
            srv.stop()
        self.assertEqual(rc, 0)


if __name__ == "__main__":
    unittest.main()
