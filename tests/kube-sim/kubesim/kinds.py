"""Per-kind behaviour: metadata validation, defaults, kind-specific validation,
and CustomResourceDefinition handling (CRD -> ResourceType)."""
import base64
import re

from . import celrules
from . import dra
from . import util
from .builtins import ResourceType, crd_printer_for

NS_KEY = ("", "namespaces")
CRD_KEY = ("apiextensions.k8s.io", "customresourcedefinitions")
NODE_KEY = ("", "nodes")
UNDELETABLE_NAMESPACES = ("default", "kube-system", "kube-public")
CRD_FINALIZER = "customresourcecleanup.apiextensions.k8s.io"


# --- metadata ----------------------------------------------------------------

def validate_meta(rt, obj, create):
    meta = obj.get("metadata") or {}
    causes = []
    name = meta.get("name")
    if not name:
        if create:
            causes.append(util.field_required("metadata.name", "name or generateName is required"))
    else:
        if not isinstance(name, str):
            causes.append(util.field_invalid("metadata.name", name, "must be a string"))
        else:
            if rt.name_rule == "label":
                errs = util.check_dns_label(name)
            elif rt.name_rule == "path":
                errs = util.check_path_segment(name)
            else:
                errs = util.check_dns_subdomain(name)
            for e in errs:
                causes.append(util.field_invalid("metadata.name", name, e))
    if rt.namespaced and meta.get("namespace"):
        for e in util.check_dns_label(meta["namespace"]):
            causes.append(util.field_invalid("metadata.namespace", meta["namespace"], e))
    labels = meta.get("labels") or {}
    if not isinstance(labels, dict):
        causes.append(util.field_invalid("metadata.labels", labels, "must be a map"))
        labels = {}
    for k, v in labels.items():
        for e in util.check_qualified_name(k):
            causes.append(util.field_invalid("metadata.labels", k, e))
        if not isinstance(v, str):
            causes.append(util.field_invalid("metadata.labels", v, "must be a string"))
            continue
        for e in util.check_label_value(v):
            causes.append(util.field_invalid("metadata.labels", v, e))
    ann = meta.get("annotations") or {}
    if not isinstance(ann, dict):
        causes.append(util.field_invalid("metadata.annotations", ann, "must be a map"))
        ann = {}
    total = 0
    for k, v in ann.items():
        for e in util.check_qualified_name(k.lower()):
            causes.append(util.field_invalid("metadata.annotations", k, e))
        total += len(k) + len(v if isinstance(v, str) else str(v))
    if total > 262144:
        causes.append(util.cause("FieldValueTooLong",
                                 "Too long: may not be more than 262144 bytes",
                                 "metadata.annotations"))
    fins = meta.get("finalizers") or []
    for i, f in enumerate(fins):
        if not isinstance(f, str):
            causes.append(util.field_invalid("metadata.finalizers[%d]" % i, f, "must be a string"))
            continue
        errs = util.check_qualified_name(f)
        for e in errs:
            causes.append(util.field_invalid("metadata.finalizers[%d]" % i, f, e))
        if not errs and "/" not in f and f not in ("kubernetes", "orphan", "foregroundDeletion",
                                                   CRD_FINALIZER) and create:
            pass  # the real server only warns about unprefixed finalizers
    return causes


# --- defaults ------------------------------------------------------------------

def keeps_status_on_create(rt):
    # "Nodes allow *all* fields, including status, to be set on create."
    return rt.key in (NODE_KEY, CRD_KEY)


def default_status(rt, obj):
    if rt.key == ("", "pods"):
        obj["status"] = {"phase": "Pending", "qosClass": _qos(obj)}
    elif rt.key == ("", "persistentvolumeclaims"):
        obj["status"] = {"phase": "Pending"}
    elif rt.key == NS_KEY:
        obj["status"] = {"phase": "Active"}
    elif rt.builtin and rt.group in ("apps", "batch"):
        obj["status"] = {}


