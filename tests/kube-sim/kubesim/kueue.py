"""Kueue's admission webhooks and finalizer controllers for Cohort,
ClusterQueue and ResourceFlavor, played by kube-sim whenever the Kueue CRDs
(group kueue.x-k8s.io) are served.

The one idea: a write the real Kueue would refuse or rewrite is refused or
rewritten here, at the same point of the request and with the same words.
Reference: Kueue main @ ff69552e (v0.20.0-devel), pkg/webhooks/*.go and
pkg/controller/core/{clusterqueue,resourceflavor}_controller.go (read, not
copied; the same files as in the release v0.19.2), controller-runtime v0.24,
apimachinery v0.36.

Where each step sits in a request (as in kube-apiserver):

  1. ``admit_decode`` (CREATE of ClusterQueue, before schema validation): the
     mutating webhook ``mclusterqueue.kb.io`` first decodes the object into Go
     types; a quantity Go cannot parse fails there with 400 BadRequest
     ``admission webhook "mclusterqueue.kb.io" denied the request: quantities
     must match the regular expression ...``.
  2. (inside schema validation, not here): the CEL rules of the Kueue CRDs,
     evaluated like every CRD's by ``celrules.py``
     (``spec.resourceGroups[0]: Invalid value: "object": flavors must have the
     same number of resources as the coveredResources``).
  3. ``admit`` (after schema validation): v1beta1 bodies are converted to
     v1beta2 (the conversion webhook; matchPolicy Equivalent sends them to the
     v1beta2 webhooks); on CREATE the mutating webhooks add the
     ``kueue.x-k8s.io/resource-in-use`` finalizer to ClusterQueues and
     ResourceFlavors and the Go round trip re-serialises quantities
     (``canonical_quantity``); then the validating webhooks ``vcohort.kb.io``,
     ``vclusterqueue.kb.io``, ``vresourceflavor.kb.io`` run on CREATE and
     UPDATE (not on /status). A denial is what controller-runtime's
     ``admission.Denied`` becomes at the apiserver: 403 Forbidden, reason
     Forbidden, no causes, message ``admission webhook "<name>" denied the
     request: <field errors>`` (one error, or ``[e1, e2]``).
  4. ``reconcile`` (kube-sim's controller thread): Kueue's controllers put the
     finalizer back when a write dropped it (a separate write, quantities
     canonicalised), release it from a deleted ClusterQueue once its status
     shows no reserving or admitted workloads, and from a deleted
     ResourceFlavor once no ClusterQueue lists it. Cohorts get no finalizer
     and no mutation (Kueue registers no mutating webhook for them).
"""
import decimal
import re

from . import util
from .util import ApiError

GROUP = "kueue.x-k8s.io"
COHORTS = (GROUP, "cohorts")
CLUSTER_QUEUES = (GROUP, "clusterqueues")
RESOURCE_FLAVORS = (GROUP, "resourceflavors")
FINALIZER = "kueue.x-k8s.io/resource-in-use"

VALIDATING = {COHORTS: "vcohort.kb.io", CLUSTER_QUEUES: "vclusterqueue.kb.io",
              RESOURCE_FLAVORS: "vresourceflavor.kb.io"}
MUTATING = {CLUSTER_QUEUES: "mclusterqueue.kb.io", RESOURCE_FLAVORS: "mresourceflavor.kb.io"}


def handles(rt):
    """Is this one of the kinds whose Kueue webhooks kube-sim plays?"""
    return rt is not None and not rt.builtin and rt.key in VALIDATING


# ---------------------------------------------------------------------------
# resource.Quantity
# ---------------------------------------------------------------------------

QUANTITY_FORMAT_ERR = ("quantities must match the regular expression "
                       "'^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'")
QUANTITY_SUFFIX_ERR = "unable to parse quantity's suffix"
QUANTITY_NUMERIC_ERR = "unable to parse numeric part of quantity"

_DEC_SUFFIX = {"n": -9, "u": -6, "m": -3, "": 0, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15,
               "E": 18}
_DEC_BY_EXP = {v: k for k, v in _DEC_SUFFIX.items()}
_BIN_SUFFIX = {"Ki": 10, "Mi": 20, "Gi": 30, "Ti": 40, "Pi": 50, "Ei": 60}
_BIN_BY_EXP = {v: k for k, v in _BIN_SUFFIX.items()}
_MAX = decimal.Decimal(2 ** 63 - 1)
_NANO = decimal.Decimal("1e-9")
_CTX = decimal.Context(prec=200)
_DIGITS = "0123456789"


