#!/usr/bin/env bash
# Benchmark (not a test): how fast one operator process brings N new DeltaTables
# in one DeltaSchema to Ready=True against a real kube-apiserver + etcd.
#
#   e2e/with-controlplane.sh e2e/bench/controller.sh [N]      (N defaults to 500)
#   e2e/with-controlplane.sh e2e/warehouse/with-warehouse.sh env BENCH_TARGET=databricks e2e/bench/controller.sh [N]
#
# BENCH_TARGET=lake (the default) applies to Delta tables on local disk; databricks to the
# warehouse emulator (DATABRICKS_HOST/TOKEN/WAREHOUSE_ID and WAREHOUSE_URL from
# with-warehouse.sh): every DDL statement then runs on real Delta Lake on Spark in one local
# JVM, which, not the operator, bounds the rate there (the emulator's statement count and
# its CPU are printed beside the operator's).
#
# Uses the already-built binary:
#   ${CARGO_TARGET_DIR:-$HOME/.cache/delta-operator/target}/${PROFILE:-debug}/delta-operator
# (PROFILE=release for a release build; build it first with cargo build [--release]).
#
# Env: PROFILE (debug|release), BENCH_TIMEOUT (seconds to wait for all Ready, default 900),
#      BENCH_SCHEMAS (DeltaSchemas the tables are spread over, default one per 500 tables),
#      BENCH_APPLIES (the target's maxConcurrentApplies, default: the operator's default),
#      BENCH_IDLE (seconds of idle measured after all are Ready, default 30),
#      BENCH_DRIFT (the operator's --drift-interval, default 10m: at 20,000 tables a run lasts
#      longer than that, and the drift pass then runs beside the idle and the changes),
#      BENCH_CHANGES (after the idle, this many tables get a new comment one at a time, each
#      waited for until Ready at its new generation: the latency, and the operator's CPU and the
#      apiserver requests per change, at this N; default 20, 0 for none),
#      BENCH_RECONCILES (the operator's --max-reconciles, default: the operator's default),
#      BENCH_PRECREATE=1 (apply all the manifests first, then start the operator: the time
#      counts from its start, what a restarted or newly installed operator needs for an estate
#      already in the cluster, without kubectl apply's own time in it),
#      BENCH_KEEP=1 (keep the work dir: operator log, config, lake, samples),
#      BENCH_HEAPTRACK=1 (run the operator under heaptrack's preload library and print where
#      its heap is at its peak; needs the heaptrack package; its bookkeeping
#      slows the operator and adds to its RSS, so compare those figures only with each other),
#      DELTA_OPERATOR_LOG (the operator's log filter; default: the operator's own).
# Figures are for one operator process on whatever else the machine runs: the load
# average is printed with them.
#
# Measures: time from the start of `kubectl apply` to all N Ready=True, polled with one
# LIST of the namespace's DeltaTables per second (`kubectl get --raw`: the same request
# as `kubectl get deltatables -o json`, minus kubectl decoding and re-encoding every
# object, which costs ~0.5 CPU-s per poll at N=500 on a 2-core machine); reconciles/s
# (delta_operator_reconciles_total, DeltaTable and DeltaSchema reconciles, / elapsed);
# operator RSS (VmHWM peak and VmRSS now, from /proc); operator CPU time; the number of
# Delta commits (_delta_log/*.json under the lake); applies in flight at once (the operator's
# delta_operator_applies_in_flight_max); kube-apiserver requests (its apiserver_request_total,
# all clients: the operator's share dominates once kubectl apply is done) per reconcile; then
# the operator's CPU and RSS over BENCH_IDLE seconds of idle. Prints the figures at the end;
# samples.tsv in the work dir has one line per poll.
set -euo pipefail
# shellcheck source=e2e/bench/lib.sh
. "$(dirname "$0")/lib.sh"

