{{/*
Stand-in helpers (see README.md). Labels, security contexts and the validation the real chart
applies to the values the development profile sets, with the real chart's messages where
README.md lists them.
*/}}

{{- define "openclaw.labels" -}}
app.kubernetes.io/name: openclaw-enterprise
app.kubernetes.io/instance: {{ .root.Release.Name }}
app.kubernetes.io/component: {{ .component }}
app.kubernetes.io/managed-by: {{ .root.Release.Service }}
{{- end -}}

{{- define "openclaw.selector" -}}
app.kubernetes.io/name: openclaw-enterprise
app.kubernetes.io/instance: {{ .root.Release.Name }}
app.kubernetes.io/component: {{ .component }}
{{- end -}}

{{- define "openclaw.podSecurity" -}}
runAsNonRoot: true
runAsUser: 1000
runAsGroup: 1000
fsGroup: 1000
seccompProfile:
  type: RuntimeDefault
{{- end -}}

{{- define "openclaw.containerSecurity" -}}
allowPrivilegeEscalation: false
readOnlyRootFilesystem: true
capabilities:
  drop: ["ALL"]
{{- end -}}

{{- define "openclaw.dnsPeer" -}}
- namespaceSelector:
    matchLabels:
      kubernetes.io/metadata.name: {{ .Values.dns.namespace }}
  podSelector:
    matchLabels:
{{ toYaml .Values.dns.podLabels | indent 6 }}
{{- end -}}

{{- define "openclaw.dnsPorts" -}}
- protocol: UDP
  port: 53
- protocol: TCP
  port: 53
{{- end -}}

{{- define "openclaw.dnsLabel" -}}
{{- if or (not (regexMatch "^[a-z0-9]([-a-z0-9]*[a-z0-9])?$" (toString .value))) (gt (len (toString .value)) 63) -}}
{{- fail (printf "%s must be a DNS label of at most 63 characters" .name) -}}
{{- end -}}
{{- end -}}

