package chartstest

// gatewayChart is a small stand-in for deploy/helm/openshell at v0.1.3-pre.2. Its value names
// follow the real chart (per the project's DEPLOY notes and reference §3.4): per-component
// images as registry/repository/tag/digest with a global registry fallback, workspaceResources,
// pkiInitJob, server.drivers.kubernetes.*, service.type/nodePort. The templates are our own.
func gatewayChart() map[string]string {
	return map[string]string{
		"Chart.yaml": `apiVersion: v2
name: openshell
description: OpenShell gateway (test fixture)
type: application
version: 0.0.0
appVersion: 0.0.0
`,
		"values.yaml": `replicaCount: 1
global:
  image:
    registry: ghcr.io/nvidia
    tag: ""
    pullPolicy: IfNotPresent
gateway:
  image:
    registry: ""
    repository: openshell/gateway
    pullPolicy: null
    tag: ""
    digest: ""
sandboxRuntime:
  image:
    registry: ""
    repository: openshell/sandbox
    pullPolicy: null
    tag: ""
    digest: ""
supervisor:
  image:
    registry: ""
    repository: openshell/supervisor
    pullPolicy: null
    tag: ""
    digest: ""
nameOverride: openshell
fullnameOverride: ""
serviceAccount:
  create: true
  annotations: {}
  name: ""
sandboxServiceAccount:
  create: true
  annotations: {}
  name: ""
workspaceResources:
  enabled: true
podSecurityContext:
  fsGroup: 1000
securityContext:
  runAsNonRoot: true
  runAsUser: 1000
  allowPrivilegeEscalation: false
  capabilities:
    drop:
      - ALL
service:
  type: ClusterIP
  port: 8080
  healthPort: 8081
  metricsPort: 9090
server:
  logLevel: info
  sandboxNamespace: ""
  defaultRuntimeClassName: ""
  disableTls: false
  drivers:
    kubernetes:
      allowDriverConfig: false
      resourceAdmission:
        enabled: true
      workspaceMode: shared
      operatorNamespaceLabel: ""
      operatorNamespaceFile: ""
  auth:
    allowUnauthenticatedUsers: false
  tls:
    certSecretName: openshell-server-tls
    clientCaSecretName: openshell-server-client-ca
    clientTlsSecretName: openshell-client-tls
  sandboxJwt:
    signingSecretName: ""
networkPolicy:
  enabled: true
pkiInitJob:
  enabled: true
`,
		"templates/_helpers.tpl": `{{- define "openshell.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "openshell.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" -}}
{{- else if contains (include "openshell.name" .) .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name (include "openshell.name" .) | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{- define "openshell.selectorLabels" -}}
app.kubernetes.io/name: {{ include "openshell.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "openshell.labels" -}}
{{ include "openshell.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end -}}

{{/* An image: <registry>/<repository>@<digest>, or :<tag> (default appVersion) without a digest. */}}
{{- define "openshell.image" -}}
{{- $img := index . 0 -}}
{{- $root := index . 1 -}}
{{- $registry := default $root.Values.global.image.registry $img.registry -}}
{{- if $img.digest -}}
{{- printf "%s/%s@%s" $registry $img.repository $img.digest -}}
{{- else -}}
{{- printf "%s/%s:%s" $registry $img.repository (default $root.Chart.AppVersion (default $root.Values.global.image.tag $img.tag)) -}}
{{- end -}}
{{- end -}}

{{- define "openshell.pullPolicy" -}}
{{- $img := index . 0 -}}
{{- $root := index . 1 -}}
{{- default $root.Values.global.image.pullPolicy $img.pullPolicy -}}
{{- end -}}

{{- define "openshell.sandboxServiceAccountName" -}}
{{- default (printf "%s-sandbox" (include "openshell.fullname" .)) .Values.sandboxServiceAccount.name -}}
{{- end -}}

{{- define "openshell.serviceAccountName" -}}
{{- default (include "openshell.fullname" .) .Values.serviceAccount.name -}}
{{- end -}}

{{- define "openshell.validate" -}}
{{- $mode := .Values.server.drivers.kubernetes.workspaceMode -}}
{{- if not (has $mode (list "shared" "managed" "operator")) -}}
{{- fail (printf "server.drivers.kubernetes.workspaceMode must be shared, managed or operator, got %q" $mode) -}}
{{- end -}}
{{- if and (eq $mode "operator") (not .Values.server.drivers.kubernetes.operatorNamespaceLabel) (not .Values.server.drivers.kubernetes.operatorNamespaceFile) -}}
{{- fail "operator workspace mode needs server.drivers.kubernetes.operatorNamespaceLabel or operatorNamespaceFile" -}}
{{- end -}}
{{- end -}}
`,
		"templates/gateway-config.yaml": `{{- include "openshell.validate" . -}}
apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ include "openshell.fullname" . }}-config
  labels:
    {{- include "openshell.labels" . | nindent 4 }}
data:
  gateway.toml: |
    [openshell.gateway]
    log_level = {{ .Values.server.logLevel | quote }}
    disable_tls = {{ .Values.server.disableTls }}
    allow_unauthenticated_users = {{ .Values.server.auth.allowUnauthenticatedUsers }}
    sandbox_namespace = {{ default .Release.Namespace .Values.server.sandboxNamespace | quote }}
    [openshell.drivers.kubernetes]
    workspace_mode = {{ .Values.server.drivers.kubernetes.workspaceMode | quote }}
    operator_namespace_label = {{ .Values.server.drivers.kubernetes.operatorNamespaceLabel | quote }}
    allow_driver_config = {{ .Values.server.drivers.kubernetes.allowDriverConfig }}
    resource_admission = {{ .Values.server.drivers.kubernetes.resourceAdmission.enabled }}
    default_runtime_class_name = {{ .Values.server.defaultRuntimeClassName | quote }}
    service_account_name = {{ include "openshell.sandboxServiceAccountName" . | quote }}
    sandbox_image = {{ include "openshell.image" (list .Values.sandboxRuntime.image .) | quote }}
    supervisor_image = {{ include "openshell.image" (list .Values.supervisor.image .) | quote }}
    supervisor_image_pull_policy = {{ include "openshell.pullPolicy" (list .Values.supervisor.image .) | quote }}
`,
		"templates/serviceaccount.yaml": `{{- if .Values.serviceAccount.create }}
apiVersion: v1
kind: ServiceAccount
metadata:
  name: {{ include "openshell.serviceAccountName" . }}
  namespace: {{ .Release.Namespace }}
  labels:
    {{- include "openshell.labels" . | nindent 4 }}
{{- end }}
{{- if and .Values.workspaceResources.enabled .Values.sandboxServiceAccount.create }}
---
apiVersion: v1
kind: ServiceAccount
metadata:
  name: {{ include "openshell.sandboxServiceAccountName" . }}
  namespace: {{ default .Release.Namespace .Values.server.sandboxNamespace }}
  labels:
    {{- include "openshell.labels" . | nindent 4 }}
{{- end }}
`,
		"templates/role.yaml": `{{- if .Values.workspaceResources.enabled }}
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata:
  name: {{ include "openshell.fullname" . }}-sandbox
  namespace: {{ default .Release.Namespace .Values.server.sandboxNamespace }}
rules:
  - apiGroups: ["agents.x-k8s.io"]
    resources: ["sandboxes", "sandboxes/status"]
    verbs: ["create", "delete", "get", "list", "patch", "update", "watch"]
{{- end }}
`,
		"templates/clusterrole.yaml": `apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: {{ include "openshell.fullname" . }}-node-reader-{{ .Release.Namespace }}
  labels:
    {{- include "openshell.labels" . | nindent 4 }}
rules:
  - apiGroups: [""]
    resources: ["nodes"]
    verbs: ["get", "list", "watch"]
  - apiGroups: ["authentication.k8s.io"]
    resources: ["tokenreviews"]
    verbs: ["create"]
{{- if ne .Values.server.drivers.kubernetes.workspaceMode "shared" }}
  - apiGroups: [""]
    resources: ["namespaces"]
    verbs: ["get", "list", "watch"]
  - apiGroups: ["agents.x-k8s.io"]
    resources: ["sandboxes", "sandboxes/status"]
    verbs: ["create", "delete", "get", "list", "patch", "update", "watch"]
{{- end }}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata:
  name: {{ include "openshell.fullname" . }}-node-reader-{{ .Release.Namespace }}
  labels:
    {{- include "openshell.labels" . | nindent 4 }}
roleRef:
  apiGroup: rbac.authorization.k8s.io
  kind: ClusterRole
  name: {{ include "openshell.fullname" . }}-node-reader-{{ .Release.Namespace }}
subjects:
  - kind: ServiceAccount
    name: {{ include "openshell.serviceAccountName" . }}
    namespace: {{ .Release.Namespace }}
`,
		"templates/service.yaml": `apiVersion: v1
kind: Service
metadata:
  name: {{ include "openshell.fullname" . }}
  namespace: {{ .Release.Namespace }}
  labels:
    {{- include "openshell.labels" . | nindent 4 }}
spec:
  type: {{ .Values.service.type }}
  selector:
    {{- include "openshell.selectorLabels" . | nindent 4 }}
  ports:
    - name: grpc
      port: {{ .Values.service.port }}
      targetPort: grpc
      appProtocol: grpc
      {{- if and (eq .Values.service.type "NodePort") .Values.service.nodePort }}
      nodePort: {{ .Values.service.nodePort }}
      {{- end }}
    - name: metrics
      port: {{ .Values.service.metricsPort }}
      targetPort: metrics
`,
		"templates/statefulset.yaml": `apiVersion: apps/v1
kind: StatefulSet
metadata:
  name: {{ include "openshell.fullname" . }}
  namespace: {{ .Release.Namespace }}
  labels:
    {{- include "openshell.labels" . | nindent 4 }}
spec:
  replicas: {{ .Values.replicaCount }}
  serviceName: {{ include "openshell.fullname" . }}
  selector:
    matchLabels:
      {{- include "openshell.selectorLabels" . | nindent 6 }}
  template:
    metadata:
      labels:
        {{- include "openshell.selectorLabels" . | nindent 8 }}
    spec:
      serviceAccountName: {{ include "openshell.serviceAccountName" . }}
      securityContext:
        {{- toYaml .Values.podSecurityContext | nindent 8 }}
      containers:
        - name: gateway
          image: {{ include "openshell.image" (list .Values.gateway.image .) | quote }}
          imagePullPolicy: {{ include "openshell.pullPolicy" (list .Values.gateway.image .) }}
          args: ["--config", "/etc/openshell/gateway.toml"]
          securityContext:
            {{- toYaml .Values.securityContext | nindent 12 }}
          ports:
            - name: grpc
              containerPort: {{ .Values.service.port }}
            - name: health
              containerPort: {{ .Values.service.healthPort }}
            - name: metrics
              containerPort: {{ .Values.service.metricsPort }}
          volumeMounts:
            - name: config
              mountPath: /etc/openshell
            - name: jwt-keys
              mountPath: /etc/openshell/jwt
              readOnly: true
            - name: data
              mountPath: /var/openshell
      volumes:
        - name: config
          configMap:
            name: {{ include "openshell.fullname" . }}-config
        - name: jwt-keys
          secret:
            secretName: {{ default (printf "%s-jwt-keys" (include "openshell.fullname" .)) .Values.server.sandboxJwt.signingSecretName }}
  volumeClaimTemplates:
    - metadata:
        name: data
      spec:
        accessModes: ["ReadWriteOnce"]
        resources:
          requests:
            storage: 1Gi
`,
		"templates/certgen.yaml": `{{- if .Values.pkiInitJob.enabled }}
apiVersion: batch/v1
kind: Job
metadata:
  name: {{ include "openshell.fullname" . }}-certgen
  namespace: {{ .Release.Namespace }}
  annotations:
    helm.sh/hook: pre-install,pre-upgrade
spec:
  template:
    spec:
      restartPolicy: Never
      containers:
        - name: certgen
          image: {{ include "openshell.image" (list .Values.gateway.image .) | quote }}
          args: ["generate-certs"]
{{- end }}
`,
		"templates/NOTES.txt": `OpenShell gateway {{ include "openshell.fullname" . }} is installed in {{ .Release.Namespace }}.
`,
	}
}
