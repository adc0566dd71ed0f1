{{- /*
Refuse to render a component whose workload another Helm release already owns: one release
renders each component, the taugrid umbrella (as its subchart `key`) or the standalone chart
(docs/install.md). Only `helm install` and `helm upgrade` can see the cluster; `helm template`
has nothing to look up. The way out named in the message depends on which side renders: a
component rendered by the umbrella lives under .../charts/ in the chart tree.
Call with (dict "ctx" $ "apiVersion" "apps/v1" "kind" "Deployment" "name" "tau-aggregator"
"key" "aggregator").
*/ -}}
{{- define "tau.ownerCheck" -}}
{{- $obj := lookup .apiVersion .kind .ctx.Release.Namespace .name -}}
{{- if $obj -}}
{{- $ann := $obj.metadata.annotations | default dict -}}
{{- $owner := index $ann "meta.helm.sh/release-name" | default "" -}}
{{- if ne $owner .ctx.Release.Name -}}
{{- $chart := index ($obj.metadata.labels | default dict) "helm.sh/chart" | default "no chart" -}}
{{- $hint := printf "that release renders it; set %s.enabled=false there (helm upgrade) before installing this chart" .key -}}
{{- if contains "/charts/" .ctx.Template.BasePath -}}
{{- $hint = printf "a standalone release owns it, so install this chart with --set %s.enabled=false" .key -}}
{{- end -}}
{{- fail (printf "%s %s/%s is owned by release %q (%s), not by %q: %s" .kind .ctx.Release.Namespace .name (default "none" $owner) $chart .ctx.Release.Name $hint) -}}
{{- end -}}
{{- end -}}
{{- end -}}
