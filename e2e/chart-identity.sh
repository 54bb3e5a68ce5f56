#!/usr/bin/env bash
# The identity the e2e operators run as: the Helm chart's own ServiceAccount and RBAC
# (templates/serviceaccount.yaml + rbac.yaml rendered by helm), never admin.
# Usage: chart-identity.sh DIR   (DIR: the control plane's dir; KUBECONFIG is admin)
# Writes DIR/kubeconfig-chart (a ServiceAccount token) and DIR/chart-namespace.
# The chart gives Lease rights in the release namespace only; the tests keep each
# operator's Leases in its test namespace, so tests/support/e2e.rs copies the chart's
# Lease Role and RoleBinding there (the same rules, nothing more).
set -euo pipefail
dir=$1
here="$(cd "$(dirname "$0")" && pwd)"
eval "$("$here/ship/tools.sh")"
RNS=delta-operator-e2e
kubectl create namespace $RNS >/dev/null
"$HELM_BIN" template delta-operator "$here/../charts/delta-operator" --namespace $RNS \
  -s templates/serviceaccount.yaml -s templates/rbac.yaml | kubectl apply -f - >/dev/null
token=$(kubectl create token delta-operator -n $RNS --duration=24h)
server=$(kubectl config view --raw --minify -o jsonpath='{.clusters[0].cluster.server}')
ca=$(kubectl config view --raw --minify -o jsonpath='{.clusters[0].cluster.certificate-authority-data}')
cat >"$dir/kubeconfig-chart" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: delta-e2e
  cluster: {server: "$server", certificate-authority-data: "$ca"}
users:
- name: chart-sa
  user: {token: "$token"}
contexts:
- name: chart-sa
  context: {cluster: delta-e2e, user: chart-sa, namespace: default}
current-context: chart-sa
EOF
chmod 600 "$dir/kubeconfig-chart"
echo $RNS >"$dir/chart-namespace"
who=$(KUBECONFIG=$dir/kubeconfig-chart kubectl auth whoami -o jsonpath='{.status.userInfo.username}')
[[ $who == "system:serviceaccount:$RNS:delta-operator" ]] || { echo "chart-identity.sh: the token authenticates as '$who'" >&2; exit 1; }
