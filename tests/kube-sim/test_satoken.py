"""kubesim/satoken: projected ServiceAccount tokens and the TokenReview kube-sim answers for them."""
import base64
import json
import os
import tempfile
import unittest

from kubesim import satoken
from simtest import SimProcess

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


if __name__ == "__main__":
    unittest.main()
