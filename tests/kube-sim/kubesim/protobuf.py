"""Decoder for the Kubernetes protobuf envelope (application/vnd.kubernetes.protobuf)
for the few kinds kubectl's generator commands send that way
(`kubectl create namespace|configmap|secret|serviceaccount|role|clusterrole|
rolebinding|clusterrolebinding|deployment|job`). Only request bodies are
decoded; responses are always JSON (kubectl also accepts JSON).

Field numbers are those of the published k8s.io/api generated.proto files.
Zero values of scalar fields are dropped, as JSON omitempty would."""
import base64

MAGIC = b"k8s\x00"


class ProtoError(ValueError):
    pass


def _varint(b, i):
    shift = 0
    v = 0
    while True:
        if i >= len(b):
            raise ProtoError("truncated varint")
        c = b[i]
        i += 1
        v |= (c & 0x7F) << shift
        if not c & 0x80:
            return v, i
        shift += 7


def _fields(b):
    i = 0
    while i < len(b):
        key, i = _varint(b, i)
        num, wt = key >> 3, key & 7
        if wt == 0:
            v, i = _varint(b, i)
        elif wt == 2:
            n, i = _varint(b, i)
            v = b[i:i + n]
            i += n
        elif wt == 1:
            v = b[i:i + 8]
            i += 8
        elif wt == 5:
            v = b[i:i + 4]
            i += 4
        else:
            raise ProtoError("unsupported wire type %d" % wt)
        yield num, wt, v


# Schema notation: {field_number: (json_name, type[, sub_schema])}
# types: s string, b bool, i int (varint), y bytes(base64), m message,
# ms map<string,string>, my map<string,bytes>, mq map<string,Quantity>,
# ls repeated string, lm repeated message, t Time, ios IntOrString, q Quantity
LS_REQ = {1: ("key", "s"), 2: ("operator", "s"), 3: ("values", "ls")}
LABEL_SELECTOR = {1: ("matchLabels", "ms"), 2: ("matchExpressions", "lm", LS_REQ)}
OWNER_REF = {1: ("kind", "s"), 3: ("name", "s"), 4: ("uid", "s"), 5: ("apiVersion", "s"),
             6: ("controller", "b"), 7: ("blockOwnerDeletion", "b")}
OBJECT_META = {1: ("name", "s"), 2: ("generateName", "s"), 3: ("namespace", "s"),
               5: ("uid", "s"), 6: ("resourceVersion", "s"), 7: ("generation", "i"),
               11: ("labels", "ms"), 12: ("annotations", "ms"),
               13: ("ownerReferences", "lm", OWNER_REF), 14: ("finalizers", "ls")}
OBJECT_REF = {1: ("kind", "s"), 2: ("namespace", "s"), 3: ("name", "s"), 4: ("uid", "s"),
              5: ("apiVersion", "s"), 6: ("resourceVersion", "s"), 7: ("fieldPath", "s")}
LOCAL_REF = {1: ("name", "s")}
POLICY_RULE = {1: ("verbs", "ls"), 2: ("apiGroups", "ls"), 3: ("resources", "ls"),
               4: ("resourceNames", "ls"), 5: ("nonResourceURLs", "ls")}
SUBJECT = {1: ("kind", "s"), 2: ("apiGroup", "s"), 3: ("name", "s"), 4: ("namespace", "s")}
ROLE_REF = {1: ("apiGroup", "s"), 2: ("kind", "s"), 3: ("name", "s")}
CONTAINER_PORT = {1: ("name", "s"), 2: ("hostPort", "i"), 3: ("containerPort", "i"),
                  4: ("protocol", "s"), 5: ("hostIP", "s")}
ENV_VAR = {1: ("name", "s"), 2: ("value", "s")}
RESOURCES = {1: ("limits", "mq"), 2: ("requests", "mq")}
CONTAINER = {1: ("name", "s"), 2: ("image", "s"), 3: ("command", "ls"), 4: ("args", "ls"),
             5: ("workingDir", "s"), 6: ("ports", "lm", CONTAINER_PORT),
             7: ("env", "lm", ENV_VAR), 8: ("resources", "m", RESOURCES),
             13: ("terminationMessagePath", "s"), 14: ("imagePullPolicy", "s"),
             20: ("terminationMessagePolicy", "s")}