class QuantityError(ValueError):
    pass


def _split_quantity(s):
    """resource.parseQuantityString: (positive, num, denom, suffix)."""
    end = len(s)
    pos = 0
    positive = True
    if s[0] in "+-":
        positive = s[0] == "+"
        pos = 1
    while pos < end and s[pos] == "0":
        pos += 1
    if pos >= end:
        return positive, "0", "", ""
    i = pos
    while i < end and s[i] in _DIGITS:
        i += 1
    num = s[pos:i] or "0"
    pos = i
    denom = ""
    if pos >= end:
        return positive, num, denom, ""
    if s[pos] == ".":
        pos += 1
        i = pos
        while i < end and s[i] in _DIGITS:
            i += 1
        denom = s[pos:i]
        pos = i
        if pos >= end:
            return positive, num, denom, ""
    start = pos
    while pos < end and s[pos] in "eEinumkKMGTP":
        pos += 1
    if pos < end and s[pos] in "+-":
        pos += 1
    while pos < end and s[pos] in _DIGITS:
        pos += 1
    if pos < end:
        raise QuantityError(QUANTITY_FORMAT_ERR)
    return positive, num, denom, s[start:]


def parse_quantity(v):
    """Parse a JSON quantity (string or number) as Go's Quantity.UnmarshalJSON
    does. Returns (value: Decimal, format) with format "DecimalSI",
    "BinarySI" or "DecimalExponent"; raises QuantityError with Go's text."""
    if isinstance(v, bool) or v is None or isinstance(v, (dict, list)):
        raise QuantityError(QUANTITY_FORMAT_ERR)
    s = repr(v) if isinstance(v, float) else str(v)
    s = s.strip()
    if not s:
        raise QuantityError(QUANTITY_FORMAT_ERR)
    if s == "0":
        return decimal.Decimal(0), "DecimalSI"
    positive, num, denom, suffix = _split_quantity(s)
    if suffix in _DEC_SUFFIX:
        base, exp, fmt = 10, _DEC_SUFFIX[suffix], "DecimalSI"
    elif suffix in _BIN_SUFFIX:
        base, exp, fmt = 2, _BIN_SUFFIX[suffix], "BinarySI"
    elif len(suffix) > 1 and suffix[0] in "eE" and re.match(r"^[+-]?[0-9]+$", suffix[1:]):
        base, exp, fmt = 10, int(suffix[1:]), "DecimalExponent"
    else:
        raise QuantityError(QUANTITY_SUFFIX_ERR)
    try:
        amount = decimal.Decimal(num + ("." + denom if denom else ""), context=_CTX)
    except decimal.InvalidOperation:
        raise QuantityError(QUANTITY_NUMERIC_ERR)
    amount = _CTX.multiply(amount, _CTX.power(decimal.Decimal(base), exp))
    if amount != 0 and amount != amount.quantize(_NANO, context=_CTX):
        amount = amount.quantize(_NANO, rounding=decimal.ROUND_UP, context=_CTX)
    if amount > _MAX:
        amount = _MAX
    if fmt == "BinarySI" and 0 < amount < 1:
        fmt = "DecimalSI"
    return (amount if positive else -amount), fmt


def canonical_quantity(v):
    """The text Go's Quantity.String() gives for a JSON quantity: "12" for 12,
    "1" for "1000m", "1Gi" for "1024Mi", "12k" for "12000", "1500m" for 1.5."""
    value, fmt = parse_quantity(v)
    return _format_quantity(value, fmt)


def _format_quantity(value, fmt):
    if value == 0:
        return "0"
    if fmt == "BinarySI":
        if -1024 < value < 1024 or value != value.to_integral_value():
            fmt = "DecimalSI"
        else:
            n, e = int(value), 0
            while n % 1024 == 0 and e < 60:
                n //= 1024
                e += 10
            return str(n) + _BIN_BY_EXP.get(e, "")
    sign, digits, exp = value.normalize(_CTX).as_tuple()
    m = int("".join(map(str, digits)))
    while m and m % 10 == 0:
        m //= 10
        exp += 1
    r = exp % 3
    m, exp = m * 10 ** r, exp - r
    text = ("-" if sign else "") + str(m)
    if fmt == "DecimalExponent":
        return text + ("" if exp == 0 else "e%d" % exp)
    return text + _DEC_BY_EXP.get(exp, "")


