"""A small JSONPath subset, as used by CRD additionalPrinterColumns:
.a.b, .a[0], .a[-1], .a[*].b, .a[?(@.type=="Ready")].status, ['key.with.dots'],
optionally wrapped in {...}."""
import re


class JsonPathError(ValueError):
    pass


_TOKEN = re.compile(r"""
    \.\.?(?P<field>[A-Za-z0-9_\-$/]+|\*)? |
    \[(?P<bracket>[^\]]*)\]
""", re.X)


class JsonPath:
    def __init__(self, expr):
        e = expr.strip()
        if e.startswith("{") and e.endswith("}"):
            e = e[1:-1].strip()
        if e.startswith("$"):
            e = e[1:]
        self.steps = []
        pos = 0
        while pos < len(e):
            if e[pos] == "[" and e[pos:pos + 2] == "[?":
                end = _find_filter_end(e, pos)
                self.steps.append(("filter", _parse_filter(e[pos + 3:end - 1])))
                pos = end + 1
                continue
            m = _TOKEN.match(e, pos)
            if not m:
                raise JsonPathError("unexpected path string at %r" % e[pos:])
            if m.group("bracket") is not None:
                b = m.group("bracket").strip()
                if b == "*":
                    self.steps.append(("all", None))
                elif (b.startswith("'") and b.endswith("'")) or (b.startswith('"') and b.endswith('"')):
                    self.steps.append(("field", b[1:-1]))
                elif ":" in b:
                    parts = b.split(":")
                    self.steps.append(("slice", tuple(int(p) if p.strip() else None for p in parts[:2])))
                else:
                    try:
                        self.steps.append(("index", int(b)))
                    except ValueError:
                        raise JsonPathError("bad index %r" % b)
            else:
                f = m.group("field")
                if f is None:
                    pass
                elif f == "*":
                    self.steps.append(("all", None))
                else:
                    self.steps.append(("field", f))
            pos = m.end()

    def find(self, obj):
        cur = [obj]
        for kind, arg in self.steps:
            nxt = []
            for v in cur:
                if kind == "field":
                    if isinstance(v, dict) and arg in v:
                        nxt.append(v[arg])
                elif kind == "index":
                    if isinstance(v, list) and -len(v) <= arg < len(v):
                        nxt.append(v[arg])
                elif kind == "slice":
                    if isinstance(v, list):
                        nxt.extend(v[arg[0]:arg[1]])
                elif kind == "all":
                    if isinstance(v, list):
                        nxt.extend(v)
                    elif isinstance(v, dict):
                        nxt.extend(v.values())
                elif kind == "filter":
                    items = v if isinstance(v, list) else []
                    for it in items:
                        if arg(it):
                            nxt.append(it)
            cur = nxt
        return cur


def _find_filter_end(e, pos):
    depth = 0
    q = None
    for i in range(pos, len(e)):
        ch = e[i]
        if q:
            if ch == q:
                q = None
            continue
        if ch in "'\"":
            q = ch
        elif ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        elif ch == "]" and depth == 0:
            return i
    raise JsonPathError("unterminated filter")


_FILTER = re.compile(r"^\s*@((?:\.[A-Za-z0-9_\-/]+)+)\s*(==|!=|<=|>=|<|>)?\s*(.*?)\s*$")


def _parse_filter(text):
    m = _FILTER.match(text)
    if not m:
        raise JsonPathError("unsupported filter %r" % text)
    path = [p for p in m.group(1).split(".") if p]
    op = m.group(2)
    raw = m.group(3)
    if op:
        if (raw.startswith("'") and raw.endswith("'")) or (raw.startswith('"') and raw.endswith('"')):
            val = raw[1:-1]
        else:
            try:
                val = int(raw)
            except ValueError:
                try:
                    val = float(raw)
                except ValueError:
                    val = {"true": True, "false": False}.get(raw, raw)

    def get(it):
        v = it
        for p in path:
            if not isinstance(v, dict) or p not in v:
                return _MISSING
            v = v[p]
        return v

    def pred(it):
        v = get(it)
        if op is None:
            return v is not _MISSING
        if v is _MISSING:
            return False
        try:
            if op == "==":
                return v == val
            if op == "!=":
                return v != val
            if op == "<":
                return v < val
            if op == ">":
                return v > val
            if op == "<=":
                return v <= val
            if op == ">=":
                return v >= val
        except TypeError:
            return False
        return False
    return pred


_MISSING = object()
