#!/usr/bin/env python3
"""kube-sim benchmark: list 10,000 Nodes; watch fan-out to 100 watchers.

    python3 tests/kube-sim/bench_kubesim.py [--nodes N] [--watchers W] [--rounds R] [--small]

Also a paged list while a writer changes Nodes, and kube-sim's VmRSS once seeded.
Prints one line per figure. Targets: list of 10,000 Nodes < 1 s; a write seen
by all 100 watchers quickly (time from the write until the last watcher has it).
"""
import argparse
import json
import os
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from simtest import SimProcess, WatchStream  # noqa: E402

FIXTURE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "fixtures", "kube",
                       "node-nd-h100-v5.json")


def node(i, template):
    n = json.loads(json.dumps(template))
    n["metadata"]["name"] = "bench-node-%05d" % i
    n["metadata"].pop("uid", None)
    n["metadata"]["labels"]["kubernetes.io/hostname"] = n["metadata"]["name"]
    return n


def vmrss(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return " ".join(line.split()[1:])
    return "?"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--nodes", type=int, default=10000)
    ap.add_argument("--watchers", type=int, default=100)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--small", action="store_true",
                    help="the budget bench's small Nodes (about 0.6 KiB) instead of the fixture")
    a = ap.parse_args()
    if a.small:
        template = {"apiVersion": "v1", "kind": "Node",
                    "metadata": {"name": "x", "labels": {"kubernetes.io/os": "linux",
                                                         "tau.azure.com/gpu-class": "h100"}},
                    "spec": {},
                    "status": {"allocatable": {"cpu": "96", "memory": "1886Gi",
                                               "nvidia.com/gpu": "8", "pods": "110"},
                               "conditions": [{"type": "Ready", "status": "True"}]}}
    elif os.path.exists(FIXTURE):
        with open(FIXTURE) as f:
            template = json.load(f)
    else:
        template = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "x", "labels": {}},
                    "status": {"conditions": [{"type": "Ready", "status": "True"}]}}
    tmp = tempfile.mkdtemp(prefix="kube-sim-bench-")
    seed = os.path.join(tmp, "nodes.json")
    with open(seed, "w") as f:
        json.dump({"kind": "List", "apiVersion": "v1", "items": [node(i, template) for i in range(a.nodes)]}, f)
    t0 = time.monotonic()
    sim = SimProcess(["--seed", seed, "--watch-cache-events", str(a.nodes + 1000)], start_timeout=600)
    print("seed %d nodes (%d bytes each): start %.2f s, VmRSS %s" % (
        a.nodes, len(json.dumps(node(0, template))), time.monotonic() - t0, vmrss(sim.proc.pid)))
    try:
        for attempt in range(3):
            c = sim.conn()
            t0 = time.monotonic()
            c.request("GET", "/api/v1/nodes", headers={"Authorization": "Bearer " + sim.token,
                                                        "Accept": "application/json"})
            r = c.getresponse()
            body = r.read()
            t1 = time.monotonic()
            lst = json.loads(body)
            t2 = time.monotonic()
            c.close()
            assert len(lst["items"]) == a.nodes, len(lst["items"])
            print("list %d nodes: %.3f s on the wire (%.1f MB), %.3f s incl. client json.loads"
                  % (a.nodes, t1 - t0, len(body) / 1e6, t2 - t0))
        c = sim.conn()
        t0 = time.monotonic()
        n = 0
        cont = ""
        while True:
            c.request("GET", "/api/v1/nodes?limit=500" + ("&continue=" + cont if cont else ""),
                      headers={"Authorization": "Bearer " + sim.token})
            page = json.loads(c.getresponse().read())
            n += len(page["items"])
            cont = page["metadata"].get("continue")
            if not cont:
                break
        print("paged list (limit=500) of %d nodes: %.3f s" % (n, time.monotonic() - t0))
        c.close()

        # The same while a writer changes Nodes: every page after the first is then the
        # collection at an older resourceVersion (the informer's relist in a storm).
        stop, writing, writes = threading.Event(), threading.Event(), [0]

        def writer():
            wc = sim.conn()
            hd = {"Authorization": "Bearer " + sim.token,
                  "Content-Type": "application/merge-patch+json"}
            while not stop.is_set():
                wc.request("PATCH", "/api/v1/nodes/bench-node-%05d" % (writes[0] % a.nodes),
                           body=json.dumps({"metadata": {"labels": {"w": str(writes[0])}}}),
                           headers=hd)
                wc.getresponse().read()
                writes[0] += 1
                writing.set()
                time.sleep(0.005)  # the writer's pace: about 200 changes a second
            wc.close()
        wt = threading.Thread(target=writer, daemon=True)
        wt.start()
        if not writing.wait(30):
            sys.exit("bench_kubesim: the writer made no change in 30 s")
        c = sim.conn()
        t0, n, cont, w0 = time.monotonic(), 0, "", writes[0]
        while True:
            c.request("GET", "/api/v1/nodes?limit=500" + ("&continue=" + cont if cont else ""),
                      headers={"Authorization": "Bearer " + sim.token})
            page = json.loads(c.getresponse().read())
            n += len(page["items"])
            cont = page["metadata"].get("continue")
            if not cont:
                break
        dt = time.monotonic() - t0
        stop.set()
        wt.join(10)
        c.close()
        assert n == a.nodes, n
        print("paged list (limit=500) of %d nodes during writes (%d writes meanwhile): %.3f s"
              % (n, writes[0] - w0, dt))

        # From now: the writes above are not events the rounds below wait for.
        rv = sim.ok("GET", "/api/v1/nodes?limit=1")["metadata"]["resourceVersion"]
        watchers = [WatchStream(sim, "/api/v1/nodes?watch=true&resourceVersion=%s" % rv, timeout=120)
                    for _ in range(a.watchers)]
        lat = []
        for rnd in range(a.rounds):
            seen = [None] * len(watchers)
            ready = threading.Barrier(len(watchers) + 1)
            done = threading.Barrier(len(watchers) + 1)

            def run(i, w):
                ready.wait()
                ev = w.next()
                seen[i] = time.monotonic()
                done.wait()
            ts = [threading.Thread(target=run, args=(i, w), daemon=True) for i, w in enumerate(watchers)]
            for t in ts:
                t.start()
            # Waited for: every watcher thread started and at its read (a late one would read
            # the event buffered, so its latency could only look longer).
            try:
                ready.wait(30)
            except threading.BrokenBarrierError:
                sys.exit("bench_kubesim: not every watcher thread started within 30 s")
            t0 = time.monotonic()
            sim.ok("PATCH", "/api/v1/nodes/bench-node-00000",
                   {"metadata": {"labels": {"round": str(rnd)}}}, "application/merge-patch+json")
            done.wait(60)
            lat.append(max(seen) - t0)
        for w in watchers:
            w.close()
        print("watch fan-out to %d watchers: last watcher has the event after %s ms (per round)"
              % (a.watchers, ", ".join("%.1f" % (x * 1000) for x in lat)))
    finally:
        sim.stop()
        os.unlink(seed)
        os.rmdir(tmp)


if __name__ == "__main__":
    main()
