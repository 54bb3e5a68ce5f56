{{/* The chart name. */}}
{{- define "delta-operator.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* The full name of the release's resources. */}}
{{- define "delta-operator.fullname" -}}
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

{{/* chart-version, for the helm.sh/chart label. */}}
{{- define "delta-operator.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* Labels on every resource. */}}
{{- define "delta-operator.labels" -}}
helm.sh/chart: {{ include "delta-operator.chart" . }}
{{ include "delta-operator.selectorLabels" . }}
app.kubernetes.io/version: {{ .Values.image.tag | default .Chart.AppVersion | quote }}
app.kubernetes.io/component: operator
app.kubernetes.io/part-of: delta-operator
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end }}

{{/* Labels that select the operator's pods (never change them on upgrade). */}}
{{- define "delta-operator.selectorLabels" -}}
app.kubernetes.io/name: {{ include "delta-operator.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{/* The ServiceAccount's name. */}}
{{- define "delta-operator.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "delta-operator.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- required "serviceAccount.name is required when serviceAccount.create is false" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{/* The image reference. */}}
{{- define "delta-operator.image" -}}
{{- printf "%s:%s" .Values.image.repository (.Values.image.tag | default .Chart.AppVersion) }}
{{- end }}

{{/* Leader election: on at every replica count. With one replica a rolling update still runs
two pods for a while; only the Lease holder may run the controllers, so the new pod waits for
the old one's hand-off instead of reporting its running step as cut short. */}}
{{- define "delta-operator.leaderElect" -}}
true
{{- end }}

{{/* The webhook Service's DNS names (comma-separated): the certificate's names. */}}
{{- define "delta-operator.webhookHosts" -}}
{{- $svc := printf "%s-webhook" (include "delta-operator.fullname" .) }}
{{- printf "%s,%s.%s,%s.%s.svc" $svc $svc .Release.Namespace $svc .Release.Namespace }}
{{- end }}
