#!/usr/bin/python3
"""Steady-state cost of tau-node-agent against its floor: RSS, idle CPU, wake-ups, one probe cycle.

    /usr/bin/python3 bench/agent_rss.py --agent build/tau-node-agent [--seconds 120]
        [--heartbeat 30] [--once-runs 20] [--mappings] [--tls]

Starts kube-sim (seeded with the ND H100 fixture), a recording aggregator (tests/e2e/agent)
that acks with the given heartbeat interval, the agent with a fake --host-root, and, in the
same run against the same recorder, the floor: bench/agent_floor.c, a trivial C program
holding one idle Report stream with the gRPC core alone, on a channel with the agent's
arguments (keepalive included) and credentials (plaintext: the agent runs with --insecure, the
chart's default; with --tls both verify the recorder's certificate against a CA made here, the
agent with --ca-file, as with the chart's tls.enabled=true), sending the same heartbeats (built
here with cc and pkg-config grpc). Once both have settled (VmRSS and thread count steady
for 1 s), both idle for --seconds side by side; then it reports, for each and as the agent's ratio to the floor: VmRSS (/proc/<pid>/status), CPU time over the
window (the sum of every thread's /proc/<pid>/task/*/schedstat run time, nanosecond
resolution) and wake-ups (voluntary + involuntary context switches of every thread). The probe
cycle is the wall time of `--once -o json` (process start, kubeconfig, three API reads, host
probe, JSON), the median of --once-runs runs. Goals (issue: scale): idle CPU <= 1.3x and
VmRSS <= 1.4x the floor. With --mappings it also prints Rss per mapped object (smaps), agent
against floor, the largest difference first.
"""

import argparse
import glob
import os
import statistics
import subprocess
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
import harness_path  # noqa: E402,F401  (puts tests/e2e on sys.path)
from harness import agents, kubesim, paths, procs, proto, waits  # noqa: E402
from harness.tls import make_tls  # noqa: E402

GOAL_CPU = 1.3
GOAL_RSS = 1.4


def build_floor(work):
    """Compile bench/agent_floor.c against the system gRPC core; return the binary's path."""
    out = os.path.join(work, "agent-floor")
    flags = subprocess.run(["pkg-config", "--cflags", "--libs", "grpc"], check=True,
                           capture_output=True, text=True).stdout.split()
    subprocess.run(["cc", "-O2", "-o", out, os.path.join(HERE, "agent_floor.c")] + flags,
                   check=True)
    return out


def threads(pid):
    return glob.glob("/proc/%d/task/*" % pid)


def sample(pid):
    """(VmRSS KiB, CPU ns summed over threads, context switches summed over threads)."""
    rss = None
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmRSS:"):
                rss = int(line.split()[1])
    cpu = switches = 0
    for t in threads(pid):
        try:
            with open(t + "/schedstat") as f:
                cpu += int(f.read().split()[0])
            with open(t + "/status") as f:
                for line in f:
                    if line.startswith(("voluntary_ctxt_switches", "nonvoluntary_ctxt_switches")):
                        switches += int(line.split()[1])
        except FileNotFoundError:
            pass  # a thread that ended between the listing and the read
    return rss, cpu, switches


def wait_settled(pids, steady=6, step=0.2, timeout=30):
    """Wait until each process's VmRSS and thread count have read the same `steady` samples in
    a row, `step` s apart (1 s: its start-up allocations and threads are done); at most
    `timeout` s."""
    last, same = {}, {pid: 0 for pid in pids}

    def settled():
        for pid in pids:
            now = sample(pid)[0], len(threads(pid))
            same[pid] = same[pid] + 1 if now == last.get(pid) else 1
            last[pid] = now
        return min(same.values()) >= steady
    try:
        waits.wait_for(settled, timeout, "VmRSS and thread count of agent and floor the same "
                       "%d samples in a row" % steady, interval=step)
    except AssertionError as e:
        raise SystemExit("%s; by pid, (VmRSS KiB, threads) and same samples in a row: %s" % (
            e, {p: (last[p], same[p]) for p in pids}))


def smaps_by_object(pid):
    """{mapping name: Rss KiB} from /proc/<pid>/smaps, summed per object: a library's name
    without its version suffix, "[anon]" for anonymous memory (heap, stacks, arenas)."""
    out = {}
    name = None
    with open("/proc/%d/smaps" % pid) as f:
        for line in f:
            head = line.split()
            if not head:
                continue
            if "-" in head[0] and not head[0].endswith(":"):
                path = head[5] if len(head) > 5 else ""
                if path.startswith("/"):
                    name = os.path.basename(path).split(".so")[0]
                elif path in ("[vdso]", "[vvar]", "[vsyscall]"):
                    name = path
                else:
                    name = "[anon]"  # heap, stacks, malloc arenas, unnamed mmaps
            elif head[0] == "Rss:" and name is not None:
                out[name] = out.get(name, 0) + int(head[1])
    return out


def print_mappings(agent, floor):
    """Per-object Rss of agent against floor, the largest difference first."""
    print("Rss per object (KiB)   agent   floor   difference")
    rows = sorted(set(agent) | set(floor),
                  key=lambda k: (-(agent.get(k, 0) - floor.get(k, 0)), k))
    for k in rows:
        a, f = agent.get(k, 0), floor.get(k, 0)
        if a or f:
            print("  %-20s %7d %7d %+8d" % (k[:20], a, f, a - f))


