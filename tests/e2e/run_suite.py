#!/usr/bin/env python3
"""Runs Python unittest suites for ctest and says honestly how they went.

    run_suite.py NAME...                        test modules, classes or methods (as unittest -m)
    run_suite.py --discover DIR [--pattern P]   every test_*.py under DIR
    run_suite.py --list-units FILE [--by-test CLASS]...
                                                the ctest units of one module, one a line: each
                                                TestCase class with tests, or each test of a
                                                --by-test class (read from the source, nothing
                                                imported: cmake/test-tools.cmake calls it)
    run_suite.py --units MODULE:UNIT,... NAME   NAME, after checking that the units ctest
                                                registered for MODULE still cover every test
                                                unittest loads from it, each once

Exit status (every Python registration in cmake/*.cmake sets SKIP_RETURN_CODE 77):
    0   every test ran and passed
    1   a failure, an error, an unexpected success, a module that did not load, or no test at all
    77  nothing failed but at least one test was skipped: ctest shows the suite as skipped, never
        as passed, and the last lines here name each skipped test and its reason
`python3 -m unittest` exits 0 when tests skip, which is why the suites are not run with it.
"""
import argparse
import ast
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


def _is_test_method(node):
    return isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and \
        node.name.startswith(unittest.TestLoader.testMethodPrefix)


def list_units(path, by_test):
    """Module-relative unit names (Class or Class.test) in file order. A class is a TestCase
    when a base is unittest.TestCase, TestCase or a TestCase class defined above it; its tests
    are its own test* methods and those of such bases. What this cannot see (a TestCase
    imported from another module) the --units check at run time refuses."""
    with open(path) as f:
        tree = ast.parse(f.read(), path)
    cases = {}  # class name -> test names (inherited ones included)
    units = []
    for node in tree.body:
        if not isinstance(node, ast.ClassDef):
            continue
        tests, is_case = [], False
        for base in node.bases:
            name = ast.unparse(base)
            if name in ("unittest.TestCase", "TestCase"):
                is_case = True
            elif name in cases:
                is_case = True
                tests += [t for t in cases[name] if t not in tests]
        if not is_case:
            continue
        tests += [n.name for n in node.body if _is_test_method(n) and n.name not in tests]
        cases[node.name] = tests
        if not tests:
            continue
        if node.name in by_test:
            units += ["%s.%s" % (node.name, t) for t in sorted(tests)]
        else:
            units.append(node.name)
    unknown = set(by_test) - set(cases)
    if unknown:
        raise SystemExit("run_suite: --by-test names no TestCase class of %s: %s" %
                         (path, ", ".join(sorted(unknown))))
    return units


def _test_ids(suite):
    for t in suite:
        if isinstance(t, unittest.TestSuite):
            yield from _test_ids(t)
        else:
            yield t.id()


def check_units(spec):
    """None when the units registered for a module (MODULE:UNIT,UNIT...) hold every test
    unittest loads from it, each in exactly one unit; otherwise what is wrong, in words."""
    module, _, names = spec.partition(":")
    units = [u for u in names.split(",") if u]
    try:
        loaded = unittest.TestLoader().loadTestsFromName(module)
    except Exception:  # noqa: BLE001 - a skip or an import error: the run itself reports it
        return None
    ids = [i for i in _test_ids(loaded) if not i.startswith("unittest.loader.")]
    if not ids:
        return None  # an import error: the run itself reports it
    count = {u: 0 for u in units}
    stray, twice = [], []
    for i in ids:
        rel = i[len(module) + 1:] if i.startswith(module + ".") else i
        hits = [u for u in (rel, rel.split(".")[0]) if u in count]
        for u in hits:
            count[u] += 1
        if not hits:
            stray.append(rel)
        elif len(hits) > 1:
            twice.append(rel)
    empty = [u for u, n in count.items() if n == 0]
    if stray or empty or twice:
        return ("the ctest units registered for %s (%s) do not match what it holds:%s%s%s; "
                "configure again (cmake) so that every test runs once" %
                (module, ", ".join(units),
                 " not registered: %s" % ", ".join(stray) if stray else "",
                 " registered but gone: %s" % ", ".join(empty) if empty else "",
                 " in two units: %s" % ", ".join(twice) if twice else ""))
    return None


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
    ap.add_argument("--list-units", metavar="FILE", help="print the ctest units of a module")
    ap.add_argument("--by-test", metavar="CLASS", action="append", default=[],
                    help="with --list-units: one unit per test of CLASS")
    ap.add_argument("--units", metavar="MODULE:UNIT,...", action="append", default=[],
                    help="check that these units cover MODULE before running")
    args = ap.parse_args(argv)
    if args.list_units:
        for unit in list_units(args.list_units, args.by_test):
            print(unit)
        return 0
    if bool(args.discover) == bool(args.names):
        ap.error("give test names or --discover DIR, not both and not neither")
    # As `python3 -m unittest` does: test modules are imported from the working directory.
    sys.path.insert(0, os.getcwd())
    for spec in args.units:
        wrong = check_units(spec)
        if wrong:
            print("run_suite: FAILED: " + wrong)
            return 1

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
