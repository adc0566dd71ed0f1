"""Exit codes and error lines of every program, table-driven (docs/cli.md, docs/agent.md,
docs/aggregator.md): 0 success, 1 a failure at run time (the answer could not be obtained),
2 a usage, input or configuration error, each said in one line on stderr.

    TAU_CLI_BIN=build/tau TAU_AGGREGATOR_BIN=build/tau-aggregator \
    TAU_AGENT_BIN=build/tau-node-agent python3 ../e2e/run_suite.py test_errors  (in tests/e2e)

No kube-sim is needed: the API server and the aggregator are stood in for by a closed port
(connection refused) and by a listening socket that accepts connections and never answers.
Input errors must be refused before any request: their table runs against the silent socket
and asserts that nothing connected to it. TAU_TEST_TIME_SCALE (valgrind: make test-valgrind)
stretches the time bounds.
"""
import os
import socket
import subprocess
import tempfile
import threading
import time
import unittest

from harness import paths, require
from harness.procs import free_port

CLI_BIN = paths.CLI_BIN
AGG_BIN = paths.AGG_BIN
AGENT_BIN = paths.AGENT_BIN
SCALE = float(os.environ.get("TAU_TEST_TIME_SCALE", "1"))


def setUpModule():
    require.binary(CLI_BIN, "TAU_CLI_BIN")
    require.binary(AGG_BIN, "TAU_AGGREGATOR_BIN")
    require.binary(AGENT_BIN, "TAU_AGENT_BIN")


class Silent:
    """A TCP port that accepts every connection and never writes a byte."""

    def __init__(self):
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(64)
        self.port = self.sock.getsockname()[1]
        self.accepted = 0
        self.conns = []
        self.stopped = False
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self):
        while not self.stopped:
            try:
                c, _ = self.sock.accept()
            except OSError:
                return
            self.accepted += 1
            self.conns.append(c)

    def close(self):
        self.stopped = True
        self.sock.close()
        for c in self.conns:
            c.close()


KUBECONFIG = """apiVersion: v1
kind: Config
clusters:
- name: c
  cluster: {server: "http://127.0.0.1:%d"}
users:
- name: u
  user: %s
contexts:
- name: x
  context: {cluster: c, user: u}
current-context: x
"""


class Env:
    """Kubeconfigs and files shared by the tables."""

    def __init__(self):
        self.dir = tempfile.mkdtemp(prefix="tau-errors-")
        self.silent = Silent()
        self.closed = free_port()  # nothing listens on it
        self.silent_kc = self.write("silent.yaml", KUBECONFIG % (self.silent.port, "{token: abc}"))
        self.closed_kc = self.write("closed.yaml", KUBECONFIG % (self.closed, "{token: abc}"))
        self.malformed_kc = self.write("malformed.yaml", "clusters: [\n")
        self.exec_kc = self.write("exec.yaml", KUBECONFIG % (
            self.silent.port,
            "{exec: {apiVersion: client.authentication.k8s.io/v1, command: kubelogin}}"))
        self.not_pem = self.write("not-pem.txt", "this is no certificate\n")
        self.missing = os.path.join(self.dir, "does-not-exist")

    def write(self, name, text):
        path = os.path.join(self.dir, name)
        with open(path, "w") as f:
            f.write(text)
        return path

    def close(self):
        self.silent.close()


def run(argv, timeout=60, env=None):
    e = {k: v for k, v in os.environ.items()
         if k not in ("KUBECONFIG", "TAU_AGGREGATOR", "NODE_NAME", "TAU_INSECURE")}
    e["HOME"] = "/nonexistent"  # never a developer's ~/.kube/config
    e["TAU_AGENT_NVML"] = "off"
    e.update(env or {})
    start = time.monotonic()
    r = subprocess.run(argv, capture_output=True, text=True, timeout=timeout * SCALE, env=e)
    return r, time.monotonic() - start


def error_lines(stderr):
    """stderr without valgrind's own lines (they go to a log file, but be safe)."""
    return [ln for ln in stderr.splitlines() if ln.strip() and not ln.startswith("==")]


