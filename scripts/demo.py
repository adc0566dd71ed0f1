#!/usr/bin/env python3
"""taugrid demo: a simulated GPU cluster, real agents, the real aggregator, and the CLI.

Starts kube-sim seeded with GPU nodes shaped like the fixtures in tests/fixtures/kube/ (ND H100
v5 with InfiniBand, NC A100 v4 with MIG, an AKS Flex H100 host) and one ND H100 v5 node whose
GPUs come only through Dynamic Resource Allocation (a ResourceSlice and the DeviceClass
gpu.nvidia.com, tests/fixtures/dra; class h100-dra), one tau-node-agent per node with
a fake host root (device nodes, InfiniBand ports) and node-local truth from our fakes (the fake
libnvidia-ml.so.1, a fake kubelet pod-resources server, a fake CSI driver behind each CSINode
entry), one tau-aggregator, then shows `tau inventory pool` and `tau inventory nodes` (the DRA
node's 8 GPUs counted though its allocatable has none).  Of the
two ND H100 v5 nodes one has an InfiniBand port down, the other a GPU whose rows wait for a
remap; the demo
shows `tau inventory explain`'s agent.* rules for them (both still count), the Node conditions
their agents publish (--node-conditions), the aggregator's node-truth metrics, `tau inventory
nodes` (HEALTH, FREE), and `tau inventory fit` for an 8-GPU job on one node before and after a
pod takes 2 GPUs (kubelet's pod-resources reports it).  It then applies a TauCluster in
Reconcile mode naming the capacity team `research`, that TauTeam and a TauWorkspace of the team
(no hand-made Kueue object: the aggregator writes the ResourceFlavors, the team's root Cohort
holding the exact pool and the workspace's ClusterQueue), shows `tau workspace list|status`,
the TauCluster condition NodeTruthAgrees naming the two sick nodes, `tau team status research`
and the Cohort as YAML, and cordons an H100 node: the pool and the
Cohort's nominalQuota shrink, and `tau team status` shows it.  Everything runs on 127.0.0.1 and
is stopped on exit.

Each agent authenticates as a real one does: with a projected-ServiceAccount-shaped token (a JWT
naming the agent ServiceAccount, its pod and its node) that the aggregator sends to kube-sim's
TokenReview.  Every step waits for its condition and says what it checked; the demo exits 1,
naming the node and the agent's last log line, when an agent is not connected or a GPU node is
missing from the pool at any step that depends on the agents.  `--summary FILE` writes every
check and the figures behind it as JSON (tests/e2e/test_demo.py asserts on it);
`--break-token NODE` gives that node's agent a token kube-sim does not know, which must fail the
demo.

Usage: scripts/demo.py [--build DIR] [--keep] [--summary FILE] [--break-token NODE]
       (make demo runs it)
"""
import argparse
import copy
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FIXTURES = os.path.join(ROOT, "tests", "fixtures", "kube")
DRA_FIXTURES = os.path.join(ROOT, "tests", "fixtures", "dra")
DRA_CLASS = "h100-dra"  # the GPU class of the node whose GPUs come only through DRA
KUBE_SIM = os.path.join(ROOT, "tests", "kube-sim", "kube-sim")
sys.path.insert(0, os.path.join(ROOT, "tests", "kube-sim"))
from kubesim import satoken  # noqa: E402  (projected ServiceAccount tokens for kube-sim)

AGENT_SA = "system:serviceaccount:tau-system:tau-node-agent"
AGENT_AUDIENCE = "taugrid"  # the aggregator's --token-audience default
AGENT_WAIT_S = 60  # every agent connected and reported (seconds)
TEAM = "research"
COHORT = "tau-team-" + TEAM
HELM = os.path.join(ROOT, ".tools", "bin", "helm")
# The singleton TauCluster: the aggregator manages Kueue objects (Reconcile) and the pool is the
# budget of the capacity team.  Every Ready, schedulable Linux node with a GPU class counts.
TAU_CLUSTER = {"apiVersion": "tau.azure.com/v1alpha1", "kind": "TauCluster",
               "metadata": {"name": "cluster"},
               "spec": {"managementMode": "Reconcile",
                        "queues": {"capacityTeamRef": {"name": TEAM}}}}

procs = []
STOP_TIMEOUT_S = 30  # sanitizer builds are slow to exit
checks = []  # every check that passed: {"step", "check", "data"} (--summary)


def say(msg):
    print("\n\033[1m== %s\033[0m" % msg, flush=True)


def checked(step, what, data=None):
    """Records a check that passed and prints it under the step it belongs to."""
    checks.append({"step": step, "check": what, "data": data})
    print("checked: %s" % what, flush=True)


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def wait_for(pred, timeout, what):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for p, name in procs:
            if p.poll() is not None:
                sys.exit("demo: %s exited early (%d); see its log in the work dir" %
                         (name, p.returncode))
        got = pred()
        if got:
            return got
        time.sleep(0.2)
    sys.exit("demo: timed out waiting for %s" % what)


def last_log_line(work, name):
    try:
        with open(os.path.join(work, name + ".log"), errors="replace") as f:
            lines = [ln.rstrip("\n") for ln in f if ln.strip()]
    except OSError as e:
        return "(no log: %s)" % e.strerror
    return lines[-1] if lines else "(its log is empty)"


def refused(line):
    """True when an agent's log line says the aggregator refused its credentials: gRPC
    UNAUTHENTICATED (16) or PERMISSION_DENIED (7) never heal by retrying the same token."""
    return "code=16 " in line or "code=7 " in line


def start(cmd, name, log_dir, env=None):
    log = open(os.path.join(log_dir, name + ".log"), "w")
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE if name == "kube-sim" else log,
                         stderr=log, stdin=subprocess.DEVNULL, env=env)
    procs.append((p, name))
    return p


