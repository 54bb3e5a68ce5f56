#!/usr/bin/env bash
# Writes argocd-cm-health.yaml from health/*.lua (the Lua files are the source).
# --check: writes nothing, fails if argocd-cm-health.yaml differs from what it would write.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
out=$here/argocd-cm-health.yaml

render() {
  cat <<'HEAD'
# Argo CD health checks for delta-operator's kinds. GENERATED from health/*.lua by
# generate.sh: edit the Lua files, then run it (`generate.sh --check` fails when this
# file is stale). Merge the keys into a running Argo CD (other keys are kept):
#   kubectl -n argocd patch configmap argocd-cm --patch-file argocd-cm-health.yaml
# With the argo-cd Helm chart, put the keys under `configs.cm` instead.
apiVersion: v1
kind: ConfigMap
metadata:
  name: argocd-cm
  namespace: argocd
  labels:
    app.kubernetes.io/name: argocd-cm
    app.kubernetes.io/part-of: argocd
data:
HEAD
  for kind in DeltaSchema DeltaTable DeltaView DeltaFunction DeltaVolume; do
    lower=$(echo "$kind" | tr '[:upper:]' '[:lower:]')
    file=$here/health/$lower.lua
    if grep -qP '[ \t]$' "$file"; then echo "generate.sh: $file has trailing whitespace (a YAML block scalar would not keep it)" >&2; exit 1; fi
    echo "  resource.customizations.health.delta-operator.io_$kind: |"
    sed 's/^\(.\)/    \1/' "$file"
  done
}

case "${1:-}" in
  --check)
    if ! diff -u "$out" <(render) >&2; then
      echo "generate.sh: $out is stale: run gitops/argocd/generate.sh" >&2
      exit 1
    fi ;;
  "") render > "$out.tmp.$$" && mv -f "$out.tmp.$$" "$out" ;;
  *) echo "usage: generate.sh [--check]" >&2; exit 2 ;;
esac
