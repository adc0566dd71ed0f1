"""Kind registry: the built-in resource types kube-sim serves, and the
ResourceType description shared with CRD-defined types. Also server-side
table printing (Accept: application/json;as=Table;v=v1;g=meta.k8s.io)."""
import time

from . import util
from .jsonpath import JsonPath

ALL_VERBS = ["create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"]
CREATE_ONLY = ["create"]

# Field selectors per kind (beyond metadata.name / metadata.namespace).
POD_FIELDS = {"spec.nodeName": "", "spec.restartPolicy": "", "spec.schedulerName": "",
              "spec.serviceAccountName": "", "spec.hostNetwork": "false", "status.phase": "",
              "status.podIP": "", "status.podIPs": "", "status.nominatedNodeName": "",
              "spec.host": ""}
NODE_FIELDS = {"spec.unschedulable": "false"}
NAMESPACE_FIELDS = {"status.phase": ""}
SECRET_FIELDS = {"type": ""}
EVENT_FIELDS = {"involvedObject.kind": "", "involvedObject.namespace": "",
                "involvedObject.name": "", "involvedObject.uid": "",
                "involvedObject.apiVersion": "", "involvedObject.resourceVersion": "",
                "involvedObject.fieldPath": "", "reason": "", "reportingComponent": "",
                "source": "", "type": ""}
JOB_FIELDS = {"status.successful": ""}
REPLICA_FIELDS = {"status.replicas": ""}


class ResourceType:
    """Everything the server needs to know about one resource (plural)."""

    def __init__(self, group, version, kind, plural, namespaced, short_names=(),
                 singular=None, status=False, generation=False, categories=(),
                 verbs=None, fields=None, name_rule="subdomain", create_on_update=False,
                 unconditional_update=True, return_deleted=True, printer=None,
                 versions=None, crd=None, builtin=True, virtual=False,
                 default_propagation="Background", list_kind=None):
        self.group = group
        self.version = version            # storage version
        self.versions = versions or [version]   # served versions, preferred first
        self.kind = kind
        self.plural = plural
        self.singular = singular if singular is not None else kind.lower()
        self.namespaced = namespaced
        self.short_names = list(short_names)
        self.status = status
        self.generation = generation
        self.categories = list(categories)
        self.verbs = verbs or list(ALL_VERBS)
        self.fields = fields  # None: only metadata.name/namespace ("not a known field selector")
        self.name_rule = name_rule
        self.create_on_update = create_on_update
        self.unconditional_update = unconditional_update
        self.return_deleted = return_deleted
        self.printer = printer
        self.crd = crd
        self.builtin = builtin
        self.virtual = virtual
        self.default_propagation = default_propagation
        self.list_kind = list_kind or (kind + "List")
        self.printer_columns = {}   # version -> additionalPrinterColumns (CRDs)
        self.schemas = {}           # version -> openAPIV3Schema (CRDs)
        self.selectable = {}        # version -> extra selectable field paths (CRDs)

    @property
    def key(self):
        return (self.group, self.plural)

    def api_version(self, version=None):
        v = version or self.version
        return "%s/%s" % (self.group, v) if self.group else v

    def qualified(self):
        return util.qualified_resource(self.plural, self.group)

    def kind_qualified(self):
        return self.kind + ("." + self.group if self.group else "")

    def __repr__(self):
        return "<ResourceType %s>" % self.qualified()


# --- table printing -------------------------------------------------------

def col(name, typ="string", fmt="", desc="", priority=0):
    return {"name": name, "type": typ, "format": fmt, "description": desc, "priority": priority}


NAME_COL = col("Name", "string", "name", "Name must be unique within a namespace. Is required "
               "when creating resources, although some resources may allow a client to "
               "request the generation of an appropriate name automatically.")
AGE_COL = col("Age", "string", "", "CreationTimestamp is a timestamp representing the server "
              "time when this object was created.")
CREATED_AT_COL = col("Created At", "date", "", "CreationTimestamp is a timestamp representing "
                     "the server time when this object was created.")


def _meta(o):
    return o.get("metadata") or {}


def _age(o):
    return util.age(_meta(o).get("creationTimestamp"))


def _name(o):
    return _meta(o).get("name", "")


def default_printer():
    return [NAME_COL, AGE_COL], lambda o: [_name(o), _age(o)]


def _created_at_printer():
    return [NAME_COL, CREATED_AT_COL], lambda o: [_name(o), _meta(o).get("creationTimestamp")]


