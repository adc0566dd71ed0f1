"""Child processes and what the suites read about them.

    Proc(argv, name, workdir)   a child whose stdout lines are collected (wait_line) and whose
                                stderr goes to workdir/name.log
    free_port()                 a TCP port nothing listens on right now
    http_get(port, path)        (status, body) of a plain GET on 127.0.0.1
    proc_memory(pid), proc_stats(pid)   /proc/<pid>/status and stat figures
    make_workdir(prefix), remove_workdir(path)   a suite's temporary folder
"""
import os
import shutil
import socket
import subprocess
import tempfile
import threading
import urllib.error
import urllib.request

from harness.waits import wait_on


class Proc:
    """A child whose stdout lines are collected; stderr goes to a file."""

    def __init__(self, argv, name, workdir, env=None):
        self.log_path = os.path.join(workdir, name + ".log")
        self.log = open(self.log_path, "a")
        self.p = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=self.log, text=True,
                                  env=env, stdin=subprocess.DEVNULL)
        self.lines = []
        self.eof = False  # the child closed its stdout (it exited)
        self.cond = threading.Condition()
        self.pump = threading.Thread(target=self._pump, daemon=True)
        self.pump.start()

    def _pump(self):
        for line in self.p.stdout:
            with self.cond:
                self.lines.append(line.rstrip("\n"))
                self.cond.notify_all()
        with self.cond:
            self.eof = True
            self.cond.notify_all()

    def logs(self):
        with open(self.log_path) as f:
            return f.read()

    def wait_line(self, prefix, timeout=60):
        """The first stdout line starting with prefix (or, when prefix is a function, for which
        it is true); fails at the deadline or when the child exits without one, showing the end
        of its log. After stop(), it finds the lines the child wrote before it exited."""
        match = prefix if callable(prefix) else (lambda line: line.startswith(prefix))
        exited = []

        def find():
            for line in self.lines:
                if match(line):
                    return line
            if self.eof:
                exited.append(self.p.poll())
                return "exited"
            return None
        try:
            line = wait_on(self.cond, find, timeout, "a %r line" % (prefix,))
        except AssertionError as e:
            raise AssertionError("%s; log:\n%s" % (e, self.logs()[-3000:]))
        if exited:
            raise AssertionError("no %r line: exit code %s; log:\n%s"
                                 % (prefix, exited[0], self.logs()[-3000:]))
        return line

    def stop(self, timeout=30):
        if self.p.poll() is None:
            self.p.terminate()
        try:
            rc = self.p.wait(timeout)
        except subprocess.TimeoutExpired:
            self.p.kill()
            rc = self.p.wait()
        self.pump.join(5)  # every line the child wrote is collected
        self.log.close()
        self.p.stdout.close()
        return rc


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


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


def make_workdir(prefix):
    """A temporary folder for a suite's logs and files (its setUpModule)."""
    return tempfile.mkdtemp(prefix=prefix)


def remove_workdir(path):
    """Its tearDownModule: remove it, unless TAU_E2E_KEEP is set (to read the logs after)."""
    if path and not os.environ.get("TAU_E2E_KEEP"):
        shutil.rmtree(path, ignore_errors=True)
