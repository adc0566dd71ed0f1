"""Tokens the suites hand to agents and to kube-sim's TokenReview table (--tokens FILE).

kube-sim answers a TokenReview from a table: the exact token string -> who it is. The agent
token is a JWT whose own claims name the agent's ServiceAccount (the aggregator refuses any
other token before a TokenReview); kubesim.satoken makes them.
"""
import base64
import json
import time

from kubesim import satoken

AGENT_SA = "system:serviceaccount:tau-system:tau-node-agent"
AGENT_USER = AGENT_SA
NODE_NAME = "authentication.kubernetes.io/node-name"


def jwt(claims):
    """A JWT-shaped string with these claims (only kube-sim's token table says who it is)."""
    return satoken.jwt(claims)


def bare_jwt(claims):
    """A JWT-shaped string with these claims, no key id (header {"alg":"RS256"}) and a
    placeholder signature: what the aggregator must look into before any TokenReview."""
    enc = lambda b: base64.urlsafe_b64encode(b).rstrip(b"=").decode()  # noqa: E731
    return ".".join([enc(b'{"alg":"RS256"}'), enc(json.dumps(claims).encode()), enc(b"sig")])


def agent_token(node, tag="", user=AGENT_SA):
    """The token an agent's projected ServiceAccount token would be for `node`. `tag` makes
    tokens for the same node distinct."""
    return satoken.projected_token(user, ["taugrid"], node=node, tag=tag)


def expired_token(user=AGENT_SA):
    """A token whose exp claim passed an hour ago (kube-sim does not check exp)."""
    return bare_jwt({"exp": int(time.time()) - 3600, "sub": user})


def agent_review(node, user=AGENT_SA, audiences=("taugrid",)):
    """What the TokenReview of a node-bound agent token answers."""
    return {"username": user, "audiences": list(audiences), "extra": {NODE_NAME: [node]}}


def agent_tokens(nodes):
    """{agent_token(node): agent_review(node)} for node names or Node objects."""
    out = {}
    for n in nodes:
        name = n if isinstance(n, str) else n["metadata"]["name"]
        out[agent_token(name)] = agent_review(name)
    return out


def write_table(path, table):
    """Write a kube-sim --tokens file; returns path."""
    with open(path, "w") as f:
        json.dump(table, f)
    return path
