"""Small helpers shared by the kube-sim modules: errors, time, names, JSON."""
import datetime
import json
import re
import time
import uuid


class ApiError(Exception):
    """An error that becomes a metav1.Status response."""

    def __init__(self, code, reason, message, details=None, headers=None,
                 plain_body=None):
        super().__init__(message)
        self.code = code
        self.reason = reason
        self.message = message
        self.details = details
        self.headers = headers or {}
        self.plain_body = plain_body

    def status(self):
        st = {"kind": "Status", "apiVersion": "v1", "metadata": {},
              "status": "Failure", "message": self.message}
        if self.reason:
            st["reason"] = self.reason
        if self.details:
            st["details"] = self.details
        st["code"] = self.code
        return st


def qualified_resource(plural, group):
    return plural + ("." + group if group else "")


def details(name, group, kind, causes=None, uid=None, retry_after=None):
    d = {}
    if name:
        d["name"] = name
    if group:
        d["group"] = group
    if kind:
        d["kind"] = kind
    if uid:
        d["uid"] = uid
    if causes:
        d["causes"] = causes
    if retry_after is not None:
        d["retryAfterSeconds"] = retry_after
    return d


def not_found(plural, group, name):
    return ApiError(404, "NotFound",
                    '%s "%s" not found' % (qualified_resource(plural, group), name),
                    details(name, group, plural))


def not_found_path():
    return ApiError(404, "NotFound", "the server could not find the requested resource")


def already_exists(plural, group, name):
    return ApiError(409, "AlreadyExists",
                    '%s "%s" already exists' % (qualified_resource(plural, group), name),
                    details(name, group, plural))


def conflict(plural, group, name, msg=None):
    if msg is None:
        msg = ("the object has been modified; please apply your changes to the "
               "latest version and try again")
    return ApiError(409, "Conflict",
                    'Operation cannot be fulfilled on %s "%s": %s'
                    % (qualified_resource(plural, group), name, msg),
                    details(name, group, plural))


def invalid(kind, group, name, causes, qualifier=None):
    """422 Invalid. causes: list of dicts (reason, message, field)."""
    what = qualifier or (kind + ("." + group if group else ""))
    parts = []
    for c in causes:
        if c.get("field"):
            parts.append("%s: %s" % (c["field"], c["message"]))
        else:
            parts.append(c["message"])
    if len(parts) == 1:
        joined = parts[0]
    else:
        joined = "[" + ", ".join(parts) + "]"
    return ApiError(422, "Invalid", '%s "%s" is invalid: %s' % (what, name, joined),
                    details(name, group, kind, causes))


def bad_request(msg):
    return ApiError(400, "BadRequest", msg)


def forbidden(plural, group, name, msg, causes=None):
    q = qualified_resource(plural, group)
    lead = '%s "%s" is forbidden: ' % (q, name) if name else "%s is forbidden: " % q
    return ApiError(403, "Forbidden", lead + msg, details(name, group, plural, causes))


def method_not_allowed(verb, plural):
    return ApiError(405, "MethodNotAllowed",
                    '%s is not supported on resources of kind "%s"' % (verb, plural))


def internal(msg):
    return ApiError(500, "InternalError", "Internal error occurred: %s" % msg,
                    {"causes": [{"message": msg}]})


def cause(reason, message, field):
    return {"reason": reason, "message": message, "field": field}


def field_invalid(field, value, msg):
    return cause("FieldValueInvalid", "Invalid value: %s: %s" % (go_quote(value), msg), field)


def field_required(field, msg="Required value"):
    m = "Required value" if msg == "Required value" else "Required value: " + msg
    return cause("FieldValueRequired", m, field)


def field_forbidden(field, msg):
    return cause("FieldValueForbidden", "Forbidden: " + msg, field)


def go_quote(v):
    """Render a value the way Go's %v/%q does in field errors (good enough)."""
    if isinstance(v, str):
        return json.dumps(v)
    if isinstance(v, bool):
        return "true" if v else "false"
    if v is None:
        return "null"
    if isinstance(v, (int, float)):
        return str(v)
    return json.dumps(v, separators=(",", ":"))


# --- time ---------------------------------------------------------------

def now_rfc3339():
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def now_micro():
    t = datetime.datetime.now(datetime.timezone.utc)
    return t.strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def parse_time(s):
    if not isinstance(s, str) or not s:
        return None
    try:
        s2 = s.replace("Z", "+00:00")
        if "." in s2:
            head, rest = s2.split(".", 1)
            m = re.match(r"(\d+)(.*)", rest)
            frac = m.group(1)[:6].ljust(6, "0")
            s2 = head + "." + frac + m.group(2)
        return datetime.datetime.fromisoformat(s2).timestamp()
    except Exception:
        return None


