{{- define "openshell.fullname" -}}
{{- default .Release.Name .Values.fullnameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- define "openshell.selectorLabels" -}}
app.kubernetes.io/name: openshell
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}
{{- define "openshell.image" -}}
{{- $i := .Values.image -}}
{{- if $i.digest -}}{{ $i.registry }}/{{ $i.repository }}@{{ $i.digest }}{{- else -}}{{ $i.registry }}/{{ $i.repository }}:{{ .Chart.AppVersion }}{{- end -}}
{{- end -}}