{{- define "openclaw.hostCIDRs" -}}
{{- $name := .name -}}
{{- $values := index .root.Values $name -}}
{{- if hasKey $values "cidr" -}}
{{- fail (printf "%s.cidr is retired; configure %s.cidrs with explicit IPv4 /32 hosts" $name $name) -}}
{{- end -}}
{{- if not $values.cidrs -}}
{{- fail (printf "%s.cidrs must contain at least one IPv4 host with /32" $name) -}}
{{- end -}}
{{- range $i, $cidr := $values.cidrs -}}
{{- if not (regexMatch "^(25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])([.](25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])){3}/32$" (toString $cidr)) -}}
{{- fail (printf "%s.cidrs[%d] must identify exactly one IPv4 host with /32" $name $i) -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{- define "openclaw.port" -}}
{{- $port := toString .value -}}
{{- if or (not (regexMatch "^[1-9][0-9]{0,4}$" $port)) (gt (atoi $port) 65535) -}}
{{- fail (printf "%s must be a decimal TCP port between 1 and 65535" .name) -}}
{{- end -}}
{{- end -}}

{{- define "openclaw.basename" -}}
{{- $file := toString .value -}}
{{- if or (eq $file "") (contains "/" $file) (eq $file ".") (eq $file "..") -}}
{{- fail (printf "%s must be a simple file name" .name) -}}
{{- end -}}
{{- end -}}

{{- define "openclaw.validate" -}}
{{- /* Keys of earlier chart versions: a values file that still sets one is refused, naming what replaced it. */ -}}
{{- if hasKey .Values "integrations" -}}
{{- fail "integrations is retired; configure ChatGPT packaging under backend.chatgpt" -}}
{{- end -}}
{{- if hasKey .Values "workspaceFiles" -}}
{{- fail "workspaceFiles is retired; configure private Envoy Gateway routing under gatewayRouting" -}}
{{- end -}}
{{- range $name, $ref := .Values.images -}}
{{- if not (regexMatch "^[A-Za-z0-9][A-Za-z0-9._:/-]*@sha256:[a-f0-9]{64}$" (toString $ref)) -}}
{{- fail (printf "images.%s must be an approved immutable SHA-256 image reference" $name) -}}
{{- end -}}
{{- end -}}

{{- $base := toString .Values.auth.baseUrl -}}
{{- if eq $base "" -}}
{{- fail "auth.baseUrl must identify the public Better Auth base URL" -}}
{{- end -}}
{{- $url := urlParse $base -}}
{{- if or (not (has $url.scheme (list "http" "https"))) (eq $url.hostname "") (not (has $url.path (list "" "/"))) (ne $url.query "") (ne $url.fragment "") (ne $url.userinfo "") (contains "?" $base) (contains "#" $base) -}}
{{- fail "auth.baseUrl must be an absolute http(s) origin without a path, query, fragment, or userinfo" -}}
{{- end -}}
{{- $hostPort := splitList ":" $url.host -}}
{{- if and (gt (len $hostPort) 1) (not (hasPrefix "[" $url.host)) -}}
{{- $p := last $hostPort -}}
{{- if or (not (regexMatch "^[0-9]{1,5}$" $p)) (gt (atoi $p) 65535) -}}
{{- fail "auth.baseUrl must use a TCP port between 0 and 65535" -}}
{{- end -}}
{{- end -}}
{{- if and (eq $url.scheme "http") (not (has $url.hostname (list "127.0.0.1" "localhost"))) -}}
{{- fail "auth.baseUrl must use HTTPS unless its host is 127.0.0.1 or localhost; the bootstrap Job refuses plain HTTP elsewhere" -}}
{{- end -}}
{{- if or (not .Values.auth.secretName) (not .Values.auth.secretKey) -}}
{{- fail "auth.secretName and auth.secretKey must name the Better Auth secret" -}}
{{- end -}}

{{- if .Values.agentNativeAdmin.enabled -}}
{{- $domain := toString .Values.agentNativeAdmin.domain -}}
{{- $cookie := toString .Values.agentNativeAdmin.sharedCookieDomain -}}
{{- if or (not (regexMatch "^[a-z0-9]([-a-z0-9]*[a-z0-9])?([.][a-z0-9]([-a-z0-9]*[a-z0-9])?)+$" $domain)) (not (regexMatch "^[a-z0-9]([-a-z0-9]*[a-z0-9])?([.][a-z0-9]([-a-z0-9]*[a-z0-9])?)+$" $cookie)) -}}
{{- fail "agentNativeAdmin.domain and agentNativeAdmin.sharedCookieDomain must be DNS names" -}}
{{- end -}}
{{- if not (hasSuffix (printf ".%s" $cookie) $domain) -}}
{{- fail "agentNativeAdmin.domain must be inside agentNativeAdmin.sharedCookieDomain" -}}
{{- end -}}
{{- if or (ne $url.scheme "https") (and (ne $url.hostname $cookie) (not (hasSuffix (printf ".%s" $cookie) $url.hostname))) -}}
{{- fail "agentNativeAdmin requires an HTTPS auth.baseUrl whose host is inside agentNativeAdmin.sharedCookieDomain" -}}
{{- end -}}
{{- if not .Values.gatewayRouting.enabled -}}
{{- fail "agentNativeAdmin requires gatewayRouting.enabled" -}}
{{- end -}}
{{- end -}}

{{- if not (regexMatch "^[^@[:space:]]+@[^@[:space:]]+[.][^@[:space:]]+$" (toString .Values.bootstrap.adminEmail)) -}}
{{- fail "bootstrap.adminEmail must contain a valid administrator email" -}}
{{- end -}}

{{- $installationName := toString .Values.installation.name -}}
{{- if or (eq $installationName "") (gt (len $installationName) 200) (ne $installationName (trim $installationName)) (regexMatch "[[:cntrl:]]" $installationName) -}}
{{- fail "installation.name must be 1 to 200 characters without surrounding whitespace or control characters" -}}
{{- end -}}

{{- $password := .Values.bootstrap.password -}}
{{- if or (not $password.claimName) (not $password.mountPath) (not $password.fileName) -}}
{{- fail "bootstrap.password.claimName, bootstrap.password.mountPath and bootstrap.password.fileName must be set" -}}
{{- end -}}
{{- if or (gt (len (toString $password.claimName)) 253) (not (regexMatch "^[a-z0-9]([-a-z0-9]*[a-z0-9])?([.][a-z0-9]([-a-z0-9]*[a-z0-9])?)*$" (toString $password.claimName))) -}}
{{- fail "bootstrap.password.claimName must be a DNS subdomain of at most 253 characters" -}}
{{- end -}}
{{- if not (hasPrefix "/" (toString $password.mountPath)) -}}
{{- fail "bootstrap.password.mountPath must be an absolute path" -}}
{{- end -}}
{{- include "openclaw.basename" (dict "name" "bootstrap.password.fileName" "value" $password.fileName) -}}
{{- include "openclaw.basename" (dict "name" "bootstrap.serviceKey.fileName" "value" .Values.bootstrap.serviceKey.fileName) -}}
{{- if eq (toString $password.fileName) (toString .Values.bootstrap.serviceKey.fileName) -}}
{{- fail "bootstrap.password.fileName and bootstrap.serviceKey.fileName must differ" -}}
{{- end -}}

{{- include "openclaw.port" (dict "name" "api.port" "value" .Values.api.port) -}}
{{- if not .Values.api.clients -}}
{{- fail "api.clients must contain exact approved client selectors" -}}
{{- end -}}
{{- range $i, $client := .Values.api.clients -}}
{{- include "openclaw.dnsLabel" (dict "name" (printf "api.clients[%d].namespace" $i) "value" (default "" $client.namespace)) -}}
{{- if not $client.podLabels -}}
{{- fail (printf "api.clients[%d].podLabels must not be empty" $i) -}}
{{- end -}}
{{- end -}}

{{- if or (not .Values.dns.namespace) (not .Values.dns.podLabels) -}}
{{- fail "dns.namespace and dns.podLabels must select the cluster DNS Pods" -}}
{{- end -}}

{{- include "openclaw.hostCIDRs" (dict "root" . "name" "database") -}}
{{- include "openclaw.hostCIDRs" (dict "root" . "name" "cluster") -}}
{{- include "openclaw.port" (dict "name" "database.port" "value" .Values.database.port) -}}
{{- include "openclaw.port" (dict "name" "cluster.port" "value" .Values.cluster.port) -}}

{{- $checksum := toString .Values.controlPlane.installationChecksum -}}
{{- if and (ne $checksum "") (not (regexMatch "^[a-f0-9]{64}$" $checksum)) -}}
{{- fail "controlPlane.installationChecksum must be empty or 64 lowercase hexadecimal characters" -}}
{{- end -}}

{{- $secrets := list (toString .Values.installation.secretName) (toString .Values.database.secretName) (toString .Values.auth.secretName) -}}
{{- if ne (len (uniq $secrets)) 3 -}}
{{- fail "installation.secretName, database.secretName and auth.secretName must name distinct Secrets" -}}
{{- end -}}

{{- if .Values.gatewayRouting.enabled -}}
{{- if not .Values.gatewayRouting.gatewayClassName -}}
{{- fail "gatewayRouting.gatewayClassName is required when gatewayRouting.enabled" -}}
{{- end -}}
{{- if not .Values.gatewayRouting.apiKeySecretName -}}
{{- fail "gatewayRouting.apiKeySecretName is required when gatewayRouting.enabled" -}}
{{- end -}}
{{- include "openclaw.dnsLabel" (dict "name" "gatewayRouting.envoyNamespace" "value" .Values.gatewayRouting.envoyNamespace) -}}
{{- end -}}
{{- end -}}

{{/* The private Agent Gateway route's names, derived from the Gateway's namespace and name as
the real chart derives them (a 12-hex digest of "<namespace>/<gateway>"), as one dict. */}}
{{- define "openclaw.route" -}}
{{- $r := .Values.gatewayRouting -}}
{{- $gw := default "openclaw-enterprise-agent-gateways" $r.gatewayName -}}
{{- $h := trunc 12 (sha256sum (printf "%s/%s" .Release.Namespace $gw)) -}}
{{- $svc := printf "occ-gateway-%s" $h -}}
{{- toJson (dict "gateway" $gw "hash" $h "service" $svc "root" (printf "%s-root" $svc) "tls" (printf "%s-tls" $gw) "dataplane" (printf "%s-%s-envoy-dataplane" (trunc 34 .Release.Name | trimSuffix "-") $h) "hostname" (default (printf "%s.%s.svc" $svc $r.envoyNamespace) $r.hostname)) -}}
{{- end -}}
