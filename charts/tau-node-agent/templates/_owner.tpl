{{- /*
Refuse to render a component whose workload a different Helm release already owns (a standalone
tau-aggregator or tau-node-agent release, as docs/install.md documents). Only `helm install` and
`helm upgrade` can see the cluster; `helm template` has nothing to look up.
Shared by the three charts (canonical here; copies in the tau-aggregator and tau-node-agent charts).
Call with (dict "ctx" $ "apiVersion" .. "kind" .. "name" .. "hint" "what to do instead").
*/ -}}
{{- define "tau.ownerCheck" -}}
{{- $obj := lookup .apiVersion .kind .ctx.Release.Namespace .name -}}
{{- if $obj -}}
{{- $ann := $obj.metadata.annotations | default dict -}}
{{- $owner := index $ann "meta.helm.sh/release-name" | default "" -}}
{{- if ne $owner .ctx.Release.Name -}}
{{- $chart := index ($obj.metadata.labels | default dict) "helm.sh/chart" | default "no chart" -}}
{{- fail (printf "%s %s/%s is owned by release %q (%s), not by %q: %s" .kind .ctx.Release.Namespace .name (default "none" $owner) $chart .ctx.Release.Name .hint) -}}
{{- end -}}
{{- end -}}
{{- end -}}