def _node_printer():
    cols = [NAME_COL, col("Status", desc="The status of the node"),
            col("Roles", desc="The roles of the node"), AGE_COL,
            col("Version", desc="Kubelet Version reported by the node."),
            col("Internal-IP", priority=1, desc="List of internal IPs."),
            col("External-IP", priority=1, desc="List of external IPs."),
            col("OS-Image", priority=1, desc="OS image reported by the node."),
            col("Kernel-Version", priority=1, desc="Kernel version reported by the node."),
            col("Container-Runtime", priority=1, desc="Container runtime reported by the node.")]

    def row(o):
        st = o.get("status") or {}
        spec = o.get("spec") or {}
        status = "Unknown"
        for c in st.get("conditions") or []:
            if c.get("type") == "Ready":
                status = "Ready" if c.get("status") == "True" else (
                    "NotReady" if c.get("status") == "False" else "Unknown")
        if spec.get("unschedulable"):
            status += ",SchedulingDisabled"
        roles = []
        for k, v in (_meta(o).get("labels") or {}).items():
            if k.startswith("node-role.kubernetes.io/"):
                roles.append(k[len("node-role.kubernetes.io/"):])
            elif k == "kubernetes.io/role" and v:
                roles.append(v)
        roles = ",".join(sorted(set(r for r in roles if r))) or "<none>"
        info = st.get("nodeInfo") or {}
        ips = {"InternalIP": [], "ExternalIP": []}
        for a in st.get("addresses") or []:
            if a.get("type") in ips:
                ips[a["type"]].append(a.get("address", ""))
        return [_name(o), status, roles, _age(o), info.get("kubeletVersion", ""),
                ",".join(ips["InternalIP"]) or "<none>", ",".join(ips["ExternalIP"]) or "<none>",
                info.get("osImage", "<unknown>"), info.get("kernelVersion", "<unknown>"),
                info.get("containerRuntimeVersion", "<unknown>")]
    return cols, row


def _pod_printer():
    cols = [NAME_COL, col("Ready", desc="The aggregate readiness state of this pod for accepting traffic."),
            col("Status", desc="The aggregate status of the containers in this pod."),
            col("Restarts", desc="The number of times the containers in this pod have been restarted and when the last container in this pod has restarted."),
            AGE_COL, col("IP", priority=1, desc="IP address allocated to the pod."),
            col("Node", priority=1, desc="Name of the node where the pod is running."),
            col("Nominated Node", priority=1, desc="Nominated node name."),
            col("Readiness Gates", priority=1, desc="Pod readiness gates.")]

    def row(o):
        spec = o.get("spec") or {}
        st = o.get("status") or {}
        total = len(spec.get("containers") or [])
        cstat = st.get("containerStatuses") or []
        ready = sum(1 for c in cstat if c.get("ready"))
        restarts = sum(int(c.get("restartCount") or 0) for c in cstat)
        reason = st.get("reason") or st.get("phase") or "Pending"
        for c in cstat:
            w = (c.get("state") or {}).get("waiting")
            if w and w.get("reason"):
                reason = w["reason"]
        if _meta(o).get("deletionTimestamp"):
            reason = "Terminating"
        gates = spec.get("readinessGates") or []
        return [_name(o), "%d/%d" % (ready, total), reason, restarts, _age(o),
                st.get("podIP") or "<none>", spec.get("nodeName") or "<none>",
                st.get("nominatedNodeName") or "<none>",
                "%d/%d" % (0, len(gates)) if gates else "<none>"]
    return cols, row


def _namespace_printer():
    cols = [NAME_COL, col("Status", desc="The status of the namespace"), AGE_COL]
    return cols, lambda o: [_name(o), (o.get("status") or {}).get("phase", ""), _age(o)]


def _configmap_printer():
    cols = [NAME_COL, col("Data", "integer", desc="Number of data entries"), AGE_COL]
    return cols, lambda o: [_name(o), len(o.get("data") or {}) + len(o.get("binaryData") or {}), _age(o)]


def _secret_printer():
    cols = [NAME_COL, col("Type", desc="The type of the secret"),
            col("Data", "integer", desc="Number of data entries"), AGE_COL]
    return cols, lambda o: [_name(o), o.get("type", "Opaque"),
                            len(o.get("data") or {}) + len(o.get("stringData") or {}), _age(o)]


def _sa_printer():
    cols = [NAME_COL, col("Secrets", "integer", desc="Number of secrets"), AGE_COL]
    return cols, lambda o: [_name(o), len(o.get("secrets") or []), _age(o)]