def _qos(pod):
    cs = ((pod.get("spec") or {}).get("containers") or [])
    anyset = False
    guaranteed = bool(cs)
    for c in cs:
        r = c.get("resources") or {}
        req, lim = r.get("requests") or {}, r.get("limits") or {}
        if req or lim:
            anyset = True
        for res in ("cpu", "memory"):
            if res not in lim or (res in req and req[res] != lim[res]):
                guaranteed = False
    if guaranteed and anyset:
        return "Guaranteed"
    return "Burstable" if anyset else "BestEffort"


def _default_pod_spec(spec):
    spec.setdefault("restartPolicy", "Always")
    spec.setdefault("terminationGracePeriodSeconds", 30)
    spec.setdefault("dnsPolicy", "ClusterFirst")
    spec.setdefault("schedulerName", "default-scheduler")
    spec.setdefault("securityContext", {})
    if "serviceAccountName" not in spec and "serviceAccount" in spec:
        spec["serviceAccountName"] = spec["serviceAccount"]
    for lst in ("containers", "initContainers"):
        for c in spec.get(lst) or []:
            if not isinstance(c, dict):
                continue
            img = c.get("image", "")
            if "imagePullPolicy" not in c:
                tail = img.rsplit("/", 1)[-1]
                c["imagePullPolicy"] = "Always" if ("@" not in tail and (":" not in tail or tail.endswith(":latest"))) else "IfNotPresent"
            c.setdefault("terminationMessagePath", "/dev/termination-log")
            c.setdefault("terminationMessagePolicy", "File")
            c.setdefault("resources", {})
            for p in c.get("ports") or []:
                if isinstance(p, dict):
                    p.setdefault("protocol", "TCP")


def prepare_create(rt, obj, seeding):
    key = rt.key
    if key == NS_KEY:
        spec = obj.setdefault("spec", {})
        spec.setdefault("finalizers", ["kubernetes"])
        if not seeding or not obj.get("status"):
            obj["status"] = {"phase": "Active"}
        labels = obj["metadata"].setdefault("labels", {})
        labels["kubernetes.io/metadata.name"] = obj["metadata"]["name"]
    elif key == ("", "pods"):
        spec = obj.setdefault("spec", {})
        if isinstance(spec, dict):
            _default_pod_spec(spec)
            spec.setdefault("serviceAccountName", "default")
            spec.setdefault("serviceAccount", spec["serviceAccountName"])
            spec.setdefault("enableServiceLinks", True)
            spec.setdefault("priority", 0)
            spec.setdefault("preemptionPolicy", "PreemptLowerPriority")
            spec.setdefault("tolerations", [
                {"key": "node.kubernetes.io/not-ready", "operator": "Exists",
                 "effect": "NoExecute", "tolerationSeconds": 300},
                {"key": "node.kubernetes.io/unreachable", "operator": "Exists",
                 "effect": "NoExecute", "tolerationSeconds": 300}])
    elif key == ("", "secrets"):
        obj.setdefault("type", "Opaque")
        _secret_string_data(obj)
    elif key == ("apps", "deployments"):
        spec = obj.setdefault("spec", {})
        spec.setdefault("replicas", 1)
        spec.setdefault("revisionHistoryLimit", 10)
        spec.setdefault("progressDeadlineSeconds", 600)
        strat = spec.setdefault("strategy", {})
        if isinstance(strat, dict):
            strat.setdefault("type", "RollingUpdate")
            if strat["type"] == "RollingUpdate":
                strat.setdefault("rollingUpdate", {"maxUnavailable": "25%", "maxSurge": "25%"})
        _default_template(spec)
    elif key == ("apps", "daemonsets"):
        spec = obj.setdefault("spec", {})
        spec.setdefault("revisionHistoryLimit", 10)
        spec.setdefault("updateStrategy", {"type": "RollingUpdate",
                                           "rollingUpdate": {"maxUnavailable": 1, "maxSurge": 0}})
        _default_template(spec)
    elif key == ("batch", "jobs"):
        spec = obj.setdefault("spec", {})
        spec.setdefault("parallelism", 1)
        spec.setdefault("completions", 1)
        spec.setdefault("backoffLimit", 6)
        spec.setdefault("completionMode", "NonIndexed")
        spec.setdefault("suspend", False)
        spec.setdefault("podReplacementPolicy", "TerminatingOrFailed")
        uid = obj["metadata"]["uid"]
        name = obj["metadata"]["name"]
        if not spec.get("manualSelector"):
            spec["selector"] = {"matchLabels": {"batch.kubernetes.io/controller-uid": uid}}
            tmeta = spec.setdefault("template", {}).setdefault("metadata", {})
            tl = tmeta.setdefault("labels", {})
            tl.update({"batch.kubernetes.io/controller-uid": uid, "batch.kubernetes.io/job-name": name,
                       "controller-uid": uid, "job-name": name})
            obj["metadata"].setdefault("labels", {}).update(
                {"batch.kubernetes.io/controller-uid": uid, "batch.kubernetes.io/job-name": name,
                 "controller-uid": uid, "job-name": name})
        _default_template(spec)
        if ((spec.get("template") or {}).get("spec") or {}).get("restartPolicy") == "Always":
            pass
    elif key == ("", "persistentvolumeclaims"):
        spec = obj.setdefault("spec", {})
        spec.setdefault("volumeMode", "Filesystem")
    elif key == ("storage.k8s.io", "csidrivers"):
        spec = obj.setdefault("spec", {})
        spec.setdefault("attachRequired", True)
        spec.setdefault("podInfoOnMount", False)
        spec.setdefault("requiresRepublish", False)
        spec.setdefault("storageCapacity", False)
        spec.setdefault("fsGroupPolicy", "ReadWriteOnceWithFSType")
        spec.setdefault("seLinuxMount", False)
        spec.setdefault("volumeLifecycleModes", ["Persistent"])
    elif key == CRD_KEY:
        _default_crd(obj)


