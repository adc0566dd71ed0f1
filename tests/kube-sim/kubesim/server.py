"""HTTP front end of kube-sim: routing, discovery, OpenAPI, tables, watch
streaming, authentication/authorization, fault injection, and main()."""
import argparse
import hashlib
import http.server
import json
import os
import socket
import ssl
import sys
import tempfile
import threading
import time
import urllib.parse

from . import auth as authmod
from . import builtins
from . import cel
from . import kinds
from . import protobuf
from . import satoken
from . import selectors
from . import ssa
from . import tlsutil
from . import util
from . import yamlmini
from .controllers import Controllers
from .faults import Faults
from .store import ADDED, DELETED, MODIFIED, Store, matches
from .util import ApiError

_WRITE_OPTIONS = {"POST": "CreateOptions", "PUT": "UpdateOptions", "PATCH": "PatchOptions"}

VERSION_INFO = {"major": "1", "minor": "32", "gitVersion": "v1.32.0-kube-sim",
                "gitCommit": "0000000000000000000000000000000000000000",
                "gitTreeState": "clean", "buildDate": "2025-01-01T00:00:00Z",
                "goVersion": "go1.23.0", "compiler": "gc", "platform": "linux/amd64"}

TABLE_META = {"kind": "Table", "apiVersion": "meta.k8s.io/v1"}


def selected_name(q):
    """The name a list or watch is authorized for: kube-apiserver's request info
    (apiserver/pkg/endpoints/request/requestinfo.go) takes it from a fieldSelector that requires
    metadata.name=X exactly, when X is a valid path segment, so RBAC resourceNames can grant a
    list or watch of that one object; "" otherwise (an unparsable selector names nothing)."""
    try:
        name = selectors.FieldSelector(q.get("fieldSelector", "")).get_exact("metadata.name")
    except selectors.SelectorError:
        return ""
    if not name or name in (".", "..") or "/" in name or "%" in name:
        return ""
    return name


class Sim:
    """Shared state of one kube-sim process."""

    def __init__(self, args):
        self.args = args
        self.verbose = args.verbose
        self.store = Store(window=args.watch_cache_events)
        self.store.keep_history(args.history_events)
        self.store.logger = self.log
        self.store.crd_hook = self.crd_changed
        self._disc_lock = threading.Lock()
        self._disc = None
        self.store.type_listeners.append(self.invalidate_discovery)
        for rt in builtins.builtin_types():
            self.store.add_type(rt)
        self.authn = authmod.Authenticator(args.tokens)
        self.authz = authmod.Authz(args.authz, self.store)
        self.faults = Faults(seed=args.fault_seed)
        self.controllers = Controllers(self.store, log=self.log)
        self.bookmark_interval = args.bookmark_interval
        self._disc_lock = threading.Lock()
        self._disc = None
        self._key_lock = threading.Lock()
        self._key = None
        if args.service_account_signing_key_file:
            try:
                self._key = satoken.SigningKey.load(args.service_account_signing_key_file)
            except (OSError, ValueError) as e:
                raise ValueError("--service-account-signing-key-file %s: %s"
                                 % (args.service_account_signing_key_file, e))
        for ns in ("default", "kube-system", "kube-public", "kube-node-lease"):
            self.store.create(self.store.types[kinds.NS_KEY], "", {"metadata": {"name": ns}})

    def signing_key(self):
        """The service-account signing key: --service-account-signing-key-file, else one made
        the first time it is needed (so a start costs nothing when nobody asks)."""
        with self._key_lock:
            if self._key is None:
                fd, path = tempfile.mkstemp(prefix="kube-sim-sa-", suffix=".key")
                os.close(fd)
                try:
                    self._key = satoken.SigningKey.generate(path)
                finally:
                    os.unlink(path)
            return self._key

    def log(self, msg):
        sys.stderr.write("kube-sim: %s\n" % msg)
        sys.stderr.flush()

    # -- CRD lifecycle -------------------------------------------------------------
    def crd_changed(self, new, old):
        """Called under the store lock after a CRD is stored or removed."""
        st = self.store
        if new is None:
            spec = old.get("spec") or {}
            key = (spec.get("group"), (spec.get("names") or {}).get("plural"))
            rt = st.types.get(key)
            if rt is not None and rt.crd == old["metadata"]["name"]:
                st.remove_type(key)
            return
        conds = {c.get("type"): c for c in (new.get("status") or {}).get("conditions") or []}
        est = conds.get("Established") or {}
        if est.get("status") != "True":
            if est.get("reason") == "KubeSimUnsupportedValidationRule":
                self.log("not serving CRD %s: %s" % (new["metadata"].get("name"), est.get("message")))
                spec = new.get("spec") or {}
                key = (spec.get("group"), (spec.get("names") or {}).get("plural"))
                rt = st.types.get(key)
                if rt is not None and rt.crd == new["metadata"]["name"]:
                    st.remove_type(key)
            return
        try:
            rt = kinds.crd_to_type(new)
        except Exception as e:
            self.log("cannot serve CRD %s: %r" % (new["metadata"].get("name"), e))
            return
        if old is not None:
            ospec = old.get("spec") or {}
            okey = (ospec.get("group"), (ospec.get("names") or {}).get("plural"))
            if okey != rt.key and okey in st.types:
                st.remove_type(okey)
        st.add_type(rt)

    # -- discovery ---------------------------------------------------------------------
    def invalidate_discovery(self):
        with self._disc_lock:
            self._disc = None

    def discovery(self):
        with self._disc_lock:
            if self._disc is not None:
                return self._disc
        with self.store.lock:
            types = list(self.store.types.values())
        groups = {}   # group -> {version: [resource dicts]}
        order = []
        for rt in types:
            for v in rt.versions:
                if rt.group not in groups:
                    groups[rt.group] = {}
                    order.append(rt.group)
                gv = groups[rt.group].setdefault(v, [])
                r = {"name": rt.plural, "singularName": rt.singular, "namespaced": rt.namespaced,
                     "kind": rt.kind, "verbs": list(rt.verbs)}
                if rt.short_names:
                    r["shortNames"] = list(rt.short_names)
                if rt.categories:
                    r["categories"] = list(rt.categories)
                r["storageVersionHash"] = hashlib.sha256(
                    ("%s/%s/%s" % (rt.group, rt.version, rt.kind)).encode()).digest()[:8].hex()
                gv.append(r)
                has_status = rt.status
                if hasattr(rt, "status_by_version"):
                    has_status = rt.status_by_version.get(v, rt.status)
                if has_status:
                    gv.append({"name": rt.plural + "/status", "singularName": "",
                               "namespaced": rt.namespaced, "kind": rt.kind,
                               "verbs": ["get", "patch", "update"]})
                if rt.key == kinds.NS_KEY:
                    gv.append({"name": "namespaces/finalize", "singularName": "", "namespaced": False,
                               "kind": "Namespace", "verbs": ["update"]})
        group_list = []
        for g in order:
            if g == "":
                continue
            vs = kinds.sort_versions(list(groups[g].keys()))
            group_list.append({"name": g, "versions": [{"groupVersion": "%s/%s" % (g, v), "version": v}
                                                      for v in vs],
                               "preferredVersion": {"groupVersion": "%s/%s" % (g, vs[0]), "version": vs[0]}})
        d = {"groups": groups, "group_list": group_list}
        with self._disc_lock:
            self._disc = d
        return d

    def lookup(self, group, version, plural):
        rt = self.store.types.get((group, plural))
        if rt is None or version not in rt.versions:
            return None
        return rt