def _quantity_value(v):
    try:
        return parse_quantity(v)[0]
    except QuantityError:
        return None


# ---------------------------------------------------------------------------
# field errors (k8s.io/apimachinery/pkg/util/validation/field, v0.36)
# ---------------------------------------------------------------------------

def _go_str(s):
    return util.go_quote(s) if isinstance(s, str) else '"%s"' % s


def _invalid(path, value, detail):
    return "%s: Invalid value: %s: %s" % (path, value, detail)


def _duplicate(path, value, detail=""):
    return "%s: Duplicate value: %s%s" % (path, value, ": " + detail if detail else "")


def _label_key_errors(key):
    """content.IsLabelKey (apimachinery v0.36)."""
    errs = []
    prefix, slash, name = key.partition("/")
    if not slash:
        name = key
    elif "/" in name:
        return ["a valid label key " + util.QNAME_MSG[len("name part "):] +
                " with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"]
    else:
        if not prefix:
            errs.append("prefix part must be non-empty")
        else:
            errs.extend("prefix part " + e for e in util.check_dns_subdomain(prefix))
    if not name:
        errs.append("name part must be non-empty")
    elif len(name) > 63:
        errs.append("name part must be no more than 63 characters")
    if not util.QNAME_RE.match(name):
        errs.append(util.QNAME_MSG)
    return errs


def _validate_label_name(key, path):
    return [_invalid(path, _go_str(key), m) for m in _label_key_errors(str(key))]


def _validate_labels(labels, path):
    errs = []
    for k in sorted(labels or {}):  # Go iterates a map in random order; sorted here
        errs += _validate_label_name(k, path)
        v = labels[k]
        errs += [_invalid(path, _go_str(v), m) for m in util.check_label_value(str(v))]
    return errs


def _validate_label_selector(sel, path):
    """metav1 validation.ValidateLabelSelector."""
    if not isinstance(sel, dict):
        return []
    errs = _validate_labels(sel.get("matchLabels"), path + ".matchLabels")
    for i, expr in enumerate(sel.get("matchExpressions") or []):
        p = "%s.matchExpressions[%d]" % (path, i)
        op = expr.get("operator", "")
        values = expr.get("values") or []
        if op in ("In", "NotIn"):
            if not values:
                errs.append("%s.values: Required value: must be specified when `operator` is "
                            "'In' or 'NotIn'" % p)
        elif op in ("Exists", "DoesNotExist"):
            if values:
                errs.append("%s.values: Forbidden: may not be specified when `operator` is "
                            "'Exists' or 'DoesNotExist'" % p)
        else:
            errs.append(_invalid(p + ".operator", _go_str(op), "not a valid selector operator"))
        errs += _validate_label_name(expr.get("key", ""), p + ".key")
        for j, v in enumerate(values):
            errs += [_invalid("%s.values[%d]" % (p, j), _go_str(v), m)
                     for m in util.check_label_value(str(v))]
    return errs


def _aggregate(errs):
    """field.ErrorList.ToAggregate().Error(): duplicates dropped, "[a, b]"."""
    seen = []
    for e in errs:
        if e not in seen:
            seen.append(e)
    return seen[0] if len(seen) == 1 else "[" + ", ".join(seen) + "]"


def _deny(webhook, errs):
    return ApiError(403, "Forbidden", 'admission webhook "%s" denied the request: %s'
                    % (webhook, _aggregate(errs)))


# ---------------------------------------------------------------------------
# validating webhooks
# ---------------------------------------------------------------------------

_NEGATIVE = "must be greater than or equal to 0"


def _qty_text(v):
    try:
        return '"%s"' % canonical_quantity(v)
    except QuantityError:
        return _go_str(v)


