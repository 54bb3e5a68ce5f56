#!/usr/bin/env bash
# Build the node's Kubernetes parts from Go modules (module proxy only, no release downloads):
# kubelet, kube-controller-manager, kube-scheduler and kube-proxy, in ONE `go build` so they
# share their compile, into ${DELTA_OPERATOR_CACHE:-$HOME/.cache/delta-operator}/bin/<name>-v<version>.
# Same version and the same staging-replace recipe as e2e/controlplane/build.sh (kube-apiserver).
# Idempotent: returns at once when all four exist.
# Stdout: `export KUBELET_BIN=... KCM_BIN=... SCHEDULER_BIN=... KUBE_PROXY_BIN=...`; progress on stderr.
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
K8S_VERSION=$(sed -n 's/^K8S_VERSION=//p' "$HERE/../controlplane/build.sh")

CACHE=${DELTA_OPERATOR_CACHE:-$HOME/.cache/delta-operator}
BIN=$CACHE/bin
CMDS=(kubelet kube-controller-manager kube-scheduler kube-proxy)
path() { echo "$BIN/$1-v$K8S_VERSION"; }
emit() {
  printf 'export KUBELET_BIN=%q\nexport KCM_BIN=%q\nexport SCHEDULER_BIN=%q\nexport KUBE_PROXY_BIN=%q\n' \
    "$(path kubelet)" "$(path kube-controller-manager)" "$(path kube-scheduler)" "$(path kube-proxy)"
}
missing=0
for c in "${CMDS[@]}"; do [[ -x $(path "$c") ]] || missing=1; done
if [[ $missing == 0 ]]; then emit; exit 0; fi   # fast path

start=$(date +%s)
# shellcheck source=../go-env.sh
. "$HERE/../go-env.sh"
go_env node/build.sh

echo "node/build.sh: building ${CMDS[*]} v$K8S_VERSION" >&2
( wrapper node
  STG=v0.${K8S_VERSION#1.}
  GOMOD=$(go mod download -json "k8s.io/kubernetes@v$K8S_VERSION" | sed -n 's/^[[:space:]]*"GoMod": "\(.*\)",*$/\1/p')
  [[ -f $GOMOD ]] || { echo "node/build.sh: cannot download k8s.io/kubernetes@v$K8S_VERSION" >&2; exit 1; }
  for m in $(sed -n 's#^[[:space:]]*\(k8s.io/[a-z0-9-]*\) => ./staging/.*#\1#p' "$GOMOD"); do
    go mod edit "-replace=$m=$m@$STG"
  done
  pkgs=()
  for c in "${CMDS[@]}"; do pkgs+=("k8s.io/kubernetes/cmd/$c"); done
  go get "${pkgs[@]/%/@v$K8S_VERSION}" >&2
  MINOR=$(echo "$K8S_VERSION" | cut -d. -f2)
  V=k8s.io/component-base/version
  mkdir -p out
  go build -o out/ \
    -ldflags="-s -w -X $V.gitVersion=v$K8S_VERSION -X $V.gitMajor=1 -X $V.gitMinor=$MINOR -X $V.gitTreeState=clean" \
    "${pkgs[@]}" >&2
  for c in "${CMDS[@]}"; do mv "out/$c" "$(path "$c")"; done )

echo "node/build.sh: done in $(( $(date +%s) - start ))s; cache $CACHE" >&2
emit
