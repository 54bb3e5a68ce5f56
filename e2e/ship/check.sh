#!/usr/bin/env bash
# The shipping checks of `make test`: the Helm chart, the kustomize config, the Dockerfile.
# Run against the e2e control plane:  e2e/with-controlplane.sh e2e/ship/check.sh
# (needs its KUBECONFIG, with the CRDs applied). The checks run in order and none is ever
# skipped; the first failure ends the script non-zero with its reason.
#   1. generated copies: charts/delta-operator/crds and config/ equal a fresh
#      e2e/ship/gen-config.sh run
#   2. helm lint --strict, with the defaults and other value sets
#   3. kubeconform -strict of every rendering and of the kustomize builds, with JSON
#      schemas made from this apiserver's /openapi/v2 and from crds/ (no network),
#      and e2e/ship/schemas/ for the ServiceMonitor and the PrometheusRule; the alerting
#      rules and the Grafana dashboard loaded by Prometheus' parsers (e2e/promrules)
#   4. policy.py: RBAC exactly the operator's API calls; pod security, probes, flags
#   5. the Dockerfile, as read: its default bases are the public rust and distroless images,
#      it builds with e2e/ship/build-binary.sh (release unless PROFILE says otherwise) and
#      ships only the binary as a numeric non-root user (e2e/image/ builds it for real with
#      podman, in `make prepare`, and checks the image); that script builds the binary here
#      (dev profile) and the binary loads the chart's rendered configs
#   6. kubectl apply --dry-run=server of every rendering and kustomize build
#   7. the operator runs as the chart's ServiceAccount, under the chart's RBAC only,
#      and takes two tables to Ready, adds and removes its finalizer, drops a table
#      after approval, writes events and Leases; no request is forbidden; every metric
#      the alerting rules and the dashboard use is in a scrape of its /metrics
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
cd "$repo"
CACHE=${DELTA_OPERATOR_CACHE:-$HOME/.cache/delta-operator}
PYTHON=${DELTA_OPERATOR_PYTHON:-$CACHE/venv/bin/python}
start=$(date +%s)

steps=0
fail() { echo "ship/check.sh: FAILED: $*" >&2; echo "ship: $(( steps > 0 ? steps - 1 : 0 )) passed, 1 failed"; exit 1; }
step() { steps=$(( steps + 1 )); echo "--- ship: $* ($(( $(date +%s) - start ))s)" >&2; }

[[ -n ${KUBECONFIG:-} ]] || fail "KUBECONFIG is not set: run through e2e/with-controlplane.sh e2e/ship/check.sh"
kubectl get crd deltatables.delta-operator.io deltaschemas.delta-operator.io >/dev/null \
  || fail "the e2e apiserver has no delta-operator CRDs (e2e/with-controlplane.sh applies crds/)"
"$PYTHON" -c 'import yaml' 2>/dev/null \
  || fail "$PYTHON has no PyYAML (make python installs it; or set DELTA_OPERATOR_PYTHON)"
tools=$("$here/tools.sh")
eval "$tools"
export HELM_BIN KUBECONFORM_BIN