def _event_printer():
    cols = [col("Last Seen", desc="Time since the most recent occurrence"),
            col("Type", desc="Type of this event"), col("Reason", desc="Reason"),
            col("Object", desc="The object this event is about"),
            col("Message", desc="Message"), NAME_COL]

    def row(o):
        io = o.get("involvedObject") or {}
        last = o.get("lastTimestamp") or o.get("eventTime") or _meta(o).get("creationTimestamp")
        return [util.age(last), o.get("type", ""), o.get("reason", ""),
                "%s/%s" % ((io.get("kind") or "").lower(), io.get("name", "")),
                o.get("message", ""), _name(o)]
    cols[-1] = dict(NAME_COL, priority=1)
    return cols, row


def _binding_printer(cluster):
    cols = [NAME_COL, col("Role", desc="Role"), AGE_COL,
            col("Users", priority=1, desc="Users"), col("Groups", priority=1, desc="Groups"),
            col("ServiceAccounts", priority=1, desc="ServiceAccounts")]

    def row(o):
        rr = o.get("roleRef") or {}
        users, groups, sas = [], [], []
        for s in o.get("subjects") or []:
            k = s.get("kind")
            if k == "User":
                users.append(s.get("name", ""))
            elif k == "Group":
                groups.append(s.get("name", ""))
            elif k == "ServiceAccount":
                sas.append("%s/%s" % (s.get("namespace", ""), s.get("name", "")))
        return [_name(o), "%s/%s" % (rr.get("kind", ""), rr.get("name", "")), _age(o),
                ", ".join(users), ", ".join(groups), ", ".join(sas)]
    return cols, row


def _csinode_printer():
    cols = [NAME_COL, col("Drivers", "integer", desc="Drivers indicates the number of CSI drivers registered on the node"), AGE_COL]
    return cols, lambda o: [_name(o), len((o.get("spec") or {}).get("drivers") or []), _age(o)]


def _storageclass_printer():
    cols = [NAME_COL, col("Provisioner"), col("ReclaimPolicy"), col("VolumeBindingMode"),
            col("AllowVolumeExpansion", "boolean"), AGE_COL]

    def row(o):
        return [_name(o), o.get("provisioner", ""), o.get("reclaimPolicy", "Delete"),
                o.get("volumeBindingMode", "Immediate"), o.get("allowVolumeExpansion", False),
                _age(o)]
    return cols, row


def _pv_printer():
    cols = [NAME_COL, col("Capacity"), col("Access Modes"), col("Reclaim Policy"),
            col("Status"), col("Claim"), col("StorageClass"), AGE_COL]

    def row(o):
        s = o.get("spec") or {}
        ref = s.get("claimRef") or {}
        claim = "%s/%s" % (ref.get("namespace", ""), ref.get("name", "")) if ref else ""
        return [_name(o), (s.get("capacity") or {}).get("storage", ""),
                ",".join(s.get("accessModes") or []),
                s.get("persistentVolumeReclaimPolicy", "Retain"),
                (o.get("status") or {}).get("phase", "Pending"), claim,
                s.get("storageClassName", ""), _age(o)]
    return cols, row


def _csidriver_printer():
    cols = [NAME_COL, col("AttachRequired", "boolean"), col("PodInfoOnMount", "boolean"),
            col("StorageCapacity", "boolean"), col("TokenRequests"),
            col("RequiresRepublish", "boolean"), col("Modes"), AGE_COL]

    def row(o):
        s = o.get("spec") or {}
        toks = ",".join(t.get("audience", "") for t in s.get("tokenRequests") or []) or "<unset>"
        return [_name(o), s.get("attachRequired", True), s.get("podInfoOnMount", False),
                s.get("storageCapacity", False), toks, s.get("requiresRepublish", False),
                ",".join(s.get("volumeLifecycleModes") or ["Persistent"]), _age(o)]
    return cols, row


def _resourceslice_printer():
    cols = [NAME_COL, col("Node", desc="NodeName identifies the node which provides the resources "
                          "in this pool."),
            col("Driver", desc="Driver identifies the DRA driver providing the capacity "
                "information."),
            col("Pool", desc="Pool describes the pool that this ResourceSlice belongs to."),
            AGE_COL]

    def row(o):
        s = o.get("spec") or {}
        return [_name(o), s.get("nodeName") or "", s.get("driver", ""),
                (s.get("pool") or {}).get("name", ""), _age(o)]
    return cols, row


