#!/usr/bin/env bash
# The operator as users run it: the chart installed with helm on a real node (e2e/node), its
# pods started by a kubelet from the image built from the Dockerfile (e2e/image), then what a
# user relies on, each test able to fail on its own:
#   identity      pods Ready under the chart's ServiceAccount, RBAC, probes, security context
#                 and limits; the process runs as uid 65532 (read from /proc on the node)
#   lake          `kubectl apply -f examples/` Ready on the lake target, on the chart's volume
#   warehouse     the same examples Ready on the warehouse emulator, reached from the pod
#   webhook       a bad manifest refused through the webhook's Service; with the pods scaled
#                 to zero `failurePolicy: Ignore` lets it in and the operator reports InvalidSpec
#   unhappy       a reconcile that cannot read has an Event and one WARN line in the pod's log
#   upgrade       `helm upgrade` to a new image tag mid-rewrite: interrupted, resumed, applied
#                 once, every row kept
#   failover      two replicas: the leader pod deleted mid-rewrite, the other resumes it
#   oom           the pod OOM-killed mid-rewrite under its memory limit: Interrupted, never
#                 Failed; after the third death Stalled (CrashLoop) with the others Ready; with
#                 the cause gone and a retry the next pod finishes it, every row kept
#   uninstall     `helm uninstall` keeps the CRDs, the resources and the tables
# Run: e2e/node/with-node.sh e2e/node/tests.sh [TEST...]   (needs root; starts its own
# warehouse emulator on the node's address). No fail-fast: every test runs, the summary says
# which failed, the exit status is non-zero when one did; the operator's logs and the
# resources are dumped for a failed test.
set -uo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO=$(cd "$HERE/../.." && pwd)
CACHE=${DELTA_OPERATOR_CACHE:-$HOME/.cache/delta-operator}
PY=${DELTA_OPERATOR_PYTHON:-$CACHE/venv/bin/python}
for v in KUBECONFIG IMAGE NODE_IP CONTAINERD_SOCK DELTA_OPERATOR_NODE_DIR; do
  [[ -n ${!v:-} ]] || { echo "node/tests.sh: $v is not set: run through e2e/node/with-node.sh" >&2; exit 1; }
done
"$PY" -c 'import deltalake' 2>/dev/null || { echo "node/tests.sh: $PY has no deltalake (make python)" >&2; exit 1; }
eval "$("$REPO/e2e/ship/tools.sh")"
HELM=$HELM_BIN
NS=delta-operator-system
RELEASE=delta-operator
DEPLOY=$RELEASE
work=$(mktemp -d -t delta-node-tests.XXXXXX)
LAKE=$work/lake          # the chart's lake volume: a hostPath PV the tests read too
wh_dir=
cleanup() {
  [[ -z $wh_dir ]] || "$REPO/e2e/warehouse/stop.sh" "$wh_dir" >/dev/null 2>&1 || true
  rm -rf "$work"
}
trap cleanup EXIT

say() { echo "--- node: $* ($(date +%T))" >&2; }
die() { echo "FAILED: $*" >&2; return 1; }
# wait_for DESC SECONDS CMD...: polls CMD every second until it succeeds
wait_for() {
  local desc=$1 secs=$2; shift 2
  local deadline=$(( $(date +%s) + secs ))
  until "$@" >/dev/null 2>&1; do
    (( $(date +%s) < deadline )) || die "timed out after ${secs}s waiting for $desc" || return 1
    sleep 1
  done
}
cond() { # ns kind name type -> "status reason message"
  kubectl -n "$1" get "$2" "$3" -o jsonpath="{.status.conditions[?(@.type==\"$4\")].status} {.status.conditions[?(@.type==\"$4\")].reason} {.status.conditions[?(@.type==\"$4\")].message}" 2>/dev/null
}
ready() { [[ $(cond "$1" "$2" "$3" Ready) == True\ * ]]; }
events_for() { # ns name -> "reason: note" lines of events.k8s.io Events about that object
  kubectl -n "$1" get events.events.k8s.io --field-selector "regarding.name=$2" \
    -o jsonpath='{range .items[*]}{.reason}: {.note}{"\n"}{end}' 2>/dev/null
}
operator_logs() { # all containers of the release, the previous instance too
  local p
  for p in $(kubectl -n "$NS" get pods -l app.kubernetes.io/name=delta-operator -o name 2>/dev/null); do
    echo "=== $p (previous)"; kubectl -n "$NS" logs "$p" --previous 2>/dev/null | tail -n 40
    echo "=== $p"; kubectl -n "$NS" logs "$p" 2>/dev/null | tail -n 60
  done
}
rollout() { kubectl -n "$NS" rollout status "deploy/$DEPLOY" --timeout=180s >&2; }

