#!/usr/bin/env bash
# Start the Databricks SQL warehouse + Unity Catalog emulator on 127.0.0.1 (see README.md).
# Usage: start.sh [DIR]   (DIR defaults to a new mktemp -d; it holds the Spark warehouse,
#        logs and the env file)
# Env:   WAREHOUSE_PORT (default: a free port), WAREHOUSE_HOST (the address it listens on and
#        the URL names; default 127.0.0.1; e2e/node sets the node's address for pods), START_TIMEOUT (s, default 300: a cold
#        start resolves the jars from Maven Central), WAREHOUSE_FAULTS (JSON, see README),
#        WAREHOUSE_CHUNK_ROWS, WAREHOUSE_CATALOGS, WAREHOUSE_SPARK_MASTER, ...
# Writes $DIR/env (exports), $DIR/server.log; prints DIR on stdout.
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
CACHE=${DELTA_OPERATOR_CACHE:-$HOME/.cache/delta-operator}
command -v curl >/dev/null || { echo "start.sh: 'curl' is required" >&2; exit 1; }

PY=$("$HERE/install.sh")

DIR=${1:-$(mktemp -d -t delta-wh.XXXXXX)}
mkdir -p "$DIR"
DIR=$(cd "$DIR" && pwd)
[[ ! -e $DIR/env ]] || { echo "start.sh: $DIR already holds a warehouse (stop.sh it first)" >&2; exit 1; }
chmod 700 "$DIR"

# Jars: Maven coordinates as delta-spark's configure_spark_with_delta_pip computes them;
# resolved once by Ivy into a cache keyed by the coordinates, then passed as plain jars.
COORD=$("$PY" - <<'PY'
import importlib.metadata as md, pyspark
print("io.delta:delta-spark_%s_2.13:%s" % (".".join(pyspark.__version__.split(".")[:2]), md.version("delta_spark")))
PY
)
IVY=$CACHE/warehouse-ivy/$(echo "$COORD" | tr ':' '_')
JARLIST=$IVY/jars.txt
export WAREHOUSE_JARS="" WAREHOUSE_PACKAGES="" WAREHOUSE_IVY=""
if [[ -s $JARLIST ]] && tr -d '\n' <"$JARLIST" | xargs -d, ls >/dev/null 2>&1; then
  WAREHOUSE_JARS=$(cat "$JARLIST")
else
  WAREHOUSE_PACKAGES=$COORD WAREHOUSE_IVY=$IVY
fi

EPH_LOW=$(cut -f1 /proc/sys/net/ipv4/ip_local_port_range 2>/dev/null || echo 32768)
free_port() {
  local p
  for _ in $(seq 1 100); do
    p=$(( 10000 + RANDOM % (EPH_LOW - 10000) ))
    if ! (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then echo "$p"; return; fi
  done
  echo "start.sh: no free port found" >&2; return 1
}
PORT=${WAREHOUSE_PORT:-$(free_port)}
HOST=${WAREHOUSE_HOST:-127.0.0.1}

setsid sh -c 'echo $$ >"$0"; exec "$@"' "$DIR/server.pid" \
  "$PY" "$HERE/server.py" --dir "$DIR" --host "$HOST" --port "$PORT" </dev/null >"$DIR/server.log" 2>&1 &
fail() {
  local pid; pid=$(cat "$DIR/server.pid" 2>/dev/null || echo 0)
  [[ $pid -gt 0 ]] && kill -9 "$pid" 2>/dev/null || true
  echo "start.sh: $* (logs kept in $DIR)" >&2
  echo "--- last lines of $DIR/server.log" >&2; tail -n 30 "$DIR/server.log" >&2 || true
  exit 1
}
trap 'fail "interrupted"' INT TERM

t0=$(date +%s%N)
deadline=$(( $(date +%s) + ${START_TIMEOUT:-300} ))
until [[ -s $DIR/server.json ]] && curl -fsS --max-time 2 "http://$HOST:$PORT/_emulator/health" >/dev/null 2>&1; do
  pid=$(cat "$DIR/server.pid" 2>/dev/null || echo 0)
  [[ $pid -gt 0 ]] && ! kill -0 "$pid" 2>/dev/null && fail "the emulator exited"
  grep -q '"spark": "failed"' <(curl -sS --max-time 2 "http://$HOST:$PORT/_emulator/health" 2>/dev/null) && fail "Spark failed to start"
  (( $(date +%s) < deadline )) || fail "not healthy after ${START_TIMEOUT:-300}s"
  sleep 0.3
done
trap - INT TERM
if [[ -n $WAREHOUSE_PACKAGES ]]; then   # first start: remember the resolved jars
  ls "$IVY"/jars/*.jar | paste -sd, >"$JARLIST.tmp" && mv "$JARLIST.tmp" "$JARLIST"
fi

J() { "$PY" -c 'import json,sys; print(json.load(open(sys.argv[1]))[sys.argv[2]])' "$DIR/server.json" "$1"; }
URL=http://$HOST:$PORT
cat >"$DIR/env" <<ENV
export WAREHOUSE_DIR=$DIR
export WAREHOUSE_URL=$URL
export WAREHOUSE_PID=$(J pid)
export DATABRICKS_HOST=$URL
export DATABRICKS_TOKEN=$(J token)
export DATABRICKS_WAREHOUSE_ID=$(J warehouse_id)
export DATABRICKS_CLIENT_ID=$(J client_id)
export DATABRICKS_CLIENT_SECRET=$(J client_secret)
ENV
chmod 600 "$DIR/env"
echo "start.sh: ready at $URL in $(( ($(date +%s%N) - t0) / 1000000 ))ms after spawn; source $DIR/env" >&2
echo "$DIR"
