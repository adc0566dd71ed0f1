{{- /*
The container image reference of a component: repository@digest when a digest is set, else
repository:tag, the tag defaulting to the chart's appVersion.
Call with (dict "ctx" $ "image" .Values.image).
*/ -}}
{{- define "tau.image" -}}
{{- if .image.digest -}}
{{ .image.repository }}@{{ .image.digest }}
{{- else -}}
{{ .image.repository }}:{{ .image.tag | default .ctx.Chart.AppVersion }}
{{- end -}}
{{- end -}}
