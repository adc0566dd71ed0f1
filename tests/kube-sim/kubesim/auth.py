"""Authentication (bearer tokens, client certificates), TokenReview,
SubjectAccessReview, and the bridge to the RBAC authorizer (kubesim/rbac.py)."""
import json
import secrets

from . import util

ADMIN_USER = "kube-sim-admin"
ANONYMOUS = {"username": "system:anonymous", "uid": "", "groups": ["system:unauthenticated"],
             "extra": {}}


class Authenticator:
    def __init__(self, tokens_file=None):
        self.admin_token = secrets.token_hex(24)
        self.tokens = {}
        self.tokens[self.admin_token] = {
            "username": ADMIN_USER, "uid": "kube-sim-admin-uid",
            "groups": ["system:masters", "system:authenticated"], "extra": {}, "audiences": []}
        if tokens_file:
            with open(tokens_file) as f:
                data = json.load(f)
            if not isinstance(data, dict):
                raise ValueError("--tokens file must hold a JSON object token -> user")
            for tok, u in data.items():
                self.tokens[tok] = normalize_user(u)

    def revoke(self, token):
        """TokenReview refuses `token` from now on. @return False when it is not in the table."""
        return self.tokens.pop(token, None) is not None

    def from_token(self, token):
        return self.tokens.get(token)

    def from_header(self, header):
        """Returns (user or None, error). No header -> anonymous."""
        if not header:
            return ANONYMOUS, None
        parts = header.split(" ", 1)
        if len(parts) != 2 or parts[0].lower() != "bearer" or not parts[1].strip():
            return None, "invalid bearer token"
        u = self.tokens.get(parts[1].strip())
        if u is None:
            return None, "invalid bearer token"
        return u, None

    def token_review(self, obj):
        spec = obj.get("spec") or {}
        token = spec.get("token") or ""
        req_aud = spec.get("audiences") or []
        out = {"kind": "TokenReview", "apiVersion": "authentication.k8s.io/v1",
               "metadata": {"creationTimestamp": None}, "spec": spec}
        u = self.tokens.get(token)
        if u is None:
            out["status"] = {"user": {}, "error": "[invalid bearer token, token lookup failed]"}
            return out
        tok_aud = u.get("audiences") or []
        if req_aud:
            if tok_aud:
                inter = [a for a in req_aud if a in tok_aud]
            else:
                inter = []
            if not inter:
                out["status"] = {"user": {}, "error": "[invalid bearer token, token audiences "
                                 "%s is invalid for the target audiences %s]"
                                 % (_go_list(tok_aud), _go_list(req_aud))}
                return out
            audiences = inter
        else:
            audiences = tok_aud
        user = {"username": u["username"]}
        if u.get("uid"):
            user["uid"] = u["uid"]
        user["groups"] = list(u.get("groups") or [])
        if u.get("extra"):
            user["extra"] = u["extra"]
        st = {"authenticated": True, "user": user}
        if audiences:
            st["audiences"] = audiences
        out["status"] = st
        return out


def _go_list(xs):
    return "[" + " ".join('"%s"' % x for x in xs) + "]"


def normalize_user(u):
    if not isinstance(u, dict) or not u.get("username"):
        raise ValueError("token entry needs a username: %r" % (u,))
    groups = list(u.get("groups") or [])
    name = u["username"]
    if name.startswith("system:serviceaccount:"):
        ns = name.split(":")[2] if len(name.split(":")) >= 4 else ""
        for g in ("system:serviceaccounts", "system:serviceaccounts:" + ns):
            if g not in groups:
                groups.append(g)
    if "system:authenticated" not in groups:
        groups.append("system:authenticated")
    extra = {}
    for k, v in (u.get("extra") or {}).items():
        extra[k] = list(v) if isinstance(v, list) else [str(v)]
    return {"username": name, "uid": u.get("uid", ""), "groups": groups, "extra": extra,
            "audiences": list(u.get("audiences") or [])}


def user_from_cert(cert):
    """cert: dict from SSLSocket.getpeercert(). user = CN, groups = O."""
    if not cert:
        return None
    cn = None
    orgs = []
    for rdn in cert.get("subject", ()):
        for k, v in rdn:
            if k == "commonName":
                cn = v
            elif k == "organizationName":
                orgs.append(v)
    if not cn:
        return None
    return {"username": cn, "uid": "", "groups": orgs + ["system:authenticated"], "extra": {}}


