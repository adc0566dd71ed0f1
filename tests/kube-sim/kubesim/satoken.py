"""Projected ServiceAccount tokens, as the kubelet mounts them into a pod, for kube-sim's token
table (--tokens FILE).

A real API server signs such a token (a JWT) and answers a TokenReview of it with the pod's
ServiceAccount, its audiences and, since Kubernetes 1.30, the pod's node in the user's extra
fields (`authentication.kubernetes.io/node-name`, `.../pod-name`). kube-sim does not sign: the
JWT's claims say what a real token would say (`sub`, `aud`, the `kubernetes.io` claim with the
namespace, ServiceAccount, pod and node) and the signature is a placeholder. Who the bearer is
comes only from the table entry that `table_entry()` builds, as a real cluster's answer comes
only from the API server.
"""
import base64
import json


def _b64url(data):
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def jwt(claims):
    """A JWT-shaped string (header.claims.signature, base64url, no padding) with `claims`."""
    return ".".join([_b64url(b'{"alg":"RS256","kid":"kube-sim"}'),
                     _b64url(json.dumps(claims, sort_keys=True).encode()),
                     _b64url(b"kube-sim")])


def _split(user):
    parts = user.split(":")
    if len(parts) != 4 or parts[:2] != ["system", "serviceaccount"]:
        raise ValueError("not a ServiceAccount user: %r" % user)
    return parts[2], parts[3]


def projected_token(user, audiences, node="", pod="", tag=""):
    """The token string for ServiceAccount `user` (system:serviceaccount:NS:NAME) in a pod
    `pod` on `node` (either may be empty). `tag` (the jti claim) makes otherwise equal tokens
    distinct."""
    ns, name = _split(user)
    k8s = {"namespace": ns, "serviceaccount": {"name": name}}
    if node:
        k8s["node"] = {"name": node}
    if pod:
        k8s["pod"] = {"name": pod}
    claims = {"sub": user, "aud": list(audiences), "kubernetes.io": k8s}
    if tag:
        claims["jti"] = tag
    return jwt(claims)


def table_entry(user, audiences, node="", pod=""):
    """What kube-sim's TokenReview answers for the token projected_token() made with the same
    arguments: the user, its audiences and the node/pod extra fields."""
    _split(user)
    entry = {"username": user, "groups": ["system:serviceaccounts"], "audiences": list(audiences)}
    extra = {}
    if node:
        extra["authentication.kubernetes.io/node-name"] = [node]
    if pod:
        extra["authentication.kubernetes.io/pod-name"] = [pod]
    if extra:
        entry["extra"] = extra
    return entry
