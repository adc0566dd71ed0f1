"""Tests for kubesim.rbac: the RBAC authorizer and the 403 texts.

Run from tests/kube-sim:  python3 -m unittest test_rbac -v
"""
import unittest

from kubesim import rbac

RBAC_GROUP = "rbac.authorization.k8s.io"


def meta(name, namespace=None, labels=None):
    m = {"name": name}
    if namespace:
        m["namespace"] = namespace
    if labels:
        m["labels"] = labels
    return m


def role(name, ns, rules):
    return {"kind": "Role", "metadata": meta(name, ns), "rules": rules}


def cluster_role(name, rules=None, labels=None, aggregation=None):
    cr = {"kind": "ClusterRole", "metadata": meta(name, labels=labels), "rules": rules or []}
    if aggregation is not None:
        cr["aggregationRule"] = {"clusterRoleSelectors": aggregation}
    return cr


def subject(kind, name, ns=None):
    s = {"kind": kind, "name": name}
    if kind != "ServiceAccount":
        s["apiGroup"] = RBAC_GROUP
    if ns:
        s["namespace"] = ns
    return s


def role_binding(name, ns, ref_kind, ref_name, subjects):
    return {"kind": "RoleBinding", "metadata": meta(name, ns),
            "roleRef": {"apiGroup": RBAC_GROUP, "kind": ref_kind, "name": ref_name},
            "subjects": subjects}


def cluster_role_binding(name, ref_name, subjects, ref_kind="ClusterRole"):
    return {"kind": "ClusterRoleBinding", "metadata": meta(name),
            "roleRef": {"apiGroup": RBAC_GROUP, "kind": ref_kind, "name": ref_name},
            "subjects": subjects}


class Store(object):
    """A stand-in for the simulator's storage."""

    def __init__(self, *objs):
        self.objs = list(objs)
        self.calls = []

    def add(self, *objs):
        self.objs.extend(objs)

    def list_objects(self, plural, namespace):
        self.calls.append((plural, namespace))
        kind = {"roles": "Role", "rolebindings": "RoleBinding", "clusterroles": "ClusterRole",
                "clusterrolebindings": "ClusterRoleBinding"}[plural]
        out = []
        for o in self.objs:
            if o["kind"] != kind:
                continue
            if namespace is not None and o["metadata"].get("namespace") != namespace:
                continue
            out.append(o)
        return out


def user(name, *groups):
    return {"username": name, "groups": list(groups), "uid": "", "extra": {}}


def sa_user(ns, name):
    return user("system:serviceaccount:%s:%s" % (ns, name), "system:serviceaccounts",
                "system:serviceaccounts:" + ns, "system:authenticated")


def res(verb, resource, namespace="", name="", group="", subresource=""):
    return {"verb": verb, "api_group": group, "resource": resource, "subresource": subresource,
            "name": name, "namespace": namespace, "path": "", "resource_request": True}


def url(verb, path):
    return {"verb": verb, "api_group": "", "resource": "", "subresource": "", "name": "",
            "namespace": "", "path": path, "resource_request": False}


