{{/*
Common labels. Call with (dict "ctx" $ "component" "aggregator").
*/}}
{{- define "taugrid.labels" -}}
app.kubernetes.io/part-of: taugrid
app.kubernetes.io/managed-by: {{ .ctx.Release.Service }}
app.kubernetes.io/instance: {{ .ctx.Release.Name }}
helm.sh/chart: {{ printf "%s-%s" .ctx.Chart.Name .ctx.Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- with .component }}
app.kubernetes.io/component: {{ . }}
{{- end }}
{{- end -}}