def describe_exit(code):
    if code < 0:
        try:
            return "killed by %s" % signal.Signals(-code).name
        except ValueError:
            return "killed by signal %d" % -code
    return "exit status %d" % code


def stop_all(work):
    """Stops every daemon, newest first, and returns what went wrong (empty: nothing).

    Each must still be running and must exit 0 on its stop signal within STOP_TIMEOUT_S: our
    daemons on SIGTERM, kube-sim on SIGINT (it ends its serve loop on KeyboardInterrupt). A
    sanitizer report at shutdown, a crash or a hang is a failure of the demo.
    """
    problems = []
    for p, name in reversed(procs):
        log = os.path.join(work, name + ".log")
        if p.poll() is not None:
            problems.append("%s had already stopped (%s); see %s" %
                            (name, describe_exit(p.returncode), log))
            continue
        sig = signal.SIGINT if name == "kube-sim" else signal.SIGTERM
        p.send_signal(sig)
        try:
            p.wait(timeout=STOP_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()
            problems.append("%s did not exit within %d s of %s; killed; see %s" %
                            (name, STOP_TIMEOUT_S, sig.name, log))
            continue
        if p.returncode != 0:
            problems.append("%s ended with %s after %s, not 0; see %s" %
                            (name, describe_exit(p.returncode), sig.name, log))
    del procs[:]
    return problems


def load(name, folder=FIXTURES):
    with open(os.path.join(folder, name)) as f:
        return json.load(f)


def clone_node(node, csinode, name, uid):
    n = copy.deepcopy(node)
    n["metadata"]["name"] = name
    n["metadata"]["uid"] = uid
    n["metadata"]["labels"]["kubernetes.io/hostname"] = name
    c = copy.deepcopy(csinode)
    c["metadata"]["name"] = name
    c["metadata"]["uid"] = uid.replace("-", "c", 1)
    for ref in c["metadata"].get("ownerReferences", []):
        ref["name"], ref["uid"] = name, uid
    for d in c["spec"]["drivers"]:
        d["nodeID"] = name
    return n, c


def fake_host_root(base, node, short, gpus=None):
    """Device nodes and sockets as the kubelet and drivers would leave them. `short` names the
    folder: a unix socket's path must fit 107 bytes (kubelet's pod-resources socket is deep).
    `gpus`: how many /dev/nvidia* (default: the node's allocatable nvidia.com/gpu)."""
    root = os.path.join(base, short)
    alloc = node["status"]["allocatable"]
    os.makedirs(os.path.join(root, "dev"), exist_ok=True)
    for i in range(gpus if gpus is not None else int(alloc.get("nvidia.com/gpu", "0"))):
        open(os.path.join(root, "dev", "nvidia%d" % i), "w").close()
    # One port per rdma/ib device; an RDMA shared-device plugin's resource shares one HCA.
    ports = int(alloc.get("rdma/ib", "0")) or (1 if any(r.startswith("rdma/") for r in alloc)
                                               else 0)
    for i in range(ports):
        port = os.path.join(root, "sys", "class", "infiniband", "mlx5_%d" % i, "ports", "1")
        os.makedirs(port, exist_ok=True)
        with open(os.path.join(port, "state"), "w") as f:
            f.write("4: ACTIVE\n")
    reg = os.path.join(root, "var", "lib", "kubelet", "plugins_registry")
    os.makedirs(reg, exist_ok=True)
    return root, reg


def gpu_ids(node):
    """The fake GPUs' UUIDs of a node: NVML and kubelet's pod-resources name them alike."""
    return ["GPU-%s-%d" % (node["metadata"]["uid"][-6:], i)
            for i in range(int(node["status"]["allocatable"].get("nvidia.com/gpu", "0")))]


def nvml_config(node, sick=None, ids=None):
    """The fake libnvidia-ml.so.1's file (tests/fakes/nvml): GPU `sick` waits for a row remap.
    `ids`: the GPUs' UUIDs (default gpu_ids(node))."""
    lines = ["driver 550.54.15", "cuda 12040"]
    for i, uuid in enumerate(ids if ids is not None else gpu_ids(node)):
        lines.append("gpu uuid=%s model=NVIDIA_H100_80GB_HBM3%s" %
                     (uuid, " remap_pending=1 unc=1" if i == sick else ""))
    return "\n".join(lines) + "\n"


def kubelet_config(node, held=0):
    """The fake kubelet's pod-resources answer: every GPU allocatable, the first `held` of them
    held by ml/train-0 (a node whose GPUs come through DRA has no device-plugin GPU)."""
    ids = gpu_ids(node)
    half = len(ids) // 2
    return json.dumps({
        "allocatable": [{"resource": "nvidia.com/gpu", "ids": ids[:half], "numa": 0},
                        {"resource": "nvidia.com/gpu", "ids": ids[half:], "numa": 1}]
        if ids else [],
        "pods": [{"namespace": "ml", "name": "train-0", "containers": [{"name": "main", "devices": [
            {"resource": "nvidia.com/gpu", "ids": ids[:held], "numa": 0}]}]}] if held else []})


def write_atomic(path, text):
    with open(path + ".tmp", "w") as f:
        f.write(text)
    os.replace(path + ".tmp", path)  # the fakes read their file on every call


def serve_csi_driver(fake_csi, root, reg, driver, short, work):
    """A CSI driver as the node has it: node-driver-registrar's socket in the plugin registry
    and the driver's own socket under /var/lib/kubelet/plugins, both served by our fake
    (tests/fakes/csi_driver), which answers the agent's Identity Probe ready."""
    conf = os.path.join(work, "%s-%s.json" % (short, driver))
    write_atomic(conf, json.dumps({"name": driver, "vendorVersion": "v1.0.0-demo",
                                   "ready": True}))
    endpoint = os.path.join(root, "var", "lib", "kubelet", "plugins", driver, "csi.sock")
    os.makedirs(os.path.dirname(endpoint), exist_ok=True)
    registration = os.path.join(reg, driver + "-reg.sock")
    for path in (endpoint, registration):
        if len(path.encode()) > 107:
            sys.exit("demo: socket path %s is longer than a unix socket allows" % path)
    start([fake_csi, "--registration", registration, "--endpoint", endpoint,
           "--advertise", "/var/lib/kubelet/plugins/%s/csi.sock" % driver, "--config", conf],
          "%s-%s" % (short, driver), work)
    wait_for(lambda: os.path.exists(endpoint) and os.path.exists(registration), 10,
             "the fake CSI driver %s of %s" % (driver, short))

def run(cmd, check=True):
    print("$ " + " ".join(os.path.relpath(c, ROOT) if c.startswith(ROOT) else c for c in cmd),
          flush=True)
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                       universal_newlines=True)
    print(r.stdout, end="", flush=True)
    if check and r.returncode != 0:
        sys.exit("demo: command failed (%d)" % r.returncode)
    return r