class ErrorCase(unittest.TestCase):
    env = None

    @classmethod
    def setUpClass(cls):
        cls.env = Env()

    @classmethod
    def tearDownClass(cls):
        cls.env.close()

    def check(self, argv, code, text, one_line=True, timeout=60, env=None):
        """Run argv; its exit code is `code` and its first error line holds `text`; with
        one_line nothing else is printed (else, usage text may follow)."""
        r, took = run(argv, timeout=timeout, env=env)
        self.assertEqual(r.returncode, code, (argv, r.stderr))
        lines = error_lines(r.stderr)
        if text:
            self.assertIn(text, r.stderr, argv)
        if one_line:
            self.assertEqual(len(lines), 1, (argv, r.stderr))
        # Never gRPC's core log (E1203 12:00:00.000 ... chttp2_server.cc:...]).
        self.assertFalse(any(".cc:" in ln and "]" in ln for ln in lines), (argv, r.stderr))
        return r, took


class Tau(ErrorCase):
    """tau: docs/cli.md."""

    def tau(self, *args):
        return [CLI_BIN] + list(args)

    def test_exit_0(self):
        for args in (["--help"], ["--version"], ["workspace", "--help"],
                     ["inventory", "--help"], ["completion", "bash"]):
            r, _ = run(self.tau(*args))
            self.assertEqual(r.returncode, 0, (args, r.stderr))

    def test_usage_and_input_errors_exit_2_before_any_request(self):
        e = self.env
        before = e.silent.accepted
        kc = ["--kubeconfig", e.silent_kc]
        # (arguments, text on stderr, nothing but that one line); usage errors may add the
        # command's usage after their line.
        table = [
            ([], "Usage", False),
            (["bogus"], "unknown command \"bogus\"", True),
            (["--bogus", "workspace", "list"], "Usage", False),
            (kc + ["--request-timeout", "soon", "workspace", "list"],
             "tau: --request-timeout soon: not a duration", True),
            (kc + ["--request-timeout", "-1s", "workspace", "list"],
             "--request-timeout -1s: must not be negative", True),
            (kc + ["workspace", "list", "--request-timeout", "25h"],
             "--request-timeout 25h: out of range", True),
            (kc + ["inventory", "pool", "--request-timeout", "1e9"], "--request-timeout 1e9",
             True),
            (kc + ["storage", "check", "--driver", "d", "--request-timeout", "soon"],
             "--request-timeout soon", True),
            (kc + ["cluster", "status", "--request-timeout", "soon"], "--request-timeout soon",
             True),
            (kc + ["workspace", "create", "a", "--request-timeout", "soon"],
             "--request-timeout soon", True),
            (kc + ["workspace", "delete", "a", "--request-timeout", "soon"],
             "--request-timeout soon", True),
            (kc + ["workspace", "status", "Bad_Name"], "invalid workspace name: \"Bad_Name\"",
             True),
            (kc + ["workspace", "check", "UPPER"], "invalid workspace name", True),
            (kc + ["workspace", "delete", "x..y"], "invalid workspace name", True),
            (kc + ["workspace", "create", "no_underscores"], "invalid workspace name", True),
            (kc + ["team", "status", "Bad_Name"], "invalid team name", True),
            (kc + ["team", "list", "--request-timeout", "soon"], "--request-timeout soon", True),
            (kc + ["workspace", "list", "-o", "xml"],
             "tau workspace: -o must be table, json or yaml, not \"xml\"", True),
            (kc + ["storage", "check", "--driver", "d", "-o", "xml"],
             "tau storage: -o must be table, json or yaml", True),
            # One table of the options every command takes: one message for what is not in it
            # (and the command's usage after it).
            (kc + ["inventory", "pool", "--bogus"],
             "tau inventory: unknown option or missing value: --bogus", False),
            (kc + ["storage", "check", "--driver", "d", "--context"],
             "tau storage: unknown option or missing value: --context", False),
            (kc + ["workspace", "list", "--kubeconfig"],
             "tau workspace: unknown option or missing value: --kubeconfig", False),
            (kc + ["workspace", "frobnicate"], "unknown command frobnicate", False),
            (kc + ["inventory", "pool", "--aggregator", ""],
             "tau inventory: --aggregator is empty", True),
            # The aggregator options: one check, one set of messages, for every command.
            (kc + ["storage", "check", "--driver", "d", "--aggregator", ""],
             "tau storage check: --aggregator is empty", True),
            (kc + ["workspace", "check", "alpha", "--data-pvc", "p", "--aggregator", ""],
             "tau workspace check: --aggregator is empty", True),
            (kc + ["team", "status", "research", "--aggregator", ""],
             "tau team status: --aggregator is empty", True),
            (kc + ["inventory", "pool", "--ca-file", e.not_pem, "--insecure"],
             "tau inventory: --ca-file and --insecure exclude each other", True),
            (kc + ["storage", "check", "--driver", "d", "--ca-file", e.not_pem, "--insecure"],
             "tau storage check: --ca-file and --insecure exclude each other", True),
            (kc + ["workspace", "check", "alpha", "--data-pvc", "p", "--aggregator", "a:1",
                   "--ca-file", e.not_pem, "--insecure"],
             "tau workspace check: --ca-file and --insecure exclude each other", True),
            (kc + ["team", "status", "research", "--ca-file", e.not_pem, "--insecure"],
             "tau team status: --ca-file and --insecure exclude each other", True),
            (kc + ["inventory", "pool", "-o", "xml"], "-o must be table, json or yaml", True),
            (kc + ["inventory", "pool", "--aggregator", "127.0.0.1:%d" % e.silent.port,
                   "--ca-file", e.not_pem], "no PEM certificate", True),
            (kc + ["inventory", "pool", "--aggregator", "127.0.0.1:%d" % e.silent.port,
                   "--ca-file", e.missing], "cannot read", True),
            (kc + ["--token", "", "inventory", "pool", "--aggregator",
                   "127.0.0.1:%d" % e.silent.port], "--token is empty", True),
            (["--kubeconfig", e.missing, "workspace", "list"], "cannot read kubeconfig", True),
            (["--kubeconfig", e.malformed_kc, "workspace", "list"], "kubeconfig", True),
            (["--kubeconfig", e.exec_kc, "workspace", "list"], "exec", True),
            (kc + ["--context", "nope", "team", "list"], "context \"nope\" does not exist",
             True),
        ]
        for args, text, one_line in table:
            with self.subTest(args=args):
                self.check(self.tau(*args), 2, text, one_line=one_line, timeout=30)
        self.assertEqual(e.silent.accepted, before, "an input error sent a request")

    def test_closed_api_port_fails_fast(self):
        for args in (["workspace", "list"], ["workspace", "status", "alpha"], ["team", "list"],
                     ["storage", "check", "--driver", "d"]):
            with self.subTest(args=args):
                _, took = self.check(self.tau("--kubeconfig", self.env.closed_kc, *args), 1,
                                     "Couldn't connect", timeout=30)
                # One attempt, no retries (it took about a minute of retries before).
                self.assertLess(took, 10 * SCALE, args)

    def test_request_timeout_bounds_an_api_that_never_answers(self):
        kc = ["--kubeconfig", self.env.silent_kc]
        for args in (["--request-timeout", "1s", "workspace", "list"],
                     ["workspace", "list", "--request-timeout", "1s"],
                     ["--request-timeout", "1s", "team", "list"],
                     ["team", "status", "research", "--request-timeout", "1s"],
                     ["workspace", "status", "alpha", "--request-timeout", "1s"],
                     ["storage", "check", "--driver", "d", "--request-timeout", "1"]):
            with self.subTest(args=args):
                _, took = self.check(self.tau(*(kc + args)), 1, "timed out", timeout=60)
                # At most two requests (the TauCluster, then the object), 1 s each.
                self.assertLess(took, 10 * SCALE, args)

    def test_request_timeout_bounds_an_aggregator_that_never_answers(self):
        addr = "127.0.0.1:%d" % self.env.silent.port
        for args in (["inventory", "pool", "--aggregator", addr, "--request-timeout", "1s"],
                     ["--request-timeout", "1s", "inventory", "nodes", "--aggregator", addr]):
            with self.subTest(args=args):
                _, took = self.check(self.tau("--token", "t", *args), 1, "aggregator " + addr,
                                     timeout=60)
                self.assertLess(took, 10 * SCALE, args)

    def test_closed_aggregator_port_fails_fast(self):
        _, took = self.check(self.tau("--token", "t", "inventory", "pool", "--aggregator",
                                      "127.0.0.1:%d" % self.env.closed), 1, "UNAVAILABLE",
                             timeout=30)
        self.assertLess(took, 10 * SCALE)


