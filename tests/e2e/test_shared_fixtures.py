"""The published TauGrid samples in tests/fixtures/taugrid are unmodified upstream copies.

tests/fixtures/taugrid/SOURCE.md records, for each copy, its upstream path, commit and sha256;
this suite checks every copy against that sha256, always (a clean clone has all it needs). Where
the shared fixture set the copies were taken from is at hand (TAU_SHARED_DIR, cmake
-DTAU_SHARED_DIR=..., defaulting to ../shared next to the checkout when there is one), each copy
must also equal its original byte for byte; set but wrong is a failure.
"""
import hashlib
import os
import re
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PUBLISHED_DIR = os.path.join(ROOT, "tests", "fixtures", "taugrid")
PUBLISHED_SAMPLES = ("tau.azure.com_v1alpha1_taucluster.yaml",
                     "tau.azure.com_v1alpha1_tauworkspace.yaml")


def recorded_sums():
    """{file: sha256} from SOURCE.md's table rows (| file | path | commit | sha256 |)."""
    with open(os.path.join(PUBLISHED_DIR, "SOURCE.md")) as f:
        rows = re.findall(r"^\| (\S+\.yaml) \| \S+ \| [0-9a-f]{40} \| ([0-9a-f]{64}) \|$",
                          f.read(), re.M)
    return dict(rows)


class SharedFixturesTest(unittest.TestCase):
    def test_copies_match_their_recorded_sha256(self):
        sums = recorded_sums()
        self.assertEqual(sorted(sums), sorted(PUBLISHED_SAMPLES), "SOURCE.md rows")
        for name in PUBLISHED_SAMPLES:
            with self.subTest(sample=name):
                with open(os.path.join(PUBLISHED_DIR, name), "rb") as f:
                    self.assertEqual(hashlib.sha256(f.read()).hexdigest(), sums[name],
                                     "%s was changed: it must stay the upstream copy" % name)

    def test_copies_match_the_shared_originals_where_present(self):
        shared_dir = os.environ.get("TAU_SHARED_DIR", "")
        shared = os.path.join(shared_dir, "fixtures", "taugrid-crds")
        if shared_dir:
            self.assertTrue(os.path.isdir(shared), "TAU_SHARED_DIR=%s has no "
                            "fixtures/taugrid-crds" % shared_dir)
        for name in PUBLISHED_SAMPLES if shared_dir else ():
            with self.subTest(sample=name):
                with open(os.path.join(shared, name), "rb") as a, \
                        open(os.path.join(PUBLISHED_DIR, name), "rb") as b:
                    self.assertEqual(a.read(), b.read(), "%s differs from the original" % name)


if __name__ == "__main__":
    unittest.main()
