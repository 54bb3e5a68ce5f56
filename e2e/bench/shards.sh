#!/usr/bin/env bash
# Benchmark (not a test): two operator replicas share N DeltaTables by shard on a real
# kube-apiserver + etcd, and one of them dies.
#
#   e2e/with-controlplane.sh e2e/bench/shards.sh [N]      (N defaults to 5000; make bench-shards)
#
# Two release processes run `run --leader-elect --shards S` (cluster-wide, identities op-a and
# op-b, Lease duration BENCH_LEASE_SECONDS); the N tables are spread over S namespaces, the
# objects of namespace k labelled `delta-operator.io/shard: "k"`, each with its DeltaSchema, on
# the lake target. Measured and checked:
#   1. all N Ready: the time, each replica's CPU, RSS and reconciles, and how many tables each
#      applied; every table's status.reconciledBy must be the holder of its shard's Lease
#      (a table applied by the other replica fails the run);
#   2. op-a is killed (-9): how long until op-b holds every shard (must be within the Lease
#      duration and a 5 s margin);
#   3. BENCH_CHANGED tables of op-a's former shards get a new comment: time until all of them
#      are Ready at their new generation through op-b, and every table Ready at the end.
# Then one replica alone is compared on the same estate: its CPU per table is printed beside
# the pair's.
#
# Uses ${CARGO_TARGET_DIR:-$HOME/.cache/delta-operator/target}/${PROFILE:-release}/delta-operator.
# Env: PROFILE, BENCH_SHARDS (default 4), BENCH_LEASE_SECONDS (default 15), BENCH_CHANGED
# (default 100), BENCH_TIMEOUT (seconds to all Ready, default 1200), BENCH_KEEP=1 (keep the
# work dir: operator logs, config, lake).
set -euo pipefail
# shellcheck source=e2e/bench/lib.sh
. "$(dirname "$0")/lib.sh"

N=${1:-5000}
[[ $N =~ ^[1-9][0-9]*$ ]] || { echo "shards.sh: N must be a positive integer, got '$N'" >&2; exit 2; }
SHARDS=${BENCH_SHARDS:-4}
[[ $SHARDS =~ ^[1-9][0-9]*$ && $SHARDS -ge 2 ]] || { echo "shards.sh: BENCH_SHARDS must be an integer ≥ 2, got '$SHARDS'" >&2; exit 2; }
LEASE=${BENCH_LEASE_SECONDS:-15}
[[ $LEASE =~ ^[1-9][0-9]*$ ]] || { echo "shards.sh: BENCH_LEASE_SECONDS must be a positive integer, got '$LEASE'" >&2; exit 2; }
CHANGED=${BENCH_CHANGED:-100}
[[ $CHANGED =~ ^[1-9][0-9]*$ ]] || { echo "shards.sh: BENCH_CHANGED must be a positive integer, got '$CHANGED'" >&2; exit 2; }
TIMEOUT=${BENCH_TIMEOUT:-1200}
[[ -n ${KUBECONFIG:-} && -n ${DELTA_OPERATOR_E2E_DIR:-} ]] || {
  echo "shards.sh: no control plane; run it as: e2e/with-controlplane.sh $0 [N]" >&2; exit 2; }
for t in kubectl jq curl awk; do
  command -v "$t" >/dev/null || { echo "shards.sh: '$t' is required" >&2; exit 2; }
done
PROFILE=${PROFILE:-release}
BIN=${CARGO_TARGET_DIR:-$HOME/.cache/delta-operator/target}/$PROFILE/delta-operator
[[ -x $BIN ]] || { echo "shards.sh: no operator binary at $BIN (build it: cargo build$([[ $PROFILE == release ]] && echo ' --release'))" >&2; exit 2; }

WORK=$(mktemp -d -t delta-shards.XXXXXX)
CFG=$WORK/config.yaml
RUN=s$$
LEASE_NS=$RUN-leases
NAMESPACES=()
for ((k = 0; k < SHARDS; k++)); do NAMESPACES+=("$RUN-shard$k"); done
A_PID= B_PID= SOLO_PID=
FAILED=1