class Aggregator(ErrorCase):
    """tau-aggregator: docs/aggregator.md."""

    def agg(self, *args, kc=None):
        return [AGG_BIN, "--kubeconfig", kc or self.env.silent_kc] + list(args)

    def test_exit_0(self):
        for args in (["--help"], ["--version"]):
            r, _ = run([AGG_BIN] + args)
            self.assertEqual(r.returncode, 0, (args, r.stderr))

    def test_configuration_errors_exit_2_in_one_line(self):
        e = self.env
        before = e.silent.accepted
        listen = ["--grpc-listen", "127.0.0.1:0", "--http-listen", "127.0.0.1:0"]
        table = [
            (self.agg("--bogus", *listen), "unknown option"),
            (self.agg("--grpc-listen", "127.0.0.1:0"), "--http-listen"),
            (self.agg(*listen, kc=e.malformed_kc), "kubeconfig"),
            (self.agg(*listen, kc=e.exec_kc), "exec"),
            (self.agg(*listen, kc=e.missing), "cannot read kubeconfig"),
            (self.agg("--context", "nope", *listen), "nope"),
            (self.agg("--grpc-listen", "x:y:z", "--http-listen", "127.0.0.1:0"),
             "--grpc-listen"),
            (self.agg("--grpc-listen", "127.0.0.1:99999", "--http-listen", "127.0.0.1:0"),
             "--grpc-listen"),
            # An address no interface has: bind fails before gRPC's core sees it.
            (self.agg("--grpc-listen", "192.0.2.1:5000", "--http-listen", "127.0.0.1:0"),
             "--grpc-listen 192.0.2.1:5000: cannot bind"),
            (self.agg("--grpc-listen", "127.0.0.1:0", "--http-listen", "192.0.2.1:5000"),
             "--http-listen 192.0.2.1:5000: cannot bind"),
            (self.agg(*listen, "--tls-cert", e.not_pem, "--tls-key", e.not_pem),
             "no PEM certificate"),
            (self.agg(*listen, "--tls-cert", e.missing, "--tls-key", e.not_pem),
             "cannot read --tls-cert"),
            (self.agg(*listen, "--heartbeat-interval", "1e300"), "1e300"),
        ]
        for argv, text in table:
            with self.subTest(argv=argv[1:]):
                self.check(argv, 2, text, timeout=30)
        self.assertEqual(e.silent.accepted, before, "a configuration error reached the API")


