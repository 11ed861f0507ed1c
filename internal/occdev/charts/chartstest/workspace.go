package chartstest

// workspaceChart is a small stand-in for deploy/helm/openshell-workspace: the namespace-scoped
// ServiceAccount, Role, RoleBinding and NetworkPolicy a workspace namespace needs in operator
// mode. Value names follow the real chart (gateway.serviceAccount.{name,namespace},
// gateway.networkPolicy.podSelector, gateway.allowDriverConfig, sandboxServiceAccount.*,
// fullnameOverride); the templates are our own.
func workspaceChart() map[string]string {
	return map[string]string{
		"Chart.yaml": `apiVersion: v2
name: openshell-workspace
description: Namespace-scoped resources for one OpenShell workspace (test fixture)
type: application
version: 0.0.0
appVersion: 0.0.0
`,
		"values.yaml": `nameOverride: ""
fullnameOverride: ""
gateway:
  serviceAccount:
    name: ""
    namespace: ""
  networkPolicy:
    podSelector:
      app.kubernetes.io/name: openshell
  allowDriverConfig: false
sandboxServiceAccount:
  create: true
  name: ""
networkPolicy:
  enabled: true
`,
		"templates/_helpers.tpl": `{{- define "openshell-workspace.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name (default .Chart.Name .Values.nameOverride) | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{- define "openshell-workspace.labels" -}}
app.kubernetes.io/name: {{ default .Chart.Name .Values.nameOverride }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end -}}

{{- define "openshell-workspace.sandboxServiceAccountName" -}}
{{- default (printf "%s-sandbox" (include "openshell-workspace.fullname" .)) .Values.sandboxServiceAccount.name -}}
{{- end -}}

{{- define "openshell-workspace.validateValues" -}}
{{- if not .Values.gateway.serviceAccount.name -}}
{{- fail "gateway.serviceAccount.name is required: the gateway ServiceAccount bound to the sandbox Role" -}}
{{- end -}}
{{- if not .Values.gateway.serviceAccount.namespace -}}
{{- fail "gateway.serviceAccount.namespace is required: the namespace the gateway runs in" -}}
{{- end -}}
{{- end -}}
`,
		"templates/serviceaccount.yaml": `{{- if .Values.sandboxServiceAccount.create }}
apiVersion: v1
kind: ServiceAccount
metadata:
  name: {{ include "openshell-workspace.sandboxServiceAccountName" . }}
  namespace: {{ .Release.Namespace }}
  labels:
    {{- include "openshell-workspace.labels" . | nindent 4 }}
automountServiceAccountToken: false
{{- end }}
`,
		"templates/role.yaml": `{{- include "openshell-workspace.validateValues" . }}
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata:
  name: {{ include "openshell-workspace.fullname" . }}-sandbox
  namespace: {{ .Release.Namespace }}
  labels:
    {{- include "openshell-workspace.labels" . | nindent 4 }}
rules:
  - apiGroups: ["agents.x-k8s.io"]
    resources: ["sandboxes", "sandboxes/status"]
    verbs: ["create", "delete", "get", "list", "patch", "update", "watch"]
  - apiGroups: [""]
    resources: ["events"]
    verbs: ["get", "list", "watch"]
  - apiGroups: [""]
    resources: ["pods"]
    verbs: ["get", "list"]
{{- if .Values.gateway.allowDriverConfig }}
  - apiGroups: [""]
    resources: ["persistentvolumeclaims"]
    verbs: ["get", "list"]
{{- end }}
`,
		"templates/rolebinding.yaml": `apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata:
  name: {{ include "openshell-workspace.fullname" . }}-sandbox
  namespace: {{ .Release.Namespace }}
  labels:
    {{- include "openshell-workspace.labels" . | nindent 4 }}
roleRef:
  apiGroup: rbac.authorization.k8s.io
  kind: Role
  name: {{ include "openshell-workspace.fullname" . }}-sandbox
subjects:
  - kind: ServiceAccount
    name: {{ .Values.gateway.serviceAccount.name }}
    namespace: {{ .Values.gateway.serviceAccount.namespace }}
`,
		"templates/networkpolicy.yaml": `{{- if .Values.networkPolicy.enabled }}
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata:
  name: {{ include "openshell-workspace.fullname" . }}-sandbox-ssh
  namespace: {{ .Release.Namespace }}
  labels:
    {{- include "openshell-workspace.labels" . | nindent 4 }}
spec:
  podSelector:
    matchLabels:
      openshell.ai/managed-by: openshell
  policyTypes: ["Ingress"]
  ingress:
    - from:
        - namespaceSelector:
            matchLabels:
              kubernetes.io/metadata.name: {{ .Values.gateway.serviceAccount.namespace }}
          podSelector:
            matchLabels:
              {{- toYaml .Values.gateway.networkPolicy.podSelector | nindent 14 }}
      ports:
        - protocol: TCP
          port: 2222
{{- end }}
`,
		"templates/NOTES.txt": `Workspace resources for namespace {{ .Release.Namespace }}.
`,
	}
}