POD_SPEC = {2: ("containers", "lm", CONTAINER), 3: ("restartPolicy", "s"),
            4: ("terminationGracePeriodSeconds", "i"), 6: ("dnsPolicy", "s"),
            7: ("nodeSelector", "ms"), 8: ("serviceAccountName", "s"),
            9: ("serviceAccount", "s"), 10: ("nodeName", "s"), 11: ("hostNetwork", "b")}
POD_TEMPLATE = {1: ("metadata", "m", OBJECT_META), 2: ("spec", "m", POD_SPEC)}
ROLLING = {1: ("maxUnavailable", "ios"), 2: ("maxSurge", "ios")}
DEPLOY_STRATEGY = {1: ("type", "s"), 2: ("rollingUpdate", "m", ROLLING)}
DEPLOYMENT_SPEC = {1: ("replicas", "i"), 2: ("selector", "m", LABEL_SELECTOR),
                   3: ("template", "m", POD_TEMPLATE), 4: ("strategy", "m", DEPLOY_STRATEGY),
                   5: ("minReadySeconds", "i"), 6: ("revisionHistoryLimit", "i"),
                   7: ("paused", "b"), 9: ("progressDeadlineSeconds", "i")}
JOB_SPEC = {1: ("parallelism", "i"), 2: ("completions", "i"), 3: ("activeDeadlineSeconds", "i"),
            4: ("selector", "m", LABEL_SELECTOR), 5: ("manualSelector", "b"),
            6: ("template", "m", POD_TEMPLATE), 7: ("backoffLimit", "i")}

RESOURCE_ATTRS = {1: ("namespace", "s"), 2: ("verb", "s"), 3: ("group", "s"), 4: ("version", "s"),
                  5: ("resource", "s"), 6: ("subresource", "s"), 7: ("name", "s")}

DELETE_OPTIONS = {1: ("gracePeriodSeconds", "i"),
                  2: ("preconditions", "m", {1: ("uid", "s"), 2: ("resourceVersion", "s")}),
                  3: ("orphanDependents", "b"), 4: ("propagationPolicy", "s"),
                  5: ("dryRun", "ls")}

KINDS = {
    # client-go's typed clients (helm's release storage among them) send DELETE bodies so.
    ("v1", "DeleteOptions"): DELETE_OPTIONS,
    ("meta.k8s.io/v1", "DeleteOptions"): DELETE_OPTIONS,
    ("v1", "Namespace"): {1: ("metadata", "m", OBJECT_META),
                          2: ("spec", "m", {1: ("finalizers", "ls")})},
    ("v1", "ConfigMap"): {1: ("metadata", "m", OBJECT_META), 2: ("data", "ms"),
                          3: ("binaryData", "my"), 4: ("immutable", "b")},
    ("v1", "Secret"): {1: ("metadata", "m", OBJECT_META), 2: ("data", "my"), 3: ("type", "s"),
                       4: ("stringData", "ms"), 5: ("immutable", "b")},
    ("v1", "ServiceAccount"): {1: ("metadata", "m", OBJECT_META),
                               2: ("secrets", "lm", OBJECT_REF),
                               3: ("imagePullSecrets", "lm", LOCAL_REF),
                               4: ("automountServiceAccountToken", "b")},
    ("rbac.authorization.k8s.io/v1", "Role"): {1: ("metadata", "m", OBJECT_META),
                                               2: ("rules", "lm", POLICY_RULE)},
    ("rbac.authorization.k8s.io/v1", "ClusterRole"): {
        1: ("metadata", "m", OBJECT_META), 2: ("rules", "lm", POLICY_RULE),
        3: ("aggregationRule", "m", {1: ("clusterRoleSelectors", "lm", LABEL_SELECTOR)})},
    ("rbac.authorization.k8s.io/v1", "RoleBinding"): {
        1: ("metadata", "m", OBJECT_META), 2: ("subjects", "lm", SUBJECT),
        3: ("roleRef", "m", ROLE_REF)},
    ("rbac.authorization.k8s.io/v1", "ClusterRoleBinding"): {
        1: ("metadata", "m", OBJECT_META), 2: ("subjects", "lm", SUBJECT),
        3: ("roleRef", "m", ROLE_REF)},
    ("apps/v1", "Deployment"): {1: ("metadata", "m", OBJECT_META),
                                2: ("spec", "m", DEPLOYMENT_SPEC)},
    ("authorization.k8s.io/v1", "SelfSubjectAccessReview"): {
        1: ("metadata", "m", OBJECT_META),
        2: ("spec", "m", {1: ("resourceAttributes", "m", RESOURCE_ATTRS),
                          2: ("nonResourceAttributes", "m", {1: ("path", "s"), 2: ("verb", "s")})})},
    ("batch/v1", "Job"): {1: ("metadata", "m", OBJECT_META), 2: ("spec", "m", JOB_SPEC)},
}


