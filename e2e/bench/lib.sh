# Shared by the control-plane benchmarks (controller.sh, shards.sh): sourced, not run.
# Process figures from /proc, the control plane's CPU and request count, clocks.

log() { echo "bench: $*" >&2; }
now() { date +%s.%N; }
since() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.1f", b - a }'; }

# status field of /proc/PID/status in MB (kB / 1024)
proc_mb() { awk -v k="$2:" '$1 == k { printf "%.0f", $2 / 1024 }' "/proc/$1/status" 2>/dev/null || echo 0; }
# user+system CPU seconds of a process
proc_cpu() { awk -v hz="$(getconf CLK_TCK)" '{ sub(/.*\) /, ""); printf "%.1f", ($12 + $13) / hz }' "/proc/$1/stat" 2>/dev/null || echo 0; }
# one metric of an operator listening on 127.0.0.1:PORT (empty when it does not answer)
metric_at() { # port name
  curl -fsS --max-time 5 "http://127.0.0.1:$1/metrics" 2>/dev/null | awk -v m="$2" '$1 == m { print $2 }'
}
# CPU seconds of kube-apiserver + etcd (their pids come from the control plane's env file)
cp_cpu() {
  local total=0 p
  for p in ${APISERVER_PID:-} ${ETCD_PID:-}; do total=$(awk -v a="$total" -v b="$(proc_cpu "$p")" 'BEGIN { print a + b }'); done
  echo "$total"
}
# apiserver_request_total summed over every label set
apiserver_requests() {
  kubectl get --raw /metrics 2>/dev/null | awk '/^apiserver_request_total[{ ]/ { s += $NF } END { printf "%.0f", s }'
}
# a / b with one decimal (0 when b is 0)
rate() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.1f", (b > 0 ? a / b : 0) }'; }
# Starts the operator binary BIN with ARGS… (stdout+stderr to LOG) and waits until it prints
# its port (`listening on ADDR`, port 0 asked) and answers /readyz; sets STARTED_PID, STARTED_PORT.
start_operator() { # log bin args…
  local oplog=$1; shift
  "$@" --listen 127.0.0.1:0 </dev/null >"$oplog" 2>&1 &
  STARTED_PID=$!
  STARTED_PORT=
  local deadline=$(( $(date +%s) + ${START_TIMEOUT:-60} ))
  until [[ -n $STARTED_PORT ]] && curl -fsS --max-time 2 "http://127.0.0.1:$STARTED_PORT/readyz" >/dev/null 2>&1; do
    [[ -n $STARTED_PORT ]] || STARTED_PORT=$(sed -n 's/^listening on .*:\([0-9][0-9]*\)$/\1/p' "$oplog" | head -n 1)
    kill -0 "$STARTED_PID" 2>/dev/null || { log "the operator exited at start: $(tail -n 5 "$oplog")"; return 1; }
    (( $(date +%s) < deadline )) || { log "the operator did not answer /readyz within ${START_TIMEOUT:-60}s"; return 1; }
    sleep 0.2
  done
}
# Stops a process: TERM, up to 10 s, then KILL.
stop_pid() {
  local pid=$1
  [[ -n $pid ]] || return 0
  if kill -0 "$pid" 2>/dev/null; then
    kill -TERM "$pid" 2>/dev/null || true
    for _ in $(seq 1 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.2; done
    kill -0 "$pid" 2>/dev/null && kill -KILL "$pid" 2>/dev/null || true
  fi
  wait "$pid" 2>/dev/null || true
}
