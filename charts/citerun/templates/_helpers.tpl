{{/*
The chart name, or nameOverride.
*/}}
{{- define "citerun.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/*
The full name prefix of every resource: RELEASE-citerun, or RELEASE when it already
contains the chart name, or fullnameOverride. Truncated to leave room for the longest
suffix ("-postgresql") within the 63 characters of a DNS label.
*/}}
{{- define "citerun.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 52 | trimSuffix "-" }}
{{- else }}
{{- $name := default .Chart.Name .Values.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 52 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 52 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{/*
Chart name and version, for the helm.sh/chart label.
*/}}
{{- define "citerun.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/*
Labels of every resource. The chart version is here, never in selectorLabels: a
Deployment's selector is immutable, so it must survive upgrades.
*/}}
{{- define "citerun.labels" -}}
helm.sh/chart: {{ include "citerun.chart" . }}
{{ include "citerun.selectorLabels" . }}
{{- if .Chart.AppVersion }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
{{- end }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: citerun
{{- end }}

{{/*
Selector labels; each workload adds app.kubernetes.io/component.
*/}}
{{- define "citerun.selectorLabels" -}}
app.kubernetes.io/name: {{ include "citerun.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{/* Component names (the operator gets the worker Deployment's from citerun.worker.fullname). */}}
{{- define "citerun.operator.fullname" -}}
{{- printf "%s-operator" (include "citerun.fullname" .) }}
{{- end }}

{{- define "citerun.worker.fullname" -}}
{{- printf "%s-worker" (include "citerun.fullname" .) }}
{{- end }}

{{- define "citerun.postgresql.fullname" -}}
{{- printf "%s-postgresql" (include "citerun.fullname" .) }}
{{- end }}

{{- define "citerun.web.fullname" -}}
{{- printf "%s-web" (include "citerun.fullname" .) }}
{{- end }}

{{/*
The namespace the web service creates CitationRuns in: web.namespace, else the release
namespace (unused with web.namespaceTemplate, whose RBAC is a ClusterRole).
*/}}
{{- define "citerun.web.namespace" -}}
{{- default .Release.Namespace .Values.web.namespace }}
{{- end }}

{{/*
Cluster-scoped names carry the namespace, so one release name can be installed in two
namespaces without the second install failing on ownership of the first's ClusterRole.
*/}}
{{- define "citerun.clusterRoleName" -}}
{{- printf "%s-%s-operator" .Release.Namespace (include "citerun.fullname" .) }}
{{- end }}

{{/*
The operator's ServiceAccount.
*/}}
{{- define "citerun.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "citerun.operator.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- default "default" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{/*
The image reference; the tag defaults to the chart's appVersion.
*/}}
{{- define "citerun.image" -}}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) }}
{{- end }}

{{/*
Name of the Secret the chart owns for the database URL (database.url or the bundled
Postgres); rendered only when neither database.existingSecret is used.
*/}}
{{- define "citerun.databaseSecretName" -}}
{{- printf "%s-database" (include "citerun.fullname" .) }}
{{- end }}

{{/*
Whether the chart renders its own database Secret.
*/}}
{{- define "citerun.ownsDatabaseSecret" -}}
{{- if or .Values.postgresql.enabled (not .Values.database.existingSecret) }}true{{ end }}
{{- end }}

{{/*
The env var with the database URL, from whichever source is configured. Fails with a
readable message when none is (helm lint only logs it).
*/}}
{{- define "citerun.databaseEnv" -}}
- name: CITERUN_DATABASE_URL
  valueFrom:
    secretKeyRef:
{{- if include "citerun.ownsDatabaseSecret" . }}
      name: {{ include "citerun.databaseSecretName" . }}
      key: url
{{- else }}
      name: {{ .Values.database.existingSecret }}
      key: {{ .Values.database.existingSecretKey }}
{{- end }}
{{- end }}

{{/*
checksum/config: the hash of the rendered chart-owned Secrets plus the name of an
existing one, so a change of database URL (or of the Secret used) rolls the pods.
*/}}
{{- define "citerun.configChecksum" -}}
{{- $config := dict "secrets" (include (print .Template.BasePath "/secret.yaml") .) "existingSecret" .Values.database.existingSecret "existingSecretKey" .Values.database.existingSecretKey }}
{{- toJson $config | sha256sum }}
{{- end }}

{{/*
The bundled Postgres password: the one already in the cluster (lookup), so upgrades keep
it, else a new random one. Memoized in .Values for the rest of this render, so the
Secrets and the checksum annotations all see the same password.
*/}}
{{- define "citerun.postgresql.password" -}}
{{- if not (hasKey .Values.postgresql "_generatedPassword") }}
{{- $password := randAlphaNum 32 }}
{{- $existing := lookup "v1" "Secret" .Release.Namespace (include "citerun.postgresql.fullname" .) }}
{{- if and $existing $existing.data }}
{{- if hasKey $existing.data "password" }}
{{- $password = index $existing.data "password" | b64dec }}
{{- end }}
{{- end }}
{{- $_ := set .Values.postgresql "_generatedPassword" $password }}
{{- end }}
{{- index .Values.postgresql "_generatedPassword" }}
{{- end }}

{{/*
The database URL the chart puts in its own Secret.
*/}}
{{- define "citerun.databaseUrl" -}}
{{- if .Values.postgresql.enabled }}
{{- printf "postgresql://%s:%s@%s.%s.svc:5432/%s" .Values.postgresql.username (include "citerun.postgresql.password" .) (include "citerun.postgresql.fullname" .) .Release.Namespace .Values.postgresql.database }}
{{- else }}
{{- required "set database.url, database.existingSecret or postgresql.enabled=true: citerun keeps all its state in Postgres" .Values.database.url }}
{{- end }}
{{- end }}

{{/*
Pipeline settings of the workers (tests/unit/test_single_sources.py checks each name
against src/citerun/pipeline/settings.py):
EmbeddingConfig is flat (CITERUN_EMBEDDING__BASE_URL, ...); JudgeConfig nests openai
(CITERUN_JUDGE__OPENAI__BASE_URL, ...) and reads its key from the env var named by
api_key_env, CITERUN_JUDGE_API_KEY. This is the default judge of runs that choose none;
a run that chooses the openai judge gets a judge profile (judgeProfiles) instead.
*/}}
{{- define "citerun.pipelineEnv" -}}
- name: CITERUN_EMBEDDING__PROVIDER
  value: {{ .Values.pipeline.embedding.provider | quote }}
{{- with .Values.pipeline.embedding.openai }}
{{- if .baseUrl }}
- name: CITERUN_EMBEDDING__BASE_URL
  value: {{ .baseUrl | quote }}
{{- end }}
{{- if .model }}
- name: CITERUN_EMBEDDING__MODEL
  value: {{ .model | quote }}
{{- end }}
{{- if .apiKeySecret.name }}
- name: CITERUN_EMBEDDING__API_KEY
  valueFrom:
    secretKeyRef:
      name: {{ .apiKeySecret.name }}
      key: {{ .apiKeySecret.key }}
{{- end }}
{{- end }}
- name: CITERUN_JUDGE__KIND
  value: {{ .Values.pipeline.judge.kind | quote }}
{{- with .Values.pipeline.judge.openai }}
{{- if .baseUrl }}
- name: CITERUN_JUDGE__OPENAI__BASE_URL
  value: {{ .baseUrl | quote }}
{{- end }}
{{- if .model }}
- name: CITERUN_JUDGE__OPENAI__MODEL
  value: {{ .model | quote }}
{{- end }}
{{- if .apiKeySecret.name }}
- name: CITERUN_JUDGE_API_KEY
  valueFrom:
    secretKeyRef:
      name: {{ .apiKeySecret.name }}
      key: {{ .apiKeySecret.key }}
- name: CITERUN_JUDGE__OPENAI__API_KEY_ENV
  value: CITERUN_JUDGE_API_KEY
{{- end }}
{{- end }}
{{- end }}

{{/*
Judge profiles as the operator and the workers read them (CITERUN_JUDGE_PROFILES, a JSON
object; see src/citerun/runspec.py JudgeProfile). Each profile's key is the worker env var
CITERUN_JUDGE_PROFILE_KEY_<NAME> (upper case, - as _), filled from its Secret.
*/}}
{{- define "citerun.judgeProfileKeyEnv" -}}
{{- printf "CITERUN_JUDGE_PROFILE_KEY_%s" (. | upper | replace "-" "_") }}
{{- end }}

{{- define "citerun.judgeProfilesJson" -}}
{{- $out := dict }}
{{- range $name, $p := .Values.judgeProfiles }}
{{- $entry := dict "baseUrl" $p.baseUrl "model" $p.model }}
{{- if and $p.apiKeySecret $p.apiKeySecret.name }}
{{- $_ := set $entry "apiKeyEnv" (include "citerun.judgeProfileKeyEnv" $name) }}
{{- end }}
{{- if $p.maxTokensPerRun }}
{{- $_ := set $entry "maxTokensPerRun" $p.maxTokensPerRun }}
{{- end }}
{{- if $p.namespaces }}
{{- $_ := set $entry "namespaces" $p.namespaces }}
{{- end }}
{{- if $p.maxTokensPerNamespace }}
{{- $_ := set $entry "maxTokensPerNamespace" $p.maxTokensPerNamespace }}
{{- end }}
{{- if $p.budgetPeriod }}
{{- $_ := set $entry "budgetPeriod" $p.budgetPeriod }}
{{- end }}
{{- $_ := set $out $name $entry }}
{{- end }}
{{- toJson $out }}
{{- end }}

{{- define "citerun.judgeProfilesEnv" -}}
- name: CITERUN_JUDGE_PROFILES
  value: {{ include "citerun.judgeProfilesJson" . | quote }}
{{- end }}

{{- define "citerun.judgeProfileKeysEnv" -}}
{{- range $name, $p := .Values.judgeProfiles }}
{{- if and $p.apiKeySecret $p.apiKeySecret.name }}
- name: {{ include "citerun.judgeProfileKeyEnv" $name }}
  valueFrom:
    secretKeyRef:
      name: {{ $p.apiKeySecret.name }}
      key: {{ $p.apiKeySecret.key }}
{{- end }}
{{- end }}
{{- end }}

{{/* The ValidatingAdmissionPolicyBinding the operator requires before it reads a
Secret or ConfigMap for a run (CITERUN_OPERATOR__ACCESS_POLICY_BINDING). */}}
{{- define "citerun.accessPolicyName" -}}
{{- printf "%s-%s-run-access" .Release.Namespace (include "citerun.fullname" .) }}
{{- end }}
