"""Dynamic Resource Allocation kinds (resource.k8s.io/v1): DeviceClass and ResourceSlice.

Design note
-----------
A GPU driver built for DRA publishes its devices as ResourceSlices instead of extended
resources in a Node's allocatable, and a DeviceClass names which of them a claim may take
(its CEL selectors) and, since Kubernetes 1.34 (KEP-5004), which extended resource name pods
may ask for (`extendedResourceName`). kube-sim stores both as built-in, cluster-scoped kinds.

The one idea: the write is refused with the API server's own field errors, so a consumer tested
here reads only objects a real cluster could hold. The rules and texts follow
kubernetes/kubernetes pkg/apis/resource/validation/validation.go (ValidateDeviceClass,
ValidateResourceSlice and their Update forms) and the limits of k8s.io/api resource/v1
types.go; docs/budget.md "Dynamic Resource Allocation: facts" cites them.

A capacity or counter quantity that does not parse is the decode's 400 BadRequest (`ResourceSlice in
version "v1" cannot be handled as a ResourceSlice: <quantity error>`), before any field check.

Known differences: a selector's CEL expression is parsed (a syntax error is the real 422), but
its names, types and cost are not checked; alpha fields (taints, binding conditions, consumable
capacity request policies) are stored with only their list limits checked.
"""
import re

from . import cel
from . import util
from .kueue import QuantityError, parse_quantity

DEVICECLASS_KEY = ("resource.k8s.io", "deviceclasses")
RESOURCESLICE_KEY = ("resource.k8s.io", "resourceslices")

# k8s.io/api resource/v1 types.go
DRIVER_NAME_MAX = 63
POOL_NAME_MAX = 253
MAX_DEVICES = 128
MAX_DEVICES_WITH_TAINTS_OR_COUNTERS = 64
MAX_ATTRIBUTES_AND_CAPACITIES = 32
DEVICE_MAX_DOMAIN = 63
DEVICE_MAX_ID = 32
ATTRIBUTE_VALUE_MAX = 64
MAX_COUNTER_SETS = 8
MAX_COUNTERS_PER_SET = 32
MAX_COUNTER_CONSUMPTIONS = 2
MAX_TAINTS = 16
MAX_SELECTORS = 32
MAX_CONFIGS = 32
CEL_EXPRESSION_MAX = 10 * 1024
OPAQUE_PARAMETERS_MAX = 10 * 1024

C_IDENT_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
C_IDENT_MSG = ("a valid C identifier must start with alphabetic character or '_', followed by a "
               "string of alphanumeric characters or '_' (e.g. 'my_name',  or 'MY_NAME',  or "
               "'MyName', regex used for validation is '[A-Za-z_][A-Za-z0-9_]*')")
SEMVER_RE = re.compile(
    r"^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)"
    r"(-(0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*)(\.(0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*))*)?"
    r"(\+[0-9a-zA-Z-]+(\.[0-9a-zA-Z-]+)*)?$")
NODE_SELECTION = ("nodeName", "nodeSelector", "allNodes", "perDeviceNodeSelection")


def handles(rt):
    return rt.key in (DEVICECLASS_KEY, RESOURCESLICE_KEY)


def validate(rt, obj, old):
    """Field errors (util.cause dicts) for a write of a DeviceClass or ResourceSlice. A
    quantity that does not parse fails the decode first: 400, as the API server answers."""
    spec = _dict(obj.get("spec"))
    if rt.key == RESOURCESLICE_KEY:
        _decode_quantities(rt, spec)
    old_spec = _dict(old.get("spec")) if old is not None else None
    if rt.key == DEVICECLASS_KEY:
        return _device_class_spec(spec, old_spec)
    return _resource_slice_spec(spec, old_spec)


# --- helpers -----------------------------------------------------------------------------

def _dict(v):
    return v if isinstance(v, dict) else {}


def _list(v):
    return v if isinstance(v, list) else []


def _too_long(path, limit):
    return util.cause("FieldValueTooLong", "Too long: may not be more than %d bytes" % limit, path)


def _too_many(path, n, limit):
    return util.cause("FieldValueTooMany", "Too many: %d: must have at most %d items" % (n, limit),
                      path)


def _duplicate(path, value):
    return util.cause("FieldValueDuplicate", "Duplicate value: %s" % util.go_quote(value), path)


def _immutable(path, value):
    return util.field_invalid(path, value, "field is immutable")


def _driver_name(name, path):
    """corevalidation.ValidateCSIDriverName: the rules for DRA driver names."""
    if not isinstance(name, str) or name == "":
        return [util.field_required(path)]
    out = []
    if len(name) > DRIVER_NAME_MAX:
        out.append(_too_long(path, DRIVER_NAME_MAX))
    for e in util.check_dns_subdomain(name.lower()):
        out.append(util.field_invalid(path, name, e))
    return out