# --- the HTTP handler ---------------------------------------------------------------

class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "kube-sim"
    sys_version = ""
    sim = None  # set on the class by make_server

    def setup(self):
        # As the Go API server does: a response's header and body writes must not wait for
        # the client's delayed ACK (Nagle), or every kept-alive request costs ~40 ms.
        try:
            self.request.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        except OSError:
            pass
        if isinstance(self.request, ssl.SSLSocket):
            self.request.settimeout(30)
            try:
                self.request.do_handshake()
            except (ssl.SSLError, OSError):
                self.request.close()
                raise
            self.request.settimeout(None)
        super().setup()

    def handle(self):
        try:
            super().handle()
        except (ConnectionError, ssl.SSLError, OSError):
            pass

    def log_message(self, fmt, *args):
        if self.sim.verbose:
            sys.stderr.write("kube-sim: %s %s\n" % (self.address_string(), fmt % args))

    # -- plumbing ----------------------------------------------------------------
    def do_GET(self):
        self.dispatch("GET")

    def do_POST(self):
        self.dispatch("POST")

    def do_PUT(self):
        self.dispatch("PUT")

    def do_PATCH(self):
        self.dispatch("PATCH")

    def do_DELETE(self):
        self.dispatch("DELETE")

    def read_body(self):
        # Read once; send_bytes drains an unread body so an early answer (401, 403, an
        # injected fault) never leaves it on a kept-alive connection for the next request.
        if getattr(self, "_body", None) is None:
            self._body = self._read_body_once()
        return self._body

    def _read_body_once(self):
        n = int(self.headers.get("Content-Length") or 0)
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            data = b""
            while True:
                line = self.rfile.readline().strip()
                size = int(line.split(b";")[0], 16)
                if size == 0:
                    self.rfile.readline()
                    break
                data += self.rfile.read(size)
                self.rfile.readline()
            return data
        if n > 3 * 1024 * 1024:
            self.rfile.read(n)
            raise ApiError(413, "RequestEntityTooLarge", "Request entity too large: limit is 3145728")
        return self.rfile.read(n) if n else b""

    def send_bytes(self, code, body, ctype="application/json", headers=None):
        if getattr(self, "_body", None) is None and (
                int(self.headers.get("Content-Length") or 0) > 0 or
                self.headers.get("Transfer-Encoding", "").lower() == "chunked"):
            try:
                self.read_body()
            except ApiError:
                self._body = b""
        self.send_response(code)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Cache-Control", "no-cache, private")
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        for w in getattr(self, "_warnings", ()):
            self.send_header("Warning", '299 - "%s"' % w.replace('"', "'"))
        self.end_headers()
        self.wfile.write(body)

    def send_obj(self, code, obj, headers=None):
        self.send_bytes(code, util.dumpb(obj), headers=headers)

    def send_error_status(self, err):
        if err.plain_body is not None:
            self.send_bytes(err.code, err.plain_body.encode(), "text/plain; charset=utf-8", err.headers)
        else:
            self.send_bytes(err.code, util.dumpb(err.status()), headers=err.headers)

    def decode_body(self, raw):
        ct = (self.headers.get("Content-Type") or "").lower()
        if "protobuf" in ct and raw:
            try:
                return protobuf.decode(bytes(raw))
            except protobuf.ProtoError as e:
                raise ApiError(415, "UnsupportedMediaType",
                               "the body of the request was in an unknown format - accepted media "
                               "types include: application/json, application/yaml (%s)" % e)
        if "protobuf" in ct or "cbor" in ct:
            raise ApiError(415, "UnsupportedMediaType",
                           'the body of the request was in an unknown format - accepted media '
                           'types include: application/json, application/yaml')
        if not raw:
            raise util.bad_request("request body is empty")
        try:
            return json.loads(raw)
        except ValueError:
            if "yaml" in ct:
                try:
                    return yamlmini.load(raw.decode("utf-8"))
                except Exception as e:
                    raise util.bad_request("error decoding YAML: %s" % e)
            raise util.bad_request("the body of the request was in an unknown format - accepted "
                                   "media types include: application/json, application/yaml")

    # -- main dispatch -------------------------------------------------------------
    def dispatch(self, method):
        self._warnings = []
        self._body = None
        sim = self.sim
        url = urllib.parse.urlsplit(self.path)
        path = url.path
        q = {}
        for k, v in urllib.parse.parse_qsl(url.query, keep_blank_values=True):
            q.setdefault(k, v)
        self.q = q
        try:
            if path.startswith("/sim/"):
                return self.handle_sim(method, path)
            user = self.authenticate()
            if user is None:
                raise ApiError(401, "Unauthorized", "Unauthorized")
            self.user = user
            info = self.request_info(method, path, q)
            if info is None:
                return self.handle_nonresource(method, path, user)
            # count + faults
            res = info["resource"] + ("/" + info["subresource"] if info["subresource"] else "")
            sim.faults.count(info["verb"], res)
            latency, ferr = sim.faults.check(info["verb"], res, info["namespace"], info["name"])
            if latency:
                time.sleep(latency)
            if ferr is not None:
                raise ferr
            attrs = {"verb": info["verb"], "api_group": info["group"], "resource": info["resource"],
                     "subresource": info["subresource"], "name": info["authz_name"],
                     "namespace": info["namespace"], "path": path, "resource_request": True}
            ok, reason = sim.authz.authorize(user, attrs)
            if not ok:
                raise self.forbidden(user, attrs, info, reason)
            self.handle_resource(method, info)
        except ApiError as e:
            try:
                self.send_error_status(e)
            except OSError:
                pass
        except (BrokenPipeError, ConnectionResetError):
            pass
        except Exception as e:  # pragma: no cover
            import traceback
            traceback.print_exc()
            try:
                self.send_error_status(util.internal(repr(e)))
            except OSError:
                pass

    def forbidden(self, user, attrs, info, reason=""):
        msg = self.sim.authz.forbidden_message(user, attrs, reason)
        q = util.qualified_resource(info["resource"], info["group"])
        # Real message: <res> "<name>" is forbidden: User ... ; rbac.forbidden_message may
        # already include the prefix.
        if " is forbidden: " in msg:
            full = msg
        elif attrs.get("name"):
            full = '%s "%s" is forbidden: %s' % (q, attrs["name"], msg)
        else:
            full = "%s is forbidden: %s" % (q, msg)
        return ApiError(403, "Forbidden", full, util.details(attrs.get("name", ""), info["group"],
                                                             info["resource"]))

    def authenticate(self):
        sim = self.sim
        hdr = self.headers.get("Authorization")
        if hdr:
            u, err = sim.authn.from_header(hdr)
            return u
        if isinstance(self.request, ssl.SSLSocket):
            try:
                cert = self.request.getpeercert()
            except Exception:
                cert = None
            u = authmod.user_from_cert(cert)
            if u is not None:
                return u
        return authmod.ANONYMOUS

    def request_info(self, method, path, q):
        parts = [urllib.parse.unquote(p) for p in path.strip("/").split("/")] if path.strip("/") else []
        if len(parts) >= 2 and parts[0] == "api":
            group, version, rest = "", parts[1], parts[2:]
        elif len(parts) >= 3 and parts[0] == "apis":
            group, version, rest = parts[1], parts[2], parts[3:]
        else:
            return None
        if not rest:
            return None
        ns = ""
        if rest[0] == "namespaces" and len(rest) >= 3 and not (len(rest) == 3 and rest[2] in ("status", "finalize")):
            ns = rest[1]
            rest = rest[2:]
        resource = rest[0]
        name = rest[1] if len(rest) > 1 else ""
        sub = rest[2] if len(rest) > 2 else ""
        if len(rest) > 3:
            raise util.not_found_path()
        watch = util.truthy_param(q.get("watch")) if "watch" in q else False
        if method == "GET":
            verb = "get" if name else ("watch" if watch else "list")
        elif method == "POST":
            verb = "create"
        elif method == "PUT":
            verb = "update"
        elif method == "PATCH":
            verb = "patch"
        elif method == "DELETE":
            verb = "delete" if name else "deletecollection"
        else:
            verb = method.lower()
        return {"group": group, "version": version, "resource": resource, "name": name,
                "subresource": sub, "namespace": ns, "verb": verb, "watch": watch,
                "authz_name": name or (selected_name(q) if verb in ("list", "watch") else "")}

    # -- non-resource endpoints -----------------------------------------------------
    def handle_issuer_discovery(self, p, user):
        """Service-account issuer discovery, as the API server serves it: RBAC
        (system:service-account-issuer-discovery) decides who may read it."""
        attrs = {"verb": "get", "api_group": "", "resource": "", "subresource": "", "name": "",
                 "namespace": "", "path": p, "resource_request": False}
        ok, reason = self.sim.authz.authorize(user, attrs)
        if not ok:
            raise ApiError(403, "Forbidden",
                           "forbidden: " + self.sim.authz.forbidden_message(user, attrs, reason))
        self.sim.faults.count("get", p)
        latency, ferr = self.sim.faults.check("get", p, "", "")
        if latency:
            time.sleep(latency)
        if ferr is not None:
            raise ferr
        key = self.sim.signing_key()
        if p == "/openid/v1/jwks":
            body = util.dumpb({"keys": [key.jwk()]})
            return self.send_bytes(200, body, "application/jwk-set+json")
        scheme = "https" if self.sim.args.tls else "http"
        host = self.headers.get("Host") or "127.0.0.1"
        return self.send_obj(200, satoken.discovery(self.sim.args.service_account_issuer,
                                                    "%s://%s/openid/v1/jwks" % (scheme, host)))

    def handle_nonresource(self, method, path, user):
        sim = self.sim
        p = path.rstrip("/") or "/"
        attrs = {"verb": method.lower() if method != "GET" else "get", "api_group": "", "resource": "",
                 "subresource": "", "name": "", "namespace": "", "path": p, "resource_request": False}
        if p in ("/.well-known/openid-configuration", "/openid/v1/jwks") and method == "GET":
            return self.handle_issuer_discovery(p, user)
        public = p in ("/version", "/healthz", "/readyz", "/livez", "/api", "/apis") or \
            p.startswith("/api/") or p.startswith("/apis/") or p.startswith("/openapi")
        if not public:
            ok, reason = sim.authz.authorize(user, attrs)
            if not ok:
                msg = sim.authz.forbidden_message(user, attrs, reason)
                if not msg.startswith("forbidden"):
                    msg = "forbidden: " + msg
                raise ApiError(403, "Forbidden", msg)
        if method != "GET":
            raise ApiError(405, "MethodNotAllowed", "the server does not allow this method on the requested resource")
        if p == "/version":
            return self.send_obj(200, VERSION_INFO)
        if p in ("/healthz", "/readyz", "/livez"):
            return self.send_bytes(200, b"ok", "text/plain; charset=utf-8")
        if p == "/":
            return self.send_obj(200, {"paths": ["/api", "/api/v1", "/apis", "/healthz", "/livez",
                                                 "/openapi/v2", "/openapi/v3", "/readyz", "/version"]})
        d = sim.discovery()
        if p == "/api":
            host = self.headers.get("Host") or "127.0.0.1"
            return self.send_obj(200, {"kind": "APIVersions", "versions": ["v1"],
                                       "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0",
                                                                       "serverAddress": host}]})
        if p == "/apis":
            return self.send_obj(200, {"kind": "APIGroupList", "apiVersion": "v1",
                                       "groups": d["group_list"]})
        parts = p.strip("/").split("/")
        if parts[0] == "api" and len(parts) == 2:
            if parts[1] not in d["groups"].get("", {}):
                raise util.not_found_path()
            return self.send_obj(200, {"kind": "APIResourceList", "groupVersion": parts[1],
                                       "resources": d["groups"][""][parts[1]]})
        if parts[0] == "apis" and len(parts) == 2:
            for g in d["group_list"]:
                if g["name"] == parts[1]:
                    return self.send_obj(200, dict({"kind": "APIGroup", "apiVersion": "v1"}, **g))
            raise util.not_found_path()
        if parts[0] == "apis" and len(parts) == 3:
            vs = d["groups"].get(parts[1], {})
            if parts[2] not in vs:
                raise util.not_found_path()
            return self.send_obj(200, {"kind": "APIResourceList", "apiVersion": "v1",
                                       "groupVersion": "%s/%s" % (parts[1], parts[2]),
                                       "resources": vs[parts[2]]})
        if parts[0] == "openapi":
            return self.handle_openapi(parts, d)
        raise util.not_found_path()

    def handle_openapi(self, parts, d):
        if len(parts) >= 2 and parts[1] == "v3":
            if len(parts) == 2:
                paths = {}
                for g, vs in d["groups"].items():
                    for v, res in vs.items():
                        key = ("api/%s" % v) if g == "" else ("apis/%s/%s" % (g, v))
                        h = hashlib.sha256(util.dumpb(res)).hexdigest()[:32].upper()
                        paths[key] = {"serverRelativeURL": "/openapi/v3/%s?hash=%s" % (key, h)}
                return self.send_obj(200, {"paths": paths})
            rest = parts[2:]
            if rest[0] == "api" and len(rest) == 2:
                g, v = "", rest[1]
            elif rest[0] == "apis" and len(rest) == 3:
                g, v = rest[1], rest[2]
            else:
                raise util.not_found_path()
            if v not in d["groups"].get(g, {}):
                raise util.not_found_path()
            return self.send_obj(200, self.openapi_doc(g, v))
        raise util.not_found_path()

    def openapi_doc(self, g, v):
        prefix = "/api/%s" % v if g == "" else "/apis/%s/%s" % (g, v)
        paths = {}
        with self.sim.store.lock:
            types = [rt for rt in self.sim.store.types.values() if rt.group == g and v in rt.versions]
        for rt in types:
            gvk = {"group": g, "version": v, "kind": rt.kind}
            media = {"application/json-patch+json": {"schema": {"type": "object"}},
                     "application/merge-patch+json": {"schema": {"type": "object"}},
                     "application/apply-patch+yaml": {"schema": {"type": "object"}}}
            if rt.builtin:
                media["application/strategic-merge-patch+json"] = {"schema": {"type": "object"}}
            params = [{"name": "fieldValidation", "in": "query", "schema": {"type": "string", "uniqueItems": True}},
                      {"name": "dryRun", "in": "query", "schema": {"type": "string", "uniqueItems": True}},
                      {"name": "fieldManager", "in": "query", "schema": {"type": "string", "uniqueItems": True}}]

            def op(action, body=None):
                o = {"x-kubernetes-action": action, "x-kubernetes-group-version-kind": gvk,
                     "operationId": "%s%s" % (action, rt.kind),
                     "responses": {"200": {"description": "OK"}, "401": {"description": "Unauthorized"}}}
                if body is not None:
                    o["requestBody"] = {"content": body}
                    o["parameters"] = params
                return o
            coll = prefix + ("/namespaces/{namespace}/" if rt.namespaced else "/") + rt.plural
            item = coll + "/{name}"
            if rt.virtual:
                paths[coll] = {"post": op("post", {"application/json": {"schema": {"type": "object"}}})}
                continue
            paths[coll] = {"get": op("list"), "post": op("post", {"*/*": {"schema": {"type": "object"}}})}
            paths[item] = {"get": op("get"), "put": op("put", {"*/*": {"schema": {"type": "object"}}}),
                           "patch": op("patch", media), "delete": op("delete")}
            if rt.status:
                paths[item + "/status"] = {"get": op("get"), "put": op("put", {"*/*": {"schema": {"type": "object"}}}),
                                           "patch": op("patch", media)}
        return {"openapi": "3.0.0", "info": {"title": "Kubernetes", "version": "v1.32.0"},
                "paths": paths, "components": {"schemas": {}}}

    # -- /sim endpoints ----------------------------------------------------------------
    def handle_sim(self, method, path):
        sim = self.sim
        p = path.rstrip("/")
        raw = self.read_body() if method in ("POST", "PUT", "PATCH", "DELETE") else b""
        if p == "/sim/faults":
            if method == "GET":
                return self.send_obj(200, sim.faults.describe())
            if method == "DELETE":
                sim.faults.clear()
                return self.send_obj(200, sim.faults.describe())
            if method in ("POST", "PUT"):
                try:
                    body = json.loads(raw) if raw.strip() else {}
                    sim.faults.configure(body, replace=(method == "PUT"))
                except ValueError as e:
                    raise util.bad_request("bad fault specification: %s" % e)
                if isinstance(body, dict) and body.get("compact"):
                    sim.store.compact()
                if isinstance(body, dict) and body.get("closeWatches"):
                    sim.store.close_watches()
                out = sim.faults.describe()
                out["resourceVersion"] = str(sim.store.rv)
                return self.send_obj(200, out)
        if p == "/sim/stats":
            if method == "GET":
                return self.send_obj(200, sim.faults.snapshot())
        if p == "/sim/stats/reset" and method == "POST":
            sim.faults.reset_stats()
            return self.send_obj(200, {})
        if p == "/sim/state" and method == "GET":
            with sim.store.lock:
                return self.send_obj(200, {"resourceVersion": str(sim.store.rv),
                                           "watchCacheFloor": str(sim.store.floor),
                                           "watchCacheEvents": len(sim.store.events)})
        if p == "/sim/history" and method == "GET":
            return self.send_history()
        if p == "/sim/tokens/revoke" and method == "POST":
            # What deleting the pod or ServiceAccount does to a real token: TokenReview refuses
            # it from now on, while its signature and claims stay as valid as before.
            try:
                token = json.loads(raw).get("token")
            except (ValueError, AttributeError):
                token = None
            if not isinstance(token, str) or not sim.authn.revoke(token):
                raise util.bad_request("POST /sim/tokens/revoke wants {\"token\": T} naming a "
                                       "token of the --tokens table")
            return self.send_obj(200, {})
        raise util.not_found_path()

    def send_history(self):
        """Committed events kept by --history-events, oldest first: `resource` (plurals, comma
        list; default all) and `since` (a resourceVersion; only later events) filter them.
        `complete` says whether every event after `since` is still kept."""
        st = self.sim.store
        if st.history is None:
            raise util.bad_request("history is off (start kube-sim with --history-events N)")
        want = set(r for r in (self.q.get("resource") or "").split(",") if r)
        try:
            since = int(self.q.get("since") or 0)
        except ValueError:
            raise util.bad_request("since: not a resourceVersion: %r" % self.q.get("since"))
        with st.lock:
            kept = [(t, ev) for t, ev in st.history
                    if ev.rv > since and (not want or ev.rt.plural in want)]
            head = {"resourceVersion": str(st.rv), "floor": str(st.history_floor),
                    "complete": since >= st.history_floor}
        parts = []
        for t, ev in kept:
            meta = util.dumpb({"type": ev.type, "resourceVersion": str(ev.rv),
                               "time": round(t, 6), "resource": ev.rt.plural,
                               "namespace": ev.ns, "name": ev.name})
            parts.append(meta[:-1] + b',"object":' + ev.new.full_bytes() + b"}")
        body = util.dumpb(head)[:-1] + b',"items":[' + b",".join(parts) + b"]}"
        return self.send_bytes(200, body)

    # -- resources --------------------------------------------------------------------------
    def check_escalation(self, rt, ns, body):
        """Under --authz rbac, a RoleBinding or ClusterRoleBinding write needs `bind` on its
        role or every right the role grants (kube-apiserver's escalation check): 403 otherwise."""
        if (rt.group != "rbac.authorization.k8s.io"
                or rt.plural not in ("rolebindings", "clusterrolebindings")
                or not isinstance(body, dict)):
            return
        missing = self.sim.authz.binding_escalation(self.user, body, ns or "")
        if missing:
            name = (body.get("metadata") or {}).get("name", "")
            raise ApiError(403, "Forbidden", self.sim.authz.escalation_message(
                self.user, util.qualified_resource(rt.plural, rt.group), name, missing),
                util.details(name, rt.group, rt.plural))

    def handle_resource(self, method, info):
        sim = self.sim
        rt = sim.lookup(info["group"], info["version"], info["resource"])
        if rt is None:
            raise util.not_found_path()
        ns = info["namespace"]
        name = info["name"]
        sub = info["subresource"]
        verb = info["verb"]
        if rt.namespaced is False and ns:
            raise util.not_found_path()
        if sub and not ((sub == "status" and rt.status) or (sub == "finalize" and rt.key == kinds.NS_KEY)):
            raise util.not_found_path()
        if verb not in rt.verbs:
            if rt.virtual and verb in ("get", "list", "watch", "update", "patch", "delete", "deletecollection"):
                raise ApiError(
                    405, "MethodNotAllowed", "%s is not supported on resources of kind \"%s\""
                    % (verb, rt.plural), util.details("", rt.group, rt.plural))
            raise util.not_found_path()
        version = info["version"]
        api_version = rt.api_version(version)
        opts = {"version": version, "field_validation": self.q.get("fieldValidation"),
                "field_manager": self.q.get("fieldManager"),
                "manager": ssa.manager_for(self.q.get("fieldManager"),
                                           self.headers.get("User-Agent")),
                "force": util.truthy_param(self.q.get("force")) if "force" in self.q else False,
                "dry_run": self.q.get("dryRun") == "All"}
        if rt.virtual:
            return self.handle_virtual(rt, ns, method)
        if method in _WRITE_OPTIONS:
            ssa.validate_manager(self.q.get("fieldManager"), _WRITE_OPTIONS[method])
        if method == "GET":
            if verb == "watch":
                return self.handle_watch(rt, ns, api_version)
            if name:
                e = sim.store.get(rt, ns, name)
                return self.respond_object(200, rt, e.obj, api_version, entry=e)
            return self.handle_list(rt, ns, api_version)
        if method == "POST":
            if name or sub:
                raise ApiError(405, "MethodNotAllowed", "the server does not allow this method on the requested resource")
            if rt.namespaced and not ns:
                raise util.not_found_path()
            body = self.decode_body(self.read_body())
            self.check_escalation(rt, ns, body)
            obj = sim.store.create(rt, ns, body, opts)
            self._warnings = opts.get("warnings", [])
            return self.respond_object(201, rt, obj, api_version)
        if method == "PUT":
            if not name:
                raise ApiError(405, "MethodNotAllowed", "the server does not allow this method on the requested resource")
            body = self.decode_body(self.read_body())
            if not sub:
                self.check_escalation(rt, ns, body)
            obj, created = sim.store.update(rt, ns, name, body, sub or None, opts)
            self._warnings = opts.get("warnings", [])
            return self.respond_object(201 if created else 200, rt, obj, api_version)
        if method == "PATCH":
            if not name:
                raise ApiError(405, "MethodNotAllowed", "the server does not allow this method on the requested resource")
            ct = self.headers.get("Content-Type") or ""
            ctn = ct.split(";")[0].strip().lower()
            if ctn not in ("application/json-patch+json", "application/merge-patch+json",
                           "application/strategic-merge-patch+json", "application/apply-patch+yaml"):
                raise ApiError(415, "UnsupportedMediaType",
                               "the body of the request was in an unknown format - accepted media types "
                               "include: application/json-patch+json, application/merge-patch+json, "
                               "application/apply-patch+yaml" +
                               (", application/strategic-merge-patch+json" if rt.builtin else ""))
            if self.q.get("force") is not None and ctn != "application/apply-patch+yaml":
                raise util.invalid("PatchOptions", "meta.k8s.io", "", [util.field_forbidden(
                    "force", "may not be specified for non-apply patch")])
            raw = self.read_body()
            if ctn == "application/apply-patch+yaml":
                try:
                    body = json.loads(raw)
                except ValueError:
                    try:
                        body = yamlmini.load(raw.decode("utf-8"))
                    except Exception as e:
                        raise util.bad_request("error decoding YAML: %s" % e)
            else:
                try:
                    body = json.loads(raw)
                except ValueError as e:
                    raise util.bad_request("error decoding patch: %s" % e)
            obj, created = sim.store.patch(rt, ns, name, ct, body, sub or None, opts)
            self._warnings = opts.get("warnings", [])
            return self.respond_object(201 if created else 200, rt, obj, api_version)
        if method == "DELETE":
            raw = self.read_body()
            dopts = {}
            if raw.strip() and "protobuf" in (self.headers.get("Content-Type") or "").lower():
                dopts = self.decode_body(raw)
                if dopts.get("kind") != "DeleteOptions":
                    raise util.bad_request("invalid DeleteOptions body")
                dopts.pop("apiVersion", None)
                dopts.pop("kind", None)
            elif raw.strip():
                try:
                    dopts = json.loads(raw)
                except ValueError:
                    raise util.bad_request("invalid DeleteOptions body")
                if not isinstance(dopts, dict):
                    raise util.bad_request("invalid DeleteOptions body")
            if "propagationPolicy" in self.q:
                dopts.setdefault("propagationPolicy", self.q["propagationPolicy"])
            if "orphanDependents" in self.q:
                dopts.setdefault("orphanDependents", util.truthy_param(self.q["orphanDependents"]))
            if self.q.get("dryRun") == "All" or dopts.get("dryRun") == ["All"]:
                dopts["dry_run"] = True
            if not name:
                return self.handle_deletecollection(rt, ns, dopts, api_version)
            obj, gone = sim.store.delete(rt, ns, name, dopts)
            if gone and not rt.return_deleted:
                return self.send_obj(200, {"kind": "Status", "apiVersion": "v1", "metadata": {},
                                           "status": "Success",
                                           "details": util.details(name, rt.group, rt.plural,
                                                                   uid=obj["metadata"].get("uid"))})
            return self.respond_object(200, rt, obj, api_version)
        raise ApiError(405, "MethodNotAllowed", "the server does not allow this method on the requested resource")

    def handle_virtual(self, rt, ns, method):
        sim = self.sim
        if method != "POST":
            raise ApiError(405, "MethodNotAllowed", "the server does not allow this method on the requested resource")
        body = self.decode_body(self.read_body())
        if not isinstance(body, dict):
            raise util.bad_request("invalid body")
        if rt.plural == "tokenreviews":
            out = sim.authn.token_review(body)
        elif rt.plural == "subjectaccessreviews":
            out = sim.authz.subject_access_review(body)
        elif rt.plural == "selfsubjectaccessreviews":
            out = sim.authz.subject_access_review(body, requester=self.user, self_review=True)
        elif rt.plural == "localsubjectaccessreviews":
            out = sim.authz.subject_access_review(body, local_ns=ns)
        else:
            raise util.not_found_path()
        out["kind"] = rt.kind
        out["apiVersion"] = rt.api_version()
        return self.send_obj(201, out)

    # -- output shaping -------------------------------------------------------------
    def want_table(self):
        acc = self.headers.get("Accept") or ""
        for part in acc.split(","):
            if "as=Table" in part and "g=meta.k8s.io" in part:
                return True
        return False

    def printer_for(self, rt, version):
        if getattr(rt, "crd_printer", None) is not None:
            return rt.crd_printer(version)
        if rt.printer is not None:
            return rt.printer()
        return builtins.default_printer()

    def table_rows(self, rt, objs, version, api_version):
        cols, rowfn = self.printer_for(rt, version)
        include = self.q.get("includeObject", "Metadata")
        rows = []
        for o in objs:
            try:
                cells = rowfn(o)
            except Exception:
                cells = [o.get("metadata", {}).get("name", "")] + [None] * (len(cols) - 1)
            row = {"cells": cells}
            if include == "Object":
                oo = dict(o)
                oo["apiVersion"] = api_version
                row["object"] = oo
            elif include != "None":
                row["object"] = {"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1",
                                 "metadata": o.get("metadata", {})}
            rows.append(row)
        return cols, rows

    def respond_object(self, code, rt, obj, api_version, entry=None):
        if self.want_table():
            cols, rows = self.table_rows(rt, [obj], api_version.split("/")[-1], api_version)
            t = dict(TABLE_META)
            t["metadata"] = {"resourceVersion": obj.get("metadata", {}).get("resourceVersion", "")}
            t["columnDefinitions"] = cols
            t["rows"] = rows
            return self.send_obj(code, t)
        if entry is not None:
            return self.send_bytes(code, entry.full_bytes(api_version))
        if obj.get("apiVersion") != api_version and obj.get("kind") == rt.kind:
            obj = dict(obj)
            obj["apiVersion"] = api_version
        return self.send_obj(code, obj)

    def parse_selectors(self, rt, version):
        try:
            lsel = selectors.LabelSelector(self.q.get("labelSelector", ""))
        except selectors.SelectorError as e:
            raise util.bad_request(str(e))
        try:
            fsel = selectors.FieldSelector(self.q.get("fieldSelector", ""))
        except selectors.SelectorError as e:
            raise util.bad_request(str(e))
        allowed = {"metadata.name"}
        if rt.namespaced:
            allowed.add("metadata.namespace")
        extra = rt.fields
        if not rt.builtin:
            extra = {f: "" for f in rt.selectable.get(version, [])}
        for f in fsel.fields():
            if f in allowed:
                continue
            if extra is None:
                raise util.bad_request('"%s" is not a known field selector: only "metadata.name", '
                                       '"metadata.namespace"' % f)
            if f not in extra:
                raise util.bad_request("field label not supported: %s" % f)
        return lsel, fsel

    def handle_list(self, rt, ns, api_version):
        sim = self.sim
        q = self.q
        version = api_version.split("/")[-1]
        rv = q.get("resourceVersion")
        rvm = q.get("resourceVersionMatch")
        cont = q.get("continue")
        if rvm:
            causes = []
            if rvm not in ("Exact", "NotOlderThan"):
                causes.append(util.cause("FieldValueNotSupported",
                                         'Unsupported value: "%s": supported values: "Exact", "NotOlderThan"' % rvm,
                                         "resourceVersionMatch"))
            elif not rv:
                causes.append(util.field_forbidden("resourceVersionMatch", "resourceVersionMatch is forbidden unless resourceVersion is provided"))
            elif rvm == "Exact" and rv == "0":
                causes.append(util.field_forbidden("resourceVersionMatch", 'resourceVersionMatch "exact" is forbidden for resourceVersion "0"'))
            if cont:
                causes.append(util.field_forbidden("resourceVersionMatch", "resourceVersionMatch is forbidden when continue is provided"))
            if causes:
                raise util.invalid("ListOptions", "meta.k8s.io", "", causes)
        if cont and rv not in (None, "", "0"):
            raise util.bad_request("specifying resource version is not allowed when using continue")
        if rv not in (None, ""):
            try:
                int(rv)
            except ValueError:
                raise util.invalid(
                    "ListOptions", "meta.k8s.io", "", [util.field_invalid("resourceVersion", rv, "must be an integer")])
        try:
            limit = int(q.get("limit") or 0)
        except ValueError:
            limit = 0
        if limit < 0:
            limit = 0
        lsel, fsel = self.parse_selectors(rt, version)
        list_rv, entries, token, remaining = sim.store.list(rt, ns, lsel, fsel, limit, cont, rv, rvm)
        meta = {"resourceVersion": str(list_rv)}
        if token:
            meta["continue"] = token
            if remaining is not None and remaining > 0:
                meta["remainingItemCount"] = remaining
        if self.want_table():
            objs = [e.obj for e in entries]
            cols, rows = self.table_rows(rt, objs, version, api_version)
            t = dict(TABLE_META)
            t["metadata"] = meta
            t["columnDefinitions"] = cols
            t["rows"] = rows
            return self.send_obj(200, t)
        head = ('{"kind":%s,"apiVersion":%s,"metadata":%s,"items":[' % (
            util.dumps(rt.list_kind), util.dumps(api_version), util.dumps(meta))).encode()
        items = b",".join(e.item_bytes(api_version, rt.builtin) for e in entries)
        body = head + items + b"]}"
        return self.send_bytes(200, body)

    def handle_deletecollection(self, rt, ns, dopts, api_version):
        sim = self.sim
        version = api_version.split("/")[-1]
        lsel, fsel = self.parse_selectors(rt, version)
        _, entries, _, _ = sim.store.list(rt, ns, lsel, fsel)
        deleted = []
        for e in entries:
            m = e.obj["metadata"]
            try:
                obj, _gone = sim.store.delete(rt, m.get("namespace", ""), m["name"], dict(dopts))
                deleted.append(obj)
            except ApiError as err:
                if err.code != 404:
                    raise
        out = {"kind": rt.list_kind, "apiVersion": api_version,
               "metadata": {"resourceVersion": str(sim.store.rv)}, "items": deleted}
        return self.send_obj(200, out)

    # -- watch ------------------------------------------------------------------------------
    def handle_watch(self, rt, ns, api_version):
        sim = self.sim
        st = sim.store
        q = self.q
        version = api_version.split("/")[-1]
        if util.truthy_param(q.get("sendInitialEvents")) if "sendInitialEvents" in q else False:
            raise util.invalid("ListOptions", "meta.k8s.io", "", [util.field_forbidden(
                "sendInitialEvents", "sendInitialEvents is forbidden for watch unless the WatchList "
                "feature gate is enabled")])
        if q.get("resourceVersionMatch"):
            raise util.invalid("ListOptions", "meta.k8s.io", "", [util.field_forbidden(
                "resourceVersionMatch", "resourceVersionMatch is forbidden for watch unless "
                "sendInitialEvents is provided")])
        lsel, fsel = self.parse_selectors(rt, version)
        selecting = not lsel.empty() or not fsel.empty()
        rv = q.get("resourceVersion", "")
        try:
            timeout = float(q.get("timeoutSeconds") or 0)
        except ValueError:
            timeout = 0
        if timeout <= 0:
            timeout = 1800.0
        bookmarks = util.truthy_param(q.get("allowWatchBookmarks")) if "allowWatchBookmarks" in q else False
        table = self.want_table()
        if rv not in ("", "0"):
            try:
                start = int(rv)
            except ValueError:
                raise util.invalid("ListOptions", "meta.k8s.io", "", [util.field_invalid(
                    "resourceVersion", rv, "must be an integer")])
        else:
            start = None
        initial = []
        expired = None
        with st.lock:
            epoch = st.watch_epoch
            woken = st.watch_cond(rt.key)
            if start is None:
                cursor = st.rv
                key = rt.key
                bucket = st.data.get(key, {})
                for k in st.sorted_keys(key):
                    if rt.namespaced and ns and k[0] != ns:
                        continue
                    e = bucket.get(k)
                    if e is None:
                        continue
                    if selecting and not matches(rt, e.obj, lsel, fsel):
                        continue
                    initial.append(e)
            elif start < st.watch_floor(rt.key):
                expired = start
                cursor = st.rv
                floor = st.watch_floor(rt.key)
            else:
                cursor = start
        # headers
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Transfer-Encoding", "chunked")
        self.send_header("Cache-Control", "no-cache, private")
        self.end_headers()
        self.wfile.flush()

        def chunk(data):
            self.wfile.write(b"%x\r\n" % len(data) + data + b"\r\n")

        first_table = [True]

        def encode(ev_type, entry, ev=None):
            if table:
                cols, rows = self.table_rows(rt, [entry.obj], version, api_version)
                t = dict(TABLE_META)
                t["metadata"] = {"resourceVersion": entry.obj["metadata"].get("resourceVersion", "")}
                t["columnDefinitions"] = cols if first_table[0] else []
                first_table[0] = False
                t["rows"] = rows
                return util.dumpb({"type": ev_type, "object": t}) + b"\n"
            if ev is not None:
                return ev.encoded(api_version if not rt.builtin else None, ev_type)
            return b'{"type":"' + ev_type.encode() + b'","object":' + entry.full_bytes(
                api_version if not rt.builtin else None) + b"}\n"

        try:
            if expired is not None:
                err = {"type": "ERROR", "object": {"kind": "Status", "apiVersion": "v1", "metadata": {},
                                                   "status": "Failure",
                                                   "message": "too old resource version: %d (%d)" % (expired, floor),
                                                   "reason": "Expired", "code": 410}}
                chunk(util.dumpb(err) + b"\n")
                self.wfile.write(b"0\r\n\r\n")
                self.wfile.flush()
                return
            if initial:
                buf = b"".join(encode(ADDED, e) for e in initial)
                chunk(buf)
            self.wfile.flush()
            deadline = time.monotonic() + timeout
            last_bm = time.monotonic()
            bm_every = sim.bookmark_interval
            while True:
                now = time.monotonic()
                if now >= deadline:
                    break
                wait = deadline - now
                if bookmarks and bm_every > 0:
                    wait = min(wait, max(0.0, last_bm + bm_every - now))
                batch = []
                gone = False
                # Woken by events of this resource only (and by closeWatches/compaction): a
                # storm on Nodes does not wake every other watcher once per write.
                with st.lock:
                    if st.last_rv(rt.key) <= cursor and st.watch_epoch == epoch and wait > 0:
                        woken.wait(wait)
                    if st.watch_epoch != epoch:
                        break
                    if st.last_rv(rt.key) > cursor:
                        if cursor < st.watch_floor(rt.key):
                            gone = True
                        else:
                            for ev in reversed(st.events):
                                if ev.rv <= cursor:
                                    break
                                if ev.rt.key == rt.key:
                                    batch.append(ev)
                            batch.reverse()
                    cursor = max(cursor, st.rv)
                if gone:
                    break
                out = []
                for ev in batch:
                    if ev.rt is not rt and ev.rt.key != rt.key:
                        continue
                    if rt.namespaced and ns and ev.ns != ns:
                        continue
                    etype = ev.type
                    if selecting:
                        new_ok = matches(rt, ev.new.obj, lsel, fsel)
                        old_ok = ev.old is not None and matches(rt, ev.old.obj, lsel, fsel)
                        if ev.type == ADDED:
                            if not new_ok:
                                continue
                        elif ev.type == MODIFIED:
                            if new_ok and not old_ok:
                                etype = ADDED
                            elif old_ok and not new_ok:
                                etype = DELETED
                            elif not new_ok:
                                continue
                        elif ev.type == DELETED:
                            if not (old_ok or new_ok):
                                continue
                    out.append(encode(etype, ev.new, ev))
                if out:
                    chunk(b"".join(out))
                    self.wfile.flush()
                if bookmarks and bm_every > 0 and time.monotonic() - last_bm >= bm_every:
                    chunk(self.bookmark(rt, api_version, cursor, table))
                    self.wfile.flush()
                    last_bm = time.monotonic()
            if bookmarks and st.watch_epoch == epoch:
                chunk(self.bookmark(rt, api_version, cursor, table))
            self.wfile.write(b"0\r\n\r\n")
            self.wfile.flush()
            if st.watch_epoch != epoch:
                self.close_connection = True
        except (BrokenPipeError, ConnectionResetError, OSError):
            self.close_connection = True

    def bookmark(self, rt, api_version, rv, table):
        if table:
            obj = {"kind": "Table", "apiVersion": "meta.k8s.io/v1", "metadata": {"resourceVersion": str(rv)},
                   "columnDefinitions": [], "rows": []}
        else:
            obj = {"kind": rt.kind, "apiVersion": api_version, "metadata": {"resourceVersion": str(rv)}}
        return util.dumpb({"type": "BOOKMARK", "object": obj}) + b"\n"


