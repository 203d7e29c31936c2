{{/* Chart name (or nameOverride), truncated to the 63 characters a label allows. */}}
{{- define "lace.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/*
Release-qualified name used for every object of the chart: fullnameOverride, else the release's
name with the chart's (or nameOverride) appended unless it already contains it.
*/}}
{{- define "lace.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- $name := default .Chart.Name .Values.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{/*
The namespace of the agent and of every namespaced object that is not the netcheck runner's
probes': namespaceOverride, else the release's.
*/}}
{{- define "lace.namespace" -}}
{{- default .Release.Namespace .Values.namespaceOverride }}
{{- end }}

{{/*
The labels of a namespace the chart creates: the chart's, and the Pod Security level (.level) its
pods need, enforced (https://kubernetes.io/docs/concepts/security/pod-security-admission/).
*/}}
{{- define "lace.namespaceLabels" -}}
{{ include "lace.labels" .ctx }}
pod-security.kubernetes.io/enforce: {{ .level }}
{{- end }}

{{- define "lace.selectorLabels" -}}
app.kubernetes.io/name: {{ include "lace.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{- define "lace.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{ include "lace.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/component: node-agent
{{- end }}

{{- define "lace.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "lace.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- default "default" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{- define "lace.image" -}}
{{- $tag := default .Chart.AppVersion .Values.image.tag -}}
{{- if .Values.image.digest -}}
{{ .Values.image.repository }}@{{ .Values.image.digest }}
{{- else -}}
{{ .Values.image.repository }}:{{ $tag }}
{{- end -}}
{{- end }}

{{/*
The kubelet cgroup as the agent is told it. The chart mounts only the host's /sys/fs/cgroup, so a
path elsewhere could never be found in the container: refuse it at render time.
*/}}
{{- define "lace.kubeletCgroup" -}}
{{- $path := .Values.node.kubeletCgroupPath -}}
{{- if and (ne $path "auto") (ne $path "/sys/fs/cgroup") (not (hasPrefix "/sys/fs/cgroup/" $path)) -}}
{{- fail (printf "node.kubeletCgroupPath must be under /sys/fs/cgroup (the host hierarchy the chart mounts) or \"auto\": %q" $path) -}}
{{- end -}}
{{- $path -}}
{{- end }}

{{/* The agent's metrics address: the node's IP by default (the pod runs in the host network). */}}
{{- define "lace.metricsAddr" -}}
{{- if .Values.node.metricsHost -}}
{{ .Values.node.metricsHost }}:{{ .Values.node.metricsPort }}
{{- else -}}
$(HOST_IP):{{ .Values.node.metricsPort }}
{{- end -}}
{{- end }}

{{/* The loopback address of the health listener the agent's probes use. */}}
{{- define "lace.healthAddr" -}}
{{- if eq (int .Values.node.healthPort) (int .Values.node.metricsPort) -}}
{{- fail (printf "node.healthPort must differ from node.metricsPort: %v" .Values.node.healthPort) -}}
{{- end -}}
127.0.0.1:{{ .Values.node.healthPort }}
{{- end }}

{{/*
CEL: true when the probe or handler at path .p (e.g. "c.livenessProbe") makes the kubelet connect
to a host the pod chose (httpGet.host or tcpSocket.host).
*/}}
{{- define "lace.celHostSet" -}}
(has({{ .p }}) && ((has({{ .p }}.httpGet) && has({{ .p }}.httpGet.host)) || (has({{ .p }}.tcpSocket) && has({{ .p }}.tcpSocket.host))))
{{- end }}

{{/*
CEL: true when the probe or handler at path .p sets a host that is not the node itself or its
link: anything but "localhost", a loopback or a link-local IP (which are never probe targets).
Such a host may be another pod's address, whose registered probe ports the kubelet's connection
there would be tagged into, whatever network the pod setting it is in.
*/}}
{{- define "lace.celHostForeign" -}}
(has({{ .p }}) && ((has({{ .p }}.httpGet) && has({{ .p }}.httpGet.host) && {{ include "lace.celHostNotLocal" (dict "h" (printf "%s.httpGet.host" .p)) }}) || (has({{ .p }}.tcpSocket) && has({{ .p }}.tcpSocket.host) && {{ include "lace.celHostNotLocal" (dict "h" (printf "%s.tcpSocket.host" .p)) }})))
{{- end }}

{{- define "lace.celHostNotLocal" -}}
!({{ .h }} == 'localhost' || (isIP({{ .h }}) && (ip({{ .h }}).isLoopback() || ip({{ .h }}).isLinkLocalUnicast())))
{{- end }}

{{/*
The job label of the agents' scrapes, set by the ServiceMonitor and the PodMonitor alike: the
alerts select the agents' `up` and process metrics by it.
*/}}
{{- define "lace.metricsJob" -}}
{{- printf "%s-agent" (include "lace.fullname" .) | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/*
The relabelings of a ServiceMonitor's or PodMonitor's endpoint: the node's name as `node` (the
instance is the node's IP), and the chart's job label.
*/}}
{{- define "lace.metricsRelabelings" -}}
- action: replace
  sourceLabels: [__meta_kubernetes_pod_node_name]
  targetLabel: node
- action: replace
  targetLabel: job
  replacement: {{ include "lace.metricsJob" . }}
{{- end }}