def _validate_resource_groups(groups, has_parent, enforce_lending, is_cohort, path):
    errs = []
    seen_res, seen_flavors = set(), set()
    limit_msg = "must be nil when %s is empty" % ("parent" if is_cohort else "cohort")
    for i, rg in enumerate(groups or []):
        gp = "%s[%d]" % (path, i)
        covered = rg.get("coveredResources") or []
        for j, name in enumerate(covered):
            p = "%s.coveredResources[%d]" % (gp, j)
            errs += _validate_label_name(name, p)
            if name in seen_res:
                errs.append(_duplicate(p, _go_str(name)))
            else:
                seen_res.add(name)
        for j, fq in enumerate(rg.get("flavors") or []):
            fp = "%s.flavors[%d]" % (gp, j)
            for k, rq in enumerate(fq.get("resources") or []):
                if k >= len(covered):
                    break
                rp = "%s.resources[%d]" % (fp, k)
                if rq.get("name") != covered[k]:
                    errs.append(_invalid(rp + ".name", _go_str(rq.get("name", "")),
                                         "must match the name in coveredResources"))
                nominal = _quantity_value(rq.get("nominalQuota", 0))
                if nominal is not None and nominal < 0:
                    errs.append(_invalid(rp + ".nominalQuota", _qty_text(rq["nominalQuota"]), _NEGATIVE))
                if rq.get("borrowingLimit") is not None:
                    bl = rq["borrowingLimit"]
                    if not has_parent:
                        errs.append(_invalid(rp + ".borrowingLimit", _qty_text(bl), limit_msg))
                    val = _quantity_value(bl)
                    if val is not None and val < 0:
                        errs.append(_invalid(rp + ".borrowingLimit", _qty_text(bl), _NEGATIVE))
                if rq.get("lendingLimit") is not None:
                    ll = rq["lendingLimit"]
                    val = _quantity_value(ll)
                    if val is not None and val < 0:
                        errs.append(_invalid(rp + ".lendingLimit", _qty_text(ll), _NEGATIVE))
                    if not has_parent:
                        errs.append(_invalid(rp + ".lendingLimit", _qty_text(ll), limit_msg))
                    if enforce_lending and val is not None and nominal is not None and val > nominal:
                        errs.append(_invalid(rp + ".lendingLimit", _qty_text(ll),
                                             "must be less than or equal to the nominalQuota"))
            fname = fq.get("name")
            if fname in seen_flavors:
                errs.append(_duplicate(fp + ".name", _go_str(fname)))
            else:
                seen_flavors.add(fname)
    return errs


def _validate_fair_sharing(fs, path):
    if not isinstance(fs, dict) or fs.get("weight") is None:
        return []
    w = _quantity_value(fs["weight"])
    if w is None:
        return []
    errs = []
    if w < 0:
        errs.append(_invalid(path, _qty_text(fs["weight"]), _NEGATIVE))
    if 0 < w <= _NANO:
        errs.append(_invalid(path, _qty_text(fs["weight"]), "When not 0, weight must be > 10e-9"))
    return errs


def _all_flavors(spec):
    return [f.get("name") for rg in spec.get("resourceGroups") or []
            for f in rg.get("flavors") or []]


def _validate_on_flavors(spec, old_spec):
    strategy = spec.get("admissionChecksStrategy")
    if not isinstance(strategy, dict):
        return []
    flavors = _all_flavors(spec)
    valid = set(flavors)
    # Feature gate RejectUpdatesToCQWithInvalidOnFlavors (alpha, off): an
    # update keeps a check whose onFlavors did not change while the set of
    # flavors did not change either.
    skip = {}
    if old_spec is not None and isinstance(old_spec.get("admissionChecksStrategy"), dict) and \
            set(_all_flavors(old_spec)) == valid:
        for c in old_spec["admissionChecksStrategy"].get("admissionChecks") or []:
            skip[c.get("name")] = set(c.get("onFlavors") or [])
    supported = ", ".join(util.go_quote(f) for f in sorted(valid))
    errs = []
    for i, check in enumerate(strategy.get("admissionChecks") or []):
        on = check.get("onFlavors") or []
        if check.get("name") in skip and skip[check.get("name")] == set(on):
            continue
        for j, f in enumerate(on):
            if f not in valid:
                errs.append("spec.admissionChecksStrategy.admissionChecks[%d].onFlavors[%d]: "
                            "Unsupported value: %s%s" % (i, j, _go_str(f),
                                                         ": supported values: " + supported
                                                         if supported else ""))
    return errs


def _validate_totals(groups, path):
    errs = []
    total = sum(len(rg.get("flavors") or []) for rg in groups)
    if total > 256:
        errs.append(_invalid(path, total, "total number of flavors across all resourceGroups "
                                          "must be ≤ 256, got %d" % total))
    total = sum(len(rg.get("coveredResources") or []) for rg in groups)
    if total > 256:
        errs.append(_invalid(path, total, "total number of covered resources across all "
                                          "resourceGroups must be ≤ 256, got %d" % total))
    for i, rg in enumerate(groups):
        n = sum(len(f.get("resources") or []) for f in rg.get("flavors") or [])
        if n > 512:
            errs.append(_invalid("%s[%d]" % (path, i), n, "number of flavor-resource combinations "
                                                           "in a resourceGroup must be ≤ 512, got %d" % n))
    return errs


