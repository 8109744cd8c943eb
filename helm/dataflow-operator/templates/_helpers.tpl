{{/* Names, labels and the operator's RBAC rules, shared by the templates. */}}

{{- define "dataflow-operator.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* The release's full name: <release>-<chart>, or just <release> when it names the chart. */}}
{{- define "dataflow-operator.fullname" -}}
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

{{- define "dataflow-operator.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "dataflow-operator.selectorLabels" -}}
app.kubernetes.io/name: {{ include "dataflow-operator.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{- define "dataflow-operator.labels" -}}
helm.sh/chart: {{ include "dataflow-operator.chart" . }}
{{ include "dataflow-operator.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/component: operator
app.kubernetes.io/part-of: dataflow
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end }}

{{/* The Secret holding the drivers' status-token key. */}}
{{- define "dataflow-operator.statusKeySecret" -}}
{{- .Values.statusKey.existingSecret | default (printf "%s-status-key" (include "dataflow-operator.fullname" .)) }}
{{- end }}

{{/* Namespaces no job runs in and the operator never writes to: the cluster's own, and the
release's (where the operator's account and its key live). */}}
{{- define "dataflow-operator.protectedNamespaces" -}}
{{- list "kube-system" "kube-public" "kube-node-lease" .Release.Namespace | toJson }}
{{- end }}

{{/* The watch scope: every namespace (clusterWide), or a list of namespaces, none of them
protected. */}}
{{- define "dataflow-operator.checkScope" -}}
{{- $protected := include "dataflow-operator.protectedNamespaces" . | fromJsonArray }}
{{- if not .Values.clusterWide }}
{{- if not .Values.watchNamespaces }}
{{- fail "watchNamespaces is empty: list the namespaces whose DataflowJobs the operator runs, or opt in to every namespace with clusterWide=true" }}
{{- end }}
{{- range .Values.watchNamespaces }}
{{- if has . $protected }}
{{- fail (printf "watchNamespaces: %q is not for DataflowJobs: the operator never runs jobs in kube-system, kube-public, kube-node-lease or its own namespace (%s)" . $.Release.Namespace) }}
{{- end }}
{{- end }}
{{- end }}
{{- end }}

{{- define "dataflow-operator.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "dataflow-operator.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- required "serviceAccount.name is required when serviceAccount.create is false" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{- define "dataflow-operator.image" -}}
{{- printf "%s:%s" .Values.image.repository (.Values.image.tag | default .Chart.AppVersion) }}
{{- end }}

{{/* The default image of drivers and executors. */}}
{{- define "dataflow-operator.executorImage" -}}
{{- .Values.executorImage | default (include "dataflow-operator.image" .) }}
{{- end }}

{{/*
What the operator does, and no more (operator/dataflow_operator: controller.py, status/recorder.py, kube.py,
backends/kubernetes.py, status/events.py; kopf runs standalone, so no peering objects):
- DataflowJobs: kopf lists and watches them and patches its annotations; the controller
  patches status.
- Per job: a driver Pod, its ConfigMap, headless Service, the driver's and the executors'
  ServiceAccounts, the driver's Role and RoleBinding, created or adopted (create, get, merge
  patch) and deleted; driver pods are listed per namespace; the driver's status is read (get)
  and its savepoints asked for (create: a POST, which also needs the job's status token)
  through the API server's service proxy.
- The driver's Role grants pods verbs; RBAC lets the operator grant only what it holds
  itself, so it holds those verbs (list, watch, deletecollection) too.
- DataflowSnapshots: kopf lists and watches them and patches its annotations (and finalizer);
  the operator creates the ones it takes (periodic, upgrade, suspend, manual), patches their
  status, deletes the ones its retention no longer keeps, and disposes of a savepoint's files
  through the driver's service proxy (create: a POST). No user role may write a job's or a
  snapshot's status: the operator trusts status.lastStableSpec it wrote itself.
- Events about DataflowJobs and DataflowSnapshots (the controller's and kopf's).
No secrets, no pods/exec, no cluster-scoped objects.
*/}}
{{- define "dataflow-operator.rules" -}}
- apiGroups: ["dataflow.io"]
  resources: ["dataflowjobs"]
  verbs: ["get", "list", "watch", "patch"]
- apiGroups: ["dataflow.io"]
  resources: ["dataflowjobs/status"]
  verbs: ["get", "patch", "update"]
- apiGroups: ["dataflow.io"]
  resources: ["dataflowsnapshots"]
  verbs: ["get", "list", "watch", "create", "patch", "delete"]
- apiGroups: ["dataflow.io"]
  resources: ["dataflowsnapshots/status"]
  verbs: ["get", "patch"]
- apiGroups: [""]
  resources: ["pods"]
  verbs: ["get", "list", "watch", "create", "delete", "deletecollection", "patch"]
- apiGroups: [""]
  resources: ["configmaps", "services", "serviceaccounts"]
  verbs: ["get", "create", "patch", "delete"]
- apiGroups: [""]
  resources: ["services/proxy"]
  verbs: ["get", "create"]
- apiGroups: ["rbac.authorization.k8s.io"]
  resources: ["roles", "rolebindings"]
  verbs: ["get", "create", "patch", "delete"]
- apiGroups: [""]
  resources: ["events"]
  verbs: ["create", "patch"]
{{- end }}
