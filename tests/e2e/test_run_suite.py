"""tests/e2e/run_suite.py's ctest units: what --list-units reads from a module's source, and the
--units check that refuses to run when the registered units no longer cover the module (a class
added or renamed since cmake ran), so no test drops out of `make test` unseen.

Standard library only; each case writes a small module into a temporary directory.
"""
import os
import subprocess
import sys
import tempfile
import textwrap
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
RUN_SUITE = os.path.join(HERE, "run_suite.py")

MODULE = """
import unittest


class Helper:
    def test_not_a_case(self):
        pass


class Base(unittest.TestCase):
    def helper(self):
        pass


class First(Base):
    def test_a(self):
        pass

    def test_b(self):
        pass


class Second(First):
    def test_c(self):
        pass


class Lonely(unittest.TestCase):
    def test_one(self):
        pass

    def test_two(self):
        pass
"""


class RunSuiteUnitsTest(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="tau-run-suite-")
        self.addCleanup(subprocess.run, ["rm", "-rf", self.dir])
        self.write(MODULE)

    def write(self, text):
        with open(os.path.join(self.dir, "test_sample.py"), "w") as f:
            f.write(textwrap.dedent(text))

    def run_suite(self, *args):
        return subprocess.run([sys.executable, RUN_SUITE] + list(args), cwd=self.dir,
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                              universal_newlines=True, timeout=60)

    def test_list_units(self):
        r = self.run_suite("--list-units", "test_sample.py")
        self.assertEqual(r.returncode, 0, r.stdout)
        # Base has no test; Second inherits First's tests; Helper is no TestCase.
        self.assertEqual(r.stdout.split(), ["First", "Second", "Lonely"])
        r = self.run_suite("--list-units", "test_sample.py", "--by-test", "Lonely")
        self.assertEqual(r.stdout.split(), ["First", "Second", "Lonely.test_one",
                                            "Lonely.test_two"])
        r = self.run_suite("--list-units", "test_sample.py", "--by-test", "Nobody")
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("--by-test names no TestCase class", r.stdout)

    def test_registered_units_run(self):
        spec = "test_sample:First,Second,Lonely.test_one,Lonely.test_two"
        r = self.run_suite("--units", spec, "test_sample.Lonely.test_two")
        self.assertEqual(r.returncode, 0, r.stdout)
        self.assertIn("run_suite: all 1 tests passed", r.stdout)
        r = self.run_suite("--units", spec, "test_sample.Second")
        self.assertIn("run_suite: all 3 tests passed", r.stdout)

    def test_a_class_added_since_configure_fails(self):
        self.write(MODULE + "\n\nclass Added(unittest.TestCase):\n    def test_new(self):\n"
                            "        pass\n")
        r = self.run_suite("--units", "test_sample:First,Second,Lonely", "test_sample.First")
        self.assertEqual(r.returncode, 1, r.stdout)
        self.assertIn("not registered: Added.test_new", r.stdout)
        self.assertIn("configure again (cmake)", r.stdout)
        self.assertNotIn("tests passed", r.stdout)

    def test_a_unit_gone_since_configure_fails(self):
        r = self.run_suite("--units", "test_sample:First,Second,Lonely,Renamed",
                           "test_sample.First")
        self.assertEqual(r.returncode, 1, r.stdout)
        self.assertIn("registered but gone: Renamed", r.stdout)

    def test_a_test_in_two_units_fails(self):
        # Lonely as a whole and one of its tests: that test would run twice.
        r = self.run_suite("--units", "test_sample:First,Second,Lonely,Lonely.test_one",
                           "test_sample.First")
        self.assertEqual(r.returncode, 1, r.stdout)
        self.assertIn("in two units: Lonely.test_one", r.stdout)


if __name__ == "__main__":
    unittest.main(verbosity=2)
