#!/usr/bin/env bash
# Stop an emulator made by start.sh and remove its DIR.  Usage: stop.sh DIR
set -euo pipefail
DIR=$(cd "${1:?usage: stop.sh DIR}" && pwd)
[[ -f $DIR/server.pid && -f $DIR/server.log ]] || { echo "stop.sh: $DIR is not a start.sh dir" >&2; exit 1; }
pid=$(cat "$DIR/server.pid" 2>/dev/null || echo 0)
ours() { grep -qF -- "$DIR" "/proc/$pid/cmdline" 2>/dev/null; }
if [[ $pid -gt 0 ]] && ours; then
  kill "$pid" 2>/dev/null || true          # the Python server; its JVM child exits with it
  for _ in $(seq 1 100); do ours || break; sleep 0.1; done
  ! ours || kill -9 "$pid" 2>/dev/null || true
fi
# Spark's JVM is a child of the server in the same process group (setsid): end the group.
[[ $pid -gt 0 ]] && kill -9 -- "-$pid" 2>/dev/null || true
rm -rf "$DIR"
