"""Projected ServiceAccount tokens, as the kubelet mounts them into a pod, for kube-sim's token
table (--tokens FILE) and its service-account issuer discovery.

A real API server signs such a token (a JWT) and answers a TokenReview of it with the pod's
ServiceAccount, its audiences and, since Kubernetes 1.30, the pod's node in the user's extra
fields (`authentication.kubernetes.io/node-name`, `.../pod-name`). It also publishes the public
keys the tokens are signed with (`/openid/v1/jwks`) and the issuer
(`/.well-known/openid-configuration`), so a relying party can check a token itself.

`projected_token()` writes the claims a real token carries (`sub`, `aud`, `iss`, `iat`, `nbf`,
`exp`, the `kubernetes.io` claim with the namespace, ServiceAccount, pod and node). Given a
`SigningKey` it signs them RS256, as the API server does, with the key kube-sim publishes (start
kube-sim with `--service-account-signing-key-file` naming the same key); without one the
signature is a placeholder that no key verifies. Either way, who the bearer is for a TokenReview
comes only from the table entry that `table_entry()` builds, as a real cluster's answer comes
only from the API server.

RSA here is the stdlib's `pow` with the key's CRT parts (about 10 ms a token); when the Python
`cryptography` package is importable it signs instead (about 1 ms), with the same result (PKCS#1
v1.5 signatures are deterministic). The key itself is made by `openssl genpkey`, once.
"""
import base64
import hashlib
import json
import os
import subprocess
import time

ISSUER = "https://kubernetes.default.svc.cluster.local"
# When this process's tokens say they were issued, so that the same arguments give the same token
# for the whole run (tests build a token table first and the agents' tokens later).
ISSUED_AT = int(time.time())
LIFETIME_S = 24 * 3600

_SHA256_DIGEST_INFO = bytes.fromhex("3031300d060960864801650304020105000420")
_RSA_OID = bytes.fromhex("06092a864886f70d0101010500")  # rsaEncryption, NULL


