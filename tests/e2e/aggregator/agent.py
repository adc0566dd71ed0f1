"""A fake tau-node-agent speaking InventoryService.Report with grpcio.

Used when the real agent is not part of the test: it sends exactly what the protocol asks
(first a full inventory with seq 1, heartbeats carrying the digest, Stopping on purpose) and
records every ack and the final status.
"""
import hashlib
import json
import os
import queue
import sys
import threading
import time

import grpc

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..",
                                "kube-sim"))
from kubesim import satoken  # noqa: E402

REPORT = "/tau.inventory.v1.InventoryService/Report"
AGENT_SA = "system:serviceaccount:tau-system:tau-node-agent"


def jwt(claims):
    """A JWT-shaped string with these claims (kubesim.satoken: only kube-sim's token table says
    who it is)."""
    return satoken.jwt(claims)


def agent_token(node, tag="", user=AGENT_SA):
    """The token an agent's projected ServiceAccount token would be for `node`: a JWT whose own
    claims name the agent ServiceAccount (the aggregator refuses any other token before a
    TokenReview). `tag` makes tokens for the same node distinct. kube-sim's --tokens table maps
    the exact string to the user the TokenReview answers."""
    return satoken.projected_token(user, ["taugrid"], node=node, tag=tag)


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
        fn = channel.stream_stream(REPORT, request_serializer=lambda m: m.SerializeToString(),
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
        deadline = time.monotonic() + timeout
        with self.cond:
            while True:
                for a in self.acks:
                    if a.seq == seq:
                        return a
                left = deadline - time.monotonic()
                if self.done or left <= 0:
                    raise AssertionError("no ack for seq %d (error: %s)" % (seq, self.error))
                self.cond.wait(left)

    def wait_done(self, timeout=15):
        deadline = time.monotonic() + timeout
        with self.cond:
            while not self.done:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise AssertionError("stream did not end")
                self.cond.wait(left)
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
