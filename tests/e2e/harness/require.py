"""What an e2e suite needs, checked so that a missing piece FAILS the suite, never skips it.

A suite calls these in setUpModule (or setUpClass); each returns what it found or raises
MissingRequirement, which unittest reports as an error, so tests/e2e/run_suite.py and ctest
report the suite as failed. SkipTest is for a test that chooses not to run, never for a
missing tool: scripts/install-deps installs every tool named here.

    binary(path, env)          a program this build makes (env: the variable that overrides it)
    tool(name, package, env)   a program from the system (package: the Debian package with it)
    module(name, package)      a Python module (package: the Debian package with it)
"""
import importlib
import os
import shutil
import sys


class MissingRequirement(RuntimeError):
    """A program, tool or module the suite cannot run without is not there."""


def binary(path, env):
    if not path or not os.access(path, os.X_OK):
        raise MissingRequirement("%s is not built or not executable; build it (cmake --build "
                                 "build) or set %s to where it is" % (path, env))
    return path


def tool(name, package, env=None):
    path = (os.environ.get(env) if env else None) or shutil.which(name)
    if not path or not os.access(path, os.X_OK):
        raise MissingRequirement("needs %s: install the Debian package %s (scripts/install-deps "
                                 "does)%s" % (name, package, "" if not env else
                                              ", or set %s to the program" % env))
    return path


def module(name, package):
    try:
        return importlib.import_module(name)
    except ImportError as e:
        raise MissingRequirement("needs the Python module %s for this interpreter (%s): install "
                                 "the Debian package %s and run with /usr/bin/python3 (%s)" %
                                 (name, sys.executable, package, e)) from e
