#!/usr/bin/env python3
"""Runs Python unittest suites for ctest and says honestly how they went.

    run_suite.py NAME...                        test modules, classes or methods (as unittest -m)
    run_suite.py --discover DIR [--pattern P]   every test_*.py under DIR

Exit status (every Python registration in cmake/*.cmake sets SKIP_RETURN_CODE 77):
    0   every test ran and passed
    1   a failure, an error, an unexpected success, a module that did not load, or no test at all
    77  nothing failed but at least one test was skipped: ctest shows the suite as skipped, never
        as passed, and the last lines here name each skipped test and its reason
`python3 -m unittest` exits 0 when tests skip, which is why the suites are not run with it.
"""
import argparse
import os
import sys
import unittest

SKIP_EXIT = 77


class _LoadSkipped(unittest.TestCase):
    """Stands in for a module whose import raised SkipTest, so the skip is counted."""

    def __init__(self, name, reason):
        super().__init__("runTest")
        self._name, self._reason = name, reason

    def id(self):
        return self._name

    def runTest(self):
        raise unittest.SkipTest(self._reason)


def load(args):
    loader = unittest.TestLoader()
    if args.discover:
        return loader.discover(args.discover, pattern=args.pattern, top_level_dir=args.discover)
    suite = unittest.TestSuite()
    for name in args.names:
        try:
            suite.addTest(loader.loadTestsFromName(name))
        except unittest.SkipTest as e:
            suite.addTest(_LoadSkipped(name, str(e)))
    return suite


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("names", nargs="*", help="test modules, classes or methods")
    ap.add_argument("--discover", metavar="DIR", help="discover test modules under DIR")
    ap.add_argument("--pattern", default="test_*.py", help="file pattern for --discover")
    args = ap.parse_args(argv)
    if bool(args.discover) == bool(args.names):
        ap.error("give test names or --discover DIR, not both and not neither")
    # As `python3 -m unittest` does: test modules are imported from the working directory.
    sys.path.insert(0, os.getcwd())

    suite = load(args)
    result = unittest.TextTestRunner(verbosity=2).run(suite)
    # A loader that could not import a module records it as an error (unittest.loader's
    # _FailedTest), so result.errors covers those too.
    failed = (len(result.failures) + len(result.errors) + len(result.unexpectedSuccesses))
    if failed:
        print("run_suite: FAILED (%d failures, %d errors, %d unexpected successes)" %
              (len(result.failures), len(result.errors), len(result.unexpectedSuccesses)))
        return 1
    # Checked before "no test ran": a skip in setUpModule or setUpClass counts no test as run.
    if result.skipped:
        print("run_suite: SKIPPED (%d skipped, %d ran); this suite is not a pass:" %
              (len(result.skipped), result.testsRun))
        for test, reason in result.skipped:
            print("  skipped %s: %s" % (test.id(), reason))
        return SKIP_EXIT
    if result.testsRun == 0:
        print("run_suite: FAILED: no test ran")
        return 1
    print("run_suite: all %d tests passed" % result.testsRun)
    return 0


if __name__ == "__main__":
    sys.exit(main())