# --- the images the chart uses: the one built from the Dockerfile, and the same image under a
# second tag for the upgrade (an upgrade to a new tag is a new image to the kubelet)
REPO_NAME=${IMAGE%:*}
TAG=${IMAGE##*:}
TAG2=$TAG-upgrade
ctr -a "$CONTAINERD_SOCK" -n k8s.io images tag --force "$IMAGE" "$REPO_NAME:$TAG2" >/dev/null \
  || { echo "node/tests.sh: cannot tag $IMAGE in containerd" >&2; exit 1; }

# --- the warehouse emulator, listening on the node's address so the pods reach it
say "starting the warehouse emulator on $NODE_IP"
wh_dir=$(WAREHOUSE_HOST=$NODE_IP "$REPO/e2e/warehouse/start.sh") || { echo "node/tests.sh: the warehouse emulator did not start" >&2; exit 1; }
# shellcheck disable=SC1091
. "$wh_dir/env"

# --- the release: the lake on a hostPath PersistentVolume, the warehouse credentials in a
# Secret (as a user keeps them), a short shutdown grace so a rollout interrupts a long step
mkdir -p "$LAKE" && chown 65532:65532 "$LAKE"
kubectl create namespace "$NS" >/dev/null
kubectl apply -f - >/dev/null <<EOF
apiVersion: v1
kind: PersistentVolume
metadata: {name: delta-lake-$$}
spec:
  capacity: {storage: 20Gi}
  accessModes: [ReadWriteMany]
  persistentVolumeReclaimPolicy: Retain
  storageClassName: ""
  hostPath: {path: $LAKE, type: Directory}
  claimRef: {namespace: $NS, name: lake}
---
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: lake, namespace: $NS}
spec:
  accessModes: [ReadWriteMany]
  storageClassName: ""
  volumeName: delta-lake-$$
  resources: {requests: {storage: 20Gi}}
EOF
kubectl -n "$NS" create secret generic databricks \
  --from-literal=DATABRICKS_TOKEN="$DATABRICKS_TOKEN" >/dev/null
cat >"$work/values.yaml" <<EOF
image: {repository: $REPO_NAME, tag: "$TAG", pullPolicy: Never}
lakeVolume: {existingClaim: lake}
databricks: {existingSecret: databricks}
extraArgs: ["--shutdown-grace=5s"]
config:
  targets:
    lake:
      lake: {root: /var/lib/delta-operator/lake}
      namespaces: ["lake-*"]
      schemas: ["*"]
    dbx:
      databricks: {host: "$DATABRICKS_HOST", warehouseId: "$DATABRICKS_WAREHOUSE_ID"}
      namespaces: ["wh-*"]
      schemas: ["*"]
  defaultTarget: lake
EOF
HELM_BASE=(--namespace "$NS" -f "$work/values.yaml")
# every lake rewrite batch waits 8 s (a debug-build failpoint; the test image is a debug
# build): a rewrite of 4 files outlasts a rollout or a failover
SLOW=(--set 'extraEnv[0].name=DELTA_OPERATOR_FAILPOINT' --set 'extraEnv[0].value=slow-batch'
      --set 'extraEnv[1].name=DELTA_OPERATOR_FAILPOINT_SECONDS' --set-string 'extraEnv[1].value=8')