def _pvc_printer():
    cols = [NAME_COL, col("Status"), col("Volume"), col("Capacity"), col("Access Modes"),
            col("StorageClass"), col("VolumeAttributesClass"), AGE_COL,
            col("VolumeMode", priority=1)]
    short = {"ReadWriteOnce": "RWO", "ReadOnlyMany": "ROX", "ReadWriteMany": "RWX",
             "ReadWriteOncePod": "RWOP"}

    def row(o):
        s = o.get("spec") or {}
        st = o.get("status") or {}
        return [_name(o), st.get("phase", "Pending"), s.get("volumeName", ""),
                (st.get("capacity") or {}).get("storage", ""),
                ",".join(short.get(m, m) for m in st.get("accessModes") or []),
                s.get("storageClassName", "<unset>"), s.get("volumeAttributesClassName") or "<unset>",
                _age(o), s.get("volumeMode", "Filesystem")]
    return cols, row


def _lease_printer():
    cols = [NAME_COL, col("Holder", desc="The holder of the lease"), AGE_COL]
    return cols, lambda o: [_name(o), (o.get("spec") or {}).get("holderIdentity", ""), _age(o)]


def _deployment_printer():
    cols = [NAME_COL, col("Ready", desc="Number of the pod with ready state"),
            col("Up-to-date", "integer"), col("Available", "integer"), AGE_COL,
            col("Containers", priority=1), col("Images", priority=1), col("Selector", priority=1)]

    def row(o):
        st = o.get("status") or {}
        spec = o.get("spec") or {}
        desired = spec.get("replicas", 1)
        cs = ((spec.get("template") or {}).get("spec") or {}).get("containers") or []
        sel = (spec.get("selector") or {}).get("matchLabels") or {}
        return [_name(o), "%d/%d" % (st.get("readyReplicas", 0), desired),
                st.get("updatedReplicas", 0), st.get("availableReplicas", 0), _age(o),
                ",".join(c.get("name", "") for c in cs), ",".join(c.get("image", "") for c in cs),
                ",".join("%s=%s" % kv for kv in sorted(sel.items()))]
    return cols, row


def _daemonset_printer():
    cols = [NAME_COL, col("Desired", "integer"), col("Current", "integer"), col("Ready", "integer"),
            col("Up-to-date", "integer"), col("Available", "integer"), col("Node Selector"), AGE_COL]

    def row(o):
        st = o.get("status") or {}
        ns = (((o.get("spec") or {}).get("template") or {}).get("spec") or {}).get("nodeSelector") or {}
        return [_name(o), st.get("desiredNumberScheduled", 0), st.get("currentNumberScheduled", 0),
                st.get("numberReady", 0), st.get("updatedNumberScheduled", 0),
                st.get("numberAvailable", 0),
                ",".join("%s=%s" % kv for kv in sorted(ns.items())) or "<none>", _age(o)]
    return cols, row


def _job_printer():
    cols = [NAME_COL, col("Status"), col("Completions"), col("Duration"), AGE_COL]

    def row(o):
        st = o.get("status") or {}
        spec = o.get("spec") or {}
        status = "Running"
        for c in st.get("conditions") or []:
            if c.get("status") == "True" and c.get("type") in ("Complete", "Failed", "Suspended"):
                status = c["type"]
        comp = spec.get("completions")
        comps = "%d/%s" % (st.get("succeeded", 0), comp if comp is not None else 1)
        start = util.parse_time(st.get("startTime"))
        end = util.parse_time(st.get("completionTime")) or time.time()
        dur = util.human_duration(end - start) if start else ""
        return [_name(o), status, comps, dur, _age(o)]
    return cols, row


def _crd_printer():
    return _created_at_printer()


def crd_printer_for(rt, version):
    """Printer from a CRD version's additionalPrinterColumns."""
    spec_cols = rt.printer_columns.get(version)
    if not spec_cols:
        return default_printer()
    cols = [NAME_COL]
    paths = []
    for c in spec_cols:
        typ = c.get("type", "string")
        cols.append(col(c.get("name", ""), "string" if typ == "date" else typ,
                        c.get("format", "") or "", c.get("description", "") or "",
                        int(c.get("priority", 0) or 0)))
        try:
            jp = JsonPath(c.get("jsonPath", ""))
        except Exception:
            jp = None
        paths.append((jp, typ))

    def row(o):
        cells = [_name(o)]
        for jp, typ in paths:
            vals = jp.find(o) if jp else []
            if not vals:
                cells.append(None)
                continue
            v = vals[0] if len(vals) == 1 else vals
            if typ == "date" and isinstance(v, str):
                v = util.age(v)
            elif isinstance(v, (dict, list)) and len(vals) > 1:
                v = ",".join(util.dumps(x) if isinstance(x, (dict, list)) else str(x) for x in vals)
            elif isinstance(v, (dict, list)):
                v = util.dumps(v)
            cells.append(v)
        return cells
    return cols, row


# --- the built-in registry -------------------------------------------------