class Authz:
    """allow-all or rbac (delegating to kubesim.rbac, written separately)."""

    def __init__(self, mode, store):
        self.mode = mode
        self.store = store
        self.rbac = None
        if mode == "rbac":
            from . import rbac  # noqa: the other engineer's module
            self._rbacmod = rbac
            self.rbac = rbac.Authorizer(self._list_objects)

    def _list_objects(self, plural, namespace):
        key = ("rbac.authorization.k8s.io", plural)
        with self.store.lock:
            bucket = self.store.data.get(key, {})
            return [e.obj for (ns, n), e in bucket.items() if namespace is None or ns == namespace]

    def authorize(self, user, attrs):
        if "system:masters" in (user.get("groups") or []):
            return True, ""
        if self.mode != "rbac":
            return True, ""
        return self.rbac.authorize(user, attrs)

    def binding_escalation(self, user, binding, namespace):
        """[] when the binding write passes the escalation check (always without rbac)."""
        if self.rbac is None or "system:masters" in (user.get("groups") or []):
            return []
        return self.rbac.binding_escalation(user, binding, namespace)

    def escalation_message(self, user, qualified, name, missing):
        return self._rbacmod.escalation_message(user, qualified, name, missing)

    def forbidden_message(self, user, attrs, reason=""):
        if self.rbac is not None and hasattr(self._rbacmod, "forbidden_message"):
            try:
                return self._rbacmod.forbidden_message(user, attrs, reason)
            except TypeError:
                return self._rbacmod.forbidden_message(user, attrs)
        return default_forbidden_message(user, attrs)

    def subject_access_review(self, obj, requester=None, self_review=False, local_ns=None):
        spec = obj.get("spec") or {}
        if self_review:
            user = requester
        else:
            user = {"username": spec.get("user", ""), "uid": spec.get("uid", ""),
                    "groups": spec.get("groups") or [], "extra": spec.get("extra") or {}}
        ra = spec.get("resourceAttributes")
        nra = spec.get("nonResourceAttributes")
        if ra is not None:
            attrs = {"verb": ra.get("verb", ""), "api_group": ra.get("group", ""),
                     "resource": ra.get("resource", ""), "subresource": ra.get("subresource", ""),
                     "name": ra.get("name", ""),
                     "namespace": local_ns if local_ns is not None else ra.get("namespace", ""),
                     "path": "", "resource_request": True}
        elif nra is not None:
            attrs = {"verb": nra.get("verb", ""), "api_group": "", "resource": "", "subresource": "",
                     "name": "", "namespace": "", "path": nra.get("path", ""),
                     "resource_request": False}
        else:
            raise util.invalid(obj.get("kind", "SubjectAccessReview"), "authorization.k8s.io", "", [
                util.field_required("spec.resourceAttributes",
                                    "exactly one of nonResourceAttributes or resourceAttributes must be specified")])
        if not self_review and not user["username"] and not user["groups"]:
            raise util.invalid(obj.get("kind", "SubjectAccessReview"), "authorization.k8s.io", "", [
                util.field_required("spec.user", "at least one of user or group must be specified")])
        allowed, reason = self.authorize(user, attrs)
        out = dict(obj)
        out["metadata"] = dict(obj.get("metadata") or {})
        out["metadata"].setdefault("creationTimestamp", None)
        st = {"allowed": bool(allowed)}
        if reason:
            st["reason"] = reason
        out["status"] = st
        return out


def default_forbidden_message(user, attrs):
    u = user.get("username", "")
    if not attrs.get("resource_request"):
        return 'User "%s" cannot %s path "%s"' % (u, attrs.get("verb"), attrs.get("path"))
    res = attrs.get("resource", "")
    if attrs.get("subresource"):
        res += "/" + attrs["subresource"]
    msg = 'User "%s" cannot %s resource "%s" in API group "%s"' % (
        u, attrs.get("verb"), res, attrs.get("api_group", ""))
    if attrs.get("namespace"):
        msg += ' in the namespace "%s"' % attrs["namespace"]
    else:
        msg += " at the cluster scope"
    return msg