def _pool_name(name, path):
    if not isinstance(name, str) or name == "":
        return [util.field_required(path)]
    out = []
    if len(name) > POOL_NAME_MAX:
        out.append(_too_long(path, POOL_NAME_MAX))
    for part in name.split("/"):
        for e in util.check_dns_subdomain(part):
            out.append(util.field_invalid(path, part, e))
    return out


def _node_name(name, path):
    return [util.field_invalid(path, name, e) for e in util.check_dns_subdomain(name)]


def _c_identifier(ident, path):
    out = []
    if len(ident) > DEVICE_MAX_ID:
        out.append(_too_long(path, DEVICE_MAX_ID))
    if not C_IDENT_RE.match(ident):
        out.append(util.field_invalid(path, ident, C_IDENT_MSG))
    return out


def _qualified_name(name, path):
    """An attribute or capacity name: a C identifier, or <domain>/<C identifier>."""
    parts = name.split("/")
    if len(parts) == 1:
        return _c_identifier(parts[0], path)
    out = []
    if parts[0] == "":
        out.append(util.field_invalid(path, "", "the domain must not be empty"))
    else:
        out.extend(_driver_name(parts[0], path))
    if parts[1] == "":
        out.append(util.field_invalid(path, "", "the name must not be empty"))
    else:
        out.extend(_c_identifier(parts[1], path))
    return out


def _int64(v):
    return isinstance(v, int) and not isinstance(v, bool)


# --- DeviceClass ---------------------------------------------------------------------------

def _device_class_spec(spec, old_spec):
    out = []
    selectors = _list(spec.get("selectors"))
    if len(selectors) > MAX_SELECTORS:
        out.append(_too_many("spec.selectors", len(selectors), MAX_SELECTORS))
    else:
        out.extend(_selectors(selectors, "spec.selectors"))
    configs = _list(spec.get("config"))
    if len(configs) > MAX_CONFIGS:
        out.append(_too_many("spec.config", len(configs), MAX_CONFIGS))
    else:
        for i, c in enumerate(configs):
            out.extend(_device_config(_dict(c), "spec.config[%d]" % i))
    ern = spec.get("extendedResourceName")
    if ern is not None and not is_extended_resource_name(ern):
        out.append(util.field_invalid("spec.extendedResourceName", ern,
                                      "must be a valid extended resource name"))
    return out


def _selectors(selectors, path):
    out = []
    parse = []
    for i, s in enumerate(selectors):
        p = "%s[%d].cel" % (path, i)
        c = _dict(s).get("cel")
        if not isinstance(c, dict):
            out.append(util.field_required(p))
            continue
        expr = c.get("expression")
        if not isinstance(expr, str) or expr == "":
            out.append(util.field_required(p + ".expression", "expression is required"))
        elif len(expr) > CEL_EXPRESSION_MAX:
            out.append(_too_long(p + ".expression", CEL_EXPRESSION_MAX))
        else:
            parse.append((p + ".expression", expr))
    results = cel.engine().parse([e for _, e in parse])
    for (p, expr), r in zip(parse, results):
        if r.get("error"):
            out.append(util.field_invalid(p, expr, "compilation failed: " + r["error"]))
    return out


def _device_config(config, path):
    opaque = config.get("opaque")
    if not isinstance(opaque, dict):
        return [util.field_required(path + ".opaque")]
    out = _driver_name(opaque.get("driver"), path + ".opaque.driver")
    params = opaque.get("parameters")
    ppath = path + ".opaque.parameters"
    if params is None:
        out.append(util.field_required(ppath))
    elif not isinstance(params, dict):
        out.append(util.field_invalid(ppath, "<value omitted>", "must be a valid JSON object"))
    elif len(util.dumps(params)) > OPAQUE_PARAMETERS_MAX:
        out.append(_too_long(ppath, OPAQUE_PARAMETERS_MAX))
    return out


def is_extended_resource_name(name):
    """v1helper.IsExtendedResourceName: not a native name, and 'requests.<name>' is a
    qualified name."""
    if not isinstance(name, str) or "/" not in name or "kubernetes.io/" in name:
        return False
    if name.startswith("requests."):
        return False
    return not util.check_qualified_name("requests." + name)


# --- ResourceSlice -------------------------------------------------------------------------