def _str(v):
    return bytes(v).decode("utf-8")


def _map_entry(v):
    k, val = "", b""
    for num, wt, x in _fields(v):
        if num == 1:
            k = _str(x)
        elif num == 2:
            val = x
    return k, val


def _decode(b, schema):
    out = {}
    for num, wt, v in _fields(b):
        spec = schema.get(num)
        if spec is None:
            continue
        name, typ = spec[0], spec[1]
        if typ == "s":
            s = _str(v)
            if s:
                out[name] = s
        elif typ == "b":
            if v:
                out[name] = True
        elif typ == "i":
            if v >= 1 << 63:
                v -= 1 << 64
            out[name] = v
        elif typ == "y":
            out[name] = base64.b64encode(bytes(v)).decode()
        elif typ == "m":
            out[name] = _decode(v, spec[2])
        elif typ == "ms":
            k, val = _map_entry(v)
            out.setdefault(name, {})[k] = _str(val)
        elif typ == "my":
            k, val = _map_entry(v)
            out.setdefault(name, {})[k] = base64.b64encode(bytes(val)).decode()
        elif typ == "mq":
            k, val = _map_entry(v)
            q = _decode(val, {1: ("string", "s")})
            out.setdefault(name, {})[k] = q.get("string", "0")
        elif typ == "ls":
            out.setdefault(name, []).append(_str(v))
        elif typ == "lm":
            out.setdefault(name, []).append(_decode(v, spec[2]))
        elif typ == "ios":
            d = _decode(v, {1: ("type", "i"), 2: ("intVal", "i"), 3: ("strVal", "s")})
            out[name] = d.get("strVal", "") if d.get("type") == 1 else d.get("intVal", 0)
    # integer zero values are omitted (omitempty), except where kept above
    for k in [k for k, v in out.items() if v == 0 and not isinstance(v, bool)
              and k not in ("replicas",)]:
        del out[k]
    return out


def decode(body):
    """Decode a protobuf-encoded object into a JSON-shaped dict.
    Raises ProtoError for kinds this module does not know."""
    if not body.startswith(MAGIC):
        raise ProtoError("missing protobuf envelope")
    api_version = kind = ""
    raw = b""
    for num, wt, v in _fields(memoryview(body)[4:]):
        if num == 1:
            for n2, w2, v2 in _fields(v):
                if n2 == 1:
                    api_version = _str(v2)
                elif n2 == 2:
                    kind = _str(v2)
        elif num == 2:
            raw = v
    schema = KINDS.get((api_version, kind))
    if schema is None:
        raise ProtoError("protobuf is not supported for %s %s" % (api_version, kind))
    obj = {"apiVersion": api_version, "kind": kind}
    obj.update(_decode(raw, schema))
    return obj