cleanup() {
  local rc=$?
  set +e
  stop_pid "$A_PID"; stop_pid "$B_PID"; stop_pid "$SOLO_PID"
  for ns in "${NAMESPACES[@]}"; do
    timeout 300 kubectl delete deltatables,deltaschemas --all -n "$ns" --wait=false >/dev/null 2>&1
    timeout 60 kubectl delete namespace "$ns" --wait=false >/dev/null 2>&1
  done
  timeout 60 kubectl delete namespace "$LEASE_NS" --wait=false >/dev/null 2>&1
  if [[ $FAILED == 1 || ${BENCH_KEEP:-} == 1 ]]; then
    log "work dir kept: $WORK"
  else
    rm -rf "$WORK"
  fi
  exit "$rc"
}
trap cleanup EXIT
trap 'log "interrupted"; exit 130' INT TERM
trap 'log "FAILED: line $LINENO: $BASH_COMMAND"' ERR

fail() {
  log "FAILED: $*"
  for f in "$WORK"/op-*.log; do
    [[ -s $f ]] || continue
    log "--- last lines of $f"
    tail -n 20 "$f" | sed 's/\x1b\[[0-9;]*m//g' >&2 || true
  done
  exit 1
}

# shard -> holder of its unexpired Lease, one "shard holder" line each
holders() {
  kubectl get lease -n "$LEASE_NS" -o json | jq -r --arg now "$(date -u +%s)" '.items[]
    | select(.metadata.name | startswith("delta-operator-shard-"))
    | select(.spec.holderIdentity != null and .spec.renewTime != null)
    | select((.spec.renewTime | sub("\\.[0-9]+"; "") | fromdateiso8601) + .spec.leaseDurationSeconds > ($now | tonumber))
    | "\(.metadata.name | ltrimstr("delta-operator-shard-")) \(.spec.holderIdentity)"'
}
held_by() { holders | awk -v id="$1" '$2 == id' | wc -l; }

# every DeltaTable of the run's namespaces, one JSON list
tables_json() {
  kubectl get --raw "/apis/delta-operator.io/v1alpha1/deltatables" | jq --arg run "$RUN-" '[.items[] | select(.metadata.namespace | startswith($run))]'
}
count_ready() { jq '[.[] | select((.status.conditions // []) | any(.type == "Ready" and .status == "True"))] | length'; }

wait_ready() { # what expected-count jq-filter-over-tables
  local what=$1 want=$2 filter=$3 t0 n deadline
  t0=$(now); deadline=$(( $(date +%s) + TIMEOUT )); last=0
  while :; do
    n=$(tables_json | jq "[.[] | select($filter)] | length") || n=0
    (( n >= want )) && break
    (( $(date +%s) < deadline )) || fail "$what: $n/$want after ${TIMEOUT}s"
    if (( $(date +%s) - last >= 15 )); then log "$what: $n/$want after $(since "$t0") s"; last=$(date +%s); fi
    sleep 1
  done
  WAITED=$(since "$t0")
}
READY='((.status.conditions // []) | any(.type == "Ready" and .status == "True"))'

gen_yaml() { # namespace-index first-table count
  local k=$1 from=$2 count=$3 i
  printf -- '---\napiVersion: delta-operator.io/v1alpha1\nkind: DeltaSchema\nmetadata: {name: team%d, labels: {delta-operator.io/shard: "%d"}}\nspec: {catalog: main, name: team%d}\n' "$k" "$k" "$k"
  for ((i = from; i < from + count; i++)); do
    printf -- '---\napiVersion: delta-operator.io/v1alpha1\nkind: DeltaTable\nmetadata: {name: t%05d, labels: {delta-operator.io/shard: "%d"}}\nspec:\n  schemaRef: team%d\n  comment: table %d\n  columns:\n    - {name: id, type: bigint, nullable: false}\n    - {name: note, type: string}\n    - {name: at, type: timestamp}\n' "$i" "$k" "$k" "$i"
  done
}

cat >"$CFG" <<EOF
targets:
  lake:
    lake: {root: $WORK/lake}
    namespaces: ['*']
    schemas: ['*']
EOF
kubectl create namespace "$LEASE_NS" >/dev/null
for ns in "${NAMESPACES[@]}"; do kubectl create namespace "$ns" >/dev/null; done
per=$(( (N + SHARDS - 1) / SHARDS ))
for ((k = 0; k < SHARDS; k++)); do
  from=$(( k * per )); count=$(( N - from < per ? N - from : per ))
  gen_yaml "$k" "$from" "$count" >"$WORK/shard$k.yaml"
done

