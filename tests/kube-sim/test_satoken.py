"""kubesim/satoken: projected ServiceAccount tokens and the TokenReview kube-sim answers for them."""
import base64
import hashlib
import json
import os
import subprocess
import sys
import tempfile
import unittest

from kubesim import satoken
from simtest import KUBE_SIM, SimProcess

AGENT = "system:serviceaccount:tau-system:tau-node-agent"


def claims_of(token):
    parts = token.split(".")
    body = parts[1] + "=" * (-len(parts[1]) % 4)
    return len(parts), json.loads(base64.urlsafe_b64decode(body))


class SaToken(unittest.TestCase):
    def test_claims(self):
        n, c = claims_of(satoken.projected_token(AGENT, ["taugrid"], node="gpu-1", pod="p-1"))
        self.assertEqual(n, 3)
        self.assertEqual(c["sub"], AGENT)
        self.assertEqual(c["aud"], ["taugrid"])
        self.assertEqual(c["kubernetes.io"], {"namespace": "tau-system",
                                              "serviceaccount": {"name": "tau-node-agent"},
                                              "node": {"name": "gpu-1"}, "pod": {"name": "p-1"}})
        self.assertNotIn("jti", c)

    def test_tag_makes_tokens_distinct(self):
        a = satoken.projected_token(AGENT, ["taugrid"], node="gpu-1")
        b = satoken.projected_token(AGENT, ["taugrid"], node="gpu-1", tag="x")
        self.assertNotEqual(a, b)
        self.assertEqual(claims_of(b)[1]["jti"], "x")

    def test_not_a_service_account(self):
        for bad in ("alice", "system:serviceaccount:ns", "system:node:gpu-1:x"):
            with self.assertRaises(ValueError):
                satoken.projected_token(bad, ["taugrid"])
            with self.assertRaises(ValueError):
                satoken.table_entry(bad, ["taugrid"])

    def test_token_review_answers_the_table_entry(self):
        tok = satoken.projected_token(AGENT, ["taugrid"], node="gpu-1", pod="p-1")
        unknown = satoken.projected_token(AGENT, ["taugrid"], node="gpu-1", tag="not-issued")
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "tokens.json")
            with open(path, "w") as f:
                json.dump({tok: satoken.table_entry(AGENT, ["taugrid"], node="gpu-1",
                                                    pod="p-1")}, f)
            with SimProcess(["--tokens", path]) as sim:
                review = {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview",
                          "spec": {"token": tok, "audiences": ["taugrid"]}}
                code, out = sim.req("POST", "/apis/authentication.k8s.io/v1/tokenreviews",
                                    review)
                self.assertEqual(code, 201)
                st = out["status"]
                self.assertTrue(st["authenticated"])
                self.assertEqual(st["user"]["username"], AGENT)
                self.assertEqual(st["user"]["extra"],
                                 {"authentication.kubernetes.io/node-name": ["gpu-1"],
                                  "authentication.kubernetes.io/pod-name": ["p-1"]})
                self.assertEqual(st["audiences"], ["taugrid"])
                review["spec"]["token"] = unknown
                code, out = sim.req("POST", "/apis/authentication.k8s.io/v1/tokenreviews",
                                    review)
                self.assertEqual(code, 201)
                self.assertNotIn("authenticated", out["status"])
                self.assertIn("token lookup failed", out["status"]["error"])


def b64d(s):
    return base64.urlsafe_b64decode(s + "=" * (-len(s) % 4))


def openssl(*args, data=None):
    return subprocess.run(["openssl"] + list(args), input=data, capture_output=True, check=True).stdout


