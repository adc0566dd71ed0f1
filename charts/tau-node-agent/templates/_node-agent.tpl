{{- /*
tau-node-agent: every object the node-agent component owns, rendered by this chart alone or as
the taugrid umbrella's subchart `nodeAgent`. Labels, the image and the owner check come from the
tau-lib library chart.

Call with (dict "ctx" $ "v" <component values>). The release namespace is the system namespace.
*/ -}}
{{- define "tau.nodeAgent.manifests" -}}
{{- $ctx := .ctx -}}
{{- $v := .v -}}
{{- $ns := $ctx.Release.Namespace -}}
{{- $sa := $v.serviceAccount.name | default "tau-node-agent" -}}
{{- $labels := include "tau.labels" (dict "ctx" $ctx "name" "tau-node-agent" "component" "node-agent") -}}
{{- $aggregator := $v.aggregator.address | default (printf "tau-aggregator.%s.svc:50051" $ns) -}}
{{- if and $v.tls.enabled (not $v.tls.caSecretName) -}}
{{- fail "tls.enabled needs tls.caSecretName: a Secret whose ca.crt signs the aggregator's certificate" -}}
{{- end -}}
{{- if $v.rbac.create }}
---
{{ $ctx.Files.Get "rbac/node-agent-clusterrole.yaml" }}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata:
  name: tau-node-agent
  labels:
    {{- $labels | nindent 4 }}
roleRef:
  apiGroup: rbac.authorization.k8s.io
  kind: ClusterRole
  name: tau-node-agent
subjects:
  - kind: ServiceAccount
    name: {{ $sa }}
    namespace: {{ $ns }}
{{- if $v.nodeConditions.enabled }}
---
{{ $ctx.Files.Get "rbac/node-agent-node-conditions-clusterrole.yaml" }}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata:
  name: tau-node-agent-node-conditions
  labels:
    {{- $labels | nindent 4 }}
roleRef:
  apiGroup: rbac.authorization.k8s.io
  kind: ClusterRole
  name: tau-node-agent-node-conditions
subjects:
  - kind: ServiceAccount
    name: {{ $sa }}
    namespace: {{ $ns }}
{{- end }}
{{- end }}
{{- if $v.serviceAccount.create }}
---
apiVersion: v1
kind: ServiceAccount
metadata:
  name: {{ $sa }}
  namespace: {{ $ns }}
  labels:
    {{- $labels | nindent 4 }}
  {{- with $v.serviceAccount.annotations }}
  annotations:
    {{- toYaml . | nindent 4 }}
  {{- end }}
{{- end }}
---
apiVersion: apps/v1
kind: DaemonSet
metadata:
  name: tau-node-agent
  namespace: {{ $ns }}
  labels:
    {{- $labels | nindent 4 }}