replica() { # identity
  start_operator "$WORK/op-$1.log" "$BIN" run --leader-elect --shards "$SHARDS" --lease-seconds "$LEASE" \
    --lease-namespace "$LEASE_NS" --identity "$1" --drift-interval 10m --config "$CFG" || fail "op-$1 did not start"
}
log "N=$N over $SHARDS shards (one namespace each), Lease ${LEASE}s, binary $BIN, work dir $WORK"
replica op-a; A_PID=$STARTED_PID; A_PORT=$STARTED_PORT
replica op-b; B_PID=$STARTED_PID; B_PORT=$STARTED_PORT
half=$(( SHARDS / 2 ))
deadline=$(( $(date +%s) + 4 * LEASE + 30 ))
until (( $(held_by op-a) >= half && $(held_by op-b) >= half )); do
  (( $(date +%s) < deadline )) || fail "the replicas did not share the shards: $(holders | tr '\n' ' ')"
  sleep 1
done
log "shards shared: $(holders | sort -n | tr '\n' ' ')"

# --- 1. all Ready, each table through its shard's holder
CP0=$(cp_cpu); REQ0=$(apiserver_requests); T0=$(now)
for ((k = 0; k < SHARDS; k++)); do
  kubectl apply --server-side --field-manager=bench -n "${NAMESPACES[$k]}" -f "$WORK/shard$k.yaml" >/dev/null || fail "kubectl apply of shard $k failed"
done
APPLY_S=$(since "$T0")
wait_ready "Ready" "$N" "$READY"
ALL_S=$(since "$T0")
CP_S=$(awk -v a="$CP0" -v b="$(cp_cpu)" 'BEGIN { printf "%.1f", b - a }'); REQS=$(( $(apiserver_requests) - REQ0 ))
declare -A HOLDER
while read -r s h; do HOLDER[$s]=$h; done < <(holders)
tables_json >"$WORK/tables.json"
by_a=$(jq '[.[] | select(.status.reconciledBy == "op-a")] | length' "$WORK/tables.json")
by_b=$(jq '[.[] | select(.status.reconciledBy == "op-b")] | length' "$WORK/tables.json")
holder_map=$(for s in "${!HOLDER[@]}"; do echo "$s ${HOLDER[$s]}"; done | jq -R 'split(" ") | {key: .[0], value: .[1]}' | jq -s from_entries)
wrong=$(jq --argjson h "$holder_map" '[.[] | select(.status.reconciledBy != $h[(.status.shard | tostring)])] | length' "$WORK/tables.json")
(( wrong == 0 )) || fail "$wrong tables were reconciled by a replica not holding their shard: $(jq -c --argjson h "$holder_map" '[.[] | select(.status.reconciledBy != $h[(.status.shard | tostring)]) | {ns: .metadata.namespace, name: .metadata.name, shard: .status.shard, by: .status.reconciledBy}] | .[:3]' "$WORK/tables.json")"
(( by_a > 0 && by_b > 0 )) || fail "one replica applied everything: op-a $by_a, op-b $by_b"
A_CPU=$(proc_cpu "$A_PID"); B_CPU=$(proc_cpu "$B_PID")
A_RSS=$(proc_mb "$A_PID" VmHWM); B_RSS=$(proc_mb "$B_PID" VmHWM)
A_REC=$(metric_at "$A_PORT" delta_operator_reconciles_total); B_REC=$(metric_at "$B_PORT" delta_operator_reconciles_total)
echo "two replicas, N=$N over $SHARDS shards: all Ready in $ALL_S s ($(rate "$N" "$ALL_S") tables/s; kubectl apply took $APPLY_S s) · apiserver+etcd CPU $CP_S s · apiserver requests $REQS"
echo "  op-a: shards $(holders | awk '$2 == "op-a" { print $1 }' | sort -n | paste -sd,) · applied $by_a tables · reconciles ${A_REC:-?} · CPU $A_CPU s ($(awk -v c="$A_CPU" -v n="$by_a" 'BEGIN { printf "%.1f", 1000 * c / n }') ms per table) · RSS peak $A_RSS MB"
echo "  op-b: shards $(holders | awk '$2 == "op-b" { print $1 }' | sort -n | paste -sd,) · applied $by_b tables · reconciles ${B_REC:-?} · CPU $B_CPU s ($(awk -v c="$B_CPU" -v n="$by_b" 'BEGIN { printf "%.1f", 1000 * c / n }') ms per table) · RSS peak $B_RSS MB"
echo "  every table reconciled by its shard's holder: 0 of $N otherwise"