N=${1:-500}
[[ $N =~ ^[1-9][0-9]*$ ]] || { echo "controller.sh: N must be a positive integer, got '$N'" >&2; exit 2; }
SCHEMAS=${BENCH_SCHEMAS:-$(( (N + 499) / 500 ))}
[[ $SCHEMAS =~ ^[1-9][0-9]*$ ]] || { echo "controller.sh: BENCH_SCHEMAS must be a positive integer, got '$SCHEMAS'" >&2; exit 2; }
IDLE=${BENCH_IDLE:-30}
[[ $IDLE =~ ^[0-9]+$ ]] || { echo "controller.sh: BENCH_IDLE must be whole seconds, got '$IDLE'" >&2; exit 2; }
RECONCILES_LIMIT=${BENCH_RECONCILES:-}
[[ -z $RECONCILES_LIMIT || $RECONCILES_LIMIT =~ ^[1-9][0-9]*$ ]] || { echo "controller.sh: BENCH_RECONCILES must be a positive integer, got '$RECONCILES_LIMIT'" >&2; exit 2; }
APPLIES=${BENCH_APPLIES:-}
PRECREATE=${BENCH_PRECREATE:-0}
[[ $PRECREATE == 0 || $PRECREATE == 1 ]] || { echo "controller.sh: BENCH_PRECREATE must be 0 or 1, got '$PRECREATE'" >&2; exit 2; }
[[ -z $APPLIES || $APPLIES =~ ^[1-9][0-9]*$ ]] || { echo "controller.sh: BENCH_APPLIES must be a positive integer, got '$APPLIES'" >&2; exit 2; }
[[ -n ${KUBECONFIG:-} && -n ${DELTA_OPERATOR_E2E_DIR:-} ]] || {
  echo "controller.sh: no control plane; run it as: e2e/with-controlplane.sh $0 [N]" >&2; exit 2; }
for t in kubectl jq curl awk find; do
  command -v "$t" >/dev/null || { echo "controller.sh: '$t' is required" >&2; exit 2; }
done

TARGET=${BENCH_TARGET:-lake}
case $TARGET in
  lake) ;;
  databricks)
    for v in DATABRICKS_HOST DATABRICKS_TOKEN DATABRICKS_WAREHOUSE_ID WAREHOUSE_URL; do
      [[ -n ${!v:-} ]] || { echo "controller.sh: BENCH_TARGET=databricks needs $v: run it inside e2e/warehouse/with-warehouse.sh" >&2; exit 2; }
    done ;;
  *) echo "controller.sh: BENCH_TARGET must be lake or databricks, got '$TARGET'" >&2; exit 2 ;;
esac

PROFILE=${PROFILE:-debug}
BIN=${CARGO_TARGET_DIR:-$HOME/.cache/delta-operator/target}/$PROFILE/delta-operator
[[ -x $BIN ]] || { echo "controller.sh: no operator binary at $BIN (build it: cargo build$([[ $PROFILE == release ]] && echo ' --release'))" >&2; exit 2; }
TIMEOUT=${BENCH_TIMEOUT:-900}
START_TIMEOUT=60
HEAPTRACK=${BENCH_HEAPTRACK:-0}
[[ $HEAPTRACK == 0 || $HEAPTRACK == 1 ]] || { echo "controller.sh: BENCH_HEAPTRACK must be 0 or 1, got '$HEAPTRACK'" >&2; exit 2; }
HEAPTRACK_LIB=/usr/lib/heaptrack/libheaptrack_preload.so
HEAPTRACK_INTERPRET=/usr/lib/heaptrack/libexec/heaptrack_interpret
if [[ $HEAPTRACK == 1 ]]; then
  for f in "$HEAPTRACK_LIB" "$HEAPTRACK_INTERPRET"; do
    [[ -e $f ]] || { echo "controller.sh: BENCH_HEAPTRACK=1 needs $f (apt-get install heaptrack)" >&2; exit 2; }
  done
  command -v heaptrack_print >/dev/null || { echo "controller.sh: BENCH_HEAPTRACK=1 needs heaptrack_print (apt-get install heaptrack)" >&2; exit 2; }
fi


WORK=$(mktemp -d -t delta-bench.XXXXXX)
LAKE=$WORK/lake
CFG=$WORK/config.yaml
OPLOG=$WORK/operator.log
NS=bench-$$-$RANDOM
OP_PID=
NS_CREATED=
FAILED=1

stop_operator() { stop_pid "$OP_PID"; OP_PID=; }