def _default_template(spec):
    t = spec.get("template")
    if isinstance(t, dict):
        t.setdefault("metadata", {}).setdefault("creationTimestamp", None)
        ps = t.setdefault("spec", {})
        if isinstance(ps, dict):
            _default_pod_spec(ps)


def _secret_string_data(obj):
    sd = obj.pop("stringData", None)
    if isinstance(sd, dict):
        data = obj.setdefault("data", {})
        for k, v in sd.items():
            data[k] = base64.b64encode(str(v).encode()).decode()


def prepare_update(rt, new, old):
    key = rt.key
    if key == NS_KEY:
        new["spec"] = old.get("spec", {})
        new["status"] = old.get("status", {})
        new["metadata"].setdefault("labels", {})["kubernetes.io/metadata.name"] = old["metadata"]["name"]
    elif key == ("", "secrets"):
        _secret_string_data(new)
    elif key == ("", "pods"):
        spec = new.get("spec")
        if isinstance(spec, dict):
            _default_pod_spec(spec)
    elif key == CRD_KEY:
        _default_crd(new)
    elif key in (("apps", "deployments"), ("apps", "daemonsets"), ("batch", "jobs")):
        spec = new.get("spec")
        if isinstance(spec, dict):
            _default_template(spec)


def prepare_delete(rt, obj):
    if rt.key == NS_KEY:
        obj.setdefault("status", {})["phase"] = "Terminating"
    elif rt.key == CRD_KEY:
        conds = obj.setdefault("status", {}).setdefault("conditions", [])
        _set_cond(conds, "Terminating", "True", "InstanceDeletionInProgress",
                  "CustomResource deletion is in progress")


def has_blocker(rt, obj):
    """Deletion blockers that are not metadata.finalizers."""
    if rt.key == NS_KEY:
        return bool((obj.get("spec") or {}).get("finalizers"))
    return False


def check_delete(rt, obj):
    if rt.key == NS_KEY:
        name = obj["metadata"]["name"]
        if name in UNDELETABLE_NAMESPACES:
            raise util.forbidden("namespaces", "", name, "this namespace may not be deleted")
        if obj["metadata"].get("deletionTimestamp") and (obj.get("spec") or {}).get("finalizers"):
            raise util.conflict("namespaces", "", name,
                                "The system is ensuring all content is removed from this "
                                "namespace.  Upon completion, this namespace will automatically "
                                "be purged by the system.")


# --- kind validation -------------------------------------------------------

