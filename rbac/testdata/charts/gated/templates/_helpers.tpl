{{- define "gated.pdb.apiVersion" -}}
{{- if .Capabilities.APIVersions.Has "policy/v1/PodDisruptionBudget" -}}
policy/v1
{{- else -}}
policy/v1beta1
{{- end -}}
{{- end -}}
{{- define "gated.monitoring.apiVersion" -}}
{{- if .Values.apiVersionOverrides.monitoring -}}
{{ .Values.apiVersionOverrides.monitoring }}
{{- else -}}
monitoring.coreos.com/v1
{{- end -}}
{{- end -}}
