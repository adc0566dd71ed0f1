{{- /*
The labels every taugrid object carries, and the subset a workload selects its pods by.
Call with (dict "ctx" $ "name" "tau-aggregator" "component" "aggregator"); component may be
left out. version and helm.sh/chart come from the chart that renders the object (a component
rendered by the umbrella names its alias there, e.g. aggregator-0.1.0).
*/ -}}
{{- define "tau.labels" -}}
app.kubernetes.io/name: {{ .name }}
{{- with .component }}
app.kubernetes.io/component: {{ . }}
{{- end }}
app.kubernetes.io/part-of: taugrid
app.kubernetes.io/managed-by: {{ .ctx.Release.Service }}
app.kubernetes.io/instance: {{ .ctx.Release.Name }}
app.kubernetes.io/version: {{ .ctx.Chart.AppVersion | quote }}
helm.sh/chart: {{ printf "%s-%s" .ctx.Chart.Name .ctx.Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end -}}

{{- define "tau.selectorLabels" -}}
app.kubernetes.io/name: {{ .name }}
app.kubernetes.io/instance: {{ .ctx.Release.Name }}
{{- end -}}
