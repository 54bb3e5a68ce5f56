#!/usr/bin/env bash
# Stop a Spark Connect server made by start.sh and remove its DIR.  Usage: stop.sh DIR
# Env: SPARK_CONNECT_KEEP=1 keeps DIR (logs, warehouse) instead of removing it.
set -euo pipefail
DIR=$(cd "${1:?usage: stop.sh DIR}" && pwd)
[[ -f $DIR/server.pid && -f $DIR/server.log ]] || { echo "stop.sh: $DIR is not a start.sh dir" >&2; exit 1; }
pid=$(cat "$DIR/server.pid" 2>/dev/null || echo 0)
[[ $pid =~ ^[0-9]+$ ]] || pid=0
ours() { grep -qF -- "$DIR" "/proc/$pid/cmdline" 2>/dev/null; }   # not a reused pid
group_alive() { kill -0 -- "-$pid" 2>/dev/null; }
if [[ $pid -gt 0 ]] && ours; then
  # The JVM leads its own process group (setsid in start.sh); Python UDF workers are in it.
  kill -TERM -- "-$pid" 2>/dev/null || kill -TERM "$pid" 2>/dev/null || true
  for _ in $(seq 1 150); do group_alive || break; sleep 0.1; done
  ! group_alive || kill -9 -- "-$pid" 2>/dev/null || true
  for _ in $(seq 1 50); do group_alive || break; sleep 0.1; done
fi
[[ ${SPARK_CONNECT_KEEP:-0} == 1 ]] || rm -rf "$DIR"