class RuleMatchingTest(unittest.TestCase):
    """rule_allows, table driven."""

    CASES = [
        # (rule, attrs, allowed)
        ({"verbs": ["get"], "apiGroups": [""], "resources": ["pods"]}, res("get", "pods", "d"), True),
        ({"verbs": ["get"], "apiGroups": [""], "resources": ["pods"]}, res("list", "pods", "d"), False),
        ({"verbs": ["*"], "apiGroups": [""], "resources": ["pods"]}, res("delete", "pods", "d"), True),
        ({"verbs": ["get"], "apiGroups": ["apps"], "resources": ["pods"]}, res("get", "pods", "d"), False),
        ({"verbs": ["get"], "apiGroups": ["*"], "resources": ["deployments"]},
         res("get", "deployments", "d", group="apps"), True),
        ({"verbs": ["get"], "apiGroups": [""], "resources": ["*"]}, res("get", "secrets", "d"), True),
        # subresources
        ({"verbs": ["update"], "apiGroups": [""], "resources": ["nodes"]},
         res("update", "nodes", name="n1", subresource="status"), False),
        ({"verbs": ["update"], "apiGroups": [""], "resources": ["nodes/status"]},
         res("update", "nodes", name="n1", subresource="status"), True),
        ({"verbs": ["update"], "apiGroups": [""], "resources": ["nodes/status"]},
         res("update", "nodes", name="n1"), False),
        ({"verbs": ["update"], "apiGroups": [""], "resources": ["*/status"]},
         res("update", "pods", "d", name="p", subresource="status"), True),
        ({"verbs": ["update"], "apiGroups": [""], "resources": ["*/status"]},
         res("update", "pods", "d", name="p"), False),
        ({"verbs": ["update"], "apiGroups": [""], "resources": ["*/status"]},
         res("update", "pods", "d", name="p", subresource="ephemeralstatus"), False),
        ({"verbs": ["get"], "apiGroups": [""], "resources": ["*"]},
         res("get", "pods", "d", name="p", subresource="log"), True),
        ({"verbs": ["get"], "apiGroups": [""], "resources": ["pods/*"]},
         res("get", "pods", "d", name="p", subresource="log"), False),
        # resourceNames
        ({"verbs": ["get", "update"], "apiGroups": [""], "resources": ["configmaps"],
          "resourceNames": ["cm1"]}, res("get", "configmaps", "d", name="cm1"), True),
        ({"verbs": ["get"], "apiGroups": [""], "resources": ["configmaps"],
          "resourceNames": ["cm1"]}, res("get", "configmaps", "d", name="cm2"), False),
        ({"verbs": ["list"], "apiGroups": [""], "resources": ["configmaps"],
          "resourceNames": ["cm1"]}, res("list", "configmaps", "d"), False),
        ({"verbs": ["create"], "apiGroups": [""], "resources": ["configmaps"],
          "resourceNames": ["cm1"]}, res("create", "configmaps", "d"), False),
        ({"verbs": ["list"], "apiGroups": [""], "resources": ["configmaps"],
          "resourceNames": ["cm1"]}, res("list", "configmaps", "d", name="cm1"), True),
        # non-resource URLs
        ({"verbs": ["get"], "nonResourceURLs": ["/healthz"]}, url("get", "/healthz"), True),
        ({"verbs": ["get"], "nonResourceURLs": ["/healthz"]}, url("get", "/healthz/ready"), False),
        ({"verbs": ["get"], "nonResourceURLs": ["/healthz/*"]}, url("get", "/healthz/ready"), True),
        ({"verbs": ["get"], "nonResourceURLs": ["/healthz*"]}, url("get", "/healthzz"), True),
        ({"verbs": ["get"], "nonResourceURLs": ["*"]}, url("get", "/metrics"), True),
        ({"verbs": ["get"], "nonResourceURLs": ["/metrics"]}, url("post", "/metrics"), False),
        # resource rules never cover URLs and vice versa
        ({"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"]}, url("get", "/metrics"), False),
        ({"verbs": ["*"], "nonResourceURLs": ["*"]}, res("get", "pods", "d"), False),
    ]

    def test_table(self):
        for i, (rule, attrs, want) in enumerate(self.CASES):
            with self.subTest(i=i, rule=rule, attrs=attrs):
                self.assertEqual(rbac.rule_allows(attrs, rule), want)