def explain_json(tau, aggr, name):
    r = subprocess.run(tau + ["explain", name, "-o", "json"] + aggr, stdout=subprocess.PIPE,
                       stderr=subprocess.DEVNULL, universal_newlines=True)
    try:
        doc = json.loads(r.stdout)
        return doc, {t["name"]: t for t in doc.get("nodeTruth") or []}
    except ValueError:
        return None, {}


def node_conditions(kubeconfig, name):
    r = subprocess.run(["kubectl", "--kubeconfig", kubeconfig, "get", "node", name, "-o", "json"],
                       stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                       universal_newlines=True)
    try:
        return {c["type"]: c for c in json.loads(r.stdout)["status"]["conditions"]}
    except (ValueError, KeyError):
        return {}


def node_truth(tau, aggr, kubeconfig, http_addr, nodes, port_down, sick, truth):
    """What only the nodes know: explain's agent.* rules, the Node conditions the agents
    publish, the aggregator's metrics, and a pod taking GPUs (kubelet pod-resources)."""
    step = "node-truth"
    say("Node-local truth: %s has an InfiniBand port down, %s a GPU whose rows wait for a "
        "remap" % (port_down, sick))
    print("The agents read NVML (our fake library), sysfs and kubelet's pod-resources (our fake "
          "kubelet). The budget does not change: both nodes still count. The agents publish "
          "Node conditions for the cluster's own remediation, and explain says what is wrong. "
          "Every node's CSI drivers are our fake driver, which answers the agent's Identity "
          "Probe.", flush=True)

    def warned(name, rule):
        return lambda: (lambda t: t if t.get(rule) and not t[rule]["pass"] else None)(
            explain_json(tau, aggr, name)[1])

    sick_rules = wait_for(warned(sick, "agent.gpu-health"), 30,
                          "explain %s to warn agent.gpu-health" % sick)
    run(tau + ["explain", sick] + aggr)
    down_rules = wait_for(warned(port_down, "agent.rdma-ports"), 30,
                          "explain %s to warn agent.rdma-ports" % port_down)
    doc, _ = explain_json(tau, aggr, sick)
    if not doc or not doc.get("counted"):
        sys.exit("demo: %s: %s no longer counts; node truth must not change the pool" %
                 (step, sick))
    checked(step, "explain %s: agent.gpu-health WARN (%s), the node still counts; explain %s: "
            "agent.rdma-ports WARN" % (sick, sick_rules["agent.gpu-health"]["detail"], port_down),
            {"sick": sick_rules, "port_down": down_rules})

    def conditions_flipped():
        a, b = node_conditions(kubeconfig, sick), node_conditions(kubeconfig, port_down)
        ok = (a.get("TauGPUHealthy", {}).get("status") == "False" and
              b.get("TauNetworkReady", {}).get("status") == "False")
        return (a, b) if ok else None

    a, b = wait_for(conditions_flipped, 30, "the agents' Node conditions")
    run(["kubectl", "--kubeconfig", kubeconfig, "get", "nodes", port_down, sick, "-o",
         'custom-columns=NAME:.metadata.name,'
         'TauGPUHealthy:.status.conditions[?(@.type=="TauGPUHealthy")].reason,'
         'TauNetworkReady:.status.conditions[?(@.type=="TauNetworkReady")].reason'])
    checked(step, "Node conditions: %s TauGPUHealthy False (%s); %s TauNetworkReady False (%s)"
            % (sick, a["TauGPUHealthy"]["message"], port_down, b["TauNetworkReady"]["message"]),
            {"sick": a.get("TauGPUHealthy"), "port_down": b.get("TauNetworkReady")})

    def disagreements():
        try:
            with urllib.request.urlopen("http://%s/metrics" % http_addr, timeout=5) as r:
                text = r.read().decode()
        except OSError:
            return None
        got = {ln.split('"')[1]: int(float(ln.split()[-1])) for ln in text.splitlines()
               if ln.startswith("tau_aggregator_node_truth_disagreements{")}
        return got if got.get("agent.gpu-health") == 1 and got.get("agent.rdma-ports") == 1 \
            else None

    got = wait_for(disagreements, 30, "tau_aggregator_node_truth_disagreements: one node for "
                   "agent.gpu-health and one for agent.rdma-ports")
    print("$ curl http://%s/metrics | grep node_truth" % http_addr)
    for rule, v in sorted(got.items()):
        print('tau_aggregator_node_truth_disagreements{rule="%s"} %d' % (rule, v))
    checked(step, "metrics: tau_aggregator_node_truth_disagreements counts 1 node for "
            "agent.gpu-health and 1 for agent.rdma-ports", got)

    say("Where does an 8-GPU h100-ib job (all 8 on one node) fit right now? Then a pod takes 2 "
        "GPUs on %s" % port_down)
    cls = next(n for n in nodes if n["metadata"]["name"] == port_down)["metadata"]["labels"][
        "tau.azure.com/gpu-class"]
    fit = tau + ["fit", "--gpu-class", cls, "--gpus", "8", "--per-node", "8"] + aggr
    run(tau + ["nodes"] + aggr)
    fit_before = run(fit, check=False).returncode
    node = next(n for n in nodes if n["metadata"]["name"] == port_down)
    before = explain_json(tau, aggr, port_down)[1]["agent.pod-resources"]["detail"]
    print("before: " + before)
    write_atomic(truth[port_down]["kubelet"], kubelet_config(node, held=2))
    kubectl = ["kubectl", "--kubeconfig", kubeconfig]
    subprocess.run(kubectl + ["create", "namespace", "ml"], stdout=subprocess.DEVNULL)
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "train-0", "namespace": "ml"},
           "spec": {"nodeName": port_down, "containers": [
               {"name": "main", "image": "train", "resources": {"limits": {
                   "nvidia.com/gpu": "2"}}}]}}
    subprocess.run(kubectl + ["create", "-f", "-"], input=json.dumps(pod),
                   universal_newlines=True, stdout=subprocess.DEVNULL, check=True)
    after = wait_for(lambda: (lambda d: d if "2 in use" in d else None)(
        explain_json(tau, aggr, port_down)[1].get("agent.pod-resources", {}).get("detail", "")),
        30, "pod-resources to show the pod's GPUs")
    print("after:  " + after)
    fit_after = run(fit, check=False).returncode
    if (fit_before, fit_after) != (0, 1):
        sys.exit("demo: %s: tau inventory fit exited %d before the pod and %d after (want 0, "
                 "then 1: the sick node has 7 healthy GPUs, the other 6 free)" %
                 (step, fit_before, fit_after))
    checked(step, "a pod taking 2 GPUs on %s: %s; an 8-GPU %s job on one node fits before "
            "it (fit exits 0) and nowhere after (exits 1)" % (port_down, after, cls),
            {"before": before, "after": after, "fit_before": fit_before,
             "fit_after": fit_after})