cleanup() {
  local rc=$?
  set +e
  stop_operator
  if [[ -n $NS_CREATED ]]; then
    # The operator is stopped first, and no table carries a finalizer (deletionPolicy Retain),
    # so the deletes go through. There is no controller-manager on this control plane, so the
    # namespace itself only reaches Terminating: don't wait for it.
    timeout 300 kubectl delete deltatables,deltaschemas --all -n "$NS" --wait=false >/dev/null 2>&1
    timeout 60 kubectl delete namespace "$NS" --wait=false >/dev/null 2>&1
  fi
  if [[ $FAILED == 1 || ${BENCH_KEEP:-} == 1 ]]; then
    log "work dir kept: $WORK (operator.log, config.yaml, lake/, samples.tsv)"
  else
    rm -rf "$WORK"
  fi
  exit "$rc"
}
trap cleanup EXIT
trap 'log "interrupted"; exit 130' INT TERM

fail() {
  log "FAILED: $*"
  if [[ -s $OPLOG ]]; then
    log "--- last lines of $OPLOG"
    tail -n 30 "$OPLOG" | sed 's/\x1b\[[0-9;]*m//g' >&2 || true
  fi
  exit 1
}

# where a process's resident memory is, in MB, from /proc/PID/smaps: the binary's own pages
# (file-backed), [heap] (malloc's main arena), other anonymous mappings (malloc's thread
# arenas and large blocks, thread stacks) and their count
rss_by_mapping() {
  awk -v bin="$2" '
    /^[0-9a-f]+-[0-9a-f]+ / { path = $6; kind = (path == bin ? "binary" : path == "[heap]" ? "heap" : path == "" ? "anon" : "other"); if (kind == "anon") n++; next }
    $1 == "Rss:" { mb[kind] += $2 / 1024 }
    END { printf "binary %.0f MB · [heap] %.0f MB · other anonymous %.0f MB (%d mappings) · other files %.0f MB", mb["binary"], mb["heap"], mb["anon"], n, mb["other"] }' "/proc/$1/smaps" 2>/dev/null || echo "?"
}
metric() { metric_at "$PORT" "$1"; } # name -> value (empty when the endpoint does not answer)
# what the target was asked to write: Delta commits on the lake, statements on the emulator
commits() {
  if [[ $TARGET == lake ]]; then
    find "$LAKE" -path '*/_delta_log/*.json' -type f 2>/dev/null | wc -l
  else
    emulator total_statements
  fi
}
# a figure of the emulator's request log (total_statements, total_requests, warehouse_starts)
emulator() {
  curl -fsS --max-time 10 "$WAREHOUSE_URL/_emulator/requests?since=1000000000000" 2>/dev/null | jq -r ".$1 // 0" || echo 0
}
# CPU seconds of the emulator's process tree (its Python server and Spark's JVM)
emulator_cpu() {
  [[ $TARGET == databricks ]] || { echo 0; return; }
  local total=0 p
  for p in $(pgrep -f 'e2e/warehouse/server.py|org.apache.spark' 2>/dev/null); do
    total=$(awk -v a="$total" -v b="$(proc_cpu "$p")" 'BEGIN { print a + b }')
  done
  echo "$total"
}


# --- manifests: SCHEMAS DeltaSchemas, N DeltaTables of 5 to 10 columns, a comment and a CHECK each
gen_yaml() {
  local types=(string int double date timestamp boolean smallint float 'decimal(12,2)')
  local i c ncols s
  for ((s = 0; s < SCHEMAS; s++)); do
    printf -- '---\napiVersion: delta-operator.io/v1alpha1\nkind: DeltaSchema\nmetadata: {name: bench%d}\nspec: {catalog: main, name: bench%d}\n' "$s" "$s"
  done
  for ((i = 0; i < N; i++)); do
    ncols=$(( 5 + i % 6 ))
    printf -- '---\napiVersion: delta-operator.io/v1alpha1\nkind: DeltaTable\nmetadata: {name: t%05d}\nspec:\n  schemaRef: bench%d\n  comment: Benchmark table %d of %d\n  columns:\n' "$i" $(( i % SCHEMAS )) "$i" "$N"
    printf '    - {name: id, type: bigint, nullable: false, comment: Row key}\n'
    for ((c = 1; c < ncols; c++)); do
      if (( c % 3 == 0 )); then
        printf '    - {name: c%d, type: "%s", comment: column %d}\n' "$c" "${types[(i + c) % ${#types[@]}]}" "$c"
      else
        printf '    - {name: c%d, type: "%s"}\n' "$c" "${types[(i + c) % ${#types[@]}]}"
      fi
    done
    printf '  constraints:\n    - check: {name: id_positive, expression: id > 0}\n'
  done
}