def builtin_types():
    T = ResourceType
    return [
        T("", "v1", "Namespace", "namespaces", False, ["ns"], status=True,
          fields=NAMESPACE_FIELDS, name_rule="label", printer=_namespace_printer),
        T("", "v1", "Node", "nodes", False, ["no"], status=True, fields=NODE_FIELDS,
          printer=_node_printer),
        T("", "v1", "Pod", "pods", True, ["po"], status=True, fields=POD_FIELDS,
          categories=["all"], printer=_pod_printer),
        T("", "v1", "ServiceAccount", "serviceaccounts", True, ["sa"], printer=_sa_printer),
        T("", "v1", "ConfigMap", "configmaps", True, ["cm"], printer=_configmap_printer),
        T("", "v1", "Secret", "secrets", True, [], fields=SECRET_FIELDS, printer=_secret_printer),
        T("", "v1", "Event", "events", True, ["ev"], fields=EVENT_FIELDS, printer=_event_printer,
          name_rule="path"),
        T("", "v1", "PersistentVolumeClaim", "persistentvolumeclaims", True, ["pvc"], status=True,
          printer=_pvc_printer),
        T("rbac.authorization.k8s.io", "v1", "Role", "roles", True, [], printer=_created_at_printer,
          name_rule="path"),
        T("rbac.authorization.k8s.io", "v1", "RoleBinding", "rolebindings", True, [],
          printer=lambda: _binding_printer(False), name_rule="path"),
        T("rbac.authorization.k8s.io", "v1", "ClusterRole", "clusterroles", False, [],
          printer=_created_at_printer, name_rule="path"),
        T("rbac.authorization.k8s.io", "v1", "ClusterRoleBinding", "clusterrolebindings", False, [],
          printer=lambda: _binding_printer(True), name_rule="path"),
        T("storage.k8s.io", "v1", "CSINode", "csinodes", False, [], printer=_csinode_printer),
        T("storage.k8s.io", "v1", "CSIDriver", "csidrivers", False, [], printer=_csidriver_printer),
        T("storage.k8s.io", "v1", "StorageClass", "storageclasses", False, ["sc"],
          printer=_storageclass_printer),
        T("", "v1", "PersistentVolume", "persistentvolumes", False, ["pv"], status=True,
          printer=_pv_printer),
        # Dynamic Resource Allocation (kubesim/dra.py validates them)
        T("resource.k8s.io", "v1", "DeviceClass", "deviceclasses", False, [], generation=True,
          printer=default_printer),
        T("resource.k8s.io", "v1", "ResourceSlice", "resourceslices", False, [], generation=True,
          fields={"spec.nodeName": "", "spec.driver": ""}, printer=_resourceslice_printer),
        T("coordination.k8s.io", "v1", "Lease", "leases", True, [], printer=_lease_printer,
          create_on_update=True, unconditional_update=False, return_deleted=False),
        T("apps", "v1", "Deployment", "deployments", True, ["deploy"], status=True, generation=True,
          categories=["all"], printer=_deployment_printer, fields=REPLICA_FIELDS),
        T("apps", "v1", "DaemonSet", "daemonsets", True, ["ds"], status=True, generation=True,
          categories=["all"], printer=_daemonset_printer),
        # Stored as given (no cluster IP allocation, no disruption accounting): enough for
        # helm install/upgrade/rollback/uninstall of charts/* and kubectl apply --dry-run=server.
        T("", "v1", "Service", "services", True, ["svc"], status=True, categories=["all"]),
        T("policy", "v1", "PodDisruptionBudget", "poddisruptionbudgets", True, ["pdb"],
          status=True, generation=True),
        T("batch", "v1", "Job", "jobs", True, [], status=True, generation=True,
          categories=["all"], printer=_job_printer, fields=JOB_FIELDS,
          default_propagation="Orphan"),
        T("authentication.k8s.io", "v1", "TokenReview", "tokenreviews", False, [],
          verbs=CREATE_ONLY, virtual=True),
        T("authorization.k8s.io", "v1", "SubjectAccessReview", "subjectaccessreviews", False, [],
          verbs=CREATE_ONLY, virtual=True),
        T("authorization.k8s.io", "v1", "SelfSubjectAccessReview", "selfsubjectaccessreviews",
          False, [], verbs=CREATE_ONLY, virtual=True),
        T("authorization.k8s.io", "v1", "LocalSubjectAccessReview", "localsubjectaccessreviews",
          True, [], verbs=CREATE_ONLY, virtual=True),
        T("apiextensions.k8s.io", "v1", "CustomResourceDefinition", "customresourcedefinitions",
          False, ["crd", "crds"], status=True, generation=True, printer=_crd_printer,
          categories=["api-extensions"]),
    ]