class Server(http.server.ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 256
    allow_reuse_address = True

    def handle_error(self, request, client_address):
        exc = sys.exc_info()[1]
        if isinstance(exc, (ConnectionError, ssl.SSLError, OSError)):
            return
        super().handle_error(request, client_address)


# --- startup -----------------------------------------------------------------------------

def parse_args(argv):
    p = argparse.ArgumentParser(prog="kube-sim", description="Kubernetes API server stand-in")
    p.add_argument("--listen", default="127.0.0.1:0")
    p.add_argument("--kubeconfig-out", required=True)
    p.add_argument("--tls", action="store_true")
    p.add_argument("--authz", choices=["allow-all", "rbac"], default="allow-all")
    p.add_argument("--tokens")
    p.add_argument("--service-account-signing-key-file",
                   help="RSA private key (PEM) whose public half /openid/v1/jwks publishes "
                   "(kubesim.satoken signs with it); default: one made when first asked for")
    p.add_argument("--service-account-issuer", default=satoken.ISSUER,
                   help="the issuer /.well-known/openid-configuration names")
    p.add_argument("--seed", action="append", default=[])
    p.add_argument("--crds", action="append", default=[],
                   help="directory of CRD manifests (*.yaml, *.json); repeatable")
    p.add_argument("--watch-cache-events", type=int, default=1000)
    p.add_argument("--bookmark-interval", type=float, default=60.0,
                   help="seconds between BOOKMARK events on watches that allow them")
    p.add_argument("--fault-seed", type=int, default=None)
    p.add_argument("--history-events", type=int, default=0,
                   help="keep the last N committed events for GET /sim/history (0: off)")
    p.add_argument("--verbose", action="store_true")
    return p.parse_args(argv)


def load_manifest_file(path):
    with open(path, encoding="utf-8") as f:
        text = f.read()
    if path.endswith(".json"):
        d = json.loads(text)
        return [d]
    return yamlmini.load_all(text)


def apply_seed_object(sim, obj, where):
    st = sim.store
    if not isinstance(obj, dict):
        raise ValueError("%s: not an object" % where)
    if obj.get("kind") == "List" or (obj.get("kind", "").endswith("List") and "items" in obj):
        for i, it in enumerate(obj.get("items") or []):
            apply_seed_object(sim, it, "%s[%d]" % (where, i))
        return
    av = obj.get("apiVersion", "")
    kind = obj.get("kind", "")
    with st.lock:
        rt = st.type_by_kind(av, kind)
    if rt is None:
        raise ValueError("%s: no resource serves %s %s" % (where, av, kind))
    meta = obj.get("metadata") or {}
    ns = meta.get("namespace") or ("default" if rt.namespaced else "")
    if rt.namespaced and st.get_entry(kinds.NS_KEY, "", ns) is None:
        st.create(st.types[kinds.NS_KEY], "", {"metadata": {"name": ns}})
    body = util.clone(obj)
    body.get("metadata", {}).pop("resourceVersion", None)
    with st.lock:
        if rt.key == kinds.NS_KEY and st.get_entry(rt.key, "", meta.get("name", "")) is not None:
            return
        st.create(rt, ns, body, {"version": av.rpartition("/")[2], "field_validation": "Ignore"},
                  seeding=True)


def unserved_crds(sim):
    """'<crd>: <why>' for each stored CRD that kube-sim refuses to serve because it cannot
    evaluate one of its validation rules (a start with such a CRD fails)."""
    out = []
    with sim.store.lock:
        for e in sim.store.data.get(kinds.CRD_KEY, {}).values():
            for c in (e.obj.get("status") or {}).get("conditions") or []:
                if c.get("type") == "Established" and \
                        c.get("reason") == "KubeSimUnsupportedValidationRule":
                    out.append("%s: %s" % (e.obj["metadata"]["name"], c.get("message")))
    return out


def write_kubeconfig(path, server_url, token, ca_pem=None):
    cluster = {"server": server_url}
    if ca_pem:
        import base64
        cluster["certificate-authority-data"] = base64.b64encode(ca_pem).decode()
    cfg = {"apiVersion": "v1", "kind": "Config", "current-context": "kube-sim",
           "clusters": [{"name": "kube-sim", "cluster": cluster}],
           "users": [{"name": "kube-sim-admin", "user": {"token": token}}],
           "contexts": [{"name": "kube-sim", "context": {"cluster": "kube-sim", "user": "kube-sim-admin",
                                                          "namespace": "default"}}],
           "preferences": {}}
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        json.dump(cfg, f, indent=2)
        f.write("\n")
    os.replace(tmp, path)


def main(argv=None):
    if argv is None:
        argv = sys.argv[1:]
    if argv and argv[0] == "mint-client-cert":
        return tlsutil.mint_main(argv[1:])
    args = parse_args(argv)
    try:
        cel.check_runtime()
    except cel.RuntimeMissing as e:
        sys.stderr.write("kube-sim: %s\n" % e)
        return 2
    if args.crds or args.seed:
        cel.engine().start()  # node loads while the CRDs are read
    try:
        sim = Sim(args)
    except (OSError, ValueError) as e:
        sys.stderr.write("kube-sim: %s\n" % e)
        return 2
    Handler.sim = sim
    host, _, port = args.listen.rpartition(":")
    host = host.strip("[]") or "127.0.0.1"
    try:
        if args.authz == "rbac":
            from . import rbac
            if hasattr(rbac, "bootstrap_policy"):
                roles, bindings = rbac.bootstrap_policy()
                for o in list(roles) + list(bindings):
                    apply_seed_object(sim, o, "rbac bootstrap policy")
        # read every CRD first: the CEL engine starts meanwhile, then compiles them
        crds = []
        for cdir in args.crds:
            for d in sorted(os.listdir(cdir)):
                if d.endswith((".yaml", ".yml", ".json")):
                    path = os.path.join(cdir, d)
                    for i, doc in enumerate(load_manifest_file(path)):
                        if isinstance(doc, dict) and doc.get("kind") == "CustomResourceDefinition":
                            crds.append((doc, "%s#%d" % (path, i)))
        for doc, where in crds:
            apply_seed_object(sim, doc, where)
        for seed in args.seed:
            for i, doc in enumerate(load_manifest_file(seed)):
                apply_seed_object(sim, doc, "%s#%d" % (seed, i))
        refused = unserved_crds(sim)
        if refused:
            raise ValueError("; ".join(refused))
    except (ValueError, ApiError, OSError, yamlmini.YamlError) as e:
        msg = e.message if isinstance(e, ApiError) else str(e)
        sys.stderr.write("kube-sim: loading seeds/CRDs failed: %s\n" % msg)
        return 2
    fam = socket.AF_INET6 if ":" in host else socket.AF_INET
    Server.address_family = fam
    httpd = Server((host, int(port or 0)), Handler)
    ca_pem = None
    scheme = "http"
    if args.tls:
        tls = tlsutil.make_ca_and_server(os.path.abspath(args.kubeconfig_out))
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(tls["server_crt"], tls["server_key"])
        ctx.load_verify_locations(tls["ca_crt"])
        ctx.verify_mode = ssl.CERT_OPTIONAL
        try:
            ctx.set_alpn_protocols(["http/1.1"])
        except NotImplementedError:  # pragma: no cover
            pass
        httpd.socket = ctx.wrap_socket(httpd.socket, server_side=True, do_handshake_on_connect=False)
        with open(tls["ca_crt"], "rb") as f:
            ca_pem = f.read()
        scheme = "https"
    real_port = httpd.server_address[1]
    h = "[%s]" % host if ":" in host else host
    write_kubeconfig(args.kubeconfig_out, "%s://%s:%d" % (scheme, h, real_port), sim.authn.admin_token, ca_pem)
    sim.controllers.start()
    sys.stdout.write("ready %d\n" % real_port)
    sys.stdout.flush()
    try:
        httpd.serve_forever(poll_interval=0.2)
    except KeyboardInterrupt:
        pass
    return 0
