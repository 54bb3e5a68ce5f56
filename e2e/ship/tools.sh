#!/usr/bin/env bash
# Build helm and kubeconform from Go modules (module proxy only, no release downloads)
# into ${DELTA_OPERATOR_CACHE:-$HOME/.cache/delta-operator}/bin/<name>-<version>,
# the same way as e2e/controlplane/build.sh (same Go caches, wrapper modules).
# Idempotent: returns at once when both binaries exist (no `go` call).
# Stdout: `export HELM_BIN=... KUBECONFORM_BIN=...` lines (check.sh evals them);
# progress goes to stderr.  Needs only `go`.
set -euo pipefail

HELM_VERSION=3.22.0          # helm.sh/helm/v3
KUBECONFORM_VERSION=0.8.0    # github.com/yannh/kubeconform

CACHE=${DELTA_OPERATOR_CACHE:-$HOME/.cache/delta-operator}
BIN=$CACHE/bin
HELM_BIN=$BIN/helm-v$HELM_VERSION
KUBECONFORM_BIN=$BIN/kubeconform-v$KUBECONFORM_VERSION

emit() { printf 'export HELM_BIN=%q\nexport KUBECONFORM_BIN=%q\n' "$HELM_BIN" "$KUBECONFORM_BIN"; }
if [[ -x $HELM_BIN && -x $KUBECONFORM_BIN ]]; then emit; exit 0; fi   # fast path

start=$(date +%s)

# shellcheck source=../go-env.sh
. "$(dirname "${BASH_SOURCE[0]}")/../go-env.sh"
go_env ship/tools.sh

if [[ ! -x $KUBECONFORM_BIN ]]; then
  echo "ship/tools.sh: building kubeconform v$KUBECONFORM_VERSION" >&2
  ( wrapper kubeconform
    go get "github.com/yannh/kubeconform/cmd/kubeconform@v$KUBECONFORM_VERSION" >&2
    go build -ldflags="-s -w" -o "$KUBECONFORM_BIN.tmp" github.com/yannh/kubeconform/cmd/kubeconform >&2
    mv "$KUBECONFORM_BIN.tmp" "$KUBECONFORM_BIN" )
fi

if [[ ! -x $HELM_BIN ]]; then
  echo "ship/tools.sh: building helm v$HELM_VERSION" >&2
  ( wrapper helm
    go get "helm.sh/helm/v3/cmd/helm@v$HELM_VERSION" >&2
    # As helm's Makefile: the Kubernetes version `helm template` and `helm lint` assume
    # (.Capabilities.KubeVersion, deprecations) is that of the k8s.io modules it is built with.
    K8S_MINOR=$(go list -m -f '{{.Version}}' k8s.io/client-go | cut -d. -f2)
    V=helm.sh/helm/v3/internal/version
    go build -o "$HELM_BIN.tmp" \
      -ldflags="-s -w -X $V.version=v$HELM_VERSION -X $V.gitTreeState=clean \
        -X helm.sh/helm/v3/pkg/lint/rules.k8sVersionMajor=1 -X helm.sh/helm/v3/pkg/lint/rules.k8sVersionMinor=$K8S_MINOR \
        -X helm.sh/helm/v3/pkg/chartutil.k8sVersionMajor=1 -X helm.sh/helm/v3/pkg/chartutil.k8sVersionMinor=$K8S_MINOR" \
      helm.sh/helm/v3/cmd/helm >&2
    mv "$HELM_BIN.tmp" "$HELM_BIN" )
fi

echo "ship/tools.sh: done in $(( $(date +%s) - start ))s; cache $CACHE" >&2
emit