# examples NS CATALOG [TARGET]: the repository's examples, in their own namespace and catalog
examples() {
  local ns=$1 cat=$2 target=${3:-}
  kubectl get namespace "$ns" >/dev/null 2>&1 || kubectl create namespace "$ns" >/dev/null
  mkdir -p "$work/ex-$ns"
  local f
  for f in "$REPO"/examples/*.yaml; do
    sed "s/^  catalog: main$/  catalog: $cat/" "$f" >"$work/ex-$ns/${f##*/}"
    [[ -z $target ]] || sed -i "s/^  catalog: $cat$/  catalog: $cat\n  target: $target/" "$work/ex-$ns/${f##*/}"
  done
  kubectl apply -n "$ns" -f "$work/ex-$ns/" >&2 || return 1
  wait_for "the examples in $ns to be Ready" 120 \
    sh -c "kubectl -n $ns wait --for=condition=Ready deltaschema/sales deltatable/orders deltatable/customers --timeout=5s"
}
# rows CATALOG DAYS ROWS_PER_DAY [STATUS_BYTES]: a job appends to lake/CATALOG/sales/orders,
# one commit per day; STATUS_BYTES > 0 makes each row's status that many random hex chars
rows() {
  "$PY" - "$LAKE/lake/$1/sales/orders" "$2" "$3" "${4:-0}" <<'PY' || return 1
import os, sys, datetime, deltalake, pyarrow as pa
path, days, per, pad = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
s = deltalake.DeltaTable(path).to_pyarrow_table().schema
for day in range(1, days + 1):
    ids = list(range(day * 1_000_000, day * 1_000_000 + per))
    t = pa.table({"order_id": pa.array(ids, pa.int64()), "customer_id": pa.array(ids, pa.int64()),
                  "amount": pa.array([i % 500 for i in ids], pa.int32()),
                  "status": [os.urandom(pad // 2).hex() for _ in ids] if pad else ["new"] * per,
                  "items": pa.array([None] * per, s.field("items").type),
                  "order_date": pa.array([datetime.date(2026, 11, day)] * per)})
    deltalake.write_deltalake(path, t.cast(s), mode="append")
PY
  chown -R 65532:65532 "$LAKE"   # the job ran as root; the operator's pods run as 65532
}
# fingerprint CATALOG: rows, sum of ids, sum of amounts; then the amount column's type
fingerprint() {
  "$PY" - "$LAKE/lake/$1/sales/orders" <<'PY'
import sys, deltalake, pyarrow.compute as pc
t = deltalake.DeltaTable(sys.argv[1]).to_pyarrow_table()
print(t.num_rows, pc.sum(t["order_id"]).as_py(), pc.sum(t["amount"]).as_py(), t.schema.field("amount").type)
PY
}
# the example orders with amount widened int -> bigint: a rewrite of every row, no approval
orders_bigint() { sed 's/^      type: int$/      type: bigint/' "$work/ex-$1/orders.yaml" | kubectl apply -n "$1" -f - >&2; }
applying_rewrite() { # ns: true once orders' rewrite step is running
  local c; c=$(cond "$1" deltatable orders Reconciling)
  [[ $c == True\ Applying\ * && $c == *"REPLACE TABLE"* ]]
}
leader() { kubectl -n "$NS" get lease delta-operator-leader -o jsonpath='{.spec.holderIdentity}' 2>/dev/null; }

# ============================================================================ the tests
t_identity() {
  say "helm install $RELEASE (image $IMAGE)"
  "$HELM" install "$RELEASE" "$REPO/charts/delta-operator" "${HELM_BASE[@]}" --wait --timeout 180s >&2 \
    || die "helm install" || return 1
  local pod sa
  pod=$(kubectl -n "$NS" get pods -l app.kubernetes.io/name=delta-operator -o jsonpath='{.items[0].metadata.name}')
  [[ -n $pod ]] || die "no operator pod" || return 1
  sa=$(kubectl -n "$NS" get pod "$pod" -o jsonpath='{.spec.serviceAccountName}')
  [[ $sa == "$RELEASE" ]] || die "the pod runs as ServiceAccount '$sa', not the chart's" || return 1
  # no admin credentials: no kubeconfig, only the projected ServiceAccount token; and that
  # identity is held to the chart's RBAC
  kubectl -n "$NS" get pod "$pod" -o json >"$work/pod.json"
  ! grep -q '"KUBECONFIG"' "$work/pod.json" || die "the pod has a KUBECONFIG" || return 1
  local as=(--as="system:serviceaccount:$NS:$sa")
  [[ $(kubectl auth can-i "${as[@]}" patch deltatables.delta-operator.io -A) == yes ]] || die "the chart's RBAC cannot patch DeltaTables" || return 1
  [[ $(kubectl auth can-i "${as[@]}" list secrets -A 2>/dev/null) == no ]] || die "the ServiceAccount can list Secrets" || return 1
  [[ $(kubectl auth can-i "${as[@]}" create clusterrolebindings 2>/dev/null) == no ]] || die "the ServiceAccount can bind roles" || return 1
  # the chart's probes passed (Ready), its security context, limits and probes are in the pod
  "$PY" - "$work/pod.json" <<'PY' || return 1
import json, sys
p = json.load(open(sys.argv[1])); c = p["spec"]["containers"][0]; sc = c["securityContext"]
want = {"readOnlyRootFilesystem": True, "runAsNonRoot": True, "allowPrivilegeEscalation": False}
bad = [k for k, v in want.items() if sc.get(k) != v] + ([] if sc.get("capabilities", {}).get("drop") == ["ALL"] else ["capabilities"])
bad += [k for k in ("livenessProbe", "readinessProbe") if k not in c]
bad += [] if c.get("resources", {}).get("limits", {}).get("memory") else ["resources.limits.memory"]
bad += [] if p["spec"]["securityContext"].get("seccompProfile", {}).get("type") == "RuntimeDefault" else ["seccompProfile"]
ready = [x for x in p["status"].get("conditions", []) if x["type"] == "Ready"]
bad += [] if ready and ready[0]["status"] == "True" else ["Ready"]
bad += [] if p["status"]["containerStatuses"][0]["restartCount"] == 0 else ["restarts"]
sys.exit("pod lacks: %s" % bad if bad else 0)
PY
  # the process the kubelet started: uid 65532, from the image's binary
  local cid pid uid
  cid=$(kubectl -n "$NS" get pod "$pod" -o jsonpath='{.status.containerStatuses[0].containerID}')
  pid=$(ctr -a "$CONTAINERD_SOCK" -n k8s.io tasks ls | awk -v id="${cid#containerd://}" '$1 == id {print $2}')
  [[ -n $pid && -r /proc/$pid/status ]] || die "no process for container $cid" || return 1
  uid=$(awk '/^Uid:/ {print $2}' "/proc/$pid/status")
  [[ $uid == 65532 ]] || die "the operator runs as uid $uid" || return 1
  [[ $(tr '\0' ' ' <"/proc/$pid/cmdline") == /usr/local/bin/delta-operator\ run\ * ]] || die "unexpected command: $(tr '\0' ' ' <"/proc/$pid/cmdline")" || return 1
  # nothing the operator asked for was forbidden
  ! kubectl -n "$NS" logs "$pod" | grep -qi forbidden || die "forbidden requests in the log" || return 1
}

t_lake() {
  examples lake-a main || return 1
  [[ -d $LAKE/lake/main/sales/orders/_delta_log ]] || die "orders is not on the chart's lake volume ($LAKE)" || return 1
  [[ $(stat -c %u "$LAKE/lake/main/sales/orders/_delta_log") == 65532 ]] || die "the table was not written by the pod's user" || return 1
}

t_warehouse() {
  examples wh-a main dbx || return 1
  local code
  code=$(curl -s -o "$work/uc.json" -w '%{http_code}' -H "Authorization: Bearer $DATABRICKS_TOKEN" \
    "$DATABRICKS_HOST/api/2.1/unity-catalog/tables/main.sales.orders")
  [[ $code == 200 ]] || die "the warehouse has no main.sales.orders (HTTP $code): $(head -c 300 "$work/uc.json")" || return 1
}

t_webhook() {
  kubectl get namespace lake-w >/dev/null 2>&1 || kubectl create namespace lake-w >/dev/null
  sed 's/^  catalog: main$/  catalog: web/' "$REPO/examples/sales.yaml" | kubectl apply -n lake-w -f - >/dev/null || return 1
  # a misspelt type: the CRD's schema accepts it, the webhook refuses it
  sed 's/^      type: string$/      type: strin/' "$REPO/examples/customers.yaml" >"$work/bad.yaml"
  ! cmp -s "$work/bad.yaml" "$REPO/examples/customers.yaml" || die "the deliberate typo did not apply" || return 1
  local out
  if out=$(kubectl apply -n lake-w -f "$work/bad.yaml" 2>&1); then die "a bad manifest was applied: $out"; return 1; fi
  [[ $out == *"denied the request"* && $out == *"strin"* ]] || die "not refused by the webhook: $out" || return 1
  # the webhook down: failurePolicy Ignore lets it in; back up, the operator reports it
  kubectl -n "$NS" scale "deploy/$DEPLOY" --replicas=0 >/dev/null
  wait_for "the operator pods to go" 90 sh -c "[ -z \"\$(kubectl -n $NS get pods -l app.kubernetes.io/name=delta-operator -o name)\" ]" || return 1
  out=$(kubectl apply -n lake-w -f "$work/bad.yaml" 2>&1) || die "with no operator pod the apply was refused: $out" || return 1
  kubectl -n "$NS" scale "deploy/$DEPLOY" --replicas=1 >/dev/null
  rollout || return 1
  wait_for "customers to be InvalidSpec" 90 sh -c "kubectl -n lake-w get deltatable customers -o jsonpath='{.status.conditions[?(@.type==\"Stalled\")].reason}' | grep -qx InvalidSpec" || return 1
  kubectl delete -n lake-w -f "$work/bad.yaml" --wait=false >/dev/null
}

t_unhappy() {
  # a table whose schema exists as a resource but points at a catalog the lake cannot
  # create (tenancy allows it; the read fails): the user must see why in describe and logs
  kubectl get namespace lake-u >/dev/null 2>&1 || kubectl create namespace lake-u >/dev/null
  kubectl apply -n lake-u -f - >/dev/null <<'EOF' || return 1
apiVersion: delta-operator.io/v1alpha1
kind: DeltaTable
metadata: {name: lost}
spec:
  schemaRef: nowhere
  columns:
    - {name: id, type: bigint}
EOF
  wait_for "an Event about table lost" 90 sh -c "kubectl -n lake-u get events.events.k8s.io --field-selector regarding.name=lost -o name | grep -q ." || return 1
  events_for lake-u lost >"$work/unhappy-events"
  grep -qi "nowhere" "$work/unhappy-events" || die "the Event does not name what is missing: $(cat "$work/unhappy-events")" || return 1
  wait_for "a WARN log line about lake-u/lost" 60 sh -c "kubectl -n $NS logs deploy/$DEPLOY | grep 'WARN' | grep -q 'lost'" || return 1
  # deduplicated: after several requeues still one Event object per reason
  sleep 10
  local n distinct
  n=$(events_for lake-u lost | wc -l); distinct=$(events_for lake-u lost | cut -d: -f1 | sort -u | wc -l)
  [[ $n == "$distinct" ]] || die "the same event was written $n times: $(events_for lake-u lost)" || return 1
}

t_upgrade() {
  examples lake-g main2 || return 1
  rows main2 4 2500 || return 1
  local before after
  before=$(fingerprint main2)
  "$HELM" upgrade "$RELEASE" "$REPO/charts/delta-operator" "${HELM_BASE[@]}" "${SLOW[@]}" \
    --wait --timeout 180s >/dev/null || die "helm upgrade (failpoint)" || return 1
  orders_bigint lake-g || return 1
  wait_for "orders mid-rewrite" 120 applying_rewrite lake-g || return 1
  local plan; plan=$(kubectl -n lake-g get deltatable orders -o jsonpath='{.status.plan.id}')
  say "mid-rewrite of plan $plan: helm upgrade to tag $TAG2"
  "$HELM" upgrade "$RELEASE" "$REPO/charts/delta-operator" "${HELM_BASE[@]}" --reuse-values \
    --set image.tag="$TAG2" --wait --timeout 240s >/dev/null || die "helm upgrade (new tag)" || return 1
  [[ $(kubectl -n "$NS" get deploy "$DEPLOY" -o jsonpath='{.spec.template.spec.containers[0].image}') == *":$TAG2" ]] || die "the new tag is not deployed" || return 1
  wait_for "orders Ready after the upgrade" 240 ready lake-g deltatable orders || return 1
  events_for lake-g orders >"$work/upgrade-events"
  grep -q '^ApplyInterrupted:' "$work/upgrade-events" || die "no ApplyInterrupted event: $(cat "$work/upgrade-events")" || return 1
  grep -q '^ApplyResumed:' "$work/upgrade-events" || die "no ApplyResumed event: $(cat "$work/upgrade-events")" || return 1
  after=$(fingerprint main2)
  [[ ${after% *} == "${before% *}" ]] || die "rows changed: before '$before', after '$after'" || return 1
  [[ $after == *" int64" ]] || die "amount was not widened: $after" || return 1
  # applied once: one rewrite commit in the table's history (a doubled apply makes two)
  local rewrites
  rewrites=$("$PY" -c 'import sys, deltalake; h = deltalake.DeltaTable(sys.argv[1]).history(); print(sum(1 for c in h if c.get("operation") in ("CREATE OR REPLACE TABLE", "REPLACE TABLE", "WRITE") and (c.get("operationParameters") or {}).get("mode") == "Overwrite"))' "$LAKE/lake/main2/sales/orders")
  [[ $rewrites == 1 ]] || die "$rewrites overwriting commits in the history (want 1)" || return 1
}

t_failover() {
  # two replicas with leader election; the self-signed webhook needs one replica (the chart
  # refuses two without cert-manager), so it is off here
  "$HELM" upgrade "$RELEASE" "$REPO/charts/delta-operator" "${HELM_BASE[@]}" "${SLOW[@]}" \
    --set replicaCount=2 --set webhook.enabled=false --wait --timeout 240s >/dev/null || die "helm upgrade (2 replicas)" || return 1
  wait_for "a leader" 60 sh -c "kubectl -n $NS get lease delta-operator-leader -o jsonpath='{.spec.holderIdentity}' | grep -q ." || return 1
  examples lake-h main3 || return 1
  rows main3 4 2500 || return 1
  local before after lead
  before=$(fingerprint main3)
  orders_bigint lake-h || return 1
  wait_for "orders mid-rewrite" 120 applying_rewrite lake-h || return 1
  lead=$(leader)
  kubectl -n "$NS" get pod "$lead" >/dev/null 2>&1 || die "the leader '$lead' is not a pod of the release" || return 1
  say "mid-rewrite: deleting the leader pod $lead"
  kubectl -n "$NS" delete pod "$lead" --grace-period=2 --wait=false >/dev/null
  wait_for "another leader" 90 sh -c "l=\$(kubectl -n $NS get lease delta-operator-leader -o jsonpath='{.spec.holderIdentity}'); [ -n \"\$l\" ] && [ \"\$l\" != $lead ]" || return 1
  wait_for "orders Ready after the failover" 240 ready lake-h deltatable orders || return 1
  events_for lake-h orders >"$work/failover-events"
  grep -q '^ApplyResumed:' "$work/failover-events" || die "no ApplyResumed event: $(cat "$work/failover-events")" || return 1
  after=$(fingerprint main3)
  [[ ${after% *} == "${before% *}" && $after == *" int64" ]] || die "before '$before', after '$after'" || return 1
}

t_oom() {
  # back to one replica. Lake rewrites stream in a fixed budget (tests/lake_memory.rs rewrites a
  # table larger than its cgroup's limit), so the step that needs more memory than the pod's
  # limit is the debug-build failpoint `hog-batch`: the rewrite's first batch takes memory until
  # the kernel OOM-kills the container, as a table too big for the limit would
  examples lake-o main4 || return 1
  rows main4 4 2500 || return 1
  local before after limit=${OOM_LIMIT:-160Mi}
  local hog=(--set 'extraEnv[0].name=DELTA_OPERATOR_FAILPOINT' --set 'extraEnv[0].value=hog-batch')
  before=$(fingerprint main4)
  "$HELM" upgrade "$RELEASE" "$REPO/charts/delta-operator" "${HELM_BASE[@]}" "${hog[@]}" \
    --set replicaCount=1 --set resources.limits.memory="$limit" --set resources.requests.memory="$limit" \
    --set maxStepInterruptions=3 --wait --timeout 240s >/dev/null || die "helm upgrade (memory limit $limit)" || return 1
  orders_bigint lake-o || return 1
  wait_for "the operator container to be OOM-killed" 240 sh -c \
    "kubectl -n $NS get pods -l app.kubernetes.io/name=delta-operator -o jsonpath='{.items[*].status.containerStatuses[0].lastState.terminated.reason}' | grep -q OOMKilled" || return 1
  # the kubelet restarts it: the step is reported cut short, not failed
  wait_for "orders reported Interrupted" 120 sh -c \
    "kubectl -n lake-o get events.events.k8s.io --field-selector regarding.name=orders -o jsonpath='{.items[*].reason}' | grep -q ApplyInterrupted" || return 1
  ! events_for lake-o orders | grep -q '^ApplyFailed:' || die "an OOM kill was reported ApplyFailed" || return 1
  # the step kills every pod that resumes it: after the third death it is Stalled (CrashLoop),
  # saying what to do, instead of a crash loop; the other tables stay Ready
  wait_for "orders Stalled with CrashLoop" 300 sh -c \
    "kubectl -n lake-o get deltatable orders -o jsonpath='{.status.conditions[?(@.type==\"Stalled\")].reason}' | grep -qx CrashLoop" || return 1
  local c; c=$(cond lake-o deltatable orders Stalled)
  [[ $c == *"memory"* ]] || die "the CrashLoop message does not say what to do: $c" || return 1
  ! events_for lake-o orders | grep -q '^ApplyFailed:' || die "an OOM kill was reported ApplyFailed" || return 1
  ready lake-o deltatable customers || die "customers is not Ready beside the stalled orders" || return 1
  say "OOM-killed, Interrupted, then CrashLoop; the cause gone (no failpoint, the default limit), retrying"
  "$HELM" upgrade "$RELEASE" "$REPO/charts/delta-operator" "${HELM_BASE[@]}" \
    --set replicaCount=1 --wait --timeout 240s >/dev/null || die "helm upgrade (default limit)" || return 1
  kubectl -n lake-o annotate deltatable orders reconcile.fluxcd.io/requestedAt="$(date +%s)" --overwrite >/dev/null
  wait_for "orders Ready after the retry" 300 ready lake-o deltatable orders || return 1
  after=$(fingerprint main4)
  [[ ${after% *} == "${before% *}" && $after == *" int64" ]] || die "before '$before', after '$after'" || return 1
}

t_uninstall() {
  "$HELM" uninstall "$RELEASE" --namespace "$NS" --wait --timeout 120s >/dev/null || die "helm uninstall" || return 1
  kubectl get crd deltatables.delta-operator.io deltaschemas.delta-operator.io >/dev/null || die "the CRDs went with the release" || return 1
  kubectl -n lake-a get deltatable orders >/dev/null || die "the DeltaTable went with the release" || return 1
  [[ -d $LAKE/lake/main/sales/orders/_delta_log ]] || die "the lake table went with the release" || return 1
  local code
  code=$(curl -s -o /dev/null -w '%{http_code}' -H "Authorization: Bearer $DATABRICKS_TOKEN" \
    "$DATABRICKS_HOST/api/2.1/unity-catalog/tables/main.sales.orders")
  [[ $code == 200 ]] || die "the warehouse table went with the release (HTTP $code)" || return 1
}

ALL=(identity lake warehouse webhook unhappy upgrade failover oom uninstall)
selected=("${@:-${ALL[@]}}")
passed=() failed=()
start=$(date +%s)
for t in "${selected[@]}"; do
  say "test $t"
  t0=$(date +%s)
  if "t_$t"; then
    passed+=("$t"); echo "ok: $t ($(( $(date +%s) - t0 ))s)" >&2
  else
    failed+=("$t"); echo "FAIL: $t ($(( $(date +%s) - t0 ))s)" >&2
    { kubectl get deltatables,deltaschemas -A -o wide; kubectl -n "$NS" get pods -o wide; operator_logs; } >&2 2>&1 || true
  fi
done
echo "node tests: ${#passed[@]} passed, ${#failed[@]} failed${failed:+ (${failed[*]})} in $(( $(date +%s) - start ))s" >&2
[[ ${#failed[@]} == 0 ]]