def _b64url(data):
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _int_bytes(v):
    return v.to_bytes(max(1, (v.bit_length() + 7) // 8), "big")


# ---- DER, only as much as an RSA key needs ----

def _der_read(buf, i):
    """(tag, content, next index) of the DER element at buf[i]."""
    tag = buf[i]
    n = buf[i + 1]
    i += 2
    if n & 0x80:
        k = n & 0x7F
        if k == 0 or k > 4:
            raise ValueError("bad DER length")
        n = int.from_bytes(buf[i:i + k], "big")
        i += k
    if i + n > len(buf):
        raise ValueError("DER element runs past its end")
    return tag, buf[i:i + n], i + n


def _der_seq(content):
    out, i = [], 0
    while i < len(content):
        tag, c, i = _der_read(content, i)
        out.append((tag, c))
    return out


def _der_len(n):
    if n < 0x80:
        return bytes([n])
    b = _int_bytes(n)
    return bytes([0x80 | len(b)]) + b


def _der(tag, content):
    return bytes([tag]) + _der_len(len(content)) + content


def _der_int(v):
    b = _int_bytes(v)
    if b[0] & 0x80:
        b = b"\0" + b
    return _der(0x02, b)


class SigningKey:
    """An RSA private key: signs RS256 and names itself as the API server does (`kid`: the
    base64url SHA-256 of its DER public key)."""

    def __init__(self, pem):
        lines = [x.strip() for x in pem.decode().splitlines()]
        if "-----BEGIN PRIVATE KEY-----" in lines:
            kind = "PRIVATE KEY"
        elif "-----BEGIN RSA PRIVATE KEY-----" in lines:
            kind = "RSA PRIVATE KEY"
        else:
            raise ValueError("not a PEM RSA private key (PRIVATE KEY or RSA PRIVATE KEY)")
        a = lines.index("-----BEGIN %s-----" % kind)
        b = lines.index("-----END %s-----" % kind)
        der = base64.b64decode("".join(lines[a + 1:b]))
        tag, body, _ = _der_read(der, 0)
        items = _der_seq(body)
        if kind == "PRIVATE KEY":  # PKCS#8: version, algorithm, OCTET STRING(RSAPrivateKey)
            if len(items) < 3 or items[1][1] != _RSA_OID:
                raise ValueError("PKCS#8 key is not RSA")
            tag, body, _ = _der_read(items[2][1], 0)
            items = _der_seq(body)
        if len(items) < 9 or any(t != 0x02 for t, _ in items[:9]):
            raise ValueError("malformed RSAPrivateKey")
        (self.n, self.e, self.d, self.p, self.q, self.dp, self.dq,
         self.qi) = [int.from_bytes(c, "big") for _, c in items[1:9]]
        self.size = (self.n.bit_length() + 7) // 8
        self.pem = pem
        self.kid = _b64url(hashlib.sha256(self.public_der()).digest())
        self._fast = None
        try:
            from cryptography.hazmat.primitives import serialization
            self._fast = serialization.load_pem_private_key(pem, password=None)
        except Exception:  # no cryptography package: the stdlib path signs
            self._fast = None

    @classmethod
    def load(cls, path):
        with open(path, "rb") as f:
            return cls(f.read())

    @classmethod
    def generate(cls, path, bits=2048):
        """A new key in `path` (mode 0600), made by openssl."""
        subprocess.run(["openssl", "genpkey", "-algorithm", "RSA", "-pkeyopt",
                        "rsa_keygen_bits:%d" % bits, "-out", path],
                       check=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        os.chmod(path, 0o600)
        return cls.load(path)

    def public_der(self):
        """SubjectPublicKeyInfo of the key, DER."""
        rsa = _der(0x30, _der_int(self.n) + _der_int(self.e))
        return _der(0x30, _der(0x30, _RSA_OID) + _der(0x03, b"\0" + rsa))

    def jwk(self):
        return {"use": "sig", "kty": "RSA", "kid": self.kid, "alg": "RS256",
                "n": _b64url(_int_bytes(self.n)), "e": _b64url(_int_bytes(self.e))}

    def sign(self, data, slow=False):
        """RSASSA-PKCS1-v1_5 with SHA-256 of `data` (RS256); `slow` forces the stdlib path."""
        if self._fast is not None and not slow:
            from cryptography.hazmat.primitives import hashes
            from cryptography.hazmat.primitives.asymmetric import padding
            return self._fast.sign(data, padding.PKCS1v15(), hashes.SHA256())
        t = _SHA256_DIGEST_INFO + hashlib.sha256(data).digest()
        em = b"\0\1" + b"\xff" * (self.size - len(t) - 3) + b"\0" + t
        m = int.from_bytes(em, "big")
        m1 = pow(m, self.dp, self.p)
        m2 = pow(m, self.dq, self.q)
        s = m2 + (self.qi * (m1 - m2) % self.p) * self.q
        return s.to_bytes(self.size, "big")


def jwt(claims, key=None):
    """A JWT (header.claims.signature, base64url, no padding) with `claims`: signed RS256 by
    `key`, else with a placeholder signature."""
    if key is None:
        return ".".join([_b64url(b'{"alg":"RS256","kid":"kube-sim"}'),
                         _b64url(json.dumps(claims, sort_keys=True).encode()),
                         _b64url(b"kube-sim")])
    head = _b64url(json.dumps({"alg": "RS256", "kid": key.kid}, sort_keys=True).encode()) + \
        "." + _b64url(json.dumps(claims, sort_keys=True).encode())
    return head + "." + _b64url(key.sign(head.encode()))


def _split(user):
    parts = user.split(":")
    if len(parts) != 4 or parts[:2] != ["system", "serviceaccount"]:
        raise ValueError("not a ServiceAccount user: %r" % user)
    return parts[2], parts[3]


def projected_token(user, audiences, node="", pod="", tag="", key=None, issued_at=None,
                    lifetime_s=LIFETIME_S, issuer=ISSUER):
    """The token string for ServiceAccount `user` (system:serviceaccount:NS:NAME) in a pod
    `pod` on `node` (either may be empty). `tag` (the jti claim) makes otherwise equal tokens
    distinct. With `key` (a SigningKey) it is signed and carries `iss`, `iat`, `nbf` and `exp`
    (issued at `issued_at`, default ISSUED_AT, valid `lifetime_s`)."""
    ns, name = _split(user)
    k8s = {"namespace": ns, "serviceaccount": {"name": name}}
    if node:
        k8s["node"] = {"name": node}
    if pod:
        k8s["pod"] = {"name": pod}
    claims = {"sub": user, "aud": list(audiences), "kubernetes.io": k8s}
    if tag:
        claims["jti"] = tag
    if key is not None:
        iat = ISSUED_AT if issued_at is None else int(issued_at)
        claims.update({"iss": issuer, "iat": iat, "nbf": iat, "exp": iat + int(lifetime_s)})
    return jwt(claims, key)


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


def discovery(issuer, jwks_uri):
    """The API server's `/.well-known/openid-configuration` for `issuer`."""
    return {"issuer": issuer, "jwks_uri": jwks_uri, "response_types_supported": ["id_token"],
            "subject_types_supported": ["public"],
            "id_token_signing_alg_values_supported": ["RS256"]}