def dra_node(tau, aggr, kubeconfig, name, pool):
    """The node whose GPUs come only through Dynamic Resource Allocation: none in its
    allocatable, all 8 in the pool (docs/budget.md, "How DRA devices count")."""
    step = "dra"
    say("%s: its GPUs come only through Dynamic Resource Allocation" % name)
    print("Its allocatable has no nvidia.com/gpu: the GPU driver publishes the GPUs in a "
          "ResourceSlice, and the DeviceClass gpu.nvidia.com names the quota resource they "
          "count under (extendedResourceName nvidia.com/gpu). The pool counts them in flavor "
          "%s; VIA-DRA says how much of a sum comes that way." % DRA_CLASS, flush=True)
    kubectl = ["kubectl", "--kubeconfig", kubeconfig]
    run(kubectl + ["get", "deviceclasses,resourceslices"])
    r = subprocess.run(kubectl + ["get", "node", name, "-o", "json"], stdout=subprocess.PIPE,
                       stderr=subprocess.DEVNULL, universal_newlines=True, check=True)
    alloc = json.loads(r.stdout)["status"]["allocatable"]
    if "nvidia.com/gpu" in alloc:
        sys.exit("demo: %s: %s advertises nvidia.com/gpu %s; it must have none" %
                 (step, name, alloc["nvidia.com/gpu"]))

    def counted():
        f = next((f for f in (pool() or {}).get("flavors", []) if f["name"] == DRA_CLASS), None)
        return f if (f and f["resources"].get("nvidia.com/gpu") == "8" and
                     (f.get("draResources") or {}).get("nvidia.com/gpu") == "8") else None

    flavor = wait_for(counted, 30, "flavor %s to count 8 nvidia.com/gpu, all through DRA"
                      % DRA_CLASS)
    run(tau + ["explain", name] + aggr)
    checked(step, "%s advertises no nvidia.com/gpu; its 8 GPUs count in flavor %s, all "
            "through DRA (tau inventory pool: nvidia.com/gpu 8, draResources 8)" %
            (name, DRA_CLASS), {"node": name, "allocatable": alloc, "flavor": flavor})


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--keep", action="store_true", help="leave the work dir for inspection")
    ap.add_argument("--summary", metavar="FILE",
                    help="write every check and the figures behind it as JSON")
    ap.add_argument("--break-token", metavar="NODE", default="",
                    help="give NODE's agent a token kube-sim does not know (the demo must fail)")
    args = ap.parse_args()
    agent_bin = os.path.join(args.build, "tau-node-agent")
    aggr_bin = os.path.join(args.build, "tau-aggregator")
    tau_bin = os.path.join(args.build, "tau")
    for b in (agent_bin, aggr_bin, tau_bin):
        if not os.access(b, os.X_OK):
            sys.exit("demo: %s is missing; run `make` first" % b)

    work = tempfile.mkdtemp(prefix="taugrid-demo-")
    completed = False
    try:
        say("A simulated GPU cluster (kube-sim) with seven GPU nodes (one of them with its GPUs "
            "only through Dynamic Resource Allocation) and one CPU node")
        shapes = [("node-nd-h100-v5.json", "csinode-nd-h100-v5.json"),
                  ("node-nc-a100-v4-mig.json", "csinode-nc-a100-v4-mig.json"),
                  ("node-flex-h100.json", "csinode-flex-h100.json")]
        items, nodes = [], []
        for i, (nf, cf) in enumerate(shapes):
            node, csinode = load(nf), load(cf)
            for k in range(2):
                name = "%s-%d" % (node["metadata"]["name"], k)
                n, c = clone_node(node, csinode, name, "6f1c2d3e-0000-4000-8000-%012d" % (i * 10 + k))
                if k == 0 and n["spec"].get("unschedulable"):
                    # the MIG fixture is cordoned; one uncordoned copy shows it counting
                    n["spec"].pop("unschedulable")
                    n["spec"]["taints"] = [t for t in n["spec"].get("taints", [])
                                           if t["key"] != "node.kubernetes.io/unschedulable"]
                items += [n, c]
                nodes.append(n)
        # An ND H100 v5 node whose GPU driver uses Dynamic Resource Allocation: no nvidia.com/gpu
        # in its allocatable, its 8 GPUs in a ResourceSlice, the DeviceClass gpu.nvidia.com
        # naming nvidia.com/gpu (tests/fixtures/dra). Its own GPU class shows it apart.
        dra = load("node-dra-h100-0.json", DRA_FIXTURES)
        dra["metadata"]["labels"]["tau.azure.com/gpu-class"] = DRA_CLASS
        dra_slice = load("resourceslice-h100-complete.json", DRA_FIXTURES)
        items += [dra, {"apiVersion": "storage.k8s.io/v1", "kind": "CSINode",
                        "metadata": {"name": dra["metadata"]["name"]}, "spec": {"drivers": []}},
                  load("deviceclass-gpu.nvidia.com.json", DRA_FIXTURES), dra_slice]
        nodes.append(dra)
        dra_name = dra["metadata"]["name"]
        dra_ids = [d["attributes"]["uuid"]["string"] for d in dra_slice["spec"]["devices"]]
        cpu = copy.deepcopy(load("node-nd-h100-v5.json"))
        cpu["metadata"]["name"] = "system-0"
        cpu["metadata"]["uid"] = "6f1c2d3e-0000-4000-8000-999999999999"
        del cpu["metadata"]["labels"]["tau.azure.com/gpu-class"]
        for r in ("nvidia.com/gpu", "rdma/ib"):
            cpu["status"]["allocatable"].pop(r, None)
            cpu["status"]["capacity"].pop(r, None)
        items.append(cpu)
        items.append({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "tau-system"}})
        seed = os.path.join(work, "seed.json")
        with open(seed, "w") as f:
            json.dump({"kind": "List", "items": items}, f)
        if args.break_token and args.break_token not in [n["metadata"]["name"] for n in nodes]:
            sys.exit("demo: --break-token %s: no such GPU node" % args.break_token)
        # One projected ServiceAccount token per agent pod, bound to its node; kube-sim's
        # TokenReview answers each with the agent ServiceAccount and the node it is bound to.
        tokens, agent_tokens = {}, {}
        for n in nodes:
            name = n["metadata"]["name"]
            pod = "tau-node-agent-" + name
            tok = satoken.projected_token(AGENT_SA, [AGENT_AUDIENCE], node=name, pod=pod)
            tokens[tok] = satoken.table_entry(AGENT_SA, [AGENT_AUDIENCE], node=name, pod=pod)
            # --break-token: the same claims, but no API server issued it (TokenReview says so)
            agent_tokens[name] = tok if name != args.break_token else satoken.projected_token(
                AGENT_SA, [AGENT_AUDIENCE], node=name, pod=pod, tag="not-issued")
        tokens_file = os.path.join(work, "tokens.json")
        with open(tokens_file, "w") as f:
            json.dump(tokens, f)
        kubeconfig = os.path.join(work, "kubeconfig")
        sim = start([sys.executable, KUBE_SIM, "--listen", "127.0.0.1:0", "--kubeconfig-out",
                     kubeconfig, "--tokens", tokens_file, "--seed", seed,
                     "--crds", os.path.join(ROOT, "charts", "taugrid", "crds"),
                     "--crds", os.path.join(ROOT, "tests", "fixtures", "kueue")],
                    "kube-sim", work)
        line = sim.stdout.readline().decode().strip()
        if not line.startswith("ready "):
            sys.exit("demo: kube-sim did not start; see %s/kube-sim.log" % work)
        env = dict(os.environ, KUBECONFIG=kubeconfig, HOME=work)
        run(["kubectl", "--kubeconfig", kubeconfig, "get", "nodes", "-L",
             "tau.azure.com/gpu-class"])

        say("tau-aggregator")
        grpc_addr = "127.0.0.1:%d" % free_port()
        http_addr = "127.0.0.1:%d" % free_port()
        start([aggr_bin, "--kubeconfig", kubeconfig, "--grpc-listen", grpc_addr,
               "--http-listen", http_addr, "--initial-sync-timeout", "30s"], "aggregator", work,
              env)
        print("gRPC %s, HTTP %s" % (grpc_addr, http_addr))

        say("One tau-node-agent per GPU node, each with a fake host root")
        # Node-local truth on every GPU node: our fake NVML library, a fake kubelet
        # pod-resources server and fake CSI drivers; of the two ND H100 v5 nodes the first has
        # an InfiniBand port down, the second a GPU whose rows wait for a remap. The agents
        # publish Node conditions.
        port_down, sick = nodes[0]["metadata"]["name"], nodes[1]["metadata"]["name"]
        fake_nvml = os.path.join(args.build, "fakes", "nvml-full", "libnvidia-ml.so.1")
        fake_kubelet = os.path.join(args.build, "fakes", "bin", "fake_kubelet")
        fake_csi = os.path.join(args.build, "fakes", "bin", "fake_csi_driver")
        for b in (fake_nvml, fake_kubelet, fake_csi):
            if not os.access(b, os.R_OK):
                sys.exit("demo: %s is missing; run `make` first" % b)
        truth = {}  # node name -> its fakes' files
        for i, n in enumerate(nodes):
            name = n["metadata"]["name"]
            ids = dra_ids if name == dra_name else None  # NVML sees the DRA node's GPUs too
            root, reg = fake_host_root(work, n, "h%d" % i, None if ids is None else len(ids))
            # Every GPU node has its fake kubelet and NVML; only these two are sick.
            t = truth[name] = {"nvml": os.path.join(work, "nvml-%d.conf" % i),
                               "kubelet": os.path.join(work, "kubelet-%d.json" % i)}
            write_atomic(t["nvml"], nvml_config(n, sick=3 if name == sick else None, ids=ids))
            write_atomic(t["kubelet"], kubelet_config(n))
            if name == port_down:
                with open(os.path.join(root, "sys/class/infiniband/mlx5_2/ports/1/state"),
                          "w") as f:
                    f.write("1: DOWN\n")
            sock = os.path.join(root, "var/lib/kubelet/pod-resources/kubelet.sock")
            os.makedirs(os.path.dirname(sock))
            start([fake_kubelet, "--socket", sock, "--config", t["kubelet"]],
                  "kubelet-" + name, work)
            wait_for(lambda: os.path.exists(sock), 10, "the fake kubelet of " + name)
            agent_env = dict(env, TAU_AGENT_NVML=fake_nvml, TAU_FAKE_NVML_CONFIG=t["nvml"])
            extra = ["--node-conditions"]
            c = next(i for i in items if i["kind"] == "CSINode" and i["metadata"]["name"] == name)
            for d in c["spec"]["drivers"]:
                serve_csi_driver(fake_csi, root, reg, d["name"], "csi-%d" % i, work)
            token_file = os.path.join(work, "token-" + name)
            with open(token_file, "w") as f:
                f.write(agent_tokens[name])
            start([agent_bin, "--node-name", name, "--aggregator", grpc_addr, "--insecure",
                   "--kubeconfig", kubeconfig, "--host-root", root, "--token-file", token_file]
                  + extra, "agent-" + name, work, agent_env)
        print("%d agents started" % len(nodes))

        tau = [tau_bin, "--kubeconfig", kubeconfig, "inventory"]  # its token authorizes queries
        aggr = ["--aggregator", grpc_addr, "--insecure"]

        def pool():
            r = subprocess.run(tau + ["pool", "-o", "json"] + aggr, stdout=subprocess.PIPE,
                               stderr=subprocess.DEVNULL, universal_newlines=True)
            if r.returncode != 0:
                return None
            try:
                return json.loads(r.stdout)
            except ValueError:
                return None

        gpu_nodes = sorted(n["metadata"]["name"] for n in nodes)

        def node_rows():
            r = subprocess.run(tau + ["nodes", "-o", "json"] + aggr, stdout=subprocess.PIPE,
                               stderr=subprocess.DEVNULL, universal_newlines=True)
            try:
                return {row["name"]: row for row in json.loads(r.stdout)}
            except (ValueError, KeyError, TypeError):
                return None

        def agents_in(step):
            """Waits until every GPU node's agent is connected and the pool is established with
            no missing node; exits 1 naming each node that is not and its agent's last log line
            (at once when an agent's credentials were refused)."""
            deadline = time.monotonic() + AGENT_WAIT_S
            while True:
                for p, name in procs:
                    if p.poll() is not None:
                        sys.exit("demo: %s exited early (%s): %s" %
                                 (name, describe_exit(p.returncode), last_log_line(work, name)))
                rows, gate = node_rows() or {}, pool() or {}
                down = [n for n in gpu_nodes if not rows.get(n, {}).get("connected")]
                if not down and gate.get("established") and gate.get("missingCount") == 0:
                    return rows, gate
                hopeless = [n for n in down if refused(last_log_line(work, "agent-" + n))]
                if hopeless or time.monotonic() > deadline:
                    lines = ["demo: %s: the agent of %s is not connected (%s); its last log "
                             "line: %s" % (step, n, "refused" if n in hopeless else
                                           "not after %d s" % AGENT_WAIT_S,
                                           last_log_line(work, "agent-" + n))
                             for n in (hopeless or down)]
                    if not (hopeless or down):
                        lines = ["demo: %s: the pool is not established with every agent in "
                                 "after %d s (missingCount %s, missing %s)" %
                                 (step, AGENT_WAIT_S, gate.get("missingCount"),
                                  ", ".join(gate.get("missingNodes") or []) or "-")]
                    sys.exit("\n".join(lines))
                time.sleep(0.2)

        def check_agents(step):
            rows, gate = agents_in(step)
            checked(step, "all %d GPU nodes' agents connected, pool established, missingCount 0"
                    % len(gpu_nodes),
                    {"connected": sorted(n for n, r in rows.items() if r.get("connected")),
                     "missingCount": gate.get("missingCount"), "pool": gate})
            return gate

        step = "pool"
        check_agents(step)
        say("The pool, per GPU class (exact sums of every allocatable resource)")
        run(tau + ["pool"] + aggr)
        run(tau + ["nodes"] + aggr)
        dra_node(tau, aggr, kubeconfig, dra_name, pool)
        node_truth(tau, aggr, kubeconfig, http_addr, nodes, port_down, sick, truth)

        kubectl = ["kubectl", "--kubeconfig", kubeconfig]
        team = [tau_bin, "--kubeconfig", kubeconfig, "team"]
        ws = [tau_bin, "--kubeconfig", kubeconfig, "workspace"]

        def ok(cmd):
            return subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                  stdin=subprocess.DEVNULL).returncode == 0

        def gpu_budget(flavor):
            """(budget, pool) of nvidia.com/gpu for `flavor` from `tau team status -o json`;
            None while the team is not Ready or has no such row."""
            r = subprocess.run(team + ["status", TEAM, "-o", "json"], stdout=subprocess.PIPE,
                               stderr=subprocess.DEVNULL, universal_newlines=True)
            try:
                view = json.loads(r.stdout)
            except ValueError:
                return None
            for row in view.get("budget") or []:
                if (view.get("ready") and row.get("flavor") == flavor and
                        row.get("resource") == "nvidia.com/gpu"):
                    return row.get("budget"), row.get("pool")
            return None

        # The Cohort's nvidia.com/gpu nominalQuota per flavor, as kubectl reads it.
        cohort_gpus = kubectl + [
            "get", "cohort", COHORT, "-o",
            'jsonpath={range .spec.resourceGroups[0].flavors[*]}{.name}{"\\t"}'
            '{.resources[?(@.name=="nvidia.com/gpu")].nominalQuota}{"\\n"}{end}']

        say("Team capacity budget: a TauCluster in Reconcile mode makes team %s the capacity "
            "team; one workspace joins it" % TEAM)
        print("No ClusterQueue, Cohort or ResourceFlavor is made by hand: the aggregator writes "
              "them.", flush=True)
        # The umbrella chart with the pinned helm (scripts/install-tools): RBAC, the TauCluster
        # and the capacity team. Its Deployment and DaemonSet are created too but stay inert
        # (kube-sim runs no pods); the processes above play their part.
        if not os.access(HELM, os.X_OK):
            raise SystemExit("demo: %s is missing: run scripts/install-deps" % HELM)
        spec = TAU_CLUSTER["spec"]
        run([HELM, "--kubeconfig", kubeconfig, "install", "taugrid",
             os.path.join(ROOT, "charts", "taugrid"), "-n", "tau-system", "--create-namespace",
             "--set", "tauCluster.managementMode=" + spec["managementMode"],
             "--set", "tauCluster.queues.capacityTeamRef.name=" + TEAM,
             "--set", "teams[0].name=" + TEAM])
        run(kubectl + ["get", "clusters.tau.azure.com", "cluster", "-o", "yaml"])
        samples = os.path.join(ROOT, "charts", "taugrid", "samples")
        run(kubectl + ["apply", "-f", os.path.join(samples, "tauworkspace.yaml")])
        wait_for(lambda: ok(team + ["status", TEAM]), 60, "team %s to be Ready" % TEAM)
        wait_for(lambda: ok(ws + ["check", "alpha"]), 60, "workspace alpha to be Ready")
        run(ws + ["list"])
        run(ws + ["status", "alpha"])
        step = "workspace"
        checked(step, "team %s Ready (tau team status exits 0) and workspace alpha Ready "
                "(tau workspace check exits 0)" % TEAM, {"team": TEAM, "workspace": "alpha"})

        def cluster_condition(ctype):
            """The TauCluster's condition `ctype`, or None."""
            r = subprocess.run(kubectl + ["get", "clusters.tau.azure.com", "cluster", "-o",
                                          "json"], stdout=subprocess.PIPE,
                               stderr=subprocess.DEVNULL, universal_newlines=True)
            try:
                conds = json.loads(r.stdout)["status"]["conditions"]
            except (ValueError, KeyError):
                return None
            return next((c for c in conds if c.get("type") == ctype), None)

        def truth_condition():
            """The TauCluster's NodeTruthAgrees once it names both sick nodes, else None."""
            c = cluster_condition("NodeTruthAgrees")
            return c if (c and c["status"] == "False" and sick in c["message"] and
                         port_down in c["message"]) else None

        say("The TauCluster summarises the nodes whose own agent disagrees with what they "
            "advertise (condition NodeTruthAgrees); the budget still counts them")
        truth_cond = wait_for(truth_condition, 30, "TauCluster NodeTruthAgrees False naming %s "
                              "and %s" % (sick, port_down))
        run(kubectl + ["get", "clusters.tau.azure.com", "cluster", "-o",
                       'jsonpath={.status.conditions[?(@.type=="NodeTruthAgrees")].message}'])
        print(flush=True)
        checked("budget", "TauCluster NodeTruthAgrees False (%s): %s" %
                (truth_cond["reason"], truth_cond["message"]), {"nodeTruthAgrees": truth_cond})

        def cohort_quota():
            """{flavor: {resource: nominalQuota}} of the Cohort, as kubectl reads it."""
            r = subprocess.run(kubectl + ["get", "cohort", COHORT, "-o", "json"],
                               stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                               universal_newlines=True)
            try:
                spec = json.loads(r.stdout)["spec"]
            except (ValueError, KeyError):
                return None
            return {f["name"]: {q["name"]: q["nominalQuota"] for q in f.get("resources", [])}
                    for g in spec.get("resourceGroups") or [] for f in g.get("flavors") or []}

        def gpus_of(view, flavor):
            """nvidia.com/gpu of a flavor in a {flavor: {resource: quantity}} view."""
            return str((view.get(flavor) or {}).get("nvidia.com/gpu", "0"))

        def pool_gpus(gate):
            return {"taugrid-gpu-" + f["name"]: f["resources"] for f in gate.get("flavors", [])}

        def cohort_differs(gate):
            """Where the Cohort's nominalQuota differs from the pool, resource by resource and
            flavor by flavor (a resource the pool lacks must be 0); [] when it is the pool."""
            quota, want = cohort_quota(), pool_gpus(gate)
            if quota is None:
                return ["Cohort %s not readable" % COHORT]
            diff = []
            for f in sorted(set(want) | set(quota)):
                have, need = quota.get(f, {}), want.get(f, {})
                for r in sorted(set(have) | set(need)):
                    if str(have.get(r, "0")) != str(need.get(r, "0")):
                        diff.append("%s %s: Cohort %s, pool %s" %
                                    (f, r, have.get(r, "-"), need.get(r, "-")))
            return diff

        say("The team's budget: its root Cohort holds the exact pool, per GPU class")
        step = "budget"
        gate = check_agents(step)
        wait_for(lambda: not cohort_differs(gate), 30,
                 "Cohort %s to equal the pool (%s)" % (COHORT, "; ".join(cohort_differs(gate))))
        run(team + ["status", TEAM])
        run(kubectl + ["get", "resourceflavors,cohorts,clusterqueues"])
        run(kubectl + ["get", "cohort", COHORT, "-o", "yaml"])
        checked(step, "Cohort %s's nominalQuota equals the pool for every flavor and resource "
                "(nvidia.com/gpu: %s)" %
                (COHORT, ", ".join("%s=%s" % (f, gpus_of(pool_gpus(gate), f))
                                   for f in sorted(pool_gpus(gate)))),
                {"cohort": cohort_quota(), "pool": pool_gpus(gate)})
        dra_flavor = "taugrid-gpu-" + DRA_CLASS
        dra_cond = wait_for(lambda: (lambda c: c if c and c["status"] == "True" else None)(
            cluster_condition("DRAClassesUsable")), 30, "TauCluster DRAClassesUsable True")
        run(kubectl + ["get", "clusters.tau.azure.com", "cluster", "-o",
                       'jsonpath={.status.conditions[?(@.type=="DRAClassesUsable")].message}'])
        print(flush=True)
        checked(step, "the DRA-only node's GPUs are in Cohort %s: %s nvidia.com/gpu in %s; "
                "TauCluster DRAClassesUsable True (%s)" %
                (COHORT, gpus_of(cohort_quota(), dra_flavor), dra_flavor, dra_cond["message"]),
                {"draFlavor": dra_flavor, "draCohort": (cohort_quota() or {}).get(dra_flavor),
                 "draClassesUsable": dra_cond})

        cordoned = nodes[0]["metadata"]["name"]
        flavor = "taugrid-gpu-" + nodes[0]["metadata"]["labels"]["tau.azure.com/gpu-class"]
        say("Cordon one H100 node: it leaves the pool, and the Cohort shrinks with it")
        before = pool()
        gpus = wait_for(lambda: gpu_budget(flavor), 30, "the %s budget" % flavor)
        run(cohort_gpus)
        print("", flush=True)
        run(kubectl + ["cordon", cordoned])
        wait_for(lambda: pool() != before, 30, "the pool to change")
        run(tau + ["pool"] + aggr)
        run(tau + ["explain", cordoned] + aggr, check=False)
        # Shrunk: the Cohort's quota and the TauCluster's pool both moved, and they agree.
        wait_for(lambda: (lambda g: g and g != gpus and g[0] == g[1])(gpu_budget(flavor)), 30,
                 "the Cohort's %s nvidia.com/gpu to shrink with the pool" % flavor)
        run(cohort_gpus)
        print("", flush=True)
        run(team + ["status", TEAM])
        step = "cordon"
        after = check_agents(step)
        wait_for(lambda: not cohort_differs(after), 30,
                 "Cohort %s to equal the pool after the cordon (%s)" %
                 (COHORT, "; ".join(cohort_differs(after))))
        shrunk = cohort_quota()
        if int(gpus_of(shrunk, flavor)) >= int(gpus[0]):
            sys.exit("demo: cordon: Cohort %s still holds %s nvidia.com/gpu in %s (before: %s)"
                     % (COHORT, gpus_of(shrunk, flavor), flavor, gpus[0]))
        checked(step, "cordoning %s shrank Cohort %s's %s nvidia.com/gpu from %s to %s; the "
                "whole Cohort equals the pool; its agent still connected" %
                (cordoned, COHORT, flavor, gpus[0], gpus_of(shrunk, flavor)),
                {"node": cordoned, "flavor": flavor, "before": gpus[0],
                 "after": gpus_of(shrunk, flavor), "pool": pool_gpus(after),
                 "cohort": shrunk})
        completed = True
    finally:
        problems = stop_all(work)
        for p in problems:
            print("demo: %s" % p, file=sys.stderr, flush=True)
        # Keep the logs whenever something went wrong: they are what explains it.
        keep = args.keep or problems or not completed
        if not keep:
            shutil.rmtree(work, ignore_errors=True)
        elif not completed:
            print("demo: logs kept in %s" % work, file=sys.stderr, flush=True)
    if problems:
        sys.exit("demo: FAILED at shutdown (%d daemon(s) did not stop cleanly); logs kept in %s"
                 % (len(problems), work))
    checked("shutdown", "every daemon (kube-sim, the aggregator, %d agents) stopped on its "
            "signal with exit status 0" % len(tokens))
    if args.summary:
        with open(args.summary, "w") as f:
            json.dump({"checks": checks}, f, indent=1, sort_keys=True)
    print("\nDemo done: %d checks passed:" % len(checks))
    for c in checks:
        print("  [%s] %s" % (c["step"], c["check"]))
    if keep:
        print("Logs: %s" % work)


if __name__ == "__main__":
    main()
