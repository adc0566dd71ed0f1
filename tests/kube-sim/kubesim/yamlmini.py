"""A small YAML subset loader (standard library only).

Enough for Kubernetes manifests and CRD files as written by controller-gen and
by hand: block mappings and sequences (including "indentless" sequences under a
key and compact "- key: value" items), flow collections ([a, b], {k: v}),
plain scalars (also multi-line), single- and double-quoted scalars (also
multi-line), literal and folded block scalars (|, |-, |+, >, >-, >+, with an
optional indentation indicator), comments, and "---" document separators.

Not supported: anchors/aliases, tags, complex keys, multi-document streams
inside flow collections. Such input raises YamlError.

    load(text)      -> the first document (None for an empty stream)
    load_all(text)  -> list of documents (empty documents skipped)
"""
import re


class YamlError(ValueError):
    pass


_INT_RE = re.compile(r"^[-+]?(0|[1-9][0-9]*)$")
_OCT_RE = re.compile(r"^0o[0-7]+$")
_HEX_RE = re.compile(r"^0x[0-9a-fA-F]+$")
_FLOAT_RE = re.compile(r"^[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?$")


def resolve_plain(s):
    """YAML 1.2 core schema resolution of a plain scalar."""
    if s in ("", "~", "null", "Null", "NULL"):
        return None
    if s in ("true", "True", "TRUE"):
        return True
    if s in ("false", "False", "FALSE"):
        return False
    if _INT_RE.match(s):
        return int(s)
    if _OCT_RE.match(s):
        return int(s[2:], 8)
    if _HEX_RE.match(s):
        return int(s[2:], 16)
    if _FLOAT_RE.match(s) and any(ch.isdigit() for ch in s):
        return float(s)
    if s in (".inf", ".Inf", ".INF", "+.inf", "+.Inf", "+.INF"):
        return float("inf")
    if s in ("-.inf", "-.Inf", "-.INF"):
        return float("-inf")
    if s in (".nan", ".NaN", ".NAN"):
        return float("nan")
    return s


def _indent_of(line):
    return len(line) - len(line.lstrip(" "))


def _is_blank_or_comment(line):
    s = line.strip()
    return s == "" or s.startswith("#")


def _strip_comment(s):
    """Remove a trailing ' # comment' from a line fragment, outside quotes."""
    out = []
    q = None
    i = 0
    while i < len(s):
        ch = s[i]
        if q:
            if q == "'" and ch == "'":
                if i + 1 < len(s) and s[i + 1] == "'":
                    out.append("''")
                    i += 2
                    continue
                q = None
            elif q == '"' and ch == "\\":
                out.append(s[i:i + 2])
                i += 2
                continue
            elif q == '"' and ch == '"':
                q = None
        else:
            if ch == "#" and (i == 0 or s[i - 1] in " \t"):
                break
            if ch in "'\"" and (i == 0 or s[i - 1] in " \t[{,:"):
                q = ch
        out.append(ch)
        i += 1
    return "".join(out).rstrip()


_ESCAPES = {"0": "\0", "a": "\a", "b": "\b", "t": "\t", "\t": "\t", "n": "\n",
            "v": "\v", "f": "\f", "r": "\r", "e": "\x1b", " ": " ", '"': '"',
            "/": "/", "\\": "\\", "N": "\x85", "_": "\xa0", "L": "\u2028",
            "P": "\u2029"}


def _fold_lines(lines):
    """Fold the lines of a multi-line flow scalar: a single line break becomes a
    space, each empty line becomes a newline."""
    out = ""
    pending_breaks = 0
    first = True
    for ln in lines:
        if ln == "":
            pending_breaks += 1
            continue
        if first:
            out += ln
            first = False
        elif pending_breaks:
            out += "\n" * pending_breaks + ln
        else:
            out += " " + ln
        pending_breaks = 0
    if pending_breaks and not first:
        out += "\n" * pending_breaks
    return out