spec:
  revisionHistoryLimit: 3
  selector:
    matchLabels:
      {{- include "tau.selectorLabels" (dict "ctx" $ctx "name" "tau-node-agent") | nindent 6 }}
  updateStrategy:
    type: RollingUpdate
    rollingUpdate:
      maxUnavailable: {{ $v.updateStrategy.maxUnavailable }}
  template:
    metadata:
      labels:
        {{- $labels | nindent 8 }}
      {{- with $v.podAnnotations }}
      annotations:
        {{- toYaml . | nindent 8 }}
      {{- end }}
    spec:
      serviceAccountName: {{ $sa }}
      # The in-cluster token reads this node's Node, CSINode and pods (rbac/node-agent-clusterrole.yaml).
      automountServiceAccountToken: true
      {{- with $v.priorityClassName }}
      priorityClassName: {{ . }}
      {{- end }}
      affinity:
        nodeAffinity:
          requiredDuringSchedulingIgnoredDuringExecution:
            nodeSelectorTerms:
              - matchExpressions:
                  - key: kubernetes.io/os
                    operator: In
                    values: [linux]
                  - key: {{ $v.gpuClassLabel }}
                    operator: Exists
      {{- with $v.tolerations }}
      tolerations:
        {{- toYaml . | nindent 8 }}
      {{- end }}
      securityContext:
        seccompProfile:
          type: RuntimeDefault
      terminationGracePeriodSeconds: 10
      containers:
        - name: tau-node-agent
          image: {{ include "tau.image" (dict "ctx" $ctx "image" $v.image) }}
          imagePullPolicy: {{ $v.image.pullPolicy }}
          command: [/usr/bin/tau-node-agent]
          args:
            - --aggregator={{ $aggregator }}
            - --host-root=/host
            - --token-file=/var/run/secrets/tau/token
            {{- if $v.tls.enabled }}
            - --ca-file=/etc/tau/ca/ca.crt
            {{- else }}
            - --insecure
            {{- end }}
            - --http-listen=:{{ $v.httpPort }}
            - --probe-interval={{ $v.probeInterval }}
            - --log-level={{ $v.logLevel }}
            - --log-format={{ $v.logFormat }}
            {{- if $v.nodeConditions.enabled }}
            # TauGPUHealthy, TauNetworkReady on this node's status.conditions (docs/agent.md).
            - --node-conditions
            {{- end }}
            {{- range $v.extraArgs }}
            - {{ . | quote }}
            {{- end }}
          env:
            # --node-name from the downward API.
            - name: NODE_NAME
              valueFrom:
                fieldRef:
                  fieldPath: spec.nodeName
            # NVML: the host driver's libnvidia-ml.so.1 (dlopen at every probe), or off.
            - name: TAU_AGENT_NVML
              value: {{ if $v.nvml.enabled }}/host/nvml/libnvidia-ml.so.1{{ else }}"off"{{ end }}
          ports:
            - name: http
              containerPort: {{ $v.httpPort }}
              protocol: TCP
          livenessProbe:
            httpGet:
              path: /healthz
              port: http
            periodSeconds: 30
            timeoutSeconds: 5
            failureThreshold: 3
          resources:
            {{- toYaml $v.resources | nindent 12 }}
          securityContext:
            # uid 0 without any capability: the host's plugin registry is usually root-only
            # (0750); reading it needs the owner's rights, nothing more. runAsUser overrides.
            runAsUser: {{ $v.runAsUser }}
            runAsNonRoot: {{ ne (int $v.runAsUser) 0 }}
            allowPrivilegeEscalation: false
            readOnlyRootFilesystem: true
            privileged: false
            capabilities:
              drop: [ALL]
          volumeMounts:
            - name: token
              mountPath: /var/run/secrets/tau
              readOnly: true
            # Exactly what the agent probes under --host-root (docs/agent.md):
            # device nodes (/dev/nvidia*), InfiniBand ports (/sys/class/infiniband, whose
            # entries are symlinks into /sys/devices, hence all of /sys), the kubelet
            # plugin registry (CSI sockets, watched with inotify), kubelet's pod-resources
            # socket and the CSI drivers' own sockets under /var/lib/kubelet/plugins. All
            # read-only: connecting to a unix socket writes nothing to its mount.
            - name: host-dev
              mountPath: /host/dev
              readOnly: true
            - name: host-sys
              mountPath: /host/sys
              readOnly: true
            - name: host-plugins-registry
              mountPath: /host/var/lib/kubelet/plugins_registry
              readOnly: true
            - name: host-pod-resources
              mountPath: /host/var/lib/kubelet/pod-resources
              readOnly: true
            - name: host-plugins
              mountPath: /host/var/lib/kubelet/plugins
              readOnly: true
            {{- if $v.nvml.enabled }}
            # The directory holding the driver's libnvidia-ml.so.1 (not the file: a driver
            # upgrade replaces it, and the next probe loads the new one).
            - name: host-nvml
              mountPath: /host/nvml
              readOnly: true
            {{- end }}
            {{- if $v.tls.enabled }}
            - name: ca
              mountPath: /etc/tau/ca
              readOnly: true
            {{- end }}
      volumes:
        # Projected ServiceAccount token for the aggregator (TokenReview with this audience).
        - name: token
          projected:
            sources:
              - serviceAccountToken:
                  path: token
                  audience: {{ $v.tokenAudience }}
                  expirationSeconds: {{ $v.tokenExpirationSeconds }}
        - name: host-dev
          hostPath:
            path: /dev
            type: Directory
        - name: host-sys
          hostPath:
            path: /sys
            type: Directory
        - name: host-plugins-registry
          hostPath:
            path: /var/lib/kubelet/plugins_registry
            type: DirectoryOrCreate
        - name: host-pod-resources
          hostPath:
            path: /var/lib/kubelet/pod-resources
            type: DirectoryOrCreate
        - name: host-plugins
          hostPath:
            path: /var/lib/kubelet/plugins
            type: DirectoryOrCreate
        {{- if $v.nvml.enabled }}
        - name: host-nvml
          hostPath:
            path: {{ $v.nvml.hostLibraryDir }}
            type: Directory
        {{- end }}
        {{- if $v.tls.enabled }}
        - name: ca
          secret:
            secretName: {{ $v.tls.caSecretName }}
            items:
              - key: ca.crt
                path: ca.crt
        {{- end }}
{{- end -}}