work=$(mktemp -d -t delta-ship.XXXXXX)
op_pid=
cleanup() {
  [[ -z $op_pid ]] || kill "$op_pid" 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT
CHART=charts/delta-operator
NS=delta-operator-system

# ---------------------------------------------------------------- 1. generated copies
step "generated copies are current"
"$here/gen-config.sh" "$work/gen" 2>"$work/gen.log" || { cat "$work/gen.log" >&2; fail "e2e/ship/gen-config.sh failed"; }
cmp -s crds/delta-operator.yaml "$CHART/crds/delta-operator.yaml" \
  || fail "$CHART/crds/delta-operator.yaml differs from crds/delta-operator.yaml: run e2e/ship/gen-config.sh"
if ! diff -r "$work/gen/config" config >"$work/config.diff" 2>&1; then
  head -n 40 "$work/config.diff" >&2
  fail "config/ is stale (diff above): run e2e/ship/gen-config.sh"
fi

# ---------------------------------------------------------------- 2. helm lint
# value sets: name | release namespace | replicas | watch namespace | helm flags
SETS=(
  "default|$NS|1||"
  "ha|ops|2||--set replicaCount=2 --set shards=4 --set serviceMonitor.enabled=true --set webhook.certManager.enabled=true --set prometheusRule.enabled=true --set grafanaDashboard.enabled=true --set prometheusRule.alertLabels.team=data"
  "scoped|ops|1|team-a|--set watchNamespace=team-a --set databricks.existingSecret=databricks --set lakeVolume.existingClaim=lake --set logLevel=debug"
)
for s in "${SETS[@]}"; do
  IFS='|' read -r name ns replicas watch flags <<<"$s"
  step "helm lint --strict ($name)"
  # shellcheck disable=SC2086
  "$HELM_BIN" lint --strict "$CHART" --namespace "$ns" $flags >"$work/lint-$name.log" 2>&1 \
    || { cat "$work/lint-$name.log" >&2; fail "helm lint --strict ($name)"; }
  # shellcheck disable=SC2086
  "$HELM_BIN" template delta-operator "$CHART" --namespace "$ns" $flags >"$work/$name.yaml" \
    || fail "helm template ($name)"
done

# ---------------------------------------------------------------- 3. kubeconform
step "JSON schemas from the apiserver's /openapi/v2 and crds/"
kubectl get --raw /openapi/v2 >"$work/openapi-v2.json" || fail "kubectl get --raw /openapi/v2"
"$PYTHON" "$here/jsonschemas.py" "$work/schemas" --openapi "$work/openapi-v2.json" --crds crds/delta-operator.yaml \
  || fail "jsonschemas.py"
for f in deployment-apps-v1 service-v1 configmap-v1 serviceaccount-v1 clusterrole-rbac-v1 role-rbac-v1 \
         customresourcedefinition-apiextensions-v1 deltatable-delta-operator-v1alpha1 deltaschema-delta-operator-v1alpha1; do
  [[ -s $work/schemas/$f.json ]] || fail "no schema $f.json was generated"
done
# ServiceMonitor has no schema in this apiserver: it is split off and checked against
# e2e/ship/schemas/servicemonitor-monitoring-v1.json (written from prometheus-operator's API docs)
kubectl kustomize config/default >"$work/kustomize-default.yaml" || fail "kubectl kustomize config/default"
kubectl kustomize config/samples >"$work/kustomize-samples.yaml" || fail "kubectl kustomize config/samples"
kubeconform() {
  "$KUBECONFORM_BIN" -strict -summary -exit-on-error=false \
    -schema-location "$work/schemas/{{ .ResourceKind }}{{ .KindSuffix }}.json" \
    -schema-location "$here/schemas/{{ .ResourceKind }}{{ .KindSuffix }}.json" "$@"
}
for f in default ha scoped kustomize-default kustomize-samples; do
  step "kubeconform -strict $f"
  kubeconform "$work/$f.yaml" >&2 || fail "kubeconform: $f does not validate (above)"
done
grep -q '^kind: ServiceMonitor' "$work/ha.yaml" || fail "serviceMonitor.enabled=true rendered no ServiceMonitor"
grep -q '^kind: PrometheusRule' "$work/ha.yaml" || fail "prometheusRule.enabled=true rendered no PrometheusRule"
grep -q 'grafana_dashboard: "1"' "$work/ha.yaml" || fail "grafanaDashboard.enabled=true rendered no dashboard ConfigMap"
step "the alerting rules and the dashboard load (e2e/promrules: Prometheus' rulefmt and PromQL parser)"
PROMRULES=$("$repo/e2e/promrules/build.sh" 2>"$work/promrules-build.log") \
  || { cat "$work/promrules-build.log" >&2; fail "e2e/promrules/build.sh"; }
"$PROMRULES" "$work/ha.yaml" >&2 || fail "the chart's alerting rules or dashboard do not load (above)"
# and the checker can fail: a broken expression and a broken annotation template are refused
sed 's/^\(\s*expr: .*\) > 0$/\1 >/' "$work/ha.yaml" >"$work/broken-rules.yaml"
sed 's/{{ \$value }}/{{ $value/' "$work/ha.yaml" >"$work/broken-template.yaml"
for b in broken-rules broken-template; do
  ! cmp -s "$work/$b.yaml" "$work/ha.yaml" || fail "$b: the deliberate break did not apply"
  if "$PROMRULES" "$work/$b.yaml" >"$work/$b.log" 2>&1; then cat "$work/$b.log" >&2; fail "promrules accepted $b"; fi
done
grep -q '^kind: Certificate' "$work/ha.yaml" || fail "webhook.certManager.enabled=true rendered no Certificate"
grep -q -- '- --shards=4$' "$work/ha.yaml" || fail "shards=4 rendered no --shards=4"
# every check must be able to fail: a broken document must be refused by the same schemas
step "kubeconform refuses broken documents"
declare -A broken=(
  [default]='s/^\(\s*\)readOnlyRootFilesystem: true/\1readOnlyRootFilesystm: true/'
  [ha]='s/^\(\s*\)interval: 30s/\1interval: 30 seconds/'
  [kustomize-samples]='s/^\(\s*\)schemaRef: sales/\1schemaRefs: sales/'
)
for f in "${!broken[@]}"; do
  sed "${broken[$f]}" "$work/$f.yaml" >"$work/broken-$f.yaml"
  ! cmp -s "$work/broken-$f.yaml" "$work/$f.yaml" || fail "broken-$f: the deliberate break did not apply"
  if kubeconform "$work/broken-$f.yaml" >"$work/broken-$f.log" 2>&1; then
    cat "$work/broken-$f.log" >&2; fail "kubeconform accepted a broken document (broken-$f)"
  fi
done

# ---------------------------------------------------------------- 4. policy
for s in "${SETS[@]}"; do
  IFS='|' read -r name ns replicas watch flags <<<"$s"
  step "policy ($name)"
  "$PYTHON" "$here/policy.py" "$work/$name.yaml" --release-namespace "$ns" --replicas "$replicas" \
    --watch-namespace "$watch" --write-config "$work/config-$name.yaml" || fail "policy ($name)"
done
step "policy (config/default)"
"$PYTHON" "$here/policy.py" "$work/kustomize-default.yaml" --release-namespace "$NS" || fail "policy (config/default)"

# ---------------------------------------------------------------- 5. Dockerfile and the binary
step "Dockerfile"
"$PYTHON" - Dockerfile <<'PY' || fail "Dockerfile (above)"
import re, sys
lines, cur = [], ""
for raw in open(sys.argv[1]):
    s = raw.rstrip("\n")
    if not cur and (not s.strip() or s.lstrip().startswith("#")):
        continue
    cur += s[:-1] + " " if s.endswith("\\") else s
    if not s.endswith("\\"):
        lines.append(cur.strip()); cur = ""
stages, bad, global_args = [], [], {}
def arg(rest):
    name, eq, default = rest.partition("=")
    return name.strip(), default.strip().strip('"') if eq else None
for l in lines:
    word, _, rest = l.partition(" ")
    word = word.upper()
    if word == "FROM":
        m = re.match(r"(\S+)(?:\s+AS\s+(\S+))?$", rest, re.I)
        # the base a plain `docker build` uses: the global ARG's default
        image = re.sub(r"\$\{(\w+)\}|\$(\w+)", lambda v: global_args.get(v.group(1) or v.group(2)) or "", m.group(1))
        stages.append({"image": image, "name": m.group(2), "cmds": []})
    elif stages:
        stages[-1]["cmds"].append((word, rest))
    elif word == "ARG":
        k, v = arg(rest)
        global_args[k] = v
if len(stages) < 2:
    bad.append("not multi-stage")
else:
    build, final = stages[0], stages[-1]
    if not build["image"].startswith("docker.io/library/rust:"):
        bad.append(f"the build stage's default base is not the public rust image: {build['image']!r}")
    if not final["image"].startswith("gcr.io/distroless/cc-debian12:nonroot"):
        bad.append(f"the final stage's default base is not distroless cc (nonroot): {final['image']!r}")
    runs = [r for w, r in build["cmds"] if w == "RUN"]
    profile = dict(arg(r) for w, r in build["cmds"] if w == "ARG").get("PROFILE")
    if not any(re.search(r'(^|\s)e2e/ship/build-binary\.sh (release|"?\$\{PROFILE\}"?) /out\b', r) for r in runs):
        bad.append("the build stage does not RUN e2e/ship/build-binary.sh release /out (or \"${PROFILE}\" /out)")
    elif any("${PROFILE}" in r for r in runs) and profile != "release":
        bad.append(f"the build stage's PROFILE defaults to {profile!r}, not release")
    if [w for w, _ in final["cmds"] if w in ("RUN", "ADD")]:
        bad.append("the final stage runs or adds something")
    copies = [r for w, r in final["cmds"] if w == "COPY"]
    if copies != [f"--from={build['name']} /out/delta-operator /usr/local/bin/delta-operator"]:
        bad.append(f"the final stage must copy only the binary from the build stage: {copies}")
    users = [r for w, r in final["cmds"] if w == "USER"]
    if not users or not re.fullmatch(r"[1-9][0-9]*(:[1-9][0-9]*)?", users[-1]):
        bad.append(f"the final stage needs a numeric non-root USER: {users}")
    if not any(w == "ENTRYPOINT" and "/usr/local/bin/delta-operator" in r for w, r in final["cmds"]):
        bad.append("no ENTRYPOINT running the binary")
for b in bad:
    print("Dockerfile: " + b, file=sys.stderr)
sys.exit(1 if bad else 0)
PY
step "e2e/ship/build-binary.sh dev (the Dockerfile's build command, on the host)"
BIN=$("$here/build-binary.sh" dev 2>"$work/build.log") || { tail -n 30 "$work/build.log" >&2; fail "build-binary.sh dev"; }
[[ -x $BIN ]] || fail "build-binary.sh printed no binary"
for name in default ha scoped; do
  "$BIN" --config "$work/config-$name.yaml" validate -f examples/ >/dev/null \
    || fail "the operator does not load the chart's rendered config ($name)"
done

# ---------------------------------------------------------------- 6. server-side dry run
step "kubectl apply --dry-run=server"
for n in "$NS" ops team-a; do
  kubectl create namespace "$n" --dry-run=client -o yaml | kubectl apply -f - >/dev/null
done
# the ServiceMonitor, PrometheusRule and cert-manager kinds are not served here: dry-run everything else of the `ha` set
"$PYTHON" -c '
import sys, yaml
docs = [d for d in yaml.safe_load_all(open(sys.argv[1])) if d and d["kind"] not in ("ServiceMonitor", "PrometheusRule", "Certificate", "Issuer")]
yaml.safe_dump_all(docs, open(sys.argv[2], "w"))' "$work/ha.yaml" "$work/ha-noservicemonitor.yaml"
for f in default ha-noservicemonitor scoped kustomize-default kustomize-samples; do
  kubectl apply --dry-run=server -f "$work/$f.yaml" >"$work/dry-$f.log" 2>&1 \
    || { cat "$work/dry-$f.log" >&2; fail "kubectl apply --dry-run=server: $f"; }
done

# ---------------------------------------------------------------- 7. the operator under the chart's RBAC
step "the operator as the chart's ServiceAccount"
# fresh namespaces (no namespace controller runs here to empty deleted ones)
RNS=ship-operator-$$; TNS=ship-tables-$$
kubectl create namespace $RNS >/dev/null; kubectl create namespace $TNS >/dev/null
"$HELM_BIN" template delta-operator "$CHART" --namespace $RNS --set replicaCount=2 --set webhook.certManager.enabled=true \
  -s templates/serviceaccount.yaml -s templates/rbac.yaml >"$work/rbac.yaml"
kubectl apply -f "$work/rbac.yaml" >/dev/null
token=$(kubectl create token delta-operator -n $RNS --duration=1h) || fail "kubectl create token"
server=$(kubectl config view --raw --minify -o jsonpath='{.clusters[0].cluster.server}')
kubectl config view --raw --minify -o jsonpath='{.clusters[0].cluster.certificate-authority-data}' | base64 -d >"$work/ca.crt"
SAKC=$work/kubeconfig-sa
KUBECONFIG=$SAKC kubectl config set-cluster e2e --server="$server" --certificate-authority="$work/ca.crt" --embed-certs >/dev/null
KUBECONFIG=$SAKC kubectl config set-credentials sa --token="$token" >/dev/null
KUBECONFIG=$SAKC kubectl config set-context sa --cluster=e2e --user=sa --namespace=$TNS >/dev/null
KUBECONFIG=$SAKC kubectl config use-context sa >/dev/null
[[ $(KUBECONFIG=$SAKC kubectl auth whoami -o jsonpath='{.status.userInfo.username}') == "system:serviceaccount:$RNS:delta-operator" ]] \
  || fail "the token does not authenticate as the ServiceAccount"
KUBECONFIG=$SAKC kubectl get secrets -n $RNS >/dev/null 2>&1 && fail "the ServiceAccount may read Secrets"
KUBECONFIG=$SAKC kubectl get leases -n $TNS >/dev/null 2>&1 && fail "the ServiceAccount may read Leases outside its namespace"

mkdir -p "$work/lake"
printf 'targets:\n  lake:\n    lake: {root: %s}\n' "$work/lake" >"$work/op-config.yaml"
# as in the pod: --leader-elect (replicas 2), POD_NAMESPACE for the Leases, POD_NAME as identity
KUBECONFIG=$SAKC POD_NAMESPACE=$RNS POD_NAME=ship-check DELTA_OPERATOR_LOG=info,kube=debug \
  "$BIN" --config "$work/op-config.yaml" run --listen 127.0.0.1:0 --leader-elect --drift-interval 1h \
  >"$work/operator.out" 2>"$work/operator.log" &
op_pid=$!
oplog() { echo "--- operator log (last 40 lines)" >&2; tail -n 40 "$work/operator.log" >&2; }
opfail() { oplog; fail "$@"; }
for _ in $(seq 1 60); do grep -q '^listening on' "$work/operator.out" && break; sleep 0.5; done
addr=$(sed -n 's/^listening on //p' "$work/operator.out")
[[ -n $addr ]] || opfail "the operator did not start"
for _ in $(seq 1 60); do curl -fs "http://$addr/readyz" >/dev/null && break; sleep 0.5; done
curl -fs "http://$addr/readyz" >/dev/null || opfail "the operator did not become ready (leader election under the chart's RBAC?)"

kubectl apply -n $TNS -f examples/ >/dev/null
kubectl wait -n $TNS --for=condition=Ready deltatable --all --timeout=90s >&2 || opfail "the example tables did not become Ready"
# the finalizer (patch of deltatables), then deletion: a drop waits for approval of its plan
kubectl patch -n $TNS deltatable customers --type=merge -p '{"spec":{"deletionPolicy":"Delete"}}' >/dev/null
for _ in $(seq 1 60); do
  [[ $(kubectl get -n $TNS deltatable customers -o jsonpath='{.metadata.finalizers}') == *delta-operator.io/drop-table* ]] && break; sleep 0.5
done
[[ $(kubectl get -n $TNS deltatable customers -o jsonpath='{.metadata.finalizers}') == *delta-operator.io/drop-table* ]] \
  || opfail "the operator did not add its finalizer"
kubectl delete -n $TNS deltatable customers --wait=false >/dev/null
id=
for _ in $(seq 1 60); do
  id=$(kubectl get -n $TNS deltatable customers -o jsonpath='{.status.plan.id}' 2>/dev/null || true)
  reason=$(kubectl get -n $TNS deltatable customers -o jsonpath='{.status.conditions[?(@.type=="Stalled")].reason}' 2>/dev/null || true)
  [[ -n $id && $reason == ApprovalRequired ]] && break; sleep 0.5
done
[[ -n $id ]] || opfail "no drop plan in status after deletion"
kubectl annotate -n $TNS deltatable customers "delta-operator.io/approve=$id" --overwrite >/dev/null
kubectl wait -n $TNS --for=delete deltatable/customers --timeout=60s >&2 || opfail "the approved drop did not release the resource"
# events (events.k8s.io, written by the operator) and Leases (in its namespace)
kubectl get events.v1.events.k8s.io -n $TNS -o jsonpath='{range .items[*]}{.reportingController} {.reason}{"\n"}{end}' >"$work/events.txt"
grep -q '^delta-operator TableDropped$' "$work/events.txt" || { cat "$work/events.txt" >&2; opfail "no TableDropped event"; }
kubectl get lease -n $RNS delta-operator-leader >/dev/null || opfail "no leader Lease in $RNS"
kubectl get lease -n $RNS delta-operator-target-lake >/dev/null || opfail "no apply Lease in $RNS"
# every metric the alerts and the dashboard use is one this operator exports
curl -fs "http://$addr/metrics" >"$work/metrics.txt" || opfail "GET /metrics"
"$PROMRULES" -metrics "$work/metrics.txt" "$work/ha.yaml" >&2 \
  || opfail "the alerting rules or the dashboard use a metric the operator does not export (above)"
if grep -E 'is forbidden: User|code: 403' "$work/operator.log" >"$work/forbidden.log"; then
  head -n 20 "$work/forbidden.log" >&2; opfail "a request of the operator was forbidden under the chart's RBAC"
fi
kill "$op_pid"; wait "$op_pid" 2>/dev/null || true; op_pid=

echo "ship/check.sh: all checks passed in $(( $(date +%s) - start ))s" >&2
echo "ship: $steps passed, 0 failed"