# --- start
log "N=$N, target $TARGET, binary $BIN, work dir $WORK"
mkdir -p "$LAKE"
if [[ $TARGET == lake ]]; then
  cat >"$CFG" <<EOF
targets:
  lake:
    lake: {root: $LAKE}
    namespaces: ['*']
    schemas: ['*']
EOF
else
  cat >"$CFG" <<EOF
targets:
  dbx:
    databricks:
      host: $DATABRICKS_HOST
      warehouseId: $DATABRICKS_WAREHOUSE_ID
      auth: {tokenEnv: DATABRICKS_TOKEN}
    namespaces: ['*']
    schemas: ['main.bench*']
defaultTarget: dbx
EOF
fi
[[ -n $APPLIES ]] && echo "    maxConcurrentApplies: $APPLIES" >>"$CFG"
gen_yaml >"$WORK/manifests.yaml"

# Unity Catalog schemas are made outside the operator (a DeltaSchema manages one that exists):
# on the emulator, by the statements API, as a workspace admin would
if [[ $TARGET == databricks ]]; then
  for ((s = 0; s < SCHEMAS; s++)); do
    out=$(curl -fsS --max-time 120 -H "Authorization: Bearer $DATABRICKS_TOKEN" -H 'Content-Type: application/json' \
      -d "{\"warehouse_id\": \"$DATABRICKS_WAREHOUSE_ID\", \"statement\": \"CREATE SCHEMA IF NOT EXISTS main.bench$s\", \"wait_timeout\": \"50s\"}" \
      "$DATABRICKS_HOST/api/2.0/sql/statements") || fail "CREATE SCHEMA main.bench$s on the emulator"
    [[ $(jq -r '.status.state' <<<"$out") == SUCCEEDED ]] || fail "CREATE SCHEMA main.bench$s: $out"
  done
fi

kubectl create namespace "$NS" >/dev/null
NS_CREATED=1

apply_manifests() {
  local t; t=$(now)
  kubectl apply --server-side --field-manager=bench -n "$NS" -f "$WORK/manifests.yaml" >/dev/null || fail "kubectl apply failed"
  APPLY_S=$(since "$t")
  log "applied in $APPLY_S s"
}
# the clock: from the start of kubectl apply, or with BENCH_PRECREATE from the operator's start
start_clock() {
  CP_CPU0=$(cp_cpu)
  EMU_CPU0=$(emulator_cpu)
  REQ0=$(apiserver_requests)
  LOAD0=$(cut -d' ' -f1 /proc/loadavg)
  T0=$(now)
}
if [[ $PRECREATE == 1 ]]; then
  log "applying $SCHEMAS DeltaSchemas + $N DeltaTables before the operator starts"
  apply_manifests
  start_clock
fi

# Port 0: the operator binds a free port and prints `listening on ADDR` on stdout (no race
# for a port chosen here). DELTA_OPERATOR_LOG, when set, passes through; unset, the
# operator's own default filter applies.
# With BENCH_HEAPTRACK the operator itself is still $OP_PID: heaptrack's library is preloaded
# into it (what the heaptrack script does) and its interpreter reads the data from a FIFO.
PRELOAD=()
if [[ $HEAPTRACK == 1 ]]; then
  mkfifo "$WORK/heaptrack.fifo"
  "$HEAPTRACK_INTERPRET" <"$WORK/heaptrack.fifo" | gzip -1 >"$WORK/heaptrack.gz" &
  HEAPTRACK_PID=$!
  PRELOAD=(env "LD_PRELOAD=$HEAPTRACK_LIB" "DUMP_HEAPTRACK_OUTPUT=$WORK/heaptrack.fifo")
