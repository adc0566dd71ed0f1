"""Waiting for a condition, never for a fixed time. Both raise AssertionError naming what they
waited for, how long, and the last value seen.

    wait_for(cond, timeout, what)             polls cond() until it is truthy; returns it
    wait_on(condition, pred, timeout, what)   for state a thread updates under a
                                              threading.Condition: pred() is called with the
                                              lock held, after each notify
    EventLog                                  events a reader thread appends (watch events,
                                              reports), and waiting for the first that matches
"""
import threading
import time


def wait_for(cond, timeout=30.0, what="condition", interval=0.05, guard=None):
    """guard(): called before each poll; it raises to end the wait early (a process the
    condition depends on has exited)."""
    deadline = time.monotonic() + timeout
    while True:
        if guard is not None:
            guard()
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


class EventLog:
    """Items one reader thread appends in arrival order, read and waited on by others.

    append(item) and end() (the source is closed) are the reader's; count(), since(start),
    snapshot() and wait(pred, start, timeout, what) everyone else's.  wait() returns
    (index, item) of the first item at index >= start for which pred(item) holds, waking on
    each append: no polling."""

    def __init__(self):
        self.cv = threading.Condition()
        self.items = []
        self.ended = False

    def append(self, item):
        with self.cv:
            self.items.append(item)
            self.cv.notify_all()

    def end(self):
        with self.cv:
            self.ended = True
            self.cv.notify_all()

    def count(self):
        with self.cv:
            return len(self.items)

    def since(self, start):
        with self.cv:
            return list(self.items[start:])

    def snapshot(self):
        return self.since(0)

    def wait(self, pred, start=0, timeout=30.0, what="event"):
        deadline = time.monotonic() + timeout
        with self.cv:
            i = start
            while True:
                while i < len(self.items):
                    if pred(self.items[i]):
                        return i, self.items[i]
                    i += 1
                if self.ended:
                    raise AssertionError("the source ended while waiting for %s" % what)
                left = deadline - time.monotonic()
                if left <= 0:
                    raise AssertionError("timed out after %.1f s waiting for %s"
                                         % (timeout, what))
                self.cv.wait(left)