def validate_cluster_queue(obj, old=None):
    spec = obj.get("spec") or {}
    groups = spec.get("resourceGroups") or []
    errs = _validate_resource_groups(groups, bool(spec.get("cohortName")), True, False,
                                     "spec.resourceGroups")
    errs += _validate_label_selector(spec.get("namespaceSelector"), "spec.namespaceSelector")
    errs += _validate_fair_sharing(spec.get("fairSharing"), "spec.fairSharing")
    errs += _validate_totals(groups, "spec.resourceGroups")
    old_spec = (old.get("spec") or {}) if old is not None else None
    errs += _validate_on_flavors(spec, old_spec)
    if old_spec is not None and spec.get("concurrentAdmissionPolicy") != \
            old_spec.get("concurrentAdmissionPolicy"):
        new = spec.get("concurrentAdmissionPolicy")
        errs.append(_invalid("spec.concurrentAdmissionPolicy",
                             '"null"' if new is None else "v1beta2.ConcurrentAdmissionPolicy{...}",
                             "field is immutable"))
    return errs


def validate_cohort(obj):
    spec = obj.get("spec") or {}
    errs = _validate_fair_sharing(spec.get("fairSharing"), "spec.fairSharing")
    errs += _validate_resource_groups(spec.get("resourceGroups") or [],
                                      bool(spec.get("parentName")), False, True,
                                      "spec.resourceGroups")
    return errs


def _taint_value(t):
    # fmt %#v of a corev1.Taint (TimeAdded is a *metav1.Time: Go prints its address)
    return 'v1.Taint{Key:%s, Value:%s, Effect:%s, TimeAdded:%s}' % (
        util.go_quote(t.get("key", "")), util.go_quote(t.get("value", "")),
        util.go_quote(t.get("effect", "")),
        "(*v1.Time)(0xc000000000)" if t.get("timeAdded") else "<nil>")


def validate_resource_flavor(obj):
    spec = obj.get("spec") or {}
    errs = _validate_labels(spec.get("nodeLabels"), "spec.nodeLabels")
    seen = set()
    for i, t in enumerate(spec.get("nodeTaints") or []):
        p = "spec.nodeTaints[%d]" % i
        errs += _validate_label_name(t.get("key", ""), p + ".key")
        msgs = util.check_label_value(str(t.get("value", "")))
        if msgs:
            errs.append(_invalid(p + ".value", _go_str(t.get("value", "")), ";".join(msgs)))
        k = (t.get("key", ""), t.get("effect", ""))
        if k in seen:
            errs.append(_duplicate(p, _taint_value(t), "taints must be unique by key and effect pair"))
            continue
        seen.add(k)
    for i, tol in enumerate(spec.get("tolerations") or []):
        if tol.get("key"):
            errs += _validate_label_name(tol["key"], "spec.tolerations[%d].key" % i)
    return errs


# ---------------------------------------------------------------------------
# mutation: conversion from v1beta1, finalizer, Go round trip of quantities
# ---------------------------------------------------------------------------

def _quantity_slots(spec):
    """(container, key) of every Quantity in a Cohort/ClusterQueue spec."""
    for rg in spec.get("resourceGroups") or []:
        for f in rg.get("flavors") or [] if isinstance(rg, dict) else []:
            for r in f.get("resources") or [] if isinstance(f, dict) else []:
                if isinstance(r, dict):
                    for k in ("nominalQuota", "borrowingLimit", "lendingLimit"):
                        if k in r and r[k] is not None:
                            yield r, k
    fs = spec.get("fairSharing")
    if isinstance(fs, dict) and fs.get("weight") is not None:
        yield fs, "weight"


def canonicalise(obj):
    """Go round trip of the spec: every quantity becomes Quantity.String()."""
    spec = obj.get("spec")
    if not isinstance(spec, dict):
        return
    for holder, k in list(_quantity_slots(spec)):
        try:
            holder[k] = canonical_quantity(holder[k])
        except QuantityError:
            pass