def _resource_slice_spec(spec, old_spec):
    out = []
    out.extend(_driver_name(spec.get("driver"), "spec.driver"))
    pool = _dict(spec.get("pool"))
    out.extend(_pool(pool))
    if old_spec is not None:
        old_pool = _dict(old_spec.get("pool"))
        if pool.get("name") != old_pool.get("name"):
            out.append(_immutable("spec.pool.name", pool.get("name")))
        if spec.get("driver") != old_spec.get("driver"):
            out.append(_immutable("spec.driver", spec.get("driver")))
        if spec.get("nodeName") != old_spec.get("nodeName"):
            out.append(_immutable("spec.nodeName", spec.get("nodeName")))
    out.extend(_node_selection(spec))
    if spec.get("sharedCounters") is not None and spec.get("devices") is not None:
        out.append(util.field_invalid("spec", "", "only one of `sharedCounters` or `devices` is "
                                      "allowed"))
    devices = _list(spec.get("devices"))
    limit = MAX_DEVICES
    if any(_dict(d).get("taints") or _dict(d).get("consumesCounters") for d in devices):
        limit = MAX_DEVICES_WITH_TAINTS_OR_COUNTERS
    if len(devices) > limit:
        out.append(_too_many("spec.devices", len(devices), limit))
    else:
        per_device = spec.get("perDeviceNodeSelection") is True
        seen = set()
        for i, d in enumerate(devices):
            d = _dict(d)
            out.extend(_device(d, "spec.devices[%d]" % i, per_device))
            name = d.get("name")
            if name in seen:
                out.append(_duplicate("spec.devices[%d]" % i, name))
            seen.add(name)
    sets = _list(spec.get("sharedCounters"))
    if len(sets) > MAX_COUNTER_SETS:
        out.append(_too_many("spec.sharedCounters", len(sets), MAX_COUNTER_SETS))
    else:
        seen = set()
        for i, cs in enumerate(sets):
            cs = _dict(cs)
            p = "spec.sharedCounters[%d]" % i
            out.extend(_counters(cs.get("name"), cs.get("counters"), p, "name"))
            if cs.get("name") in seen:
                out.append(_duplicate(p, cs.get("name")))
            seen.add(cs.get("name"))
    return out


def _decode_quantities(rt, spec):
    values = []
    for d in _list(spec.get("devices")):
        values.extend(_dict(c).get("value") for c in _dict(_dict(d).get("capacity")).values())
        for cc in _list(_dict(d).get("consumesCounters")):
            values.extend(_dict(c).get("value") for c in _dict(_dict(cc).get("counters")).values())
    for cs in _list(spec.get("sharedCounters")):
        values.extend(_dict(c).get("value") for c in _dict(_dict(cs).get("counters")).values())
    for v in values:
        if v is None:
            continue
        try:
            parse_quantity(v)
        except QuantityError as e:
            raise util.bad_request('%s in version "%s" cannot be handled as a %s: %s'
                                   % (rt.kind, rt.version, rt.kind, e))


def _pool(pool):
    out = _pool_name(pool.get("name"), "spec.pool.name")
    count = pool.get("resourceSliceCount", 0)
    if not _int64(count) or count <= 0:
        out.append(util.field_invalid("spec.pool.resourceSliceCount", count,
                                      "must be greater than zero"))
    gen = pool.get("generation", 0)
    if not _int64(gen) or gen < 0:
        out.append(util.field_invalid("spec.pool.generation", gen,
                                      "must be greater than or equal to zero"))
    return out


def _node_selection(spec):
    out = []
    chosen = []
    node = spec.get("nodeName")
    if node is not None:
        if node != "":
            chosen.append("`nodeName`")
            out.extend(_node_name(node, "spec.nodeName"))
        else:
            out.append(util.field_invalid("spec.nodeName", node,
                                          "must be either unset or set to a non-empty string"))
    sel = spec.get("nodeSelector")
    if sel is not None:
        chosen.append("`nodeSelector`")
        terms = _list(_dict(sel).get("nodeSelectorTerms"))
        if len(terms) != 1:
            out.append(util.field_invalid("spec.nodeSelector.nodeSelectorTerms", terms,
                                          "must have exactly one node selector term"))
    for fld in ("allNodes", "perDeviceNodeSelection"):
        v = spec.get(fld)
        if v is None:
            continue
        if v is True:
            chosen.append("`%s`" % fld)
        else:
            out.append(util.field_invalid("spec." + fld, v, "must be either unset or set to true"))
    want = "exactly one of `nodeName`, `nodeSelector`, `allNodes`, `perDeviceNodeSelection` is required"
    if not chosen:
        out.append(util.field_required("spec", want))
    elif len(chosen) > 1:
        out.append(util.field_invalid("spec", "{%s}" % ", ".join(chosen),
                                      want + ", but multiple fields are set"))
    return out


