"""One key case for every log line: snake_case (docs/aggregator.md and docs/agent.md, "Logs").

The daemons and the CLI log through tau_log (include/tau/log.h): a message, then key/value
pairs.  Every key written as a string literal in the C sources (tests and benches aside) must be
lower snake_case: most keys are (`grpc_port`, `system_namespace`, `retry_in_ms`), so a camelCase
key (`resourceVersion`) or another spelling of a key would make one field two in a log search.
The check reads the sources; it can fail (test_a_camel_key_is_found).
"""
import os
import re
import subprocess
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CALL = re.compile(r"\btau_log(?:_(?:debug|info|warn|error))?\s*\(")
KEY = re.compile(r"[a-z][a-z0-9]*(?:_[a-z0-9]+)*")


def call_args(text, start):
    """The top-level arguments of the call whose '(' ends at `start` (strings and nesting
    respected)."""
    args, cur, depth, i = [], [], 0, start
    while i < len(text):
        ch = text[i]
        if ch == '"':
            j = i + 1
            while j < len(text) and text[j] != '"':
                j += 2 if text[j] == "\\" else 1
            cur.append(text[i:j + 1])
            i = j + 1
            continue
        if ch in "([{":
            depth += 1
        elif ch in ")]}":
            if depth == 0:
                args.append("".join(cur).strip())
                return args
            depth -= 1
        elif ch == "," and depth == 0:
            args.append("".join(cur).strip())
            cur = []
            i += 1
            continue
        cur.append(ch)
        i += 1
    return args


def log_keys(text):
    """[(key, line)] of every literal key passed to tau_log* in C source `text`."""
    out = []
    for m in CALL.finditer(text):
        args = call_args(text, m.end())
        if args and args[0].startswith("TAU_LOG_"):
            args = args[1:]  # tau_log(level, msg, ...)
        for k in args[1::2]:
            lit = re.fullmatch(r'"([^"\\]*)"', re.sub(r"\s+", " ", k))
            if lit:
                out.append((lit.group(1), text.count("\n", 0, m.start()) + 1))
    return out


def sources():
    r = subprocess.run(["git", "ls-files", "--cached", "--others", "--exclude-standard", "*.c"],
                       cwd=ROOT, stdout=subprocess.PIPE, universal_newlines=True, check=True)
    return [p for p in r.stdout.split() if not p.startswith(("tests/", "bench/"))]


class LogKeysTest(unittest.TestCase):
    def test_every_key_is_snake_case(self):
        bad, seen = [], 0
        for path in sources():
            with open(os.path.join(ROOT, path)) as f:
                for key, line in log_keys(f.read()):
                    seen += 1
                    if not KEY.fullmatch(key):
                        bad.append("%s:%d: %s" % (path, line, key))
        self.assertGreater(seen, 200, "the scan found too few log keys to be reading them")
        self.assertEqual(bad, [], "log keys not in snake_case")

    def test_a_camel_key_is_found(self):
        text = ('static void f(void)\n{\n\ttau_log_info("x", "node", n,\n'
                '\t             "resourceVersion", rv, NULL);\n'
                '\ttau_log(TAU_LOG_WARN, "y, z", "retry_in_ms", ms, NULL);\n}\n')
        self.assertEqual(log_keys(text), [("node", 3), ("resourceVersion", 3),
                                          ("retry_in_ms", 5)])
        self.assertIsNone(KEY.fullmatch("resourceVersion"))
        self.assertIsNotNone(KEY.fullmatch("retry_in_ms"))


if __name__ == "__main__":
    unittest.main()
