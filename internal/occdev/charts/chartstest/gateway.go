package chartstest

// GatewayChart returns the files of the Gateway chart stand-in, keyed by path inside the chart
// directory, so a test can derive a variant (a template that ignores a values key) from the
// real shape. README.md says which upstream files it follows and what it leaves out.
func GatewayChart() map[string]string { return gatewayChart() }

// gatewayChart is a stand-in for deploy/helm/openshell in its v0.1 layout: per-component images
// as registry/repository/pullPolicy/tag/digest with a global registry, tag and pull policy, image
// helpers that render registry/repository@digest (a digest wins over a tag), a gateway.toml
// ConfigMap that carries the supervisor and sandbox runtime images (written when a value
// overrides the Gateway's built-in default) and the default image for Sandboxes that name none,
// the Agent Sandbox preflight on by default, and some of the chart's `fail` rules. The
// templates are written for this repository.
func gatewayChart() map[string]string {
	return map[string]string{
		"Chart.yaml": `apiVersion: v2
name: openshell
description: OpenShell Gateway (test fixture in the v0.1 layout)
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

imagePullSecrets: []
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

podAnnotations: {}
podLabels: {}

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

agentSandbox:
  preflight:
    enabled: true

resources: {}

server:
  name: ""
  logLevel: info
  sandboxNamespace: ""
  sandboxImage: ghcr.io/nvidia/openshell-community/sandboxes/base:latest
  dbUrl: "sqlite:/var/openshell/openshell.db"
  externalDbSecret: ""
  defaultRuntimeClassName: ""
  grpcEndpoint: ""
  policyValidationFailureMode: fail_closed
  drivers:
    kubernetes:
      allowDriverConfig: false
      resourceAdmission:
        enabled: true
      workspaceMode: shared
      operatorNamespaceLabel: ""
      operatorNamespaceFile: ""
  disableTls: false
  auth:
    allowUnauthenticatedUsers: false
  tls:
    certSecretName: openshell-server-tls
    clientCaSecretName: openshell-server-client-ca
    clientTlsSecretName: openshell-client-tls
  sandboxJwt:
    signingSecretName: ""
    gatewayId: ""
    ttlSecs: 3600

networkPolicy:
  enabled: true

pkiInitJob:
  enabled: true

certManager:
  enabled: false
  serverIssuerRef:
    name: ""
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
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{ include "openshell.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end -}}

{{- define "openshell.serviceAccountName" -}}
{{- if .Values.serviceAccount.create -}}
{{- default (include "openshell.fullname" .) .Values.serviceAccount.name -}}
{{- else -}}
{{- default "default" .Values.serviceAccount.name -}}
{{- end -}}
{{- end -}}

{{- define "openshell.sandboxServiceAccountName" -}}
{{- if .Values.sandboxServiceAccount.create -}}
{{- default (printf "%s-sandbox" (include "openshell.fullname" .) | trunc 63 | trimSuffix "-") .Values.sandboxServiceAccount.name -}}
{{- else -}}
{{- default "default" .Values.sandboxServiceAccount.name -}}
{{- end -}}
{{- end -}}

{{- define "openshell.sandboxNamespace" -}}
{{- .Values.server.sandboxNamespace | default .Release.Namespace -}}
{{- end -}}

{{- define "openshell.grpcEndpoint" -}}
{{- if .Values.server.grpcEndpoint -}}
{{- .Values.server.grpcEndpoint -}}
{{- else -}}
{{- printf "%s://%s.%s.svc.cluster.local:%d" (ternary "http" "https" .Values.server.disableTls) (include "openshell.fullname" .) .Release.Namespace (int .Values.service.port) -}}
{{- end -}}
{{- end -}}

{{- define "openshell.jwtSecretName" -}}
{{- .Values.server.sandboxJwt.signingSecretName | default (printf "%s-jwt-keys" (include "openshell.fullname" .)) -}}
{{- end -}}

{{/*
The repository of one component image, with its registry: the component's own registry, else
the global one; no registry at all leaves the repository as it is.
*/}}
{{- define "openshell.imageRepository" -}}
{{- $registry := .image.registry | default .root.Values.global.image.registry -}}
{{- if $registry -}}
{{- printf "%s/%s" $registry .image.repository -}}
{{- else -}}
{{- .image.repository -}}
{{- end -}}
{{- end -}}

{{/*
One component image as a reference. A digest wins over a tag; without either the global tag,
then the chart's appVersion, is the tag.
*/}}
{{- define "openshell.imageRef" -}}
{{- $repository := include "openshell.imageRepository" . -}}
{{- if .image.digest -}}
{{- printf "%s@%s" $repository .image.digest -}}
{{- else -}}
{{- printf "%s:%s" $repository (.image.tag | default .root.Values.global.image.tag | default .root.Chart.AppVersion) -}}
{{- end -}}
{{- end -}}

{{/*
Whether values override the Gateway's built-in default for a component image (its official
repository at the Gateway's own version): only then is the image written into gateway.toml.
*/}}
{{- define "openshell.imageOverridden" -}}
{{- $repository := include "openshell.imageRepository" . -}}
{{- if or (ne $repository .default) .image.tag .image.digest .root.Values.global.image.tag -}}true{{- end -}}
{{- end -}}

{{- define "openshell.gatewayImage" -}}
{{- include "openshell.imageRef" (dict "image" .Values.gateway.image "root" .) -}}
{{- end -}}

{{- define "openshell.supervisorImage" -}}
{{- include "openshell.imageRef" (dict "image" .Values.supervisor.image "root" .) -}}
{{- end -}}

{{- define "openshell.supervisorImageOverridden" -}}
{{- include "openshell.imageOverridden" (dict "image" .Values.supervisor.image "root" . "default" "ghcr.io/nvidia/openshell/supervisor") -}}
{{- end -}}

{{- define "openshell.sandboxRuntimeImage" -}}
{{- include "openshell.imageRef" (dict "image" .Values.sandboxRuntime.image "root" .) -}}
{{- end -}}

{{- define "openshell.sandboxRuntimeImageOverridden" -}}
{{- include "openshell.imageOverridden" (dict "image" .Values.sandboxRuntime.image "root" . "default" "ghcr.io/nvidia/openshell/sandbox") -}}
{{- end -}}

{{- define "openshell.pullPolicy" -}}
{{- .image.pullPolicy | default .root.Values.global.image.pullPolicy -}}
{{- end -}}

{{/* Values the chart would otherwise accept and then break on. */}}
{{- define "openshell.validateValues" -}}
{{- $mode := .Values.server.drivers.kubernetes.workspaceMode | default "shared" -}}
{{- if not (has $mode (list "shared" "managed" "operator")) -}}
{{- fail (printf "server.drivers.kubernetes.workspaceMode must be shared, managed or operator, not %q" $mode) -}}
{{- end -}}
{{- if and (eq $mode "operator") (not .Values.server.drivers.kubernetes.operatorNamespaceLabel) (not .Values.server.drivers.kubernetes.operatorNamespaceFile) -}}
{{- fail "server.drivers.kubernetes.workspaceMode operator discovers its namespaces by server.drivers.kubernetes.operatorNamespaceLabel or operatorNamespaceFile; set one" -}}
{{- end -}}
{{- if and (gt (int .Values.replicaCount) 1) (not .Values.server.externalDbSecret) -}}
{{- fail "replicaCount above 1 needs server.externalDbSecret: the default SQLite database belongs to one pod" -}}
{{- end -}}
{{- if and .Values.certManager.serverIssuerRef.name (not .Values.certManager.enabled) -}}
{{- fail "certManager.serverIssuerRef.name needs certManager.enabled=true" -}}
{{- end -}}
{{- if not (has .Values.server.policyValidationFailureMode (list "fail_closed" "retain_last_valid")) -}}
{{- fail "server.policyValidationFailureMode must be fail_closed or retain_last_valid" -}}
{{- end -}}
{{- end -}}
`,
		"templates/agent-sandbox-preflight.yaml": `{{- /*
The Gateway's Kubernetes driver creates Agent Sandbox objects; the chart installs neither their
CRDs nor their controller, so it stops an install on a cluster that serves no Sandbox API.
*/}}
{{- if .Values.agentSandbox.preflight.enabled }}
{{- $beta := or (.Capabilities.APIVersions.Has "agents.x-k8s.io/v1beta1") (.Capabilities.APIVersions.Has "agents.x-k8s.io/v1beta1/Sandbox") }}
{{- $alpha := or (.Capabilities.APIVersions.Has "agents.x-k8s.io/v1alpha1") (.Capabilities.APIVersions.Has "agents.x-k8s.io/v1alpha1/Sandbox") }}
{{- if not (or $beta $alpha) }}
{{- fail "Agent Sandbox is required: this cluster serves neither agents.x-k8s.io/v1beta1 nor agents.x-k8s.io/v1alpha1. Install the Agent Sandbox CRDs and controller first; agentSandbox.preflight.enabled=false is meant only for rendering without a cluster." }}
{{- end }}
{{- end }}
`,
		"templates/gateway-config.yaml": `{{- include "openshell.validateValues" . -}}
apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ include "openshell.fullname" . }}-config
  labels:
    {{- include "openshell.labels" . | nindent 4 }}
data:
  gateway.toml: |
    [openshell]
    version = 1

    [openshell.gateway]
    name = {{ .Values.server.name | default (include "openshell.fullname" .) | quote }}
    bind_address = "0.0.0.0:{{ .Values.service.port }}"
    health_bind_address = "0.0.0.0:{{ .Values.service.healthPort }}"
    metrics_bind_address = "0.0.0.0:{{ .Values.service.metricsPort }}"
    log_level = {{ .Values.server.logLevel | quote }}
    sandbox_namespace = {{ include "openshell.sandboxNamespace" . | quote }}
    policy_validation_failure_mode = {{ .Values.server.policyValidationFailureMode | quote }}
    default_image = {{ .Values.server.sandboxImage | quote }}
    {{- if include "openshell.supervisorImageOverridden" . }}
    supervisor_image = {{ include "openshell.supervisorImage" . | quote }}
    {{- end }}
    {{- if .Values.server.disableTls }}
    disable_tls = true
    {{- else }}
    client_tls_secret_name = {{ .Values.server.tls.clientTlsSecretName | quote }}
    {{- end }}
    {{- if not .Values.server.disableTls }}

    [openshell.gateway.tls]
    cert_path = "/etc/openshell-tls/server/tls.crt"
    key_path = "/etc/openshell-tls/server/tls.key"
    client_ca_path = "/etc/openshell-tls/client-ca/ca.crt"
    {{- end }}
    {{- if .Values.server.auth.allowUnauthenticatedUsers }}

    [openshell.gateway.auth]
    allow_unauthenticated_users = true
    {{- end }}

    [openshell.gateway.gateway_jwt]
    signing_key_path = "/etc/openshell-jwt/signing.pem"
    public_key_path = "/etc/openshell-jwt/public.pem"
    kid_path = "/etc/openshell-jwt/kid"
    gateway_id = {{ .Values.server.sandboxJwt.gatewayId | default (include "openshell.fullname" .) | quote }}
    ttl_secs = {{ .Values.server.sandboxJwt.ttlSecs | default 3600 }}

    [openshell.drivers.kubernetes]
    workspace_mode = {{ .Values.server.drivers.kubernetes.workspaceMode | default "shared" | quote }}
    grpc_endpoint = {{ include "openshell.grpcEndpoint" . | quote }}
    service_account_name = {{ include "openshell.sandboxServiceAccountName" . | quote }}
    {{- with .Values.server.drivers.kubernetes.operatorNamespaceLabel }}
    operator_namespace_label = {{ . | quote }}
    {{- end }}
    {{- with .Values.server.drivers.kubernetes.operatorNamespaceFile }}
    operator_namespace_file = {{ . | quote }}
    {{- end }}
    allow_driver_config = {{ .Values.server.drivers.kubernetes.allowDriverConfig }}
    resource_admission = {{ .Values.server.drivers.kubernetes.resourceAdmission.enabled }}
    {{- if include "openshell.sandboxRuntimeImageOverridden" . }}
    sandbox_runtime_image = {{ include "openshell.sandboxRuntimeImage" . | quote }}
    {{- end }}
    {{- with .Values.sandboxRuntime.image.pullPolicy }}
    sandbox_runtime_image_pull_policy = {{ . | quote }}
    {{- end }}
    {{- with .Values.supervisor.image.pullPolicy }}
    supervisor_image_pull_policy = {{ . | quote }}
    {{- end }}
    {{- with .Values.server.defaultRuntimeClassName }}
    default_runtime_class_name = {{ . | quote }}
    {{- end }}

    [openshell.drivers.kubernetes.managed_ssh_ingress]
    enabled = {{ .Values.networkPolicy.enabled }}
    gateway_namespace = {{ .Release.Namespace | quote }}
`,
		"templates/serviceaccount.yaml": `{{- if .Values.serviceAccount.create }}
apiVersion: v1
kind: ServiceAccount
metadata:
  name: {{ include "openshell.serviceAccountName" . }}
  labels:
    {{- include "openshell.labels" . | nindent 4 }}
  {{- with .Values.serviceAccount.annotations }}
  annotations:
    {{- toYaml . | nindent 4 }}
  {{- end }}
{{- end }}
{{- if and .Values.workspaceResources.enabled .Values.sandboxServiceAccount.create }}
---
apiVersion: v1
kind: ServiceAccount
metadata:
  name: {{ include "openshell.sandboxServiceAccountName" . }}
  namespace: {{ include "openshell.sandboxNamespace" . }}
  labels:
    {{- include "openshell.labels" . | nindent 4 }}
{{- end }}
`,
		"templates/role.yaml": `{{- if .Values.workspaceResources.enabled }}
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata:
  name: {{ include "openshell.fullname" . }}-sandbox
  namespace: {{ include "openshell.sandboxNamespace" . }}
  labels:
    {{- include "openshell.labels" . | nindent 4 }}
rules:
  - apiGroups: ["agents.x-k8s.io"]
    resources: ["sandboxes", "sandboxes/status"]
    verbs: ["create", "delete", "get", "list", "patch", "update", "watch"]
  - apiGroups: [""]
    resources: ["pods", "secrets"]
    verbs: ["get", "list", "watch"]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata:
  name: {{ include "openshell.fullname" . }}-sandbox
  namespace: {{ include "openshell.sandboxNamespace" . }}
  labels:
    {{- include "openshell.labels" . | nindent 4 }}
roleRef:
  apiGroup: rbac.authorization.k8s.io
  kind: Role
  name: {{ include "openshell.fullname" . }}-sandbox
subjects:
  - kind: ServiceAccount
    name: {{ include "openshell.serviceAccountName" . }}
    namespace: {{ .Release.Namespace }}
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
{{- if ne (.Values.server.drivers.kubernetes.workspaceMode | default "shared") "shared" }}
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
  labels:
    {{- include "openshell.labels" . | nindent 4 }}
spec:
  type: {{ .Values.service.type }}
  ports:
    - name: grpc
      port: {{ .Values.service.port }}
      targetPort: grpc
      protocol: TCP
      appProtocol: grpc
      {{- if and (eq .Values.service.type "NodePort") .Values.service.nodePort }}
      nodePort: {{ .Values.service.nodePort }}
      {{- end }}
    {{- if .Values.service.metricsPort }}
    - name: metrics
      port: {{ .Values.service.metricsPort }}
      targetPort: metrics
      protocol: TCP
    {{- end }}
  selector:
    {{- include "openshell.selectorLabels" . | nindent 4 }}
`,
		"templates/statefulset.yaml": `{{- include "openshell.validateValues" . -}}
apiVersion: apps/v1
kind: StatefulSet
metadata:
  name: {{ include "openshell.fullname" . }}
  labels:
    {{- include "openshell.labels" . | nindent 4 }}
spec:
  serviceName: {{ include "openshell.fullname" . }}
  replicas: {{ .Values.replicaCount }}
  selector:
    matchLabels:
      {{- include "openshell.selectorLabels" . | nindent 6 }}
  template:
    metadata:
      annotations:
        checksum/gateway-config: {{ include (print $.Template.BasePath "/gateway-config.yaml") . | sha256sum }}
        {{- with .Values.podAnnotations }}
        {{- toYaml . | nindent 8 }}
        {{- end }}
      labels:
        {{- include "openshell.labels" . | nindent 8 }}
        {{- with .Values.podLabels }}
        {{- toYaml . | nindent 8 }}
        {{- end }}
    spec:
      {{- with .Values.imagePullSecrets }}
      imagePullSecrets:
        {{- toYaml . | nindent 8 }}
      {{- end }}
      serviceAccountName: {{ include "openshell.serviceAccountName" . }}
      {{- with .Values.podSecurityContext }}
      securityContext:
        {{- toYaml . | nindent 8 }}
      {{- end }}
      containers:
        - name: openshell-gateway
          image: {{ include "openshell.gatewayImage" . | quote }}
          imagePullPolicy: {{ include "openshell.pullPolicy" (dict "image" .Values.gateway.image "root" .) }}
          securityContext:
            {{- toYaml .Values.securityContext | nindent 12 }}
          args:
            - --config
            - /etc/openshell/gateway.toml
            {{- if not .Values.server.externalDbSecret }}
            - --db-url
            - {{ .Values.server.dbUrl | quote }}
            {{- end }}
          env:
            - name: OPENSHELL_POD_NAME
              valueFrom:
                fieldRef:
                  fieldPath: metadata.name
            {{- with .Values.server.externalDbSecret }}
            - name: OPENSHELL_DB_URL
              valueFrom:
                secretKeyRef:
                  name: {{ . }}
                  key: uri
            {{- end }}
          ports:
            - name: grpc
              containerPort: {{ .Values.service.port }}
              protocol: TCP
            - name: health
              containerPort: {{ .Values.service.healthPort }}
              protocol: TCP
            - name: metrics
              containerPort: {{ .Values.service.metricsPort }}
              protocol: TCP
          volumeMounts:
            - name: openshell-data
              mountPath: /var/openshell
            - name: gateway-config
              mountPath: /etc/openshell/gateway.toml
              subPath: gateway.toml
              readOnly: true
            - name: sandbox-jwt
              mountPath: /etc/openshell-jwt
              readOnly: true
            {{- if not .Values.server.disableTls }}
            - name: tls-cert
              mountPath: /etc/openshell-tls/server
              readOnly: true
            - name: tls-client-ca
              mountPath: /etc/openshell-tls/client-ca
              readOnly: true
            {{- end }}
          resources:
            {{- toYaml .Values.resources | nindent 12 }}
      volumes:
        - name: gateway-config
          configMap:
            name: {{ include "openshell.fullname" . }}-config
        - name: sandbox-jwt
          secret:
            secretName: {{ include "openshell.jwtSecretName" . }}
            defaultMode: 0400
        {{- if not .Values.server.disableTls }}
        - name: tls-cert
          secret:
            secretName: {{ .Values.server.tls.certSecretName }}
        - name: tls-client-ca
          secret:
            secretName: {{ .Values.server.tls.clientCaSecretName }}
        {{- end }}
  volumeClaimTemplates:
    - metadata:
        name: openshell-data
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
  labels:
    {{- include "openshell.labels" . | nindent 4 }}
  annotations:
    helm.sh/hook: pre-install,pre-upgrade
    helm.sh/hook-delete-policy: before-hook-creation,hook-succeeded
spec:
  template:
    spec:
      restartPolicy: Never
      serviceAccountName: {{ include "openshell.serviceAccountName" . }}
      containers:
        - name: certgen
          image: {{ include "openshell.gatewayImage" . | quote }}
          imagePullPolicy: {{ include "openshell.pullPolicy" (dict "image" .Values.gateway.image "root" .) }}
          args:
            - generate-certs
            - --server-secret
            - {{ .Values.server.tls.certSecretName }}
            - --jwt-secret
            - {{ include "openshell.jwtSecretName" . }}
{{- end }}
`,
		"templates/NOTES.txt": `OpenShell Gateway {{ include "openshell.fullname" . }} is installed in {{ .Release.Namespace }}.
`,
	}
}