class _Parser:
    def __init__(self, text):
        self.lines = text.split("\n")
        self.i = 0

    # -- helpers -------------------------------------------------------
    def eof(self):
        return self.i >= len(self.lines)

    def skip_blank(self):
        while self.i < len(self.lines) and _is_blank_or_comment(self.lines[self.i]):
            self.i += 1

    def err(self, msg):
        raise YamlError("line %d: %s" % (self.i + 1, msg))

    # -- structure -----------------------------------------------------
    def parse_document(self):
        self.skip_blank()
        if self.eof():
            return None
        ind = _indent_of(self.lines[self.i])
        node = self.parse_node(ind)
        self.skip_blank()
        if not self.eof():
            self.err("unexpected content: %r" % self.lines[self.i].strip())
        return node

    def parse_node(self, min_indent):
        self.skip_blank()
        if self.eof():
            return None
        line = self.lines[self.i]
        ind = _indent_of(line)
        if ind < min_indent:
            return None
        if "\t" in line[:ind + 1] and line[ind:ind + 1] == "\t":
            self.err("tabs are not allowed for indentation")
        content = line[ind:]
        if content == "-" or content.startswith("- ") or content.startswith("-\t"):
            return self.parse_seq(ind)
        if self.split_key(content) is not None:
            return self.parse_map(ind)
        return self.parse_inline_value(content, ind, ind - 1)

    def split_key(self, content):
        """If content is 'key: rest' (or 'key:'), return (key, rest, offset of rest)."""
        if content.startswith(("'", '"')):
            q = content[0]
            j = 1
            while j < len(content):
                if q == "'" and content[j] == "'":
                    if j + 1 < len(content) and content[j + 1] == "'":
                        j += 2
                        continue
                    break
                if q == '"' and content[j] == "\\":
                    j += 2
                    continue
                if q == '"' and content[j] == '"':
                    break
                j += 1
            else:
                return None
            after = content[j + 1:]
            m = re.match(r"^[ \t]*:(?=[ \t]|$)", after)
            if not m:
                return None
            key = self.parse_quoted_single_line(content[:j + 1])
            rest_off = j + 1 + m.end()
            return key, content[rest_off:], rest_off
        if content.startswith(("[", "{", "#", "|", ">", "&", "*", "!", "%", "@", "`")):
            return None
        m = re.search(r":(?=[ \t]|$)", content)
        if not m:
            return None
        key = content[:m.start()].rstrip()
        if " #" in key or "\t#" in key:
            return None
        return resolve_key(key), content[m.end():], m.end()

    def parse_quoted_single_line(self, s):
        if s[0] == "'":
            return s[1:-1].replace("''", "'")
        return self.unescape_double(s[1:-1])

    def parse_map(self, ind):
        result = {}
        while True:
            self.skip_blank()
            if self.eof():
                break
            line = self.lines[self.i]
            li = _indent_of(line)
            if li < ind:
                break
            if li > ind:
                self.err("bad indentation of a mapping entry")
            content = line[ind:]
            if content.startswith("---") or content.startswith("..."):
                if ind == 0:
                    break
            if content == "-" or content.startswith("- "):
                break
            kv = self.split_key(content)
            if kv is None:
                self.err("expected a mapping entry, got %r" % content)
            key, rest, off = kv
            self.i += 1
            if key in result:
                self.err("duplicate key %r" % (key,))
            result[key] = self.parse_value_after_key(rest, ind)
        return result

    def parse_value_after_key(self, rest, parent_indent):
        stripped = _strip_comment(rest).strip()
        if stripped == "":
            self.skip_blank()
            if self.eof():
                return None
            line = self.lines[self.i]
            li = _indent_of(line)
            content = line[li:]
            if li > parent_indent:
                return self.parse_node(parent_indent + 1)
            if li == parent_indent and (content == "-" or content.startswith("- ")):
                return self.parse_seq(li)
            return None
        if stripped[0] in "|>":
            return self.parse_block_scalar(stripped, parent_indent)
        if stripped[0] in "&*!":
            self.err("anchors, aliases and tags are not supported")
        return self.parse_inline_value(rest.strip(), parent_indent, parent_indent, consumed=True)

    def parse_seq(self, ind):
        items = []
        while True:
            self.skip_blank()
            if self.eof():
                break
            line = self.lines[self.i]
            li = _indent_of(line)
            if li != ind:
                if li > ind:
                    self.err("bad indentation of a sequence entry")
                break
            content = line[ind:]
            if not (content == "-" or content.startswith("- ") or content.startswith("-\t")):
                break
            rest = content[1:]
            sub = len(rest) - len(rest.lstrip(" \t"))
            rest_s = rest.strip()
            if rest_s == "" or rest_s.startswith("#"):
                self.i += 1
                self.skip_blank()
                if self.eof():
                    items.append(None)
                    break
                nl = self.lines[self.i]
                if _indent_of(nl) > ind:
                    items.append(self.parse_node(ind + 1))
                else:
                    items.append(None)
                continue
            col = ind + 1 + sub
            body = rest.lstrip(" \t")
            if body.startswith("- ") or body == "-" or self.split_key(body) is not None:
                # Compact nested collection: re-indent the rest of this line.
                self.lines[self.i] = " " * col + body
                items.append(self.parse_node(col))
                continue
            if body[0] in "|>":
                self.i += 1
                items.append(self.parse_block_scalar(_strip_comment(body).strip(), ind))
                continue
            self.i += 1
            items.append(self.parse_inline_value(body, ind, ind, consumed=True))
        return items

    # -- scalars -------------------------------------------------------
    def parse_inline_value(self, text, line_indent, parent_indent, consumed=False):
        """Parse a scalar or flow collection that starts with `text` (already on a
        consumed line when consumed=True, else at self.i). Continuation lines
        must be indented more than parent_indent."""
        if not consumed:
            self.i += 1
        text = text.strip()
        if text.startswith("["):
            return self.parse_flow_text(text, parent_indent)
        if text.startswith("{"):
            return self.parse_flow_text(text, parent_indent)
        if text.startswith('"') or text.startswith("'"):
            return self.parse_quoted_multiline(text, parent_indent)
        # plain scalar, possibly continued on more-indented lines
        first = _strip_comment(text)
        if first != text.rstrip():
            return resolve_plain(first.strip())
        parts = [first.strip()]
        while not self.eof():
            line = self.lines[self.i]
            if line.strip() == "":
                # Blank lines inside a plain scalar are kept only when followed
                # by a continuation line.
                j = self.i
                while j < len(self.lines) and self.lines[j].strip() == "":
                    j += 1
                if j < len(self.lines) and _indent_of(self.lines[j]) > parent_indent \
                        and not self.lines[j].strip().startswith("#") \
                        and not self._looks_structural(self.lines[j], parent_indent):
                    parts.extend([""] * (j - self.i))
                    self.i = j
                    continue
                break
            li = _indent_of(line)
            if li <= parent_indent:
                break
            s = line.strip()
            if s.startswith("#"):
                break
            if self._looks_structural(line, parent_indent):
                break
            c = _strip_comment(s)
            parts.append(c.strip())
            self.i += 1
            if c != s:
                break
        if len(parts) == 1:
            return resolve_plain(parts[0])
        return _fold_lines(parts)

    def _looks_structural(self, line, parent_indent):
        # A continuation line cannot itself be "key: value" at a shallower
        # level, but for plain multi-line scalars YAML treats "a: b" inside as
        # an error; we simply stop there.
        s = line.strip()
        return self.split_key(s) is not None and ": " in s and _indent_of(line) <= parent_indent + 0

    def parse_quoted_multiline(self, text, parent_indent):
        q = text[0]
        buf = text
        lines = [text[1:]]
        while True:
            end = self._find_close_quote(buf, q)
            if end is not None:
                break
            if self.eof():
                self.err("unterminated quoted scalar")
            nxt = self.lines[self.i]
            self.i += 1
            buf += "\n" + nxt
            lines.append(nxt)
        # buf[0] is the opening quote, buf[end] the closing quote
        tail = _strip_comment(buf[end + 1:]).strip()
        if tail:
            self.err("unexpected text after quoted scalar: %r" % tail)
        inner = buf[1:end]
        raw_lines = inner.split("\n")
        if q == "'":
            if len(raw_lines) == 1:
                return inner.replace("''", "'")
            stripped = [raw_lines[0].rstrip(" \t")] + \
                       [ln.strip(" \t") for ln in raw_lines[1:-1]] + \
                       [raw_lines[-1].lstrip(" \t")]
            return _fold_lines_keep_empty(stripped).replace("''", "'")
        # double-quoted: handle escaped line breaks, then fold, then unescape
        if len(raw_lines) == 1:
            return self.unescape_double(inner)
        segs = []
        for idx, ln in enumerate(raw_lines):
            if idx > 0:
                ln = ln.lstrip(" \t")
            if idx < len(raw_lines) - 1:
                ln = ln.rstrip(" \t") if not ln.endswith("\\") else ln
            segs.append(ln)
        out = ""
        pending = 0
        for idx, ln in enumerate(segs):
            if idx == 0:
                out = ln
                continue
            if out.endswith("\\") and not out.endswith("\\\\"):
                out = out[:-1] + ln
                pending = 0
                continue
            if ln == "" and idx < len(segs) - 1:
                pending += 1
                continue
            if pending:
                out += "\\n" * pending + ln
            else:
                out += " " + ln
            pending = 0
        return self.unescape_double(out)

    @staticmethod
    def _find_close_quote(buf, q):
        j = 1
        while j < len(buf):
            ch = buf[j]
            if q == "'" and ch == "'":
                if j + 1 < len(buf) and buf[j + 1] == "'":
                    j += 2
                    continue
                return j
            if q == '"' and ch == "\\":
                j += 2
                continue
            if q == '"' and ch == '"':
                return j
            j += 1
        return None

    def unescape_double(self, s):
        out = []
        i = 0
        while i < len(s):
            ch = s[i]
            if ch != "\\":
                out.append(ch)
                i += 1
                continue
            if i + 1 >= len(s):
                self.err("bad escape at end of string")
            e = s[i + 1]
            if e in _ESCAPES:
                out.append(_ESCAPES[e])
                i += 2
            elif e in "xuU":
                n = {"x": 2, "u": 4, "U": 8}[e]
                hexs = s[i + 2:i + 2 + n]
                if len(hexs) != n:
                    self.err("bad escape")
                out.append(chr(int(hexs, 16)))
                i += 2 + n
            else:
                self.err("unknown escape \\%s" % e)
        return "".join(out)

    def parse_block_scalar(self, header, parent_indent):
        m = re.match(r"^([|>])([-+]?)([1-9]?)([-+]?)\s*(#.*)?$", header)
        if not m:
            self.err("bad block scalar header %r" % header)
        style = m.group(1)
        chomp = m.group(2) or m.group(4)
        explicit = m.group(3)
        # collect lines
        raw = []
        block_indent = None
        if explicit:
            block_indent = parent_indent + int(explicit)
            if parent_indent < 0:
                block_indent = int(explicit)
        while not self.eof():
            line = self.lines[self.i]
            if line.strip() == "":
                raw.append(line)
                self.i += 1
                continue
            li = _indent_of(line)
            if block_indent is None:
                if li <= parent_indent:
                    break
                block_indent = li
            if li < block_indent:
                break
            raw.append(line)
            self.i += 1
        if block_indent is None:
            block_indent = parent_indent + 1
        # trailing blank lines belong to the chomping
        content = []
        for ln in raw:
            content.append(ln[block_indent:] if len(ln) >= block_indent else "")
        # separate trailing empty lines
        trail = 0
        while content and content[-1].strip() == "":
            content.pop()
            trail += 1
        # Give back trailing blank lines to the stream (harmless: they are blank).
        if style == "|":
            body = "\n".join(content)
        else:
            body = _fold_block(content)
        if not content:
            body = ""
            if chomp == "+":
                return "\n" * trail
            return ""
        if chomp == "-":
            return body
        if chomp == "+":
            return body + "\n" + "\n" * trail
        return body + "\n"

    # -- flow collections ---------------------------------------------
    def parse_flow_text(self, text, parent_indent):
        buf = _strip_comment(text)
        while not _flow_balanced(buf):
            if self.eof():
                self.err("unterminated flow collection")
            buf += " " + _strip_comment(self.lines[self.i].strip())
            self.i += 1
        fp = _FlowParser(buf, self)
        val = fp.parse_value()
        fp.skip_ws()
        if fp.pos != len(fp.s):
            self.err("unexpected text after flow collection: %r" % fp.s[fp.pos:])
        return val


