{{- /*
tau-aggregator: every object the aggregator component owns, rendered by this chart alone or as
the taugrid umbrella's subchart `aggregator`. Labels, the image and the owner check come from
the tau-lib library chart.

Call with (dict "ctx" $ "v" <component values> "agentSA" <node-agent ServiceAccount name>).
Names are fixed (tau-aggregator, ...): the ClusterRoles are cluster-wide, so one installation
per cluster. The release namespace is the system namespace (--system-namespace).
*/ -}}
{{- /* --feature-gates value: sorted Name=bool pairs; empty when no gate is set. */ -}}
{{- define "tau.aggregator.featureGates" -}}
{{- $gates := list -}}
{{- range $name, $on := .v.featureGates -}}
{{- $gates = append $gates (printf "%s=%t" $name $on) -}}
{{- end -}}
{{- join "," $gates -}}
{{- end -}}

{{- define "tau.aggregator.manifests" -}}
{{- $ctx := .ctx -}}
{{- $v := .v -}}
{{- $ns := $ctx.Release.Namespace -}}
{{- $sa := $v.serviceAccount.name | default "tau-aggregator" -}}
{{- $labels := include "tau.labels" (dict "ctx" $ctx "name" "tau-aggregator" "component" "aggregator") -}}
{{- $selector := include "tau.selectorLabels" (dict "ctx" $ctx "name" "tau-aggregator") -}}
{{- if and (gt (int $v.replicas) 1) (not $v.leaderElection.enabled) -}}
{{- fail (printf "replicas is %d but leaderElection.enabled is false: more than one replica needs leader election (only the leader writes to the API)" (int $v.replicas)) -}}
{{- end -}}
{{- if and $v.tls.enabled (not $v.tls.secretName) (not $v.tls.certManager.enabled) -}}
{{- fail "tls.enabled needs tls.secretName (a kubernetes.io/tls Secret) or tls.certManager.enabled" -}}
{{- end -}}
{{- $tlsSecret := $v.tls.secretName | default "tau-aggregator-tls" -}}
{{- if $v.rbac.create }}
---
{{ $ctx.Files.Get "rbac/aggregator-clusterrole.yaml" }}
---
{{ $ctx.Files.Get "rbac/researcher-clusterrole.yaml" }}
---
{{ $ctx.Files.Get "rbac/inventory-reader-clusterrole.yaml" }}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata:
  name: tau-aggregator
  labels:
    {{- $labels | nindent 4 }}
roleRef:
  apiGroup: rbac.authorization.k8s.io
  kind: ClusterRole
  name: tau-aggregator
subjects:
  - kind: ServiceAccount
    name: {{ $sa }}
    namespace: {{ $ns }}
---
# Leader election, the Lease tau-aggregator in the system namespace only (lib/kube_leader.c,
# started by main.c with --leader-elect). get: try_acquire_or_renew reads the Lease; create:
# lease_write (POST) when there is none; update: lease_write (PUT) to take over and to renew,
# and release on shutdown.
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata:
  name: tau-aggregator-leader-election
  namespace: {{ $ns }}
  labels:
    {{- $labels | nindent 4 }}
rules:
  - apiGroups: [coordination.k8s.io]
    resources: [leases]
    verbs: [get, create, update]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata:
  name: tau-aggregator-leader-election
  namespace: {{ $ns }}
  labels:
    {{- $labels | nindent 4 }}
roleRef:
  apiGroup: rbac.authorization.k8s.io
  kind: Role
  name: tau-aggregator-leader-election
subjects:
  - kind: ServiceAccount
    name: {{ $sa }}
    namespace: {{ $ns }}
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
# gRPC (agents' Report streams, queries, grpc.health.v1) and HTTP (/healthz, /readyz,
# /metrics). Only Ready replicas receive traffic, and with leader election only the leader is
# Ready (/readyz): one store answers (docs/install.md, "High availability").
apiVersion: v1
kind: Service
metadata:
  name: tau-aggregator
  namespace: {{ $ns }}
  labels:
    {{- $labels | nindent 4 }}
spec:
  type: {{ $v.service.type }}
  selector:
    {{- $selector | nindent 4 }}
  ports:
    - name: grpc
      port: {{ $v.grpcPort }}
      targetPort: grpc
      protocol: TCP
      appProtocol: grpc
    - name: http
      port: {{ $v.httpPort }}
      targetPort: http
      protocol: TCP
{{- if $v.podDisruptionBudget.enabled }}
---
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata:
  name: tau-aggregator
  namespace: {{ $ns }}
  labels:
    {{- $labels | nindent 4 }}
spec:
  maxUnavailable: {{ $v.podDisruptionBudget.maxUnavailable }}
  selector:
    matchLabels:
      {{- $selector | nindent 6 }}
{{- end }}
{{- if and $v.tls.enabled $v.tls.certManager.enabled }}
---
apiVersion: cert-manager.io/v1
kind: Certificate
metadata:
  name: tau-aggregator
  namespace: {{ $ns }}
  labels:
    {{- $labels | nindent 4 }}
spec:
  secretName: {{ $tlsSecret }}
  dnsNames:
    - tau-aggregator
    - tau-aggregator.{{ $ns }}
    - tau-aggregator.{{ $ns }}.svc
    - tau-aggregator.{{ $ns }}.svc.cluster.local
  issuerRef:
    {{- toYaml $v.tls.certManager.issuerRef | nindent 4 }}
{{- end }}
{{- if $v.monitoring.prometheusRule.enabled }}
---
# The alerts of files/alerts.rules.yaml (promtool-tested in tests/monitoring).
apiVersion: monitoring.coreos.com/v1
kind: PrometheusRule
metadata:
  name: tau-aggregator
  namespace: {{ $ns }}
  labels:
    {{- $labels | nindent 4 }}
    {{- with $v.monitoring.prometheusRule.labels }}
    {{- toYaml . | nindent 4 }}
    {{- end }}