fi
"${PRELOAD[@]}" "$BIN" run --namespace "$NS" --lease-namespace "$NS" --drift-interval "${BENCH_DRIFT:-10m}" --listen 127.0.0.1:0 --config "$CFG" \
  ${RECONCILES_LIMIT:+--max-reconciles "$RECONCILES_LIMIT"} \
  </dev/null >"$OPLOG" 2>&1 &
OP_PID=$!
PORT=
deadline=$(( $(date +%s) + START_TIMEOUT ))
until [[ -n $PORT ]] && curl -fsS --max-time 2 "http://127.0.0.1:$PORT/readyz" >/dev/null 2>&1; do
  [[ -n $PORT ]] || PORT=$(sed -n 's/^listening on .*:\([0-9][0-9]*\)$/\1/p' "$OPLOG" | head -n 1)
  kill -0 "$OP_PID" 2>/dev/null || fail "the operator exited at start"
  (( $(date +%s) < deadline )) || fail "the operator did not print its port and answer /readyz within ${START_TIMEOUT}s (port: ${PORT:-not printed})"
  sleep 0.2
done
if [[ $PRECREATE == 1 ]]; then
  R0=0 # a new process: every reconcile it ran is one of this run's
  log "operator pid $OP_PID ready on 127.0.0.1:$PORT after $(since "$T0") s (RSS $(proc_mb "$OP_PID" VmRSS) MB)"
else
  R0=$(metric delta_operator_reconciles_total); R0=${R0:-0}
  log "operator pid $OP_PID ready on 127.0.0.1:$PORT (RSS $(proc_mb "$OP_PID" VmRSS) MB); applying $SCHEMAS DeltaSchemas + $N DeltaTables"
  # --- apply and wait
  start_clock
  apply_manifests
fi

