"""kube-sim's link to its CEL engine (tests/kube-sim/cel/engine.js, @bufbuild/cel on node).

Design note
-----------
CEL is not in Python's standard library and Debian packages no CEL implementation, so the
rules of a CRD's ``x-kubernetes-validations`` are compiled and evaluated by one long-lived
``node`` child that speaks JSON lines (the protocol is at the top of engine.js). The child is
started on first use, so a kube-sim that serves no CRD with rules never starts it.

The one idea: the runtime is required, never optional. ``check_runtime()`` runs at kube-sim's
start and fails with the command that installs the runtime when node or the pinned
@bufbuild/cel is missing; there is no fallback that skips rules.

The runtime is looked up in ``$KUBESIM_CEL_RUNTIME`` (a folder with ``node_modules``), else
``$TAU_TOOLS_DIR/cel``, else ``<repo>/.tools/cel``, where ``scripts/install-tools`` puts it.
"""

import json
import os
import shutil
import subprocess
import threading

__all__ = ["RuntimeMissing", "EngineError", "check_runtime", "engine"]

_HERE = os.path.dirname(os.path.abspath(__file__))
_ENGINE_JS = os.path.join(os.path.dirname(_HERE), "cel", "engine.js")
_REPO = os.path.dirname(os.path.dirname(os.path.dirname(_HERE)))
_PINNED = os.path.join(os.path.dirname(_HERE), "cel", "package.json")


class RuntimeMissing(Exception):
    """node or the pinned CEL package is not installed."""


class EngineError(Exception):
    """The engine process failed or answered something that is not its protocol."""


def _runtime_dir():
    env = os.environ.get("KUBESIM_CEL_RUNTIME")
    if env:
        return env
    tools = os.environ.get("TAU_TOOLS_DIR") or os.path.join(_REPO, ".tools")
    return os.path.join(tools, "cel")


def _pinned_version():
    with open(_PINNED, encoding="utf-8") as f:
        return json.load(f)["dependencies"]["@bufbuild/cel"]


def check_runtime():
    """Return (node, node_modules) or raise RuntimeMissing saying what to install."""
    node = shutil.which("node")
    if not node:
        raise RuntimeMissing("kube-sim needs node (Debian package nodejs) to evaluate CRD "
                             "validation rules; run scripts/install-deps")
    modules = os.path.join(_runtime_dir(), "node_modules")
    pkg = os.path.join(modules, "@bufbuild", "cel", "package.json")
    want = _pinned_version()
    try:
        with open(pkg, encoding="utf-8") as f:
            have = json.load(f).get("version")
    except (OSError, ValueError):
        raise RuntimeMissing("kube-sim's CEL runtime (@bufbuild/cel %s) is not installed in %s; "
                             "run scripts/install-tools" % (want, modules)) from None
    if have != want:
        raise RuntimeMissing("kube-sim's CEL runtime in %s is @bufbuild/cel %s, %s is pinned; run "
                             "scripts/install-tools" % (modules, have, want))
    return node, modules


class Engine:
    """One engine child, shared by every request thread (one request at a time)."""

    def __init__(self):
        self._lock = threading.Lock()
        self._proc = None
        self._next = 0

    def _start(self):
        node, modules = check_runtime()
        env = dict(os.environ, NODE_PATH=modules)
        self._proc = subprocess.Popen([node, _ENGINE_JS], stdin=subprocess.PIPE,
                                      stdout=subprocess.PIPE, env=env, text=True,
                                      encoding="utf-8", bufsize=1, close_fds=True)

    def _call(self, req):
        with self._lock:
            if self._proc is None or self._proc.poll() is not None:
                self._start()
            self._next += 1
            req["id"] = self._next
            try:
                self._proc.stdin.write(json.dumps(req, separators=(",", ":")) + "\n")
                self._proc.stdin.flush()
                line = self._proc.stdout.readline()
            except OSError as e:
                raise EngineError("CEL engine: %s" % e) from None
            if not line:
                rc = self._proc.wait()
                self._proc = None
                raise EngineError("CEL engine exited (status %s)" % rc)
            reply = json.loads(line)
            if reply.get("fatal") or reply.get("id") != req["id"]:
                raise EngineError("CEL engine: %s" % (reply.get("fatal") or "answer out of step"))
            return reply

    def start(self):
        """Start the child now (it loads while kube-sim reads its CRDs); idempotent."""
        with self._lock:
            if self._proc is None or self._proc.poll() is not None:
                self._start()

    def compile(self, schemas, rules):
        """schemas: schema nodes; rules: [{"rule", "messageExpression"?, "schema": index into
        schemas, "root"}] -> one result each."""
        return self._call({"op": "compile", "schemas": schemas, "rules": rules})["results"]

    def evaluate(self, tasks):
        """tasks: [{"key", "self", "oldSelf"?}] -> one result each."""
        if not tasks:
            return []
        return self._call({"op": "eval", "tasks": tasks})["results"]

    def parse(self, expressions):
        """expressions: CEL source texts -> [{"ok": true} | {"error": text}] (syntax only)."""
        if not expressions:
            return []
        return self._call({"op": "parse", "expressions": list(expressions)})["results"]

    def version(self):
        return self._call({"op": "ping"})["version"]


_ENGINE = Engine()


def engine():
    return _ENGINE