def _convert_v1beta1(rt, obj):
    """The conversion webhook, v1beta1 -> v1beta2 (the v1beta2 webhooks see the
    converted object; it is stored so). Only ClusterQueue spec names differ."""
    spec = obj.get("spec")
    if rt.key == CLUSTER_QUEUES and isinstance(spec, dict):
        if "cohort" in spec:
            cohort = spec.pop("cohort")
            if cohort:
                spec["cohortName"] = cohort
        checks = spec.pop("admissionChecks", None)
        if checks:
            spec["admissionChecksStrategy"] = {"admissionChecks": [{"name": c} for c in checks]}
        ff = spec.get("flavorFungibility")
        if isinstance(ff, dict):
            for k, old in (("whenCanBorrow", "Borrow"), ("whenCanPreempt", "Preempt")):
                if ff.get(k) == old:
                    ff[k] = "MayStopSearch"
        spec.pop("pendingWorkloadsStatus", None)
    canonicalise(obj)


def admit_decode(rt, obj, create):
    """The mutating webhook's Go round trip of a ClusterQueue on CREATE, which
    comes before schema validation: an unparsable quantity fails with 400, a
    parsable one is re-serialised (so the number 1.5, which the CRD's
    int-or-string type refuses, is stored as "1500m", as with the real Kueue)."""
    if not create or rt.key != CLUSTER_QUEUES or not isinstance(obj.get("spec"), dict):
        return
    for holder, k in list(_quantity_slots(obj["spec"])):
        try:
            holder[k] = canonical_quantity(holder[k])
        except QuantityError as e:
            raise ApiError(400, "", 'admission webhook "%s" denied the request: %s'
                           % (MUTATING[CLUSTER_QUEUES], e))


def admit(rt, obj, old, version, sub=None):
    """Conversion, mutating and validating webhooks for a write that passed
    schema validation. Mutates obj in place; raises the webhook denial."""
    if not handles(rt) or sub:
        return
    if version and version != "v1beta2":
        _convert_v1beta1(rt, obj)
    if old is None and rt.key in MUTATING:
        meta = obj.setdefault("metadata", {})
        fins = meta.get("finalizers") or []
        if FINALIZER not in fins:
            meta["finalizers"] = fins + [FINALIZER]
        canonicalise(obj)
    if rt.key == CLUSTER_QUEUES:
        errs = validate_cluster_queue(obj, old)
    elif rt.key == COHORTS:
        errs = validate_cohort(obj)
    else:
        errs = validate_resource_flavor(obj)
    if errs:
        raise _deny(VALIDATING[rt.key], errs)


# ---------------------------------------------------------------------------
# controllers: Kueue's finalizer handling
# ---------------------------------------------------------------------------

def watches(rt):
    return rt is not None and rt.key in (CLUSTER_QUEUES, RESOURCE_FLAVORS)


def _cq_empty(obj):
    st = obj.get("status") or {}
    return not st.get("reservingWorkloads") and not st.get("admittedWorkloads")


def reconcile(store, safe):
    """One pass of Kueue's ClusterQueue and ResourceFlavor controllers over
    every stored object (level-triggered, idempotent). ``safe(fn, *args)``
    runs a store write, ignoring 404/409 (the next pass retries)."""
    with store.lock:
        cq_rt = store.types.get(CLUSTER_QUEUES)
        rf_rt = store.types.get(RESOURCE_FLAVORS)
        in_use = set()
        if cq_rt is not None:
            for e in list(store.data.get(CLUSTER_QUEUES, {}).values()):
                in_use.update(_all_flavors(e.obj.get("spec") or {}))
                _reconcile_one(store, safe, cq_rt, e, _cq_empty(e.obj))
        if rf_rt is not None:
            for (_, name), e in list(store.data.get(RESOURCE_FLAVORS, {}).items()):
                _reconcile_one(store, safe, rf_rt, e, name not in in_use)


def _reconcile_one(store, safe, rt, e, releasable):
    m = e.obj["metadata"]
    fins = m.get("finalizers") or []
    if not m.get("deletionTimestamp"):
        if FINALIZER in fins:
            return
        obj = e.copy_obj()
        obj["metadata"]["finalizers"] = fins + [FINALIZER]
    else:
        if FINALIZER not in fins or not releasable:
            return
        obj = e.copy_obj()
        obj["metadata"]["finalizers"] = [f for f in fins if f != FINALIZER]
    canonicalise(obj)  # client.Update sends the Go object back
    safe(store.update, rt, "", m["name"], obj)