def validate(rt, obj, old, store):
    key = rt.key
    causes = []
    if key == ("coordination.k8s.io", "leases"):
        spec = obj.get("spec") or {}
        lds = spec.get("leaseDurationSeconds")
        if lds is not None and (not isinstance(lds, int) or lds <= 0):
            causes.append(util.field_invalid("spec.leaseDurationSeconds", lds, "must be greater than 0"))
        lt = spec.get("leaseTransitions")
        if lt is not None and (not isinstance(lt, int) or lt < 0):
            causes.append(util.field_invalid("spec.leaseTransitions", lt, "must be greater than or equal to 0"))
        if spec.get("preferredHolder") and not spec.get("strategy"):
            causes.append(util.field_forbidden("spec.preferredHolder", "preferredHolder is only allowed if strategy is set"))
    elif key == ("", "pods"):
        spec = obj.get("spec") or {}
        cs = spec.get("containers")
        if not cs:
            causes.append(util.field_required("spec.containers"))
        else:
            for i, c in enumerate(cs):
                if not isinstance(c, dict):
                    continue
                if not c.get("name"):
                    causes.append(util.field_required("spec.containers[%d].name" % i))
                if not c.get("image") and old is None:
                    causes.append(util.field_required("spec.containers[%d].image" % i))
        if old is not None:
            os_, ns_ = dict(old.get("spec") or {}), dict(spec)
            for s in (os_, ns_):
                s.pop("activeDeadlineSeconds", None)
                s.pop("tolerations", None)
                s.pop("terminationGracePeriodSeconds", None)
                s["containers"] = [{k: v for k, v in c.items() if k != "image"}
                                   for c in s.get("containers") or [] if isinstance(c, dict)]
                s["initContainers"] = [{k: v for k, v in c.items() if k != "image"}
                                       for c in s.get("initContainers") or [] if isinstance(c, dict)]
            if os_ != ns_ and not ((old.get("spec") or {}).get("nodeName") is None and
                                   _only_node_name_changed(old.get("spec") or {}, spec)):
                causes.append(util.field_forbidden(
                    "spec", "pod updates may not change fields other than `spec.containers[*].image`,"
                    "`spec.initContainers[*].image`,`spec.activeDeadlineSeconds`,`spec.tolerations` "
                    "(only additions to existing tolerations),`spec.terminationGracePeriodSeconds` "
                    "(allow it to be set to 1 if it was previously negative)"))
    elif key in (("apps", "deployments"), ("apps", "daemonsets")):
        spec = obj.get("spec") or {}
        sel = spec.get("selector")
        if not sel:
            causes.append(util.field_required("spec.selector"))
        else:
            ml = (sel or {}).get("matchLabels") or {}
            tl = (((spec.get("template") or {}).get("metadata") or {}).get("labels")) or {}
            if any(tl.get(k) != v for k, v in ml.items()):
                causes.append(util.field_invalid(
                    "spec.template.metadata.labels", tl, "`selector` does not match template `labels`"))
        if old is not None and sel != (old.get("spec") or {}).get("selector"):
            causes.append(util.field_invalid("spec.selector", sel, "field is immutable"))
    elif key == ("", "configmaps"):
        for fld in ("data", "binaryData"):
            for k in (obj.get(fld) or {}):
                if not re.match(r"^[-._a-zA-Z0-9]+$", k) or len(k) > 253:
                    causes.append(util.field_invalid(
                        "%s[%s]" % (fld, k), k, "a valid config key must consist of alphanumeric "
                        "characters, '-', '_' or '.' (e.g. 'key.name',  or 'KEY_NAME',  or "
                        "'key-name', regex used for validation is '[-._a-zA-Z0-9]+')"))
    elif key == ("", "secrets"):
        if old is not None and (old.get("immutable") and obj.get("data") != old.get("data")):
            causes.append(util.field_forbidden("data", "field is immutable when `immutable` is set"))
        if old is not None and obj.get("type") != old.get("type"):
            causes.append(util.field_invalid("type", obj.get("type"), "field is immutable"))
    elif key in (("rbac.authorization.k8s.io", "rolebindings"),
                 ("rbac.authorization.k8s.io", "clusterrolebindings")):
        rr = obj.get("roleRef") or {}
        if not rr.get("name"):
            causes.append(util.field_required("roleRef.name"))
        if rr.get("kind") not in ("Role", "ClusterRole") or \
                (key[1] == "clusterrolebindings" and rr.get("kind") != "ClusterRole"):
            causes.append(util.cause("FieldValueNotSupported",
                                     'Unsupported value: "%s": supported values: "ClusterRole"%s'
                                     % (rr.get("kind", ""), ', "Role"' if key[1] == "rolebindings" else ""),
                                     "roleRef.kind"))
        if old is not None and rr != (old.get("roleRef") or {}):
            causes.append(util.field_invalid("roleRef", rr, "cannot change roleRef"))
    elif dra.handles(rt):
        causes.extend(dra.validate(rt, obj, old))
    elif key == CRD_KEY:
        causes.extend(validate_crd(obj, old, store))
    return causes