def _device(d, path, per_device):
    name = d.get("name")
    if not isinstance(name, str) or name == "":
        out = [util.field_required(path + ".name")]
    else:
        out = [util.field_invalid(path + ".name", name, e) for e in util.check_dns_label(name)]
    attrs = _dict(d.get("attributes"))
    caps = _dict(d.get("capacity"))
    if len(attrs) + len(caps) > MAX_ATTRIBUTES_AND_CAPACITIES:
        out.append(util.field_invalid(path, len(attrs) + len(caps),
                                      "the total number of attributes and capacities must not "
                                      "exceed %d" % MAX_ATTRIBUTES_AND_CAPACITIES))
    for key in sorted(attrs):
        p = "%s.attributes[%s]" % (path, key)
        out.extend(_qualified_name(key, p))
        out.extend(_attribute(_dict(attrs[key]), p))
    multi = d.get("allowMultipleAllocations") is True
    for key in sorted(caps):
        p = "%s.capacity[%s]" % (path, key)
        out.extend(_qualified_name(key, p))
        out.extend(_capacity(_dict(caps[key]), p, multi))
    taints = _list(d.get("taints"))
    if len(taints) > MAX_TAINTS:
        out.append(_too_many(path + ".taints", len(taints), MAX_TAINTS))
    cons = _list(d.get("consumesCounters"))
    if len(cons) > MAX_COUNTER_CONSUMPTIONS:
        out.append(_too_many(path + ".consumesCounters", len(cons), MAX_COUNTER_CONSUMPTIONS))
    else:
        for i, c in enumerate(cons):
            c = _dict(c)
            out.extend(_counters(c.get("counterSet"), c.get("counters"),
                                 "%s.consumesCounters[%d]" % (path, i), "counterSet"))
    out.extend(_device_node_selection(d, path, per_device))
    return out


def _attribute(a, path):
    out = []
    kinds = [k for k in ("int", "bool", "string", "version") if a.get(k) is not None]
    s = a.get("string")
    if isinstance(s, str) and len(s) > ATTRIBUTE_VALUE_MAX:
        out.append(_too_long(path + ".string", ATTRIBUTE_VALUE_MAX))
    v = a.get("version")
    if v is not None:
        if not isinstance(v, str) or not SEMVER_RE.match(v):
            out.append(util.field_invalid(path + ".version", v,
                                          "must be a string compatible with semver.org spec 2.0.0"))
        if isinstance(v, str) and len(v) > ATTRIBUTE_VALUE_MAX:
            out.append(_too_long(path + ".version", ATTRIBUTE_VALUE_MAX))
    if len(kinds) != 1:
        out.append(util.field_invalid(path, "" if not kinds else a,
                                      "exactly one value must be specified"))
    return out


def _capacity(c, path, multi):
    out = []
    if c.get("requestPolicy") is not None and not multi:
        out.append(util.field_forbidden(path + ".requestPolicy",
                                        "allowMultipleAllocations must be true"))
    return out


def _counters(name, counters, path, name_field):
    out = []
    if not isinstance(name, str) or name == "":
        out.append(util.field_required("%s.%s" % (path, name_field)))
    else:
        out.extend(util.field_invalid("%s.%s" % (path, name_field), name, e)
                   for e in util.check_dns_label(name))
    counters = _dict(counters)
    if not counters:
        out.append(util.field_required(path + ".counters"))
    elif len(counters) > MAX_COUNTERS_PER_SET:
        out.append(_too_many(path + ".counters", len(counters), MAX_COUNTERS_PER_SET))
    else:
        for key in sorted(counters):
            p = "%s.counters[%s]" % (path, key)
            out.extend(util.field_invalid(p, key, e) for e in util.check_dns_label(key))
    return out


def _device_node_selection(d, path, per_device):
    set_here = [f for f in ("nodeName", "nodeSelector", "allNodes") if d.get(f) is not None]
    if not per_device:
        if set_here:
            return [util.field_invalid(path, None, "`nodeName`, `nodeSelector` and `allNodes` can "
                                       "only be set if `perDeviceNodeSelection` is set to true in "
                                       "the ResourceSlice spec")]
        return []
    out = []
    chosen = []
    if d.get("nodeName") is not None:
        if d["nodeName"] != "":
            chosen.append("`nodeName`")
            out.extend(_node_name(d["nodeName"], path + ".nodeName"))
        else:
            out.append(util.field_invalid(path + ".nodeName", "", "must not be empty"))
    if d.get("nodeSelector") is not None:
        chosen.append("`nodeSelector`")
    if d.get("allNodes") is not None:
        if d["allNodes"] is True:
            chosen.append("`allNodes`")
        else:
            out.append(util.field_invalid(path + ".allNodes", d["allNodes"],
                                          "must be either unset or set to true"))
    want = ("exactly one of `nodeName`, `nodeSelector`, or `allNodes` is required when "
            "`perDeviceNodeSelection` is set to true in the ResourceSlice spec")
    if not chosen:
        out.append(util.field_required(path, want))
    elif len(chosen) > 1:
        out.append(util.field_invalid(path, "{%s}" % ", ".join(chosen), want))
    return out
