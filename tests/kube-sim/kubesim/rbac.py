"""Kubernetes RBAC authorization for kube-sim.

Design note
-----------
This follows kube-apiserver's authorizer chain for an RBAC cluster
(Kubernetes 1.32): members of the ``system:masters`` group are allowed
before RBAC is consulted; otherwise the RBAC authorizer visits, in order,

  1. every ClusterRoleBinding whose subjects match the user, with the rules
     of the ClusterRole it references, and
  2. when the request has a namespace, every RoleBinding in that namespace
     whose subjects match, with the rules of the Role (same namespace) or
     ClusterRole it references,

and allows at the first rule that covers the request.  The one idea to know:
nothing is cached.  Bindings and roles are read through ``list_objects`` on
every call, so a change to a Role is in force at the next request, as it is
(after the informer catches up) in a real cluster.

Aggregated ClusterRoles (``aggregationRule``) get their rules computed on
the fly the way the clusterrole-aggregation controller would write them:
for each selector, the matching ClusterRoles sorted by name (the role itself
excluded), their rules appended unless already present.

Texts are the real ones: the allow reason
``RBAC: allowed by RoleBinding "rb/ns" of Role "r" to ServiceAccount "sa/ns"``,
the deny reason ``RBAC: clusterrole.rbac.authorization.k8s.io "x" not found``
when a binding points at a missing role (empty otherwise), and the 403 text
of ``forbidden_message``.
"""

from .schema import go_quote

__all__ = [
    "Authorizer", "forbidden_message", "forbidden_status", "rule_allows",
    "selector_matches", "bootstrap_policy", "SERVICE_ACCOUNT_PREFIX",
]

SERVICE_ACCOUNT_PREFIX = "system:serviceaccount:"
MASTERS_GROUP = "system:masters"
RBAC_GROUP = "rbac.authorization.k8s.io"


# ---------------------------------------------------------------------------
# rule matching (rbac/v1 evaluation helpers)
# ---------------------------------------------------------------------------

def _attr(attrs, key, default=""):
    v = attrs.get(key)
    return default if v is None else v


def _verb_matches(rule, verb):
    return any(v == "*" or v == verb for v in rule.get("verbs") or [])


def _group_matches(rule, group):
    return any(g == "*" or g == group for g in rule.get("apiGroups") or [])


def _resource_matches(rule, combined, subresource):
    for r in rule.get("resources") or []:
        if r == "*" or r == combined:
            return True
        # "*/status" covers the status subresource of every resource
        if subresource and len(r) == len(subresource) + 2 \
                and r.startswith("*/") and r.endswith(subresource):
            return True
    return False


def _name_matches(rule, name):
    names = rule.get("resourceNames") or []
    return not names or name in names


def _url_matches(rule, path):
    for u in rule.get("nonResourceURLs") or []:
        if u == "*" or u == path:
            return True
        if u.endswith("*") and path.startswith(u.rstrip("*")):
            return True
    return False


def rule_allows(attrs, rule):
    """True when one PolicyRule covers the request attributes."""
    verb = _attr(attrs, "verb")
    if attrs.get("resource_request", True):
        resource = _attr(attrs, "resource")
        sub = _attr(attrs, "subresource")
        combined = resource + "/" + sub if sub else resource
        return (_verb_matches(rule, verb)
                and _group_matches(rule, _attr(attrs, "api_group"))
                and _resource_matches(rule, combined, sub)
                and _name_matches(rule, _attr(attrs, "name")))
    return _verb_matches(rule, verb) and _url_matches(rule, _attr(attrs, "path"))


# ---------------------------------------------------------------------------
# subjects
# ---------------------------------------------------------------------------

def _sa_matches(namespace, name, username):
    if not username.startswith(SERVICE_ACCOUNT_PREFIX):
        return False
    parts = username[len(SERVICE_ACCOUNT_PREFIX):].split(":")
    return len(parts) == 2 and parts[0] == namespace and parts[1] == name


def _applies_to_user(user, subject, namespace):
    kind = subject.get("kind")
    name = subject.get("name", "")
    if kind == "User":
        return user.get("username", "") == name
    if kind == "Group":
        return name in (user.get("groups") or [])
    if kind == "ServiceAccount":
        sa_ns = subject.get("namespace") or namespace
        if not sa_ns:
            return False
        return _sa_matches(sa_ns, name, user.get("username", ""))
    return False


