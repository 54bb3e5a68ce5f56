#!/usr/bin/env bash
# For developer machines with Docker: the e2e suite against a kind cluster with the image loaded
# and the chart installed, the image built by `docker build` on the Dockerfile's default (public)
# bases. Not part of `make test`, which builds the same Dockerfile with podman on bases made
# locally (e2e/image/) and runs the suite against the local control plane (e2e/with-controlplane.sh).
#
#   e2e/kind.sh            create (or reuse) the kind cluster `delta-operator`, then test
#   KIND_CLUSTER=x e2e/kind.sh
#
# Steps: build the image, load it into kind, `helm install` the chart watching only the
# namespace delta-smoke (so it does not compete with the operators the suite starts), check
# that the examples become Ready there under the chart's identity, then run every e2e test
# against the same cluster (the suite starts its own operators on the host with the kind
# kubeconfig; it takes any kubeconfig through DELTA_OPERATOR_E2E_DIR).
set -euo pipefail
cd "$(dirname "$0")/.."
CLUSTER=${KIND_CLUSTER:-delta-operator}
IMAGE_REPO=delta-operator
IMAGE_TAG=e2e
for t in docker kind helm kubectl cargo; do
  command -v "$t" >/dev/null || { echo "kind.sh needs $t on PATH" >&2; exit 1; }
done
kind get clusters 2>/dev/null | grep -qx "$CLUSTER" || kind create cluster --name "$CLUSTER"
DIR=$(mktemp -d -t delta-kind.XXXXXX)
kind get kubeconfig --name "$CLUSTER" >"$DIR/kubeconfig"
export KUBECONFIG=$DIR/kubeconfig

docker build -t "$IMAGE_REPO:$IMAGE_TAG" .
kind load docker-image "$IMAGE_REPO:$IMAGE_TAG" --name "$CLUSTER"
kubectl create namespace delta-smoke --dry-run=client -o yaml | kubectl apply -f -
helm upgrade --install delta-operator charts/delta-operator -n delta-operator-system --create-namespace \
  --set image.repository="$IMAGE_REPO" --set image.tag="$IMAGE_TAG" --set image.pullPolicy=Never \
  --set watchNamespace=delta-smoke --wait --timeout 5m
kubectl apply -n delta-smoke -f examples/
kubectl wait -n delta-smoke --for=condition=Ready deltatable --all --timeout=180s
kubectl get deltatables -n delta-smoke

export DELTA_OPERATOR_E2E_DIR=$DIR
tests=$(ls tests/e2e_*.rs | xargs -n1 basename | sed 's/\.rs$//' | sed 's/^/--test /')
# shellcheck disable=SC2086
cargo test --locked $tests
echo "kind.sh: the suite passed against kind cluster $CLUSTER (kubeconfig $DIR/kubeconfig)"