def _only_node_name_changed(old_spec, new_spec):
    a = dict(old_spec)
    b = dict(new_spec)
    a.pop("nodeName", None)
    b.pop("nodeName", None)
    return a == b


# --- CRDs ------------------------------------------------------------------------

def _default_crd(obj):
    spec = obj.setdefault("spec", {})
    names = spec.setdefault("names", {})
    if names.get("kind") and not names.get("listKind"):
        names["listKind"] = names["kind"] + "List"
    if names.get("plural") and not names.get("singular"):
        names["singular"] = names["kind"].lower() if names.get("kind") else names["plural"]
    spec.setdefault("conversion", {"strategy": "None"})
    for v in spec.get("versions") or []:
        if isinstance(v, dict):
            v.setdefault("served", True)
            v.setdefault("storage", False)


def validate_crd(obj, old, store):
    causes = []
    spec = obj.get("spec") or {}
    names = spec.get("names") or {}
    group = spec.get("group") or ""
    plural = names.get("plural") or ""
    name = obj["metadata"].get("name", "")
    if not group:
        causes.append(util.field_required("spec.group"))
    elif len(group.split(".")) < 2:
        causes.append(util.field_invalid("spec.group", group, "should be a domain with at least one dot"))
    if not plural:
        causes.append(util.field_required("spec.names.plural"))
    if not names.get("kind"):
        causes.append(util.field_required("spec.names.kind"))
    if plural and group and name != "%s.%s" % (plural, group):
        causes.append(util.field_invalid("metadata.name", name, 'must be spec.names.plural+"."+spec.group'))
    if spec.get("scope") not in ("Namespaced", "Cluster"):
        causes.append(util.cause("FieldValueNotSupported", 'Unsupported value: "%s": supported values: '
                                 '"Cluster", "Namespaced"' % spec.get("scope", ""), "spec.scope"))
    versions = spec.get("versions") or []
    if not versions:
        causes.append(util.field_invalid("spec.versions", versions, "must have exactly one version marked as storage version"))
    else:
        storage = [v for v in versions if v.get("storage")]
        if len(storage) != 1:
            causes.append(util.field_invalid("spec.versions", versions and "...",
                                             "must have exactly one version marked as storage version"))
        if not any(v.get("served") for v in versions):
            causes.append(util.field_invalid("spec.versions", "...", "must have at least one version marked as served"))
    if old is not None:
        oscope = (old.get("spec") or {}).get("scope")
        if oscope and spec.get("scope") != oscope:
            causes.append(util.field_invalid("spec.scope", spec.get("scope"), "field is immutable"))
        if (old.get("spec") or {}).get("group") != group:
            causes.append(util.field_invalid("spec.group", group, "field is immutable"))
    if not causes:
        causes.extend(celrules.compile_crd(obj)[0])
    return causes


def _set_cond(conds, typ, status, reason, message):
    for c in conds:
        if c.get("type") == typ:
            if c.get("status") != status:
                c["lastTransitionTime"] = util.now_rfc3339()
            c.update({"status": status, "reason": reason, "message": message})
            return
    conds.append({"type": typ, "status": status, "lastTransitionTime": util.now_rfc3339(),
                  "reason": reason, "message": message})


