"""Test helpers: start kube-sim as a process, talk to it over HTTP, run kubectl.

    with SimProcess(extra_args) as sim:
        sim.kubectl("get", "nodes")
        code, obj = sim.req("GET", "/api/v1/nodes")
"""
import http.client
import json
import os
import shutil
import ssl
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
KUBE_SIM = os.path.join(HERE, "kube-sim")
KUBECTL = os.environ.get("KUBECTL", shutil.which("kubectl") or "/usr/bin/kubectl")


def wait_for(pred, timeout=30.0, interval=0.05, msg="condition"):
    """Poll pred() until it returns a truthy value or the deadline passes."""
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        last = pred()
        if last:
            return last
        time.sleep(interval)
    raise AssertionError("timed out after %.0fs waiting for %s (last: %r)" % (timeout, msg, last))


class SimProcess:
    def __init__(self, args=(), tls=False, start_timeout=60.0):
        self.tmp = tempfile.mkdtemp(prefix="kube-sim-test-")
        self.kubeconfig = os.path.join(self.tmp, "kubeconfig")
        self.home = os.path.join(self.tmp, "home")
        os.makedirs(self.home)
        cmd = [sys.executable, KUBE_SIM, "--listen", "127.0.0.1:0",
               "--kubeconfig-out", self.kubeconfig] + list(args)
        if tls:
            cmd.append("--tls")
        self.tls = tls
        self.stderr_path = os.path.join(self.tmp, "stderr.log")
        self._stderr = open(self.stderr_path, "w")
        self.proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=self._stderr,
                                     stdin=subprocess.DEVNULL)
        line = self._read_ready(start_timeout)
        if not line.startswith("ready "):
            self.stop()
            raise RuntimeError("kube-sim did not start: %r\n%s" % (line, self.stderr()))
        self.port = int(line.split()[1])
        with open(self.kubeconfig) as f:
            cfg = json.load(f)
        self.token = cfg["users"][0]["user"]["token"]
        self.server = cfg["clusters"][0]["cluster"]["server"]
        self.ssl_ctx = None
        if tls:
            self.ssl_ctx = ssl.create_default_context(cafile=self.kubeconfig + ".ca.crt")

    def _read_ready(self, timeout):
        # readline blocks; the child prints exactly one line when ready or exits.
        import threading
        result = []
        t = threading.Thread(target=lambda: result.append(self.proc.stdout.readline().decode()))
        t.daemon = True
        t.start()
        t.join(timeout)
        return result[0].strip() if result else ""

    def stderr(self):
        try:
            with open(self.stderr_path) as f:
                return f.read()
        except OSError:
            return ""

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self._stderr.close()
        if self.proc.stdout:
            self.proc.stdout.close()
        shutil.rmtree(self.tmp, ignore_errors=True)

    def __enter__(self):
        return self

    def __exit__(self, *a):
        self.stop()

    # -- HTTP --------------------------------------------------------------------
    def conn(self, timeout=60):
        if self.tls:
            return http.client.HTTPSConnection("127.0.0.1", self.port, timeout=timeout,
                                               context=self.ssl_ctx)
        return http.client.HTTPConnection("127.0.0.1", self.port, timeout=timeout)

    def req(self, method, path, body=None, ctype="application/json", token=True, headers=None,
            raw=False):
        """Returns (status, parsed JSON or text[, response headers if raw])."""
        c = self.conn()
        h = {"Accept": "application/json"}
        if token is True:
            h["Authorization"] = "Bearer " + self.token
        elif token:
            h["Authorization"] = "Bearer " + token
        if body is not None:
            if not isinstance(body, (bytes, str)):
                body = json.dumps(body)
            h["Content-Type"] = ctype
        h.update(headers or {})
        c.request(method, path, body=body, headers=h)
        r = c.getresponse()
        data = r.read()
        c.close()
        try:
            obj = json.loads(data) if data else None
        except ValueError:
            obj = data.decode(errors="replace")
        if raw:
            return r.status, obj, dict(r.getheaders())
        return r.status, obj

    def ok(self, method, path, body=None, ctype="application/json", expect=(200, 201)):
        st, obj = self.req(method, path, body, ctype)
        if st not in expect:
            raise AssertionError("%s %s -> %s %r" % (method, path, st, obj))
        return obj

    # -- kubectl -------------------------------------------------------------------
    def kenv(self):
        env = dict(os.environ)
        env["KUBECONFIG"] = self.kubeconfig
        env["HOME"] = self.home
        env.pop("KUBECTL_KUBERC", None)
        return env

    def kubectl(self, *args, input=None, check=True, timeout=120):
        r = subprocess.run([KUBECTL] + list(args), input=input, env=self.kenv(),
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=timeout,
                           universal_newlines=True)
        if check and r.returncode != 0:
            raise AssertionError("kubectl %s failed (%d):\n%s\n%s" % (
                " ".join(args), r.returncode, r.stdout, r.stderr))
        return r

    def kubectl_popen(self, *args):
        return subprocess.Popen([KUBECTL] + list(args), env=self.kenv(), stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, universal_newlines=True)


class WatchStream:
    """A raw watch over http.client; events() yields decoded events."""

    def __init__(self, sim, path, timeout=60, token=True):
        self.c = sim.conn(timeout=timeout)
        h = {"Accept": "application/json"}
        if token:
            h["Authorization"] = "Bearer " + (sim.token if token is True else token)
        self.c.request("GET", path, headers=h)
        self.r = self.c.getresponse()
        self.status = self.r.status
        self.buf = b""

    def next(self):
        """Next event dict, or None at end of stream."""
        while b"\n" not in self.buf:
            chunk = self.r.read1(65536) if hasattr(self.r, "read1") else self.r.read(1)
            if not chunk:
                return None
            self.buf += chunk
        line, self.buf = self.buf.split(b"\n", 1)
        return json.loads(line)

    def until(self, pred, limit=10000):
        for _ in range(limit):
            ev = self.next()
            if ev is None:
                raise AssertionError("watch ended before the expected event")
            if pred(ev):
                return ev
        raise AssertionError("expected event not seen")

    def close(self):
        try:
            self.c.close()
        except Exception:
            pass