def _applies_to(user, subjects, namespace):
    for s in subjects or []:
        if _applies_to_user(user, s, namespace):
            return s
    return None


def _describe_subject(subject, binding_ns):
    kind = subject.get("kind", "")
    name = subject.get("name", "")
    if kind == "ServiceAccount":
        ns = subject.get("namespace") or binding_ns
        return '%s "%s/%s"' % (kind, name, ns)
    return '%s "%s"' % (kind, name)


# ---------------------------------------------------------------------------
# label selectors (metav1.LabelSelector, for aggregation rules)
# ---------------------------------------------------------------------------

class _BadSelector(Exception):
    pass


def selector_matches(selector, labels):
    """metav1.LabelSelector semantics: every matchLabels pair and every
    matchExpressions requirement must hold; an empty selector matches all."""
    labels = labels or {}
    selector = selector or {}
    for k, v in (selector.get("matchLabels") or {}).items():
        if labels.get(k) != v:
            return False
    for req in selector.get("matchExpressions") or []:
        key = req.get("key", "")
        op = req.get("operator", "")
        values = req.get("values") or []
        if op == "In":
            if not values:
                raise _BadSelector("values: Required value")
            if key not in labels or labels[key] not in values:
                return False
        elif op == "NotIn":
            if not values:
                raise _BadSelector("values: Required value")
            if key in labels and labels[key] in values:
                return False
        elif op == "Exists":
            if key not in labels:
                return False
        elif op == "DoesNotExist":
            if key in labels:
                return False
        else:
            raise _BadSelector('"%s" is not a valid label selector operator' % op)
    return True


# ---------------------------------------------------------------------------
# error texts
# ---------------------------------------------------------------------------

def _not_found(resource, name):
    return '%s.rbac.authorization.k8s.io "%s" not found' % (resource, name)


def _aggregate(errors):
    """utilerrors.NewAggregate(errs).Error()."""
    seen = []
    for e in errors:
        if e not in seen:
            seen.append(e)
    if not seen:
        return ""
    if len(seen) == 1:
        return seen[0]
    return "[" + ", ".join(seen) + "]"


def _sorted_by_name(objs):
    return sorted(objs or [], key=lambda o: (o.get("metadata") or {}).get("name", ""))


def _name_of(obj):
    return (obj.get("metadata") or {}).get("name", "")


def _normalize_rule(rule):
    """Equality as apimachinery's Semantic.DeepEqual sees it (nil == empty)."""
    return tuple(sorted((k, tuple(v) if isinstance(v, list) else v)
                        for k, v in rule.items() if v not in (None, [], "")))


# ---------------------------------------------------------------------------
# the authorizer
# ---------------------------------------------------------------------------