class AuthorizeTest(unittest.TestCase):
    def setUp(self):
        self.store = Store(
            role("pod-reader", "dev", [{"verbs": ["get", "list", "watch"], "apiGroups": [""],
                                        "resources": ["pods"]}]),
            cluster_role("cq-admin", [{"verbs": ["*"], "apiGroups": ["kueue.x-k8s.io"],
                                       "resources": ["clusterqueues", "clusterqueues/status"]}]),
            cluster_role("secret-reader", [{"verbs": ["get"], "apiGroups": [""],
                                            "resources": ["secrets"]}]),
            cluster_role("healthz", [{"verbs": ["get"], "nonResourceURLs": ["/healthz", "/debug/*"]}]),
            role_binding("alice-pods", "dev", "Role", "pod-reader", [subject("User", "alice")]),
            role_binding("ops-secrets", "dev", "ClusterRole", "secret-reader",
                         [subject("Group", "ops")]),
            role_binding("sa-pods", "dev", "Role", "pod-reader",
                         [subject("ServiceAccount", "builder")]),
            cluster_role_binding("controller-cq", "cq-admin",
                                 [subject("ServiceAccount", "ctrl", "tau-system")]),
            cluster_role_binding("health", "healthz", [subject("User", "probe")]),
        )
        self.authz = rbac.Authorizer(self.store.list_objects)

    def check(self, u, attrs, allowed, reason):
        self.assertEqual(self.authz.authorize(u, attrs), (allowed, reason))

    def test_role_binding_to_role(self):
        self.check(user("alice"), res("list", "pods", "dev"), True,
                   'RBAC: allowed by RoleBinding "alice-pods/dev" of Role "pod-reader" to User "alice"')

    def test_role_binding_is_namespaced(self):
        self.check(user("alice"), res("list", "pods", "prod"), False, "")
        self.check(user("alice"), res("list", "pods"), False, "")
        self.check(user("alice"), res("delete", "pods", "dev", name="p"), False, "")

    def test_role_binding_to_cluster_role_grants_only_in_its_namespace(self):
        self.check(user("bob", "ops"), res("get", "secrets", "dev", name="s"), True,
                   'RBAC: allowed by RoleBinding "ops-secrets/dev" of ClusterRole "secret-reader" to Group "ops"')
        self.check(user("bob", "ops"), res("get", "secrets", "kube-system", name="s"), False, "")

    def test_service_account_subject_defaults_to_binding_namespace(self):
        self.check(sa_user("dev", "builder"), res("get", "pods", "dev", name="p"), True,
                   'RBAC: allowed by RoleBinding "sa-pods/dev" of Role "pod-reader" to ServiceAccount "builder/dev"')
        self.check(sa_user("other", "builder"), res("get", "pods", "dev", name="p"), False, "")
        # not a service account user, even with the same trailing name
        self.check(user("builder"), res("get", "pods", "dev", name="p"), False, "")

    def test_cluster_role_binding_grants_everywhere(self):
        u = sa_user("tau-system", "ctrl")
        self.check(u, res("update", "clusterqueues", name="cq", group="kueue.x-k8s.io",
                          subresource="status"), True,
                   'RBAC: allowed by ClusterRoleBinding "controller-cq" of ClusterRole "cq-admin" to ServiceAccount "ctrl/tau-system"')
        self.check(u, res("list", "clusterqueues", group="kueue.x-k8s.io"), True,
                   'RBAC: allowed by ClusterRoleBinding "controller-cq" of ClusterRole "cq-admin" to ServiceAccount "ctrl/tau-system"')
        self.check(u, res("list", "localqueues", "ws1", group="kueue.x-k8s.io"), False, "")

    def test_service_account_subject_in_cluster_role_binding_needs_namespace(self):
        self.store.add(cluster_role_binding("no-ns", "secret-reader",
                                            [subject("ServiceAccount", "lost")]))
        self.check(sa_user("dev", "lost"), res("get", "secrets", "dev", name="s"), False, "")

    def test_non_resource_urls_need_a_cluster_role_binding(self):
        self.check(user("probe"), url("get", "/healthz"), True,
                   'RBAC: allowed by ClusterRoleBinding "health" of ClusterRole "healthz" to User "probe"')
        self.check(user("probe"), url("get", "/debug/pprof"), True,
                   'RBAC: allowed by ClusterRoleBinding "health" of ClusterRole "healthz" to User "probe"')
        self.check(user("probe"), url("get", "/metrics"), False, "")
        self.store.add(role_binding("rb-health", "dev", "ClusterRole", "healthz",
                                    [subject("User", "carol")]))
        self.check(user("carol"), url("get", "/healthz"), False, "")

    def test_system_masters(self):
        self.check(user("root", "system:masters"), res("delete", "nodes", name="n1"), True, "")
        self.check(user("root", "system:masters"), url("get", "/anything"), True, "")

    def test_unknown_user_and_group(self):
        self.check(user("mallory", "system:authenticated"), res("get", "pods", "dev", name="p"),
                   False, "")

    def test_missing_roles_are_reported(self):
        self.store.add(role_binding("dangling", "dev", "Role", "gone", [subject("User", "dan")]),
                       cluster_role_binding("dangling-c", "gone-c", [subject("User", "dan")]))
        self.check(user("dan"), res("get", "pods", "dev", name="p"), False,
                   'RBAC: [clusterrole.rbac.authorization.k8s.io "gone-c" not found, '
                   'role.rbac.authorization.k8s.io "gone" not found]')
        self.check(user("dan"), res("get", "nodes", name="n"), False,
                   'RBAC: clusterrole.rbac.authorization.k8s.io "gone-c" not found')

    def test_missing_role_does_not_hide_a_grant(self):
        self.store.add(role_binding("dangling", "dev", "Role", "gone", [subject("User", "alice")]))
        allowed, reason = self.authz.authorize(user("alice"), res("get", "pods", "dev", name="p"))
        self.assertTrue(allowed)

    def test_unsupported_role_ref_kind(self):
        self.store.add(cluster_role_binding("odd", "x", [subject("User", "eve")], ref_kind="Thing"))
        self.check(user("eve"), res("get", "nodes", name="n"), False,
                   'RBAC: unsupported role reference kind: "Thing"')

    def test_first_matching_subject_is_named(self):
        self.store.add(cluster_role_binding("multi", "secret-reader", [
            subject("User", "zed"), subject("Group", "readers")]))
        self.check(user("zed", "readers"), res("get", "secrets", "x", name="s"), True,
                   'RBAC: allowed by ClusterRoleBinding "multi" of ClusterRole "secret-reader" to User "zed"')
        self.check(user("yan", "readers"), res("get", "secrets", "x", name="s"), True,
                   'RBAC: allowed by ClusterRoleBinding "multi" of ClusterRole "secret-reader" to Group "readers"')

    def test_cluster_role_bindings_are_checked_before_role_bindings(self):
        self.store.add(cluster_role_binding("alice-global", "secret-reader",
                                            [subject("User", "alice")]),
                       role_binding("alice-local", "dev", "ClusterRole", "secret-reader",
                                    [subject("User", "alice")]))
        _, reason = self.authz.authorize(user("alice"), res("get", "secrets", "dev", name="s"))
        self.assertIn('ClusterRoleBinding "alice-global"', reason)

    def test_changes_apply_immediately(self):
        self.check(user("late"), res("get", "pods", "dev", name="p"), False, "")
        self.store.add(role_binding("late", "dev", "Role", "pod-reader", [subject("User", "late")]))
        self.assertTrue(self.authz.authorize(user("late"), res("get", "pods", "dev", name="p"))[0])

    def test_rules_for(self):
        rules, errors = self.authz.rules_for(user("bob", "ops"), "dev")
        self.assertEqual(rules, [{"verbs": ["get"], "apiGroups": [""], "resources": ["secrets"]}])
        self.assertEqual(errors, [])


