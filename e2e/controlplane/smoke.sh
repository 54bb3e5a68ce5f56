#!/usr/bin/env bash
# End-to-end check of build.sh/start.sh/stop.sh: CRDs (repo crds/*.yaml + a smoke CRD
# with a CEL rule), a namespaced CR round trip, both token users, RBAC denial. Needs kubectl.
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
CRDS=$HERE/../../crds
command -v kubectl >/dev/null || { echo "smoke.sh: kubectl is required" >&2; exit 1; }

"$HERE/build.sh" >/dev/null
t0=$(date +%s%N)
DIR=$("$HERE/start.sh")
echo "smoke: start.sh to ready in $(( ($(date +%s%N) - t0) / 1000000 ))ms"
trap '"$HERE/stop.sh" "$DIR"' EXIT
export KUBECONFIG=$DIR/kubeconfig
step() { echo "+ $*"; "$@"; }

if compgen -G "$CRDS/*.y*ml" >/dev/null; then step kubectl apply -f "$CRDS/"; fi
step kubectl apply -f "$HERE/testdata/smoke-crd.yaml"
step kubectl wait --for=condition=Established crds --all --timeout=30s
step kubectl get crds
printf 'apiVersion: e2e.delta-operator.io/v1alpha1\nkind: SmokeTable\nmetadata: {name: t1, namespace: default}\nspec: {name: main.sales.orders}\n' \
  | step kubectl apply -f -
[[ $(kubectl get smoketable t1 -o jsonpath='{.spec.name}') == main.sales.orders ]]
# CEL transition rule is enforced server-side.
if kubectl patch smoketable t1 --type=merge -p '{"spec":{"name":"x"}}' 2>/dev/null; then
  echo "smoke: CEL immutability rule not enforced" >&2; exit 1; fi
step kubectl auth whoami
step kubectl --kubeconfig "$DIR/kubeconfig-operator" auth whoami
[[ $(kubectl --kubeconfig "$DIR/kubeconfig-operator" auth can-i list smoketables) == no ]] || true
if kubectl --kubeconfig "$DIR/kubeconfig-operator" get smoketables 2>/dev/null; then
  echo "smoke: operator user should be forbidden without RBAC" >&2; exit 1; fi
echo "smoke: ok"
