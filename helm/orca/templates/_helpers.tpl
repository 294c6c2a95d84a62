{{/* Names, labels and small computed values shared by the templates. */}}

{{- define "orca.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "orca.fullname" -}}
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

{{/* Name of the controller's Deployment, Service, Roles and PDB. */}}
{{- define "orca.controllerName" -}}
{{- printf "%s-controller" (include "orca.fullname" .) | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "orca.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* Labels of every object of the chart. They never include serving.orca.dev/*:
     those mark objects owned by InferenceDeployments, which the controller watches. */}}
{{- define "orca.labels" -}}
helm.sh/chart: {{ include "orca.chart" . }}
app.kubernetes.io/name: {{ include "orca.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: orca
{{- end }}

{{- define "orca.controllerSelectorLabels" -}}
app.kubernetes.io/name: {{ include "orca.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/component: controller
{{- end }}

{{- define "orca.controllerLabels" -}}
{{ include "orca.labels" . }}
app.kubernetes.io/component: controller
{{- end }}

{{- define "orca.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "orca.controllerName" .) .Values.serviceAccount.name }}
{{- else }}
{{- required "serviceAccount.name is required when serviceAccount.create is false" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{- define "orca.controllerImage" -}}
{{- $img := .Values.controller.image }}
{{- if $img.digest }}
{{- printf "%s@%s" $img.repository $img.digest }}
{{- else }}
{{- printf "%s:%s" $img.repository (default .Chart.AppVersion $img.tag) }}
{{- end }}
{{- end }}

{{/* Namespaces whose serving pods get NetworkPolicies. */}}
{{- define "orca.networkPolicyNamespaces" -}}
{{- if .Values.networkPolicy.namespaces }}
{{- toJson .Values.networkPolicy.namespaces }}
{{- else }}
{{- toJson (list .Release.Namespace) }}
{{- end }}
{{- end }}

{{/* Checks of value combinations that a JSON schema cannot express. */}}
{{- define "orca.validate" -}}
{{- if and (gt (int .Values.controller.replicas) 1) (not .Values.controller.leaderElection.enabled) }}
{{- fail "controller.replicas > 1 requires controller.leaderElection.enabled: two leaderless controllers would fight over every object" }}
{{- end }}
{{- if and .Values.monitoring.controller.serviceMonitor (not .Values.controller.metricsService.enabled) }}
{{- fail "monitoring.controller.serviceMonitor requires controller.metricsService.enabled" }}
{{- end }}
{{- end }}