class AggregationTest(unittest.TestCase):
    def setUp(self):
        agg_label = {"rbac.example.com/aggregate-to-monitoring": "true"}
        self.store = Store(
            cluster_role("monitoring", rules=[{"verbs": ["delete"], "apiGroups": [""],
                                               "resources": ["pods"]}],
                         labels=agg_label,
                         aggregation=[{"matchLabels": agg_label}]),
            cluster_role("mon-pods", [{"verbs": ["get", "list"], "apiGroups": [""],
                                       "resources": ["pods"]}], labels=agg_label),
            cluster_role("mon-nodes", [{"verbs": ["get"], "apiGroups": [""],
                                        "resources": ["nodes"]},
                                       {"verbs": ["get", "list"], "apiGroups": [""],
                                        "resources": ["pods"]}], labels=agg_label),
            cluster_role("unrelated", [{"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"]}]),
            cluster_role_binding("mon", "monitoring", [subject("User", "mona")]),
        )
        self.authz = rbac.Authorizer(self.store.list_objects)

    def test_aggregated_rules(self):
        cr = self.store.objs[0]
        self.assertEqual(self.authz.aggregated_rules(cr), [
            {"verbs": ["get"], "apiGroups": [""], "resources": ["nodes"]},
            {"verbs": ["get", "list"], "apiGroups": [""], "resources": ["pods"]},
        ])

    def test_authorize_through_aggregation(self):
        u = user("mona")
        self.assertEqual(self.authz.authorize(u, res("get", "nodes", name="n")),
                         (True, 'RBAC: allowed by ClusterRoleBinding "mon" of ClusterRole '
                                '"monitoring" to User "mona"'))
        self.assertTrue(self.authz.authorize(u, res("list", "pods", "x"))[0])
        # the aggregated role's own rules are replaced by the aggregation
        self.assertFalse(self.authz.authorize(u, res("delete", "pods", "x", name="p"))[0])
        # roles without the label are not pulled in
        self.assertFalse(self.authz.authorize(u, res("get", "secrets", "x", name="s"))[0])

    def test_new_labelled_role_is_picked_up(self):
        self.store.add(cluster_role("mon-secrets", [{"verbs": ["get"], "apiGroups": [""],
                                                     "resources": ["secrets"]}],
                                    labels={"rbac.example.com/aggregate-to-monitoring": "true"}))
        self.assertTrue(self.authz.authorize(user("mona"), res("get", "secrets", "x", name="s"))[0])

    def test_match_expressions(self):
        self.store.add(
            cluster_role("tiered", aggregation=[{"matchExpressions": [
                {"key": "tier", "operator": "In", "values": ["a", "b"]},
                {"key": "legacy", "operator": "DoesNotExist"}]}]),
            cluster_role("tier-a", [{"verbs": ["get"], "apiGroups": [""], "resources": ["a"]}],
                         labels={"tier": "a"}),
            cluster_role("tier-c", [{"verbs": ["get"], "apiGroups": [""], "resources": ["c"]}],
                         labels={"tier": "c"}),
            cluster_role("tier-b-legacy", [{"verbs": ["get"], "apiGroups": [""],
                                            "resources": ["b"]}],
                         labels={"tier": "b", "legacy": "yes"}),
        )
        tiered = self.store.objs[-4]
        self.assertEqual([r["resources"] for r in self.authz.aggregated_rules(tiered)], [["a"]])

    def test_selector_operators(self):
        m = rbac.selector_matches
        self.assertTrue(m({}, {"a": "1"}))
        self.assertTrue(m({"matchLabels": {"a": "1"}}, {"a": "1", "b": "2"}))
        self.assertFalse(m({"matchLabels": {"a": "1"}}, {"a": "2"}))
        self.assertTrue(m({"matchExpressions": [{"key": "a", "operator": "NotIn",
                                                 "values": ["1"]}]}, {}))
        self.assertFalse(m({"matchExpressions": [{"key": "a", "operator": "NotIn",
                                                  "values": ["1"]}]}, {"a": "1"}))
        self.assertTrue(m({"matchExpressions": [{"key": "a", "operator": "Exists"}]}, {"a": ""}))
        self.assertFalse(m({"matchExpressions": [{"key": "a", "operator": "Exists"}]}, {}))

    def test_nested_aggregation(self):
        self.store.add(
            cluster_role("top", aggregation=[{"matchLabels": {"level": "top"}}]),
            cluster_role("middle", labels={"level": "top"},
                         aggregation=[{"matchLabels": {"level": "middle"}}]),
            cluster_role("bottom", [{"verbs": ["get"], "apiGroups": [""], "resources": ["x"]}],
                         labels={"level": "middle"}),
            cluster_role_binding("top", "top", [subject("User", "t")]),
        )
        self.assertTrue(self.authz.authorize(user("t"), res("get", "x", "ns", name="n"))[0])