def resolve_key(k):
    v = resolve_plain(k)
    if isinstance(v, (int, float, bool)) or v is None:
        # Kubernetes manifests use string keys; keep the text for non-strings.
        return k if v is not None else k
    return v


def _fold_lines_keep_empty(lines):
    return _fold_lines(lines)


def _fold_block(lines):
    """Folded block scalar: join lines with spaces, except around more-indented
    lines and empty lines."""
    out = []
    prev_more = False
    prev_empty = False
    for idx, ln in enumerate(lines):
        more = ln.startswith(" ") or ln.startswith("\t")
        empty = ln == ""
        if idx == 0:
            out.append(ln)
        elif empty:
            out.append("\n")
        elif more or prev_more:
            out.append("\n" + ln)
        elif prev_empty:
            out.append(ln)
        else:
            out.append(" " + ln)
        prev_more = more
        prev_empty = empty
    # Empty lines between normal lines: "a\n\nb" folds to "a\nb".
    s = ""
    for piece in out:
        s += piece
    return s


def _flow_balanced(s):
    depth = 0
    q = None
    i = 0
    while i < len(s):
        ch = s[i]
        if q:
            if q == '"' and ch == "\\":
                i += 2
                continue
            if ch == q:
                if q == "'" and i + 1 < len(s) and s[i + 1] == "'":
                    i += 2
                    continue
                q = None
        elif ch in "'\"":
            q = ch
        elif ch in "[{":
            depth += 1
        elif ch in "]}":
            depth -= 1
        i += 1
    return depth <= 0 and q is None