class Authorizer(object):
    """RBAC authorizer over the simulator's stored objects.

    ``list_objects(resource_plural, namespace_or_None)`` returns the stored
    dicts for "roles", "rolebindings", "clusterroles" and
    "clusterrolebindings"; namespace None means cluster-scoped / all.
    """

    def __init__(self, list_objects):
        self._list = list_objects

    # -- role lookups -------------------------------------------------------

    def _cluster_roles(self):
        return self._list("clusterroles", None) or []

    def _get_cluster_role(self, name, roles=None):
        for cr in roles if roles is not None else self._cluster_roles():
            if _name_of(cr) == name:
                return cr
        return None

    def _get_role(self, namespace, name):
        for r in self._list("roles", namespace) or []:
            meta = r.get("metadata") or {}
            if meta.get("name") == name and meta.get("namespace", namespace) == namespace:
                return r
        return None

    def aggregated_rules(self, cluster_role, _all=None, _seen=None):
        """The rules a ClusterRole has in force.  For a role with an
        aggregationRule these are what the aggregation controller writes:
        per selector, matching ClusterRoles by name, deduplicated."""
        agg = cluster_role.get("aggregationRule")
        if agg is None:
            return list(cluster_role.get("rules") or [])
        all_roles = _all if _all is not None else self._cluster_roles()
        seen = set(_seen or ()) | {_name_of(cluster_role)}
        out, keys = [], set()
        try:
            for sel in agg.get("clusterRoleSelectors") or []:
                matches = [cr for cr in _sorted_by_name(all_roles)
                           if selector_matches(sel, (cr.get("metadata") or {}).get("labels"))]
                for cr in matches:
                    name = _name_of(cr)
                    if name == _name_of(cluster_role) or name in seen:
                        continue
                    for rule in self.aggregated_rules(cr, all_roles, seen | {name}):
                        k = _normalize_rule(rule)
                        if k not in keys:
                            keys.add(k)
                            out.append(rule)
        except _BadSelector:
            # the controller cannot sync such a role; it keeps what it has
            return list(cluster_role.get("rules") or [])
        return out

    def _role_ref_rules(self, role_ref, binding_ns):
        """(rules, error) for a binding's roleRef."""
        kind = role_ref.get("kind")
        name = role_ref.get("name", "")
        if kind == "Role":
            role = self._get_role(binding_ns, name)
            if role is None:
                return None, _not_found("role", name)
            return list(role.get("rules") or []), None
        if kind == "ClusterRole":
            roles = self._cluster_roles()
            cr = self._get_cluster_role(name, roles)
            if cr is None:
                return None, _not_found("clusterrole", name)
            return self.aggregated_rules(cr, roles), None
        return None, 'unsupported role reference kind: "%s"' % kind

    # -- visiting -------------------------------------------------------------

    def _visit(self, user, namespace, visitor):
        """VisitRulesFor: call visitor(source, rule, error) until it returns
        False.  source is the binding description used in reasons."""
        for crb in _sorted_by_name(self._list("clusterrolebindings", None)):
            subject = _applies_to(user, crb.get("subjects"), "")
            if subject is None:
                continue
            ref = crb.get("roleRef") or {}
            rules, err = self._role_ref_rules(ref, "")
            if err is not None:
                if not visitor(None, None, err):
                    return
                continue
            source = 'ClusterRoleBinding "%s" of %s "%s" to %s' % (
                _name_of(crb), ref.get("kind", ""), ref.get("name", ""),
                _describe_subject(subject, ""))
            for rule in rules:
                if not visitor(source, rule, None):
                    return
        if not namespace:
            return
        for rb in _sorted_by_name(self._list("rolebindings", namespace)):
            meta = rb.get("metadata") or {}
            rb_ns = meta.get("namespace") or namespace
            if rb_ns != namespace:
                continue
            subject = _applies_to(user, rb.get("subjects"), namespace)
            if subject is None:
                continue
            ref = rb.get("roleRef") or {}
            rules, err = self._role_ref_rules(ref, namespace)
            if err is not None:
                if not visitor(None, None, err):
                    return
                continue
            source = 'RoleBinding "%s/%s" of %s "%s" to %s' % (
                meta.get("name", ""), rb_ns, ref.get("kind", ""), ref.get("name", ""),
                _describe_subject(subject, rb_ns))
            for rule in rules:
                if not visitor(source, rule, None):
                    return

    def authorize(self, user, attrs):
        """Decide one request.

        user:  {"username", "groups", "uid", "extra"}
        attrs: {"verb", "api_group", "resource", "subresource", "name",
                "namespace", "path", "resource_request"}

        Returns (allowed, reason).  reason is "" for system:masters, the
        "RBAC: allowed by ..." text when allowed by a binding, and "" or
        "RBAC: <errors>" when denied (the text a real 403 appends).
        """
        user = user or {}
        if MASTERS_GROUP in (user.get("groups") or []):
            return True, ""
        state = {"allowed": False, "reason": "", "errors": []}

        def visitor(source, rule, err):
            if rule is not None and rule_allows(attrs, rule):
                state["allowed"] = True
                state["reason"] = "RBAC: allowed by %s" % source
                return False
            if err is not None:
                state["errors"].append(err)
            return True

        namespace = _attr(attrs, "namespace")
        self._visit(user, namespace, visitor)
        if state["allowed"]:
            return True, state["reason"]
        if state["errors"]:
            return False, "RBAC: " + _aggregate(state["errors"])
        return False, ""

    def binding_escalation(self, user, binding, namespace):
        """The RBAC escalation check of a RoleBinding/ClusterRoleBinding write (namespace ""
        for a ClusterRoleBinding): [] when the user may write it, because it holds `bind` on
        the referenced role (resourceNames honoured) or already holds every rule of that role
        where the binding grants it; else the referenced role's rules it lacks (the whole
        role when it cannot be read), each one rule per verb/group/resource/name."""
        user = user or {}
        if MASTERS_GROUP in (user.get("groups") or []):
            return []
        ref = binding.get("roleRef") or {}
        plural = "clusterroles" if ref.get("kind") == "ClusterRole" else "roles"
        bind = {"verb": "bind", "api_group": RBAC_GROUP, "resource": plural,
                "subresource": "", "name": ref.get("name", ""), "namespace": namespace,
                "path": "", "resource_request": True}
        if self.authorize(user, bind)[0]:
            return []
        rules, err = self._role_ref_rules(ref, namespace)
        if err is not None:
            return [{"roleRef": ref.get("name", "")}]
        missing = []
        for rule in rules:
            for verb in rule.get("verbs") or []:
                for url in rule.get("nonResourceURLs") or []:
                    a = {"verb": verb, "path": url, "resource_request": False}
                    if not self.authorize(user, a)[0]:
                        missing.append({"nonResourceURLs": [url], "verbs": [verb]})
                for group in rule.get("apiGroups") or []:
                    for res in rule.get("resources") or []:
                        base, _, sub = res.partition("/")
                        for name in rule.get("resourceNames") or [""]:
                            a = {"verb": verb, "api_group": group, "resource": base,
                                 "subresource": sub, "name": name, "namespace": namespace,
                                 "path": "", "resource_request": True}
                            if not self.authorize(user, a)[0]:
                                m = {"apiGroups": [group], "resources": [res], "verbs": [verb]}
                                if name:
                                    m["resourceNames"] = [name]
                                missing.append(m)
        return missing

    def rules_for(self, user, namespace):
        """(rules, errors) in force for the user in a namespace ("" for
        cluster-wide rules only): the input of SelfSubjectRulesReview."""
        rules, errors = [], []

        def visitor(source, rule, err):
            if rule is not None:
                rules.append(rule)
            if err is not None:
                errors.append(err)
            return True

        self._visit(user or {}, namespace or "", visitor)
        return rules, errors