class ForbiddenMessageTest(unittest.TestCase):
    def test_namespaced_list(self):
        self.assertEqual(
            rbac.forbidden_message(user("alice"), res("list", "pods", "default")),
            'pods is forbidden: User "alice" cannot list resource "pods" in API group "" in the '
            'namespace "default"')

    def test_named_cluster_scoped(self):
        self.assertEqual(
            rbac.forbidden_message(user("x"), res("get", "nodes", name="n1")),
            'nodes "n1" is forbidden: User "x" cannot get resource "nodes" in API group "" at the '
            'cluster scope')

    def test_subresource_and_group(self):
        self.assertEqual(
            rbac.forbidden_message(sa_user("tau-system", "ctrl"),
                                   res("update", "clusterqueues", name="cq",
                                       group="kueue.x-k8s.io", subresource="status")),
            'clusterqueues.kueue.x-k8s.io "cq" is forbidden: User '
            '"system:serviceaccount:tau-system:ctrl" cannot update resource '
            '"clusterqueues/status" in API group "kueue.x-k8s.io" at the cluster scope')
        self.assertEqual(
            rbac.forbidden_message(user("x"), res("update", "nodes", name="n1",
                                                  subresource="status")),
            'nodes "n1" is forbidden: User "x" cannot update resource "nodes/status" in API '
            'group "" at the cluster scope')

    def test_list_across_namespaces(self):
        self.assertEqual(
            rbac.forbidden_message(user("x"), res("watch", "localqueues",
                                                  group="kueue.x-k8s.io")),
            'localqueues.kueue.x-k8s.io is forbidden: User "x" cannot watch resource '
            '"localqueues" in API group "kueue.x-k8s.io" at the cluster scope')

    def test_create_in_namespace(self):
        self.assertEqual(
            rbac.forbidden_message(user("x"), res("create", "leases", "tau-system",
                                                  group="coordination.k8s.io")),
            'leases.coordination.k8s.io is forbidden: User "x" cannot create resource "leases" '
            'in API group "coordination.k8s.io" in the namespace "tau-system"')

    def test_non_resource(self):
        self.assertEqual(rbac.forbidden_message(user("x"), url("get", "/healthz")),
                         'forbidden: User "x" cannot get path "/healthz"')
        self.assertEqual(rbac.forbidden_message(user("system:anonymous"), url("get", "/")),
                         'forbidden: User "system:anonymous" cannot get path "/"')

    def test_reason_is_appended(self):
        self.assertEqual(
            rbac.forbidden_message(user("dan"), res("get", "nodes", name="n"),
                                   'RBAC: clusterrole.rbac.authorization.k8s.io "gone" not found'),
            'nodes "n" is forbidden: User "dan" cannot get resource "nodes" in API group "" at '
            'the cluster scope: RBAC: clusterrole.rbac.authorization.k8s.io "gone" not found')

    def test_html_is_escaped(self):
        self.assertEqual(rbac.forbidden_message(user("<b>&"), url("get", "/x")),
                         'forbidden: User "&lt;b&gt;&amp;" cannot get path "/x"')

    def test_status(self):
        st = rbac.forbidden_status(user("x"), res("get", "leases", "ns", name="l",
                                                  group="coordination.k8s.io"))
        self.assertEqual(st, {
            "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
            "message": 'leases.coordination.k8s.io "l" is forbidden: User "x" cannot get '
                       'resource "leases" in API group "coordination.k8s.io" in the namespace "ns"',
            "reason": "Forbidden",
            "details": {"name": "l", "group": "coordination.k8s.io", "kind": "leases"},
            "code": 403})
        st = rbac.forbidden_status(user("x"), url("get", "/metrics"))
        self.assertEqual(st["details"], {})
        self.assertEqual(st["message"], 'forbidden: User "x" cannot get path "/metrics"')


