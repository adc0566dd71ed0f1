"""The benches' way to the e2e harness (tests/e2e/harness): importing this module puts
tests/e2e on sys.path, once. Each bench imports it before `harness`."""
import os
import sys

_E2E = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "tests", "e2e")
if _E2E not in sys.path:
    sys.path.insert(0, _E2E)