class Signed(unittest.TestCase):
    """Signed tokens and the issuer discovery that publishes their key, each checked against
    openssl (not against satoken's own encoder)."""

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory()
        cls.key_path = os.path.join(cls.tmp.name, "sa.key")
        cls.key = satoken.SigningKey.generate(cls.key_path)
        cls.pub_pem = openssl("pkey", "-in", cls.key_path, "-pubout")
        cls.pub_der = openssl("pkey", "-in", cls.key_path, "-pubout", "-outform", "DER")

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def verify(self, signing_input, sig):
        pub = os.path.join(self.tmp.name, "pub.pem")
        sig_path = os.path.join(self.tmp.name, "sig")
        with open(pub, "wb") as f:
            f.write(self.pub_pem)
        with open(sig_path, "wb") as f:
            f.write(sig)
        r = subprocess.run(["openssl", "dgst", "-sha256", "-verify", pub, "-signature", sig_path],
                           input=signing_input, capture_output=True)
        return r.returncode == 0

    def test_signed_token_verifies_with_openssl(self):
        tok = satoken.projected_token(AGENT, ["taugrid"], node="gpu-1", pod="p-1", key=self.key)
        h, c, s = tok.split(".")
        self.assertEqual(json.loads(b64d(h)), {"alg": "RS256", "kid": self.key.kid})
        claims = json.loads(b64d(c))
        self.assertEqual(claims["iss"], satoken.ISSUER)
        self.assertEqual(claims["exp"] - claims["iat"], satoken.LIFETIME_S)
        self.assertEqual(claims["nbf"], claims["iat"])
        self.assertTrue(self.verify((h + "." + c).encode(), b64d(s)))
        self.assertFalse(self.verify((h + "." + c + "x").encode(), b64d(s)))
        # The stdlib path signs the same bytes (PKCS#1 v1.5 is deterministic).
        self.assertEqual(self.key.sign((h + "." + c).encode(), slow=True), b64d(s))
        # Same arguments, same token, for the whole run.
        self.assertEqual(tok, satoken.projected_token(AGENT, ["taugrid"], node="gpu-1",
                                                      pod="p-1", key=self.key))

    def test_kid_and_jwk_are_the_public_key(self):
        self.assertEqual(self.key.kid, satoken._b64url(hashlib.sha256(self.pub_der).digest()))
        modulus = openssl("rsa", "-in", self.key_path, "-noout", "-modulus").decode()
        jwk = self.key.jwk()
        self.assertEqual(b64d(jwk["n"]).hex().upper(), modulus.strip().split("=")[1])
        self.assertEqual(jwk["e"], "AQAB")
        self.assertEqual((jwk["kty"], jwk["alg"], jwk["use"]), ("RSA", "RS256", "sig"))

    def test_not_a_key(self):
        for pem in (b"", b"-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n",
                    openssl("genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256")):
            with self.assertRaises((ValueError, IndexError)):
                satoken.SigningKey(pem)

    def test_discovery_and_jwks(self):
        tok = satoken.projected_token(AGENT, ["taugrid"], node="gpu-1", key=self.key)
        tokens = os.path.join(self.tmp.name, "tokens.json")
        with open(tokens, "w") as f:
            json.dump({tok: satoken.table_entry(AGENT, ["taugrid"], node="gpu-1")}, f)
        with SimProcess(["--authz", "rbac", "--tokens", tokens,
                         "--service-account-signing-key-file", self.key_path]) as sim:
            code, doc = sim.req("GET", "/.well-known/openid-configuration")
            self.assertEqual(code, 200, doc)
            self.assertEqual(doc["issuer"], satoken.ISSUER)
            self.assertEqual(doc["jwks_uri"], sim.server + "/openid/v1/jwks")
            self.assertEqual(doc["id_token_signing_alg_values_supported"], ["RS256"])
            code, jwks = sim.req("GET", "/openid/v1/jwks")
            self.assertEqual(code, 200, jwks)
            self.assertEqual(jwks, {"keys": [self.key.jwk()]})
            # RBAC decides, as system:service-account-issuer-discovery does: a ServiceAccount
            # may read it, anonymous may not.
            code, _ = sim.req("GET", "/openid/v1/jwks", token=tok)
            self.assertEqual(code, 200)
            code, out = sim.req("GET", "/openid/v1/jwks", token="")
            self.assertEqual(code, 403, out)
            self.assertIn("system:anonymous", out["message"])
            # Revoked (its pod deleted): the signature still holds, TokenReview refuses.
            review = {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview",
                      "spec": {"token": tok, "audiences": ["taugrid"]}}
            path = "/apis/authentication.k8s.io/v1/tokenreviews"
            self.assertTrue(sim.req("POST", path, review)[1]["status"]["authenticated"])
            self.assertEqual(sim.req("POST", "/sim/tokens/revoke", {"token": tok})[0], 200)
            self.assertNotIn("authenticated", sim.req("POST", path, review)[1]["status"])
            code, out = sim.req("POST", "/sim/tokens/revoke", {"token": tok})
            self.assertEqual(code, 400)
            self.assertIn("--tokens table", out["message"])

    def test_key_made_when_first_asked(self):
        with SimProcess([]) as sim:
            code, jwks = sim.req("GET", "/openid/v1/jwks")
            self.assertEqual(code, 200)
            self.assertEqual(len(jwks["keys"]), 1)
            self.assertEqual(sim.req("GET", "/openid/v1/jwks")[1], jwks)

    def test_bad_key_file_fails_start(self):
        bad = os.path.join(self.tmp.name, "bad.key")
        with open(bad, "w") as f:
            f.write("not a key\n")
        r = subprocess.run([sys.executable, KUBE_SIM, "--kubeconfig-out",
                            os.path.join(self.tmp.name, "kc"),
                            "--service-account-signing-key-file", bad],
                           capture_output=True, text=True, timeout=60)
        self.assertEqual(r.returncode, 2)
        self.assertIn("kube-sim: --service-account-signing-key-file %s: not a PEM RSA private "
                      "key" % bad, r.stderr)
        self.assertNotIn("ready", r.stdout)


if __name__ == "__main__":
    unittest.main()