class BootstrapPolicyTest(unittest.TestCase):
    def setUp(self):
        roles, bindings = rbac.bootstrap_policy()
        self.store = Store(*(roles + bindings))
        self.authz = rbac.Authorizer(self.store.list_objects)

    def test_authenticated_users_can_discover(self):
        u = user("alice", "system:authenticated")
        for path in ("/api", "/api/v1", "/apis", "/apis/kueue.x-k8s.io/v1beta2", "/version",
                     "/openapi/v3", "/healthz"):
            with self.subTest(path=path):
                self.assertTrue(self.authz.authorize(u, url("get", path))[0])
        self.assertFalse(self.authz.authorize(u, url("get", "/metrics"))[0])
        self.assertFalse(self.authz.authorize(u, res("list", "pods", "default"))[0])
        self.assertTrue(self.authz.authorize(
            u, res("create", "selfsubjectaccessreviews", group="authorization.k8s.io"))[0])

    def test_anonymous_sees_only_public_info(self):
        u = user("system:anonymous", "system:unauthenticated")
        self.assertTrue(self.authz.authorize(u, url("get", "/version"))[0])
        self.assertFalse(self.authz.authorize(u, url("get", "/api"))[0])

    def test_cluster_admin_binding(self):
        ok, reason = rbac.Authorizer(self.store.list_objects).authorize(
            {"username": "admin", "groups": ["admins"]}, res("get", "nodes"))
        self.assertFalse(ok)
        self.store.add(cluster_role_binding("admins", "cluster-admin", [subject("Group", "admins")]))
        self.assertEqual(self.authz.authorize({"username": "admin", "groups": ["admins"]},
                                              url("get", "/metrics")),
                         (True, 'RBAC: allowed by ClusterRoleBinding "admins" of ClusterRole '
                                '"cluster-admin" to Group "admins"'))


if __name__ == "__main__":
    unittest.main()