def human_duration(seconds):
    """k8s.io/apimachinery/pkg/util/duration.HumanDuration."""
    if seconds < -1:
        return "<invalid>"
    if seconds < 0:
        return "0s"
    s = int(seconds)
    if s < 120:
        return "%ds" % s
    m = s // 60
    if m < 10:
        rs = s % 60
        return "%dm" % m if rs == 0 else "%dm%ds" % (m, rs)
    if m < 180:
        return "%dm" % m
    h = s // 3600
    if h < 8:
        rm = (s % 3600) // 60
        return "%dh" % h if rm == 0 else "%dh%dm" % (h, rm)
    if h < 48:
        return "%dh" % h
    if h < 192:
        rh = h % 24
        return "%dd" % (h // 24) if rh == 0 else "%dd%dh" % (h // 24, rh)
    if h < 24 * 365 * 2:
        return "%dd" % (h // 24)
    if h < 24 * 365 * 8:
        dy = (h // 24) % 365
        return "%dy" % (h // 24 // 365) if dy == 0 else "%dy%dd" % (h // 24 // 365, dy)
    return "%dy" % (h // 24 // 365)


def age(ts):
    t = parse_time(ts)
    if t is None:
        return "<unknown>"
    return human_duration(time.time() - t)


def new_uid():
    return str(uuid.uuid4())


# --- JSON ----------------------------------------------------------------

_enc = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False)


def dumps(obj):
    return _enc.encode(obj)


def dumpb(obj):
    return _enc.encode(obj).encode("utf-8")


def clone(obj):
    return json.loads(_enc.encode(obj))


# --- names ---------------------------------------------------------------

DNS1123_LABEL_RE = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
DNS1123_SUBDOMAIN_RE = re.compile(
    r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
DNS1035_RE = re.compile(r"^[a-z]([-a-z0-9]*[a-z0-9])?$")
QNAME_RE = re.compile(r"^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$")
LABEL_VALUE_RE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")

LABEL_MSG = ("a lowercase RFC 1123 label must consist of lower case alphanumeric "
             "characters or '-', and must start and end with an alphanumeric character "
             "(e.g. 'my-name',  or '123-abc', regex used for validation is "
             "'[a-z0-9]([-a-z0-9]*[a-z0-9])?')")
SUBDOMAIN_MSG = ("a lowercase RFC 1123 subdomain must consist of lower case alphanumeric "
                 "characters, '-' or '.', and must start and end with an alphanumeric "
                 "character (e.g. 'example.com', regex used for validation is "
                 "'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')")
QNAME_MSG = ("name part must consist of alphanumeric characters, '-', '_' or '.', and "
             "must start and end with an alphanumeric character (e.g. 'MyName',  or "
             "'my.name',  or '123-abc', regex used for validation is "
             "'([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')")
LABEL_VALUE_MSG = ("a valid label must be an empty string or consist of alphanumeric "
                   "characters, '-', '_' or '.', and must start and end with an "
                   "alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', "
                   "regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')")


def check_dns_label(v):
    errs = []
    if len(v) > 63:
        errs.append("must be no more than 63 characters")
    if not DNS1123_LABEL_RE.match(v):
        errs.append(LABEL_MSG)
    return errs


def check_dns_subdomain(v):
    errs = []
    if len(v) > 253:
        errs.append("must be no more than 253 characters")
    if not DNS1123_SUBDOMAIN_RE.match(v):
        errs.append(SUBDOMAIN_MSG)
    return errs


def check_path_segment(v):
    errs = []
    if v in (".", ".."):
        errs.append("may not be '%s'" % v)
    for bad in ("/", "%"):
        if bad in v:
            errs.append("may not contain '%s'" % bad)
    return errs


def check_qualified_name(v):
    errs = []
    parts = v.split("/")
    if len(parts) == 1:
        name = parts[0]
    elif len(parts) == 2:
        prefix, name = parts
        if not prefix:
            errs.append("prefix part must be non-empty")
        else:
            for e in check_dns_subdomain(prefix):
                errs.append("prefix part " + e)
    else:
        return ["a qualified name must consist of alphanumeric characters, '-', '_' or '.', "
                "and must start and end with an alphanumeric character (e.g. 'MyName',  or "
                "'my.name',  or '123-abc', regex used for validation is "
                "'([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]') with an optional DNS subdomain "
                "prefix and '/' (e.g. 'example.com/MyName')"]
    if not name:
        errs.append("name part must be non-empty")
    elif len(name) > 63:
        errs.append("name part must be no more than 63 characters")
    elif not QNAME_RE.match(name):
        errs.append(QNAME_MSG)
    return errs


def check_label_value(v):
    errs = []
    if len(v) > 63:
        errs.append("must be no more than 63 characters")
    if not LABEL_VALUE_RE.match(v):
        errs.append(LABEL_VALUE_MSG)
    return errs


def truthy_param(v):
    """Query-parameter booleans: "0"/"false" (any case) are false."""
    if v is None:
        return False
    return v.lower() not in ("0", "false")