printf 't_s\tready\tstalled\treconciles\trss_mb\tcpu_s\tcommits\n' >"$WORK/samples.tsv"
deadline=$(( $(date +%s) + TIMEOUT ))
last_report=0
ready=0
T_FIRST=
T_HALF=
while :; do
  kill -0 "$OP_PID" 2>/dev/null || fail "the operator exited (pid $OP_PID); $ready/$N Ready"
  if json=$(kubectl get --raw "/apis/delta-operator.io/v1alpha1/namespaces/$NS/deltatables" 2>/dev/null); then
    read -r ready stalled < <(jq -r '[.items[] | (.status.conditions // []) as $c
        | [($c | any(.type == "Ready" and .status == "True")), ($c | any(.type == "Stalled" and .status == "True"))]]
      | "\(map(select(.[0])) | length) \(map(select(.[1])) | length)"' <<<"$json") || true
  fi
  t=$(since "$T0")
  printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$t" "$ready" "${stalled:-0}" "$(metric delta_operator_reconciles_total)" \
    "$(proc_mb "$OP_PID" VmRSS)" "$(proc_cpu "$OP_PID")" "$(commits)" >>"$WORK/samples.tsv"
  [[ -z $T_FIRST ]] && (( ready > 0 )) && T_FIRST=$t
  [[ -z $T_HALF ]] && (( 2 * ready >= N )) && T_HALF=$t
  (( ready >= N )) && break
  if (( $(date +%s) >= deadline )); then
    reasons=$(jq -r '[.items[] | ((.status.conditions // []) | map(select(.type == "Ready")) | first) as $r
        | select($r.status != "True") | ($r.reason // "no status yet")] | group_by(.) | map("\(.[0]) \(length)") | join(", ")' <<<"${json:-}" 2>/dev/null || true)
    fail "timed out after ${TIMEOUT}s: $ready/$N Ready; not Ready, by reason: ${reasons:-?}"
  fi
  if (( $(date +%s) - last_report >= 15 )); then
    log "t=${t}s: $ready/$N Ready, ${stalled:-0} Stalled, reconciles $(metric delta_operator_reconciles_total), RSS $(proc_mb "$OP_PID" VmRSS) MB, CPU $(proc_cpu "$OP_PID") s"
    last_report=$(date +%s)
  fi
  # one poll per second: sleep until the next whole second after T0 (none when a poll ran long)
  sleep "$(awk -v t0="$T0" -v n="$(now)" 'BEGIN { e = n - t0; s = int(e) + 1 - e; printf "%.3f", (s < 0.05 ? 0.05 : s) }')"
done
ELAPSED=$(since "$T0")
REQ1=$(apiserver_requests)

# --- idle: nothing changes; what does the operator cost?
IDLE_CPU0=$(proc_cpu "$OP_PID")
IDLE_W0=$(commits)
IDLE_R0=$(metric delta_operator_reconciles_total); IDLE_R0=${IDLE_R0:-0}
sleep "$IDLE"
IDLE_CPU=$(awk -v a="$IDLE_CPU0" -v b="$(proc_cpu "$OP_PID")" -v t="$IDLE" 'BEGIN { printf "%.3f", (t > 0 ? (b - a) / t : 0) }')
IDLE_RSS=$(proc_mb "$OP_PID" VmRSS)
IDLE_MAPS=$(rss_by_mapping "$OP_PID" "$(readlink -f "$BIN")")
IDLE_R=$(( $(metric delta_operator_reconciles_total) - IDLE_R0 ))
IDLE_W=$(( $(commits) - IDLE_W0 ))

# --- one changed table at a time: what a change costs beside N tables
CHANGES=${BENCH_CHANGES:-20}
[[ $CHANGES =~ ^[0-9]+$ ]] || fail "BENCH_CHANGES must be a whole number, got '$CHANGES'"
(( CHANGES <= N )) || CHANGES=$N
CHANGE_LINE=
if (( CHANGES > 0 )); then
  CH_CPU0=$(proc_cpu "$OP_PID"); CH_REQ0=$(apiserver_requests); CH_R0=$(metric delta_operator_reconciles_total)
  : >"$WORK/changes.tsv"
  for ((c = 0; c < CHANGES; c++)); do
    name=$(printf 't%05d' $(( (c * 7919) % N )))
    t=$(now)
    gen=$(kubectl patch deltatable "$name" -n "$NS" --type merge -p "{\"spec\":{\"comment\":\"changed $c\"}}" -o jsonpath='{.metadata.generation}') \
      || fail "patching $name"
    deadline=$(( $(date +%s) + 60 ))
    until kubectl get --raw "/apis/delta-operator.io/v1alpha1/namespaces/$NS/deltatables/$name" 2>/dev/null \
        | jq -e --argjson g "$gen" '.status.observedGeneration == $g and ((.status.conditions // []) | any(.type == "Ready" and .status == "True"))' >/dev/null; do
      (( $(date +%s) < deadline )) || fail "$name not Ready at generation $gen within 60 s of its change"
      sleep 0.05
    done
    since "$t" >>"$WORK/changes.tsv"
  done
  CH_CPU=$(awk -v a="$CH_CPU0" -v b="$(proc_cpu "$OP_PID")" -v n="$CHANGES" 'BEGIN { printf "%.0f", 1000 * (b - a) / n }')
  CH_REQ=$(( $(apiserver_requests) - CH_REQ0 ))
  CH_R=$(( $(metric delta_operator_reconciles_total) - CH_R0 ))
  CH_LAT=$(sort -n "$WORK/changes.tsv" | awk '{ v[NR] = $1 } END { printf "median %.1f s, max %.1f s", v[int((NR + 1) / 2)], v[NR] }')
  CHANGE_LINE="  $CHANGES tables changed one at a time (a new comment), each to Ready at its new generation: $CH_LAT (polled every 50 ms, kubectl's own time included) · operator CPU $CH_CPU ms per change · apiserver requests $(rate "$CH_REQ" "$CHANGES") per change (all clients, the polls included) · reconciles $CH_R"
fi

# --- figures
R1=$(metric delta_operator_reconciles_total); R1=${R1:-0}
RECONCILES=$(( R1 - R0 ))
DUR_SUM=$(metric delta_operator_reconcile_duration_seconds_sum)
FAILURES=$(curl -fsS --max-time 5 "http://127.0.0.1:$PORT/metrics" 2>/dev/null | awk '/^delta_operator_reconcile_failures_total/ { s += $2 } END { print s + 0 }')
RSS_PEAK=$(proc_mb "$OP_PID" VmHWM)
RSS_NOW=$(proc_mb "$OP_PID" VmRSS)
CPU=$(proc_cpu "$OP_PID")
CP_CPU=$(awk -v a="$CP_CPU0" -v b="$(cp_cpu)" 'BEGIN { printf "%.1f", b - a }')
EMU_CPU=$(awk -v a="$EMU_CPU0" -v b="$(emulator_cpu)" 'BEGIN { printf "%.1f", b - a }')
LOAD1=$(cut -d' ' -f1 /proc/loadavg)
COMMITS=$(commits)
if [[ $TARGET == lake ]]; then
  TABLES=$(find "$LAKE" -type d -name _delta_log 2>/dev/null | wc -l)
  WRITES="commits $COMMITS"
else
  TABLES="(in the emulator)"
  WRITES="statements $COMMITS, HTTP requests $(emulator total_requests), warehouse starts $(emulator warehouse_starts)"
fi
WARNINGS=$(sed 's/\x1b\[[0-9;]*m//g' "$OPLOG" | grep -c -E '^[^ ]+ +(WARN|ERROR) ' || true)

MEAN_MS=$(awk -v s="${DUR_SUM:-0}" -v n="$R1" 'BEGIN { printf "%.0f", (n > 0 ? 1000 * s / n : 0) }')
IN_FLIGHT=$(metric delta_operator_applies_in_flight_max)
REQS=$(( REQ1 - REQ0 ))
echo "N=$N ($TARGET) all Ready in $ELAPSED s · $(rate "$N" "$ELAPSED") tables/s · reconciles $RECONCILES ($(rate "$RECONCILES" "$ELAPSED")/s) · RSS peak $RSS_PEAK MB · $WRITES"
if [[ $PRECREATE == 1 ]]; then
  echo "  counted from the operator's start, the $N DeltaTables applied before it (kubectl apply took $APPLY_S s, not counted) · first Ready at ${T_FIRST:-?} s · half at ${T_HALF:-?} s · Delta tables $TABLES"
else
  echo "  first Ready seen at ${T_FIRST:-?} s (polls start when kubectl apply returns) · half at ${T_HALF:-?} s · kubectl apply (server-side) took $APPLY_S s · Delta tables $TABLES"
fi
echo "  operator ($PROFILE): CPU $CPU s ($(rate "$CPU" "$ELAPSED") cores avg) · RSS now $RSS_NOW MB · reconcile time sum ${DUR_SUM:-?} s (mean $MEAN_MS ms) · failed reconciles $FAILURES · WARN/ERROR log lines $WARNINGS"
echo "  applies in flight at most ${IN_FLIGHT:-?} (maxConcurrentApplies ${APPLIES:-default}, --max-reconciles ${RECONCILES_LIMIT:-default}) · $SCHEMAS DeltaSchemas · apiserver requests $REQS ($(rate "$REQS" "$RECONCILES") per reconcile)"
echo "  idle ${IDLE}s after: operator CPU $IDLE_CPU cores · RSS $IDLE_RSS MB · reconciles $IDLE_R · $([[ $TARGET == lake ]] && echo commits || echo statements) $IDLE_W"
echo "  idle RSS by mapping: $IDLE_MAPS"
[[ -n $CHANGE_LINE ]] && echo "$CHANGE_LINE"
echo "  kube-apiserver+etcd CPU $CP_CPU s ·$([[ $TARGET == databricks ]] && echo " emulator (server + Spark) CPU $EMU_CPU s ·") load average $LOAD0 → $LOAD1 on $(nproc) CPUs · reconciles = DeltaTable + DeltaSchema reconciles"
if [[ $HEAPTRACK == 1 ]]; then
  # heaptrack's data is complete once the operator has exited
  stop_operator
  wait "$HEAPTRACK_PID" 2>/dev/null || true
  echo "  heap (heaptrack, $WORK/heaptrack.gz; kept): the largest allocation sites at the peak"
  heaptrack_print --print-peaks 1 --print-allocators 0 --print-temporary 0 --peak-limit 12 --sub-peak-limit 3 \
    --print-leaks 0 "$WORK/heaptrack.gz" 2>/dev/null | sed 's/^/    /' || echo "    heaptrack_print failed"
  BENCH_KEEP=1
fi
FAILED=0