spec:
  {{- $ctx.Files.Get "files/alerts.rules.yaml" | fromYaml | toYaml | nindent 2 }}
{{- end }}
{{- if $v.monitoring.dashboard.enabled }}
---
# The Grafana dashboard of files/dashboard.json, for Grafana's sidecar (grafana_dashboard label).
apiVersion: v1
kind: ConfigMap
metadata:
  name: tau-aggregator-dashboard
  namespace: {{ $v.monitoring.dashboard.namespace | default $ns }}
  labels:
    {{- $labels | nindent 4 }}
    grafana_dashboard: "1"
    {{- with $v.monitoring.dashboard.labels }}
    {{- toYaml . | nindent 4 }}
    {{- end }}
data:
  taugrid.json: |-
    {{- $ctx.Files.Get "files/dashboard.json" | nindent 4 }}
{{- end }}
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: tau-aggregator
  namespace: {{ $ns }}
  labels:
    {{- $labels | nindent 4 }}
spec:
  replicas: {{ $v.replicas }}
  revisionHistoryLimit: 3
  selector:
    matchLabels:
      {{- $selector | nindent 6 }}
  strategy:
    type: RollingUpdate
    rollingUpdate:
      maxUnavailable: 0
      maxSurge: 1
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
      automountServiceAccountToken: true
      {{- with $v.priorityClassName }}
      priorityClassName: {{ . }}
      {{- end }}
      securityContext:
        runAsNonRoot: true
        runAsUser: 65532
        runAsGroup: 65532
        seccompProfile:
          type: RuntimeDefault
      {{- if $v.topologySpread.enabled }}
      topologySpreadConstraints:
        - maxSkew: 1
          topologyKey: kubernetes.io/hostname
          whenUnsatisfiable: {{ $v.topologySpread.whenUnsatisfiable }}
          labelSelector:
            matchLabels:
              {{- $selector | nindent 14 }}
      {{- end }}
      {{- with $v.nodeSelector }}
      nodeSelector:
        {{- toYaml . | nindent 8 }}
      {{- end }}
      {{- with $v.tolerations }}
      tolerations:
        {{- toYaml . | nindent 8 }}
      {{- end }}
      {{- with $v.affinity }}
      affinity:
        {{- toYaml . | nindent 8 }}
      {{- end }}
      terminationGracePeriodSeconds: 30
      containers:
        - name: tau-aggregator
          image: {{ include "tau.image" (dict "ctx" $ctx "image" $v.image) }}
          imagePullPolicy: {{ $v.image.pullPolicy }}
          command: [/usr/bin/tau-aggregator]
          args:
            - --grpc-listen=0.0.0.0:{{ $v.grpcPort }}
            - --http-listen=0.0.0.0:{{ $v.httpPort }}
            - --system-namespace={{ $ns }}
            - --kueue-config-namespace={{ $v.kueueConfigNamespace }}
            {{- if $v.leaderElection.enabled }}
            - --leader-elect
            {{- end }}
            - --token-audience={{ $v.tokenAudience }}
            {{- if not $v.localTokenVerification }}
            - --no-local-token-verification
            {{- end }}
            - --agent-service-account={{ $ns }}:{{ .agentSA }}
            - --initial-sync-timeout={{ $v.initialSyncTimeout }}
            - --heartbeat-interval={{ $v.heartbeatInterval }}
            - --log-level={{ $v.logLevel }}
            - --log-format={{ $v.logFormat }}
            {{- $gates := include "tau.aggregator.featureGates" . }}
            {{- if $gates }}
            - --feature-gates={{ $gates }}
            {{- end }}
            {{- if not $v.workspaceController }}
            - --no-workspace-controller
            {{- end }}
            {{- if $v.tls.enabled }}
            - --tls-cert=/etc/tau/tls/tls.crt
            - --tls-key=/etc/tau/tls/tls.key
            {{- end }}
            {{- range $v.extraArgs }}
            - {{ . | quote }}
            {{- end }}
          ports:
            - name: grpc
              containerPort: {{ $v.grpcPort }}
              protocol: TCP
            - name: http
              containerPort: {{ $v.httpPort }}
              protocol: TCP
          {{- if $v.tls.enabled }}
          # The kubelet's gRPC probe speaks plaintext only; with TLS on the gRPC port liveness
          # uses /livez, which answers 200 while the process serves (docs/aggregator.md).
          livenessProbe:
            httpGet:
              path: /livez
              port: http
          {{- else }}
          livenessProbe:
            grpc:
              port: {{ $v.grpcPort }}
          {{- end }}
            periodSeconds: 10
            timeoutSeconds: 5
            failureThreshold: 3
          readinessProbe:
            httpGet:
              path: /readyz
              port: http
            periodSeconds: 2
            timeoutSeconds: 2
            failureThreshold: 2
          resources:
            {{- toYaml $v.resources | nindent 12 }}
          securityContext:
            allowPrivilegeEscalation: false
            readOnlyRootFilesystem: true
            privileged: false
            capabilities:
              drop: [ALL]
          {{- if $v.tls.enabled }}
          volumeMounts:
            - name: tls
              mountPath: /etc/tau/tls
              readOnly: true
          {{- end }}
      {{- if $v.tls.enabled }}
      volumes:
        - name: tls
          secret:
            secretName: {{ $tlsSecret }}
      {{- end }}
{{- end -}}