class Agent(ErrorCase):
    """tau-node-agent: docs/agent.md (the --once and flag errors are in test_agent)."""

    def agent(self, *args, kc=None):
        return [AGENT_BIN, "--node-name", "n", "--kubeconfig", kc or self.env.silent_kc,
                "--host-root", self.env.dir] + list(args)

    def test_configuration_errors_exit_2(self):
        e = self.env
        agg = "127.0.0.1:%d" % e.closed
        table = [
            # Refused by the flag parser: one line and a hint.
            (self.agent("--aggregator", "", "--insecure"), "--aggregator (TAU_AGGREGATOR) is empty",
             False),
            (self.agent("--aggregator", "127.0.0.1", "--insecure"), "HOST:PORT", False),
            (self.agent("--aggregator", agg, "--insecure", "--http-listen", "x:y:z"),
             "--http-listen", False),
            # Refused at start: one log line naming the file.
            (self.agent("--aggregator", agg, "--insecure", kc=e.malformed_kc), "kubeconfig",
             False),
            (self.agent("--aggregator", agg, "--insecure", kc=e.exec_kc), "exec", False),
            (self.agent("--aggregator", agg, "--insecure", kc=e.missing),
             "cannot read kubeconfig", False),
            (self.agent("--aggregator", agg, "--ca-file", e.not_pem),
             "--ca-file %s: no PEM certificate" % e.not_pem, False),
            (self.agent("--aggregator", agg, "--ca-file", e.missing), "cannot read --ca-file",
             False),
            (self.agent("--once", kc=e.malformed_kc), "kubeconfig", False),
            (self.agent("--once", "--request-timeout", "soon"), "--request-timeout", False),
        ]
        for argv, text, one_line in table:
            with self.subTest(argv=argv[1:]):
                r, _ = self.check(argv, 2, text, one_line=one_line, timeout=30)
                errors = [ln for ln in error_lines(r.stderr)
                          if "level=error" in ln or ln.startswith("tau-node-agent:")]
                self.assertEqual(len(errors), 1, (argv, r.stderr))

    def test_once_closed_api_port_fails_fast(self):
        _, took = self.check(self.agent("--once", kc=self.env.closed_kc), 1, None,
                             one_line=False, timeout=60)
        self.assertLess(took, 15 * SCALE)


if __name__ == "__main__":
    unittest.main()