# ---------------------------------------------------------------------------
# 403 responses (apiserver endpoints/handlers/responsewriters)
# ---------------------------------------------------------------------------

def _sanitize(s):
    return s.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def _q(s):
    return go_quote(s)


def _authz_text(user, attrs):
    username = (user or {}).get("username", "")
    verb = _attr(attrs, "verb")
    if not attrs.get("resource_request", True):
        return "User %s cannot %s path %s" % (_q(username), verb, _q(_attr(attrs, "path")))
    resource = _attr(attrs, "resource")
    sub = _attr(attrs, "subresource")
    if sub:
        resource = resource + "/" + sub
    group = _attr(attrs, "api_group")
    ns = _attr(attrs, "namespace")
    if ns:
        return "User %s cannot %s resource %s in API group %s in the namespace %s" % (
            _q(username), verb, _q(resource), _q(group), _q(ns))
    return "User %s cannot %s resource %s in API group %s at the cluster scope" % (
        _q(username), verb, _q(resource), _q(group))


def forbidden_message(user, attrs, reason=""):
    """The message of the 403 Forbidden Status for a denied request, e.g.

    ``pods is forbidden: User "alice" cannot list resource "pods" in API group "" in the namespace "default"``
    ``nodes "n1" is forbidden: User "x" cannot get resource "nodes" in API group "" at the cluster scope``
    ``forbidden: User "x" cannot get path "/healthz"``

    ``reason`` is the authorizer's deny reason; when non-empty it is appended
    after ": " as the real server does.
    """
    msg = _sanitize(_authz_text(user, attrs))
    if reason:
        msg = "%s: %s" % (msg, reason)
    if not attrs.get("resource_request", True):
        resource = ""
    else:
        resource = _attr(attrs, "resource")
    group = _attr(attrs, "api_group") if resource else ""
    if not resource and not group:
        return "forbidden: %s" % msg
    qualified = resource + ("." + group if group else "")
    name = _attr(attrs, "name") if resource else ""
    if name:
        return "%s %s is forbidden: %s" % (qualified, _q(name), msg)
    return "%s is forbidden: %s" % (qualified, msg)