def ratio(a, b):
    return a / b if b else float("inf")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--agent", default=paths.AGENT_BIN)
    ap.add_argument("--seconds", type=float, default=120)
    ap.add_argument("--heartbeat", type=int, default=30)
    ap.add_argument("--once-runs", type=int, default=20)
    ap.add_argument("--tls", action="store_true",
                    help="TLS to the recorder for both (agent --ca-file) instead of plaintext")
    ap.add_argument("--mappings", action="store_true",
                    help="also print Rss per mapped object (smaps), agent against floor")
    a = ap.parse_args()
    paths.AGENT_BIN = a.agent
    work = tempfile.mkdtemp(prefix="tau-agent-bench-")
    floor_bin = build_floor(work)
    pb = proto.inventory()
    sim = kubesim.KubeSim(objects=[kubesim.fixture("node-nd-h100-v5.json"),
                                   kubesim.fixture("csinode-nd-h100-v5.json")])
    host = agents.HostTree(work)
    if a.tls:
        tls = make_tls(work)
        rec = agents.Recorder(pb, heartbeat_s=a.heartbeat, tls=(tls["cert"], tls["key"]))
        security, floor_extra = ["--ca-file", tls["ca"]], ["30000", tls["ca"]]
    else:
        rec = agents.Recorder(pb, heartbeat_s=a.heartbeat)
        security, floor_extra = ["--insecure"], []
    agent = agents.Agent(work, ["--node-name", agents.ND_NODE, "--kubeconfig", sim.kubeconfig,
                                "--aggregator", "127.0.0.1:%d" % rec.port, *security,
                                "--host-root", host.root, "--log-level", "warn"])
    floor = None
    try:
        rec.wait_inventory(lambda i: True, 0, 60, "first inventory")
        floor = subprocess.Popen([floor_bin, "127.0.0.1:%d" % rec.port, str(a.heartbeat),
                                  *floor_extra])
        rec.wait(lambda r: r.streams >= 2 and len(r.reports) >= 2, 30, "the floor's stream")
        # Waited for: both processes' start-up allocations and threads done (VmRSS and thread
        # count steady for 1 s), so that the window measures the idle state alone.
        wait_settled([agent.proc.pid, floor.pid])
        a0, f0 = sample(agent.proc.pid), sample(floor.pid)
        t0 = time.monotonic()
        time.sleep(a.seconds)  # the measured idle window itself
        elapsed = time.monotonic() - t0
        a1, f1 = sample(agent.proc.pid), sample(floor.pid)
        mem = procs.proc_memory(agent.proc.pid)
        fmem = procs.proc_memory(floor.pid)
        amap, fmap = smaps_by_object(agent.proc.pid), smaps_by_object(floor.pid)
        if agent.proc.poll() is not None or floor.poll() is not None:
            raise SystemExit("agent or floor exited during the window")
        reports = len(rec.reports)

        env = dict(os.environ, TAU_AGENT_NVML="off")
        times = []
        for _ in range(a.once_runs):
            t = time.monotonic()
            subprocess.run([a.agent, "--once", "-o", "json", "--node-name", agents.ND_NODE,
                            "--kubeconfig", sim.kubeconfig, "--host-root", host.root],
                           check=True, capture_output=True, env=env)
            times.append(time.monotonic() - t)
    finally:
        if floor is not None:
            floor.kill()
            floor.wait()
        agent.terminate()
        rec.stop()
        sim.stop()

    cpu_a, cpu_f = (a1[1] - a0[1]) / 1e9, (f1[1] - f0[1]) / 1e9
    wake_a, wake_f = a1[2] - a0[2], f1[2] - f0[2]
    per_hour = cpu_a * 3600 / elapsed
    print("idle window            %.0f s (heartbeat %d s, %s to the recorder, %d reports "
          "received in total)" % (elapsed, a.heartbeat, "TLS" if a.tls else "plaintext", reports))
    print("                       agent                      floor (gRPC core, one stream)"
          "   ratio")
    print("VmRSS                  %-26s %-32s %.2f" % ("%d KiB" % a1[0], "%d KiB" % f1[0],
                                                       ratio(a1[0], f1[0])))
    print("  RssAnon              %-26s %-32s" % ("%d KiB" % mem.get("RssAnon", 0),
                                                  "%d KiB" % fmem.get("RssAnon", 0)))
    print("  RssFile              %-26s %-32s" % ("%d KiB" % mem.get("RssFile", 0),
                                                  "%d KiB" % fmem.get("RssFile", 0)))
    print("CPU in window          %-26s %-32s %.2f" % ("%.3f s" % cpu_a, "%.3f s" % cpu_f,
                                                       ratio(cpu_a, cpu_f)))
    print("wake-ups in window     %-26s %-32s %.2f" % (wake_a, wake_f, ratio(wake_a, wake_f)))
    print("agent CPU per hour     %.2f s = %.4f %% of one core" % (per_hour, 100 * per_hour / 3600))
    print("probe cycle (--once)   median %.1f ms, min %.1f ms over %d runs"
          % (1000 * statistics.median(times), 1000 * min(times), len(times)))
    if a.mappings:
        print_mappings(amap, fmap)
    print("goals                  CPU <= %.1fx floor: %s; VmRSS <= %.1fx floor: %s"
          % (GOAL_CPU, "met" if ratio(cpu_a, cpu_f) <= GOAL_CPU else "NOT met",
             GOAL_RSS, "met" if ratio(a1[0], f1[0]) <= GOAL_RSS else "NOT met"))


if __name__ == "__main__":
    main()