def crd_status(obj, store):
    """Set acceptedNames, Established and NamesAccepted (names are accepted at once
    unless another CRD in the group already owns them)."""
    spec = obj.get("spec") or {}
    names = dict(spec.get("names") or {})
    st = obj.setdefault("status", {})
    conds = st.setdefault("conditions", [])
    conflict = _names_conflict(obj, store)
    unsupported = celrules.compile_crd(obj)[1]
    if unsupported:
        # kube-sim cannot evaluate these rules: it refuses to serve the CRD rather than skip them
        _set_cond(conds, "NamesAccepted", "True", "NoConflicts", "no conflicts found for CRD names")
        _set_cond(conds, "Established", "False", "KubeSimUnsupportedValidationRule",
                  "kube-sim cannot evaluate these x-kubernetes-validations rules, so it does not "
                  "serve this CRD: " + "; ".join(unsupported))
    elif conflict:
        _set_cond(conds, "NamesAccepted", "False", "NameConflict", conflict)
        _set_cond(conds, "Established", "False", "NotAccepted", "not all names are accepted")
    else:
        st["acceptedNames"] = names
        _set_cond(conds, "NamesAccepted", "True", "NoConflicts", "no conflicts found for CRD names")
        _set_cond(conds, "Established", "True", "InitialNamesAccepted", "the initial names have been accepted")
    st["storedVersions"] = sorted(set((st.get("storedVersions") or []) +
                                      [v["name"] for v in spec.get("versions") or [] if v.get("storage")]))


def _names_conflict(obj, store):
    spec = obj.get("spec") or {}
    group = spec.get("group")
    names = spec.get("names") or {}
    for rt in store.types.values():
        if rt.group != group:
            continue
        if rt.crd is not None and rt.crd == obj["metadata"].get("name"):
            continue
        if rt.plural == names.get("plural"):
            return '"%s" is already in use' % rt.plural
        if rt.kind == names.get("kind"):
            return '"%s" is already in use' % rt.kind
    return None


_VER_RE = re.compile(r"^v(\d+)(?:(alpha|beta)(\d+))?$")


def version_priority(v):
    m = _VER_RE.match(v)
    if not m:
        return (0, 0, 0, v)
    major = int(m.group(1))
    if m.group(2) is None:
        return (3, major, 0, "")
    return (2 if m.group(2) == "beta" else 1, major, int(m.group(3)), "")


def sort_versions(vs):
    return sorted(vs, key=lambda v: version_priority(v), reverse=True)


def crd_to_type(crd):
    spec = crd.get("spec") or {}
    names = spec.get("names") or {}
    versions = [v for v in spec.get("versions") or [] if v.get("served")]
    storage = [v for v in spec.get("versions") or [] if v.get("storage")]
    storage_v = storage[0]["name"] if storage else versions[0]["name"]
    served = sort_versions([v["name"] for v in versions])
    sv = storage[0] if storage else versions[0]
    has_status = "status" in ((sv.get("subresources") or {}))
    rt = ResourceType(spec["group"], storage_v, names["kind"], names["plural"],
                      spec.get("scope") == "Namespaced", names.get("shortNames") or [],
                      singular=names.get("singular") or names["kind"].lower(),
                      status=has_status, generation=True,
                      categories=names.get("categories") or [], fields={},
                      unconditional_update=False, return_deleted=False, versions=served,
                      crd=crd["metadata"]["name"], builtin=False,
                      list_kind=names.get("listKind") or names["kind"] + "List")
    rt.cel_trees = {}
    for v in versions:
        rt.printer_columns[v["name"]] = v.get("additionalPrinterColumns") or []
        rt.schemas[v["name"]] = ((v.get("schema") or {}).get("openAPIV3Schema")) or {}
        rt.cel_trees[v["name"]] = celrules.rule_tree(rt.schemas[v["name"]])
        rt.selectable[v["name"]] = [s.get("jsonPath", "").lstrip(".") for s in v.get("selectableFields") or []]
        rt.status_by_version = getattr(rt, "status_by_version", {})
        rt.status_by_version[v["name"]] = "status" in (v.get("subresources") or {})
    rt.printer = None
    rt.fields = {f: "" for vs in rt.selectable.values() for f in vs}
    rt.crd_printer = lambda version, _rt=rt: crd_printer_for(_rt, version)
    return rt