# --- 2. op-a dies: op-b takes its shards within the Lease duration
DEAD_SHARDS=$(holders | awk '$2 == "op-a" { print $1 }' | sort -n)
kill -KILL "$A_PID"; wait "$A_PID" 2>/dev/null || true; A_PID=
T_KILL=$(now)
# op-a's last renewal (the latest renewTime of its Leases, read after the kill): the Lease
# runs out a Lease duration after it
LAST_RENEWAL=$(kubectl get lease -n "$LEASE_NS" -o json | jq -r '[.items[] | select(.spec.holderIdentity == "op-a") | .spec.renewTime
  | capture("^(?<s>[^.Z]+)(\\.(?<f>[0-9]+))?") | (.s + "Z" | fromdateiso8601) + ("0." + (.f // "0") | tonumber)] | max // empty')
[[ -n $LAST_RENEWAL ]] || fail "no Lease held by op-a after the kill"
deadline=$(( $(date +%s) + LEASE + 5 ))
until (( $(held_by op-b) == SHARDS )); do
  (( $(date +%s) < deadline )) || fail "op-b did not hold every shard within ${LEASE}s + 5 s of the kill: $(holders | tr '\n' ' ')"
  sleep 0.2
done
TAKEN_S=$(since "$T_KILL")
AFTER_RENEWAL_S=$(since "$LAST_RENEWAL")
echo "  op-a killed (-9): op-b held all $SHARDS shards $TAKEN_S s later, $AFTER_RENEWAL_S s after op-a's last renewal (Lease ${LEASE}s; op-a had shards $(paste -sd, <<<"$DEAD_SHARDS"))"

# --- 3. tables of the dead replica's shards changed: Ready through op-b
dead_k=$(head -n 1 <<<"$DEAD_SHARDS")
ns=${NAMESPACES[$dead_k]}
names=$(jq -r --arg ns "$ns" --argjson n "$CHANGED" '[.[] | select(.metadata.namespace == $ns) | .metadata.name] | sort | .[:$n] | .[]' "$WORK/tables.json")
n_changed=$(wc -l <<<"$names")
T1=$(now)
for name in $names; do
  kubectl patch deltatable "$name" -n "$ns" --type merge -p '{"spec":{"comment":"changed after the kill"}}' >/dev/null || fail "patching $ns/$name"
done
PATCH_S=$(since "$T1")
wait_ready "changed tables Ready through op-b" "$n_changed" \
  "$READY and .metadata.namespace == \"$ns\" and .status.reconciledBy == \"op-b\" and .status.observedGeneration == .metadata.generation and .spec.comment == \"changed after the kill\""
CHANGED_S=$(since "$T1")
all=$(tables_json | count_ready)
(( all == N )) || fail "after the hand-over only $all/$N Ready"
B_CPU2=$(proc_cpu "$B_PID")
echo "  $n_changed tables of shard $dead_k changed (patched in $PATCH_S s): all Ready at their new generation through op-b $CHANGED_S s after the first patch · all $N Ready · op-b CPU since the kill $(awk -v a="$B_CPU" -v b="$B_CPU2" 'BEGIN { printf "%.1f", b - a }') s · op-b RSS peak $(proc_mb "$B_PID" VmHWM) MB"
stop_pid "$B_PID"; B_PID=

# --- the same estate under one replica: its start costs (all N re-read, none to change)
T2=$(now)
start_operator "$WORK/op-solo.log" "$BIN" run --leader-elect --shards "$SHARDS" --lease-seconds "$LEASE" \
  --lease-namespace "$LEASE_NS" --identity op-solo --drift-interval 10m --config "$CFG" || fail "op-solo did not start"
SOLO_PID=$STARTED_PID; SOLO_PORT=$STARTED_PORT
wait_ready "reconciled by op-solo" "$N" "$READY and .status.reconciledBy == \"op-solo\""
SOLO_S=$(since "$T2")
echo "  for comparison, one replica restarted on the same $N tables (Leases free after ${LEASE}s, then nothing to change): all reconciled by it in $SOLO_S s · CPU $(proc_cpu "$SOLO_PID") s · RSS peak $(proc_mb "$SOLO_PID" VmHWM) MB · reconciles $(metric_at "$SOLO_PORT" delta_operator_reconciles_total)"
FAILED=0
