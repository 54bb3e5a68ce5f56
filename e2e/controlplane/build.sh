#!/usr/bin/env bash
# Build etcd + kube-apiserver from Go modules (module proxy only, no release downloads)
# into ${DELTA_OPERATOR_CACHE:-$HOME/.cache/delta-operator}/bin/<name>-<version>.
# Idempotent: returns at once when both binaries exist.
# Stdout: `export ETCD_BIN=... KUBE_APISERVER_BIN=...` lines (start.sh evals them);
# progress goes to stderr.  Needs only `go` (>= 1.21; older than 1.26 switches
# toolchain through the module proxy).
set -euo pipefail

# Pins. Kubernetes 1.37 = k8s-openapi 0.29 `latest`; 1.37 targets etcd 3.7
# (build/dependencies.yaml says 3.7.0; 3.7.3 is the newest 3.7 patch).
K8S_VERSION=1.37.2
ETCD_VERSION=3.7.3

CACHE=${DELTA_OPERATOR_CACHE:-$HOME/.cache/delta-operator}
BIN=$CACHE/bin
ETCD_BIN=$BIN/etcd-v$ETCD_VERSION
KUBE_APISERVER_BIN=$BIN/kube-apiserver-v$K8S_VERSION

emit() { printf 'export ETCD_BIN=%q\nexport KUBE_APISERVER_BIN=%q\n' "$ETCD_BIN" "$KUBE_APISERVER_BIN"; }
if [[ -x $ETCD_BIN && -x $KUBE_APISERVER_BIN ]]; then emit; exit 0; fi   # fast path

start=$(date +%s)

# shellcheck source=../go-env.sh
. "$(dirname "${BASH_SOURCE[0]}")/../go-env.sh"
go_env build.sh

if [[ ! -x $ETCD_BIN ]]; then
  # `go install go.etcd.io/etcd/server/v3@v…` is refused: server/go.mod replaces ../api etc.
  echo "build.sh: building etcd v$ETCD_VERSION" >&2
  ( wrapper etcd
    go get "go.etcd.io/etcd/server/v3@v$ETCD_VERSION" >&2
    go build -ldflags="-s -w" -o "$ETCD_BIN.tmp" go.etcd.io/etcd/server/v3 >&2
    mv "$ETCD_BIN.tmp" "$ETCD_BIN" )
fi

if [[ ! -x $KUBE_APISERVER_BIN ]]; then
  # `go install k8s.io/kubernetes/cmd/kube-apiserver@v…` is refused: k/k's go.mod
  # requires every staging module at v0.0.0 with `=> ./staging/...` replaces (and the
  # module zip has no staging sources). Replace each with its published v0.<minor>.<patch>.
  echo "build.sh: building kube-apiserver v$K8S_VERSION" >&2
  ( wrapper kube-apiserver
    STG=v0.${K8S_VERSION#1.}
    GOMOD=$(go mod download -json "k8s.io/kubernetes@v$K8S_VERSION" | sed -n 's/^[[:space:]]*"GoMod": "\(.*\)",*$/\1/p')
    [[ -f $GOMOD ]] || { echo "build.sh: cannot download k8s.io/kubernetes@v$K8S_VERSION" >&2; exit 1; }
    for m in $(sed -n 's#^[[:space:]]*\(k8s.io/[a-z0-9-]*\) => ./staging/.*#\1#p' "$GOMOD"); do
      go mod edit "-replace=$m=$m@$STG"
    done
    go get "k8s.io/kubernetes/cmd/kube-apiserver@v$K8S_VERSION" >&2
    MINOR=$(echo "$K8S_VERSION" | cut -d. -f2)
    V=k8s.io/component-base/version
    go build -o "$KUBE_APISERVER_BIN.tmp" \
      -ldflags="-s -w -X $V.gitVersion=v$K8S_VERSION -X $V.gitMajor=1 -X $V.gitMinor=$MINOR -X $V.gitTreeState=clean" \
      k8s.io/kubernetes/cmd/kube-apiserver >&2
    mv "$KUBE_APISERVER_BIN.tmp" "$KUBE_APISERVER_BIN" )
fi

echo "build.sh: done in $(( $(date +%s) - start ))s; cache $CACHE" >&2
emit
