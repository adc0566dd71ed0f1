"""Waiting for a condition, never for a fixed time. Both raise AssertionError naming what they
waited for, how long, and the last value seen.

    wait_for(cond, timeout, what)             polls cond() until it is truthy; returns it
    wait_on(condition, pred, timeout, what)   for state a thread updates under a
                                              threading.Condition: pred() is called with the
                                              lock held, after each notify
"""
import time


def wait_for(cond, timeout=30.0, what="condition", interval=0.05):
    deadline = time.monotonic() + timeout
    while True:
        last = cond()
        if last:
            return last
        if time.monotonic() >= deadline:
            raise AssertionError("timed out after %.1f s waiting for %s (last: %r)"
                                 % (timeout, what, last))
        time.sleep(interval)  # the poll interval of a wait-for-condition


def wait_on(condition, pred, timeout=30.0, what="condition", detail=None):
    """detail(): more words for the failure (called with the lock held)."""
    deadline = time.monotonic() + timeout
    with condition:
        while True:
            last = pred()
            if last:
                return last
            left = deadline - time.monotonic()
            if left <= 0:
                raise AssertionError("timed out after %.1f s waiting for %s%s"
                                     % (timeout, what, "; " + detail() if detail else ""))
            condition.wait(left)