class _FlowParser:
    def __init__(self, s, owner):
        self.s = s
        self.pos = 0
        self.owner = owner

    def skip_ws(self):
        while self.pos < len(self.s) and self.s[self.pos] in " \t\n":
            self.pos += 1

    def parse_value(self):
        self.skip_ws()
        if self.pos >= len(self.s):
            self.owner.err("unexpected end of flow collection")
        ch = self.s[self.pos]
        if ch == "[":
            return self.parse_seq()
        if ch == "{":
            return self.parse_map()
        if ch in "'\"":
            return self.parse_quoted()
        return resolve_plain(self.parse_plain())

    def parse_quoted(self):
        q = self.s[self.pos]
        end = _Parser._find_close_quote(self.s[self.pos:], q)
        if end is None:
            self.owner.err("unterminated quoted scalar")
        raw = self.s[self.pos:self.pos + end + 1]
        self.pos += end + 1
        return self.owner.parse_quoted_single_line(raw)

    def parse_plain(self):
        start = self.pos
        while self.pos < len(self.s):
            ch = self.s[self.pos]
            if ch in ",]}":
                break
            if ch == ":" and (self.pos + 1 >= len(self.s) or self.s[self.pos + 1] in " ,]}"):
                break
            self.pos += 1
        return self.s[start:self.pos].strip()

    def parse_seq(self):
        self.pos += 1
        out = []
        while True:
            self.skip_ws()
            if self.pos >= len(self.s):
                self.owner.err("unterminated flow sequence")
            if self.s[self.pos] == "]":
                self.pos += 1
                return out
            out.append(self.parse_value())
            self.skip_ws()
            if self.pos < len(self.s) and self.s[self.pos] == ",":
                self.pos += 1
            elif self.pos < len(self.s) and self.s[self.pos] == "]":
                continue
            else:
                self.owner.err("expected ',' or ']' in flow sequence")

    def parse_map(self):
        self.pos += 1
        out = {}
        while True:
            self.skip_ws()
            if self.pos >= len(self.s):
                self.owner.err("unterminated flow mapping")
            if self.s[self.pos] == "}":
                self.pos += 1
                return out
            if self.s[self.pos] in "'\"":
                key = self.parse_quoted()
            else:
                key = resolve_key(self.parse_plain())
            self.skip_ws()
            val = None
            if self.pos < len(self.s) and self.s[self.pos] == ":":
                self.pos += 1
                self.skip_ws()
                if self.pos < len(self.s) and self.s[self.pos] in ",}":
                    val = None
                else:
                    val = self.parse_value()
            out[key] = val
            self.skip_ws()
            if self.pos < len(self.s) and self.s[self.pos] == ",":
                self.pos += 1
            elif self.pos < len(self.s) and self.s[self.pos] == "}":
                continue
            else:
                self.owner.err("expected ',' or '}' in flow mapping")


def _split_documents(text):
    docs = []
    cur = []
    for line in text.replace("\r\n", "\n").split("\n"):
        if line.startswith("---") and (len(line) == 3 or line[3] in " \t"):
            docs.append(cur)
            rest = line[3:].strip()
            cur = [rest] if rest and not rest.startswith("#") else []
            continue
        if line.startswith("...") and line.strip() == "...":
            docs.append(cur)
            cur = []
            continue
        if line.startswith("%") and not cur:
            continue  # directives
        cur.append(line)
    docs.append(cur)
    return ["\n".join(d) for d in docs]


def load_all(text):
    if text.startswith("\ufeff"):
        text = text[1:]
    out = []
    for doc in _split_documents(text):
        if all(_is_blank_or_comment(ln) for ln in doc.split("\n")):
            continue
        out.append(_Parser(doc).parse_document())
    return [d for d in out if d is not None]


def load(text):
    docs = load_all(text)
    return docs[0] if docs else None
