"""Clients that keep working through a long run's churn and kube-sim's injected faults, shared
by bench/soak.py and the budget model test (tests/e2e/budget/model.py):

    Api(sim, stop)        API calls retried through transient answers (429, 5xx, a refused
                          connection) until a deadline; must() and merge() raise Failed
    Swarm(addr, rng, n)   one agent Report stream per Node over n channels, following the
                          Node as it changes, reopened after a jittered backoff when it ends
"""
import json
import threading
import time

import grpc

from harness import proto
from harness.agents import FakeAgent, inventory_from_node
from harness.tokens import agent_token

TRANSIENT = (429, 500, 502, 503, 504)


class Failed(Exception):
    """A call or a check that cannot go on (not a transient answer)."""


def now():
    return time.monotonic()


# -- the API, retried through the injected faults -----------------------------------------------

class Api:
    def __init__(self, sim, stop):
        self.sim, self.stop = sim, stop

    def call(self, method, path, body=None, ctype="application/json", ok=(200, 201),
             timeout=60):
        deadline = now() + timeout
        while True:
            try:
                st, obj = self.sim.req(method, path, body, ctype)
            except OSError:
                st, obj = None, None
            if st in ok:
                return st, obj
            if st is not None and st not in TRANSIENT:
                return st, obj
            if now() > deadline:
                raise Failed("%s %s: still %s after %d s" % (method, path, st, timeout))
            # Backoff between retries of a call kube-sim refused on purpose (its injected 429s
            # and 5xx), not a wait for a condition: the retry itself is the check.
            time.sleep(1.0 if st == 429 else 0.1)

    def must(self, method, path, body=None, ctype="application/json", ok=(200, 201)):
        st, obj = self.call(method, path, body, ctype, ok)
        if st not in ok:
            raise Failed("%s %s -> %s %s" % (method, path, st, json.dumps(obj)[:300]))
        return obj

    def merge(self, path, patch):
        return self.must("PATCH", path, patch, "application/merge-patch+json")


# -- the agents -----------------------------------------------------------------------------------

class Swarm(threading.Thread):
    """One Report stream per node over a few channels; a stream that ends is reopened after a
    jittered backoff (0.5 s x1.6, at most 5 s, reset by an ack), starting again with seq 1."""

    def __init__(self, addr, rng, channels=4):
        super().__init__(daemon=True)
        self.chans = [grpc.insecure_channel(addr) for _ in range(channels)]
        self.rng = rng
        self.lock = threading.Lock()
        self.nodes = {}      # name -> Node object as the API returned it (None: deleted)
        self.dirty = set()
        self.agents = {}     # name -> [FakeAgent or None, next try, failures]
        self.halt = threading.Event()
        self.connects = 0
        self.error = None

    def set_node(self, name, obj):
        with self.lock:
            self.nodes[name] = obj
            self.dirty.add(name)

    def _start(self, name, obj, i):
        a = FakeAgent(proto.inventory(), self.chans[i % len(self.chans)], agent_token(name),
                      inventory_from_node(proto.inventory(), obj))
        self.connects += 1
        return a

    def run(self):
        try:
            while not self.halt.wait(0.1):
                with self.lock:
                    items = list(self.nodes.items())
                    dirty, self.dirty = self.dirty, set()
                t = now()
                for i, (name, obj) in enumerate(items):
                    st = self.agents.setdefault(name, [None, 0.0, 0])
                    a = st[0]
                    if obj is None:
                        if a is not None and not a.done:
                            a.cancel()
                        st[0] = None
                        continue
                    if a is not None and a.done:
                        got_ack = bool(a.acks)
                        st[2] = 0 if got_ack else st[2] + 1
                        st[1] = t + min(5.0, 0.5 * 1.6 ** st[2]) * self.rng.uniform(0.8, 1.2)
                        st[0] = a = None
                    if a is None:
                        if t >= st[1]:
                            st[0] = self._start(name, obj, i)
                    elif name in dirty:
                        a.send_inventory(inventory_from_node(proto.inventory(), obj))
        except Exception as e:  # reported by the main loop
            self.error = e

    def close(self):
        self.halt.set()
        if self.ident is not None:  # started
            self.join(10)
        for st in self.agents.values():
            if st[0] is not None and not st[0].done:
                try:
                    st[0].call.cancel()
                except Exception:
                    pass
        for c in self.chans:
            c.close()
