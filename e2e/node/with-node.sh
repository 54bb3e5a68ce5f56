#!/usr/bin/env bash
# Runs a command with a real single-node cluster up (e2e/node/start.sh): builds (or reuses)
# the Kubernetes parts and the images (e2e/image/build.sh), starts the node with the
# operator and pause images imported, applies crds/, exports KUBECONFIG, IMAGE,
# DELTA_OPERATOR_NODE_DIR, and stops it afterwards. On failure the logs of every part are
# kept under $DELTA_OPERATOR_CACHE/node-logs/<time>/ (the path is printed).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
CACHE=${DELTA_OPERATOR_CACHE:-$HOME/.cache/delta-operator}
"$here/build.sh" >/dev/null
images=$("$here/../image/build.sh")
eval "$images"
export IMAGE PAUSE_IMAGE NODE_IMAGES="$IMAGE_TAR $PAUSE_TAR"
dir="$("$here/start.sh")"
status=1
finish() {
  local keep=
  [[ $status == 0 ]] || keep=$CACHE/node-logs/$(date +%Y%m%dT%H%M%S)
  KEEP_LOGS=$keep "$here/stop.sh" "$dir" >/dev/null 2>&1 || true
  [[ -z $keep ]] || echo "with-node.sh: the node's logs are kept in $keep" >&2
}
trap finish EXIT
# shellcheck disable=SC1091
. "$dir/env"
export KUBECONFIG DELTA_OPERATOR_NODE_DIR="$dir"
kubectl apply -f "$here/../../crds/" >/dev/null
for _ in $(seq 60); do
  kubectl wait --for=condition=Established crd/deltatables.delta-operator.io crd/deltaschemas.delta-operator.io --timeout=60s >/dev/null 2>&1 && break
  sleep 1
done
set +e
"$@"
status=$?
exit $status
