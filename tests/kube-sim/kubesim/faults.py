"""Fault injection (/sim/faults) and request counters (/sim/stats)."""
import random
import threading

from .util import ApiError

TOO_MANY = "Too many requests, please try again later.\n"


class Rule:
    def __init__(self, d):
        if not isinstance(d, dict):
            raise ValueError("a fault rule must be a JSON object")
        self.verb = d.get("verb", "*") or "*"
        self.resource = d.get("resource", "*") or "*"
        self.namespace = d.get("namespace")
        self.name = d.get("name")
        self.status = d.get("status")
        self.count = d.get("count")
        self.rate = d.get("rate")
        if self.rate is None:
            self.rate = 1.0
        self.retry_after = d.get("retryAfter")
        self.latency_ms = d.get("latencyMs", 0) or 0
        self.message = d.get("message")
        if self.status is not None and not isinstance(self.status, int):
            raise ValueError("status must be an integer")
        if self.count is not None and (not isinstance(self.count, int) or self.count < 0):
            raise ValueError("count must be a non-negative integer")
        self.raw = dict(d)

    def matches(self, verb, resource, namespace, name):
        if self.verb != "*" and verb not in self.verb.split(","):
            return False
        if self.resource != "*":
            base = resource.split("/")[0]
            if resource not in self.resource.split(",") and base not in self.resource.split(","):
                return False
        if self.namespace is not None and self.namespace != (namespace or ""):
            return False
        if self.name is not None and self.name != (name or ""):
            return False
        return True

    def to_json(self):
        d = dict(self.raw)
        if self.count is not None:
            d["count"] = self.count
        return d


class Faults:
    def __init__(self, seed=None):
        self.lock = threading.Lock()
        self.rules = []
        self.latency_ms = 0
        self.rand = random.Random(seed)
        self.stats = {}

    def configure(self, body, replace):
        rules = []
        if isinstance(body, list):
            items = body
        elif isinstance(body, dict):
            if "rules" in body:
                items = body.get("rules") or []
            elif any(k in body for k in ("status", "verb", "resource", "count", "rate", "latencyMs"))\
                    and "closeWatches" not in body and "compact" not in body:
                items = [body]
            else:
                items = []
        else:
            raise ValueError("body must be a JSON object or list")
        for it in items:
            rules.append(Rule(it))
        with self.lock:
            if replace:
                self.rules = rules
            else:
                self.rules.extend(rules)
            if isinstance(body, dict) and "globalLatencyMs" in body:
                self.latency_ms = int(body["globalLatencyMs"] or 0)

    def clear(self):
        with self.lock:
            self.rules = []
            self.latency_ms = 0

    def describe(self):
        with self.lock:
            return {"rules": [r.to_json() for r in self.rules], "globalLatencyMs": self.latency_ms}

    def count(self, verb, resource):
        k = "%s/%s" % (verb, resource)
        with self.lock:
            self.stats[k] = self.stats.get(k, 0) + 1

    def reset_stats(self):
        with self.lock:
            self.stats = {}

    def snapshot(self):
        with self.lock:
            return dict(self.stats)

    def check(self, verb, resource, namespace, name):
        """Returns (latency_seconds, ApiError or None)."""
        latency = self.latency_ms
        err = None
        with self.lock:
            for r in self.rules:
                if not r.matches(verb, resource, namespace, name):
                    continue
                latency += r.latency_ms
                if r.status is None or err is not None:
                    continue
                if r.count is not None:
                    if r.count <= 0:
                        continue
                    if r.rate < 1.0 and self.rand.random() >= r.rate:
                        continue
                    r.count -= 1
                elif r.rate < 1.0 and self.rand.random() >= r.rate:
                    continue
                err = make_error(r.status, r.retry_after, r.message, verb, resource, name)
            self.rules = [r for r in self.rules if not (r.count == 0 and r.latency_ms == 0)]
        return latency / 1000.0, err


def make_error(status, retry_after, message, verb, resource, name):
    headers = {}
    if status == 429:
        ra = 1 if retry_after is None else retry_after
        headers["Retry-After"] = str(ra)
        return ApiError(429, "TooManyRequests", message or TOO_MANY.strip(), headers=headers,
                        plain_body=TOO_MANY)
    if retry_after is not None:
        headers["Retry-After"] = str(retry_after)
    if status == 500:
        return ApiError(500, "InternalError", message or "Internal error occurred: injected fault",
                        {"causes": [{"message": "injected fault"}]}, headers=headers)
    if status == 503:
        return ApiError(503, "ServiceUnavailable", message or "the server is currently unable to "
                        "handle the request", headers=headers)
    if status == 504:
        return ApiError(504, "Timeout", message or "Timeout: request did not complete within the "
                        "allowed duration", headers=headers)
    if status == 409:
        return ApiError(409, "Conflict", message or 'Operation cannot be fulfilled on %s "%s": the '
                        "object has been modified; please apply your changes to the latest "
                        "version and try again" % (resource, name or ""), headers=headers)
    reasons = {400: "BadRequest", 401: "Unauthorized", 403: "Forbidden", 404: "NotFound",
               410: "Expired", 422: "Invalid"}
    return ApiError(status, reasons.get(status, ""), message or "injected fault", headers=headers)