def escalation_message(user, qualified, name, missing):
    """The 403 text of a binding write refused by the escalation check, as the real server
    words it (rbac/validation ConfirmNoEscalation), one missing rule per line."""
    groups = " ".join(_q(g) for g in (user or {}).get("groups") or [])
    lines = []
    for m in missing:
        if "roleRef" in m:
            lines.append("the referenced role %s cannot be read" % _q(m["roleRef"]))
        elif "nonResourceURLs" in m:
            lines.append("{NonResourceURLs:[%s], Verbs:[%s]}" % (
                _q(m["nonResourceURLs"][0]), _q(m["verbs"][0])))
        else:
            names = (", ResourceNames:[%s]" % _q(m["resourceNames"][0])
                     if m.get("resourceNames") else "")
            lines.append("{APIGroups:[%s], Resources:[%s]%s, Verbs:[%s]}" % (
                _q(m["apiGroups"][0]), _q(m["resources"][0]), names, _q(m["verbs"][0])))
    return ("%s %s is forbidden: user %s (groups=[%s]) is attempting to grant RBAC permissions "
            "not currently held:\n%s" % (qualified, _q(name), _q((user or {}).get("username", "")),
                                        groups, "\n".join(lines)))


def forbidden_status(user, attrs, reason=""):
    """The whole metav1.Status body of the 403."""
    details = {}
    if attrs.get("resource_request", True):
        if _attr(attrs, "name"):
            details["name"] = _attr(attrs, "name")
        if _attr(attrs, "api_group"):
            details["group"] = _attr(attrs, "api_group")
        if _attr(attrs, "resource"):
            details["kind"] = _attr(attrs, "resource")
    return {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
            "message": forbidden_message(user, attrs, reason), "reason": "Forbidden",
            "details": details, "code": 403}


# ---------------------------------------------------------------------------
# bootstrap policy (the part of kube-apiserver's default roles a client meets)
# ---------------------------------------------------------------------------

def bootstrap_policy():
    """(cluster_roles, cluster_role_bindings): cluster-admin for
    system:masters, and the discovery/basic-user/public-info roles every
    authenticated client relies on for kubectl discovery."""
    meta_labels = {"kubernetes.io/bootstrapping": "rbac-defaults"}
    annotations = {"rbac.authorization.kubernetes.io/autoupdate": "true"}

    def role(name, rules, extra_labels=None):
        labels = dict(meta_labels)
        labels.update(extra_labels or {})
        return {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
                "metadata": {"name": name, "labels": labels,
                             "annotations": dict(annotations)},
                "rules": rules}

    def binding(name, role_name, groups):
        return {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
                "metadata": {"name": name, "labels": dict(meta_labels),
                             "annotations": dict(annotations)},
                "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                            "name": role_name},
                "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "Group",
                              "name": g} for g in groups]}

    roles = [
        role("cluster-admin", [
            {"apiGroups": ["*"], "resources": ["*"], "verbs": ["*"]},
            {"nonResourceURLs": ["*"], "verbs": ["*"]},
        ]),
        role("system:discovery", [
            {"nonResourceURLs": ["/api", "/api/*", "/apis", "/apis/*", "/healthz",
                                 "/livez", "/openapi", "/openapi/*", "/readyz",
                                 "/version", "/version/"],
             "verbs": ["get"]},
        ]),
        role("system:basic-user", [
            {"apiGroups": ["authorization.k8s.io"],
             "resources": ["selfsubjectaccessreviews", "selfsubjectrulesreviews"],
             "verbs": ["create"]},
            {"apiGroups": ["authentication.k8s.io"], "resources": ["selfsubjectreviews"],
             "verbs": ["create"]},
        ]),
        role("system:service-account-issuer-discovery", [
            {"nonResourceURLs": ["/.well-known/openid-configuration",
                                 "/.well-known/openid-configuration/",
                                 "/openid/v1/jwks", "/openid/v1/jwks/"],
             "verbs": ["get"]},
        ]),
        role("system:public-info-viewer", [
            {"nonResourceURLs": ["/healthz", "/livez", "/readyz", "/version", "/version/"],
             "verbs": ["get"]},
        ]),
    ]
    bindings = [
        binding("cluster-admin", "cluster-admin", ["system:masters"]),
        binding("system:discovery", "system:discovery", ["system:authenticated"]),
        binding("system:basic-user", "system:basic-user", ["system:authenticated"]),
        binding("system:service-account-issuer-discovery",
                "system:service-account-issuer-discovery", ["system:serviceaccounts"]),
        binding("system:public-info-viewer", "system:public-info-viewer",
                ["system:authenticated", "system:unauthenticated"]),
    ]
    return roles, bindings
