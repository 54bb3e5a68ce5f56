#!/usr/bin/env bash
# Runs a command with a real control plane up: builds (or reuses) etcd and
# kube-apiserver, starts them on 127.0.0.1, installs the CRDs from crds/ and the
# chart's ServiceAccount + RBAC (e2e/chart-identity.sh), exports KUBECONFIG and
# DELTA_OPERATOR_E2E_DIR, and stops them afterwards.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
"$here/controlplane/build.sh" >/dev/null
dir="$("$here/controlplane/start.sh")"
trap '"$here/controlplane/stop.sh" "$dir" >/dev/null 2>&1 || true' EXIT
# shellcheck disable=SC1091
. "$dir/env"
export KUBECONFIG DELTA_OPERATOR_E2E_DIR="$dir"
kubectl apply -f "$here/../crds/" >/dev/null
# kubectl wait errors out (".status.conditions accessor error") on a CRD the API server has
# not given a status yet, instead of waiting: try again until the deadline
for _ in $(seq 60); do
  kubectl wait --for=condition=Established crd/deltatables.delta-operator.io crd/deltaschemas.delta-operator.io crd/deltaviews.delta-operator.io crd/deltafunctions.delta-operator.io crd/deltavolumes.delta-operator.io --timeout=60s >/dev/null 2>&1 && break
  sleep 1
done
kubectl wait --for=condition=Established crd/deltatables.delta-operator.io crd/deltaschemas.delta-operator.io crd/deltaviews.delta-operator.io crd/deltafunctions.delta-operator.io crd/deltavolumes.delta-operator.io --timeout=5s >/dev/null
# the operators the tests start run as the chart's ServiceAccount, under its RBAC
"$here/chart-identity.sh" "$dir"
"$@"
