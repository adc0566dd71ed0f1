"""Label and field selectors (query-string forms)."""
import re

from . import util

_KEY_CHARS = re.compile(r"[A-Za-z0-9_./\-]")


class SelectorError(ValueError):
    pass


class LabelSelector:
    """Parsed labelSelector. match(labels_dict) -> bool."""

    def __init__(self, text):
        self.reqs = _parse_labels(text or "")

    def empty(self):
        return not self.reqs

    def match(self, labels):
        labels = labels or {}
        for key, op, vals in self.reqs:
            has = key in labels
            v = labels.get(key)
            if op in ("=", "=="):
                if not has or v != vals[0]:
                    return False
            elif op == "!=":
                if has and v == vals[0]:
                    return False
            elif op == "in":
                if not has or v not in vals:
                    return False
            elif op == "notin":
                if has and v in vals:
                    return False
            elif op == "exists":
                if not has:
                    return False
            elif op == "!":
                if has:
                    return False
            elif op in (">", "<"):
                if not has:
                    return False
                try:
                    iv = int(v)
                except (TypeError, ValueError):
                    return False
                if op == ">" and not iv > vals[0]:
                    return False
                if op == "<" and not iv < vals[0]:
                    return False
        return True


def _parse_labels(text):
    s = text
    pos = 0
    n = len(s)
    reqs = []

    def ws():
        nonlocal pos
        while pos < n and s[pos] in " \t":
            pos += 1

    def ident():
        nonlocal pos
        start = pos
        while pos < n and _KEY_CHARS.match(s[pos]):
            pos += 1
        return s[start:pos]

    while True:
        ws()
        if pos >= n:
            break
        if s[pos] == "!":
            pos += 1
            ws()
            k = ident()
            _check_key(k)
            reqs.append((k, "!", []))
        else:
            k = ident()
            if not k:
                raise SelectorError("unable to parse requirement: found '%s', expected: identifier" % s[pos:pos + 1])
            _check_key(k)
            ws()
            if pos >= n or s[pos] == ",":
                reqs.append((k, "exists", []))
            elif s.startswith("==", pos) or s.startswith("!=", pos):
                op = s[pos:pos + 2]
                pos += 2
                ws()
                v = ident()
                _check_value(v)
                reqs.append((k, op, [v]))
            elif s[pos] == "=":
                pos += 1
                ws()
                v = ident()
                _check_value(v)
                reqs.append((k, "=", [v]))
            elif s[pos] in "<>":
                op = s[pos]
                pos += 1
                ws()
                v = ident()
                try:
                    iv = int(v)
                except ValueError:
                    raise SelectorError("unable to parse requirement: for 'Gt', 'Lt' operators, the value must be an integer")
                reqs.append((k, op, [iv]))
            else:
                word = ident()
                if word not in ("in", "notin"):
                    raise SelectorError("unable to parse requirement: found '%s', expected: in, notin, =, ==, !=, gt, lt" % word)
                ws()
                if pos >= n or s[pos] != "(":
                    raise SelectorError("unable to parse requirement: found '%s', expected: '('" % s[pos:pos + 1])
                pos += 1
                vals = []
                while True:
                    ws()
                    v = ident()
                    _check_value(v)
                    vals.append(v)
                    ws()
                    if pos < n and s[pos] == ",":
                        pos += 1
                        continue
                    if pos < n and s[pos] == ")":
                        pos += 1
                        break
                    raise SelectorError("unable to parse requirement: found '%s', expected: ',', ')' or identifier" % s[pos:pos + 1])
                if vals == [""]:
                    vals = []
                reqs.append((k, word, vals))
        ws()
        if pos < n:
            if s[pos] != ",":
                raise SelectorError("unable to parse requirement: found '%s', expected: ','" % s[pos:pos + 1])
            pos += 1
    return reqs


def _check_key(k):
    errs = util.check_qualified_name(k)
    if errs:
        raise SelectorError("unable to parse requirement: key: Invalid value: %s: %s"
                            % (util.go_quote(k), "; ".join(errs)))


def _check_value(v):
    errs = util.check_label_value(v)
    if errs:
        raise SelectorError("unable to parse requirement: values[0][%s]: Invalid value: %s: %s"
                            % ("", util.go_quote(v), "; ".join(errs)))


class FieldSelector:
    """Parsed fieldSelector: list of (field, op, value)."""

    def __init__(self, text):
        self.reqs = []
        text = text or ""
        if not text.strip():
            return
        for part in _split_unescaped(text, ","):
            part = part.strip()
            if not part:
                continue
            m = None
            for op in ("!=", "==", "="):
                idx = _find_unescaped(part, op)
                if idx >= 0:
                    m = (part[:idx].strip(), op, _unescape(part[idx + len(op):].strip()))
                    break
            if not m:
                raise SelectorError("invalid selector: '%s'; can't understand '%s'" % (text, part))
            f, op, v = m
            self.reqs.append((f, "=" if op == "==" else op, v))

    def empty(self):
        return not self.reqs

    def fields(self):
        return [r[0] for r in self.reqs]

    def get_exact(self, field):
        for f, op, v in self.reqs:
            if f == field and op == "=":
                return v
        return None

    def match(self, values):
        """values: dict field -> string value."""
        for f, op, v in self.reqs:
            actual = values.get(f, "")
            if op == "=" and actual != v:
                return False
            if op == "!=" and actual == v:
                return False
        return True


def _find_unescaped(s, sub):
    i = 0
    while i < len(s):
        if s[i] == "\\":
            i += 2
            continue
        if s.startswith(sub, i):
            if sub == "=" and i > 0 and s[i - 1] == "!":
                i += 1
                continue
            return i
        i += 1
    return -1


def _split_unescaped(s, sep):
    out = []
    cur = ""
    i = 0
    while i < len(s):
        if s[i] == "\\" and i + 1 < len(s):
            cur += s[i:i + 2]
            i += 2
            continue
        if s[i] == sep:
            out.append(cur)
            cur = ""
        else:
            cur += s[i]
        i += 1
    out.append(cur)
    return out


def _unescape(v):
    out = ""
    i = 0
    while i < len(v):
        if v[i] == "\\" and i + 1 < len(v):
            out += v[i + 1]
            i += 2
            continue
        out += v[i]
        i += 1
    return out


def field_value(obj, path):
    """String value of a dotted field path, the way field selectors see it."""
    cur = obj
    for p in path.split("."):
        if not isinstance(cur, dict):
            return ""
        cur = cur.get(p)
        if cur is None:
            return ""
    if isinstance(cur, bool):
        return "true" if cur else "false"
    if isinstance(cur, list):
        # status.podIPs: match any entry's ip (approximation)
        return ",".join(str(x.get("ip", "")) if isinstance(x, dict) else str(x) for x in cur)
    if isinstance(cur, dict):
        return ""
    return str(cur)
