#!/usr/bin/env bash
# Start a real Spark Connect server (Spark local mode + Delta Lake) on 127.0.0.1 (README.md).
# Usage: start.sh [DIR]   (DIR defaults to a new mktemp -d; it holds the Spark warehouse and
#        local dirs, the log, the pid file and the env file)
# Env:   SPARK_CONNECT_PORT (default: a free port; Spark moves up if it gets taken),
#        START_TIMEOUT (s, default 300: a cold start resolves the Delta jars from Maven
#        Central), SPARK_CONNECT_DRIVER_MEMORY (default 1g), SPARK_CONNECT_MASTER (default
#        local[2]), SPARK_CONNECT_LOG_LEVEL (default warn), SPARK_CONNECT_CONF (extra
#        "key=value" Spark confs, one per line).
# Writes $DIR/env (exports SPARK_CONNECT_URL, SPARK_CONNECT_DIR, SPARK_CONNECT_PID,
# SPARK_CONNECT_PORT), $DIR/server.log, $DIR/server.pid; prints DIR on stdout.
#
# The Delta jars are resolved exactly as e2e/warehouse/start.sh does (same coordinate, same
# Ivy cache $CACHE/warehouse-ivy/<coord>/ and jars.txt), so both share one download. Ivy
# must not resolve into that cache from two processes at once: make runs the warehouse and
# this server one after the other (a second start.sh here waits on a lock; the warehouse
# does not take it).
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
CACHE=${DELTA_OPERATOR_CACHE:-$HOME/.cache/delta-operator}
TIMEOUT=${START_TIMEOUT:-300}

PY=$("$HERE/../warehouse/install.sh")

DIR=${1:-$(mktemp -d -t delta-sc.XXXXXX)}
mkdir -p "$DIR"
DIR=$(cd "$DIR" && pwd)
[[ ! -e $DIR/env && ! -e $DIR/server.pid ]] || { echo "start.sh: $DIR already holds a server (stop.sh it first)" >&2; exit 1; }
chmod 700 "$DIR"

# Maven coordinate as delta-spark's configure_spark_with_delta_pip computes it (the same
# computation as e2e/warehouse/start.sh), and where pyspark (SPARK_HOME) lives.
{ read -r COORD; read -r SPARK_HOME; } < <("$PY" - <<'PY'
import importlib.metadata as md, os, pyspark
print("io.delta:delta-spark_%s_2.13:%s" % (".".join(pyspark.__version__.split(".")[:2]), md.version("delta_spark")))
print(os.path.dirname(os.path.realpath(pyspark.__file__)))
PY
)
export SPARK_HOME
[[ -x $SPARK_HOME/bin/spark-submit ]] || { echo "start.sh: no spark-submit in $SPARK_HOME/bin" >&2; exit 1; }
IVY=$CACHE/warehouse-ivy/$(echo "$COORD" | tr ':' '_')
JARLIST=$IVY/jars.txt
jars_ok() {   # jars.txt names jars that all exist
  local j jars
  local -a js
  [[ -s $JARLIST ]] || return 1
  jars=$(tr -d '\n' <"$JARLIST")
  IFS=, read -ra js <<<"$jars"
  [[ ${#js[@]} -gt 0 ]] || return 1
  for j in "${js[@]}"; do [[ -f $j ]] || return 1; done
  JARS=$jars
}
JARS="" RESOLVE=0
if ! jars_ok; then
  mkdir -p "$IVY"
  if command -v flock >/dev/null; then   # one resolving start.sh (of ours) at a time
    exec 9>"$IVY.lock"
    flock -w "$TIMEOUT" 9 || { echo "start.sh: $IVY.lock still held after ${TIMEOUT}s" >&2; exit 1; }
  fi
  jars_ok || RESOLVE=1
fi
if [[ $RESOLVE == 1 ]]; then
  JAR_ARGS=(--packages "$COORD" --conf "spark.jars.ivy=$IVY")
  echo "start.sh: resolving $COORD into $IVY (Maven Central)" >&2
else
  JAR_ARGS=(--jars "$JARS")
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
PORT=${SPARK_CONNECT_PORT:-$(free_port)}
# A port picked here may be taken before the JVM binds it: let Spark try the next ones
# (the bound port is read back from the log). A port given by the caller is used or fails.
RETRIES=10; [[ -z ${SPARK_CONNECT_PORT:-} ]] || RETRIES=0

mkdir -p "$DIR/conf" "$DIR/spark-warehouse" "$DIR/spark-tmp"
cat >"$DIR/conf/log4j2.properties" <<LOG
rootLogger.level = ${SPARK_CONNECT_LOG_LEVEL:-warn}
rootLogger.appenderRef.stderr.ref = stderr
appender.console.type = Console
appender.console.name = stderr
appender.console.target = SYSTEM_ERR
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = %d{yy/MM/dd HH:mm:ss} %p %c{1}: %m%n%ex
# start.sh waits for this logger's "Spark Connect server started at: ..." line
logger.server.name = org.apache.spark.sql.connect.service.SparkConnectServer
logger.server.level = info
LOG
CONFS=(
  spark.connect.grpc.binding.address=127.0.0.1
  "spark.connect.grpc.binding.port=$PORT"
  "spark.connect.grpc.port.maxRetries=$RETRIES"
  spark.connect.session.manager.defaultSessionTimeout=2h
  spark.sql.extensions=io.delta.sql.DeltaSparkSessionExtension
  spark.sql.catalog.spark_catalog=org.apache.spark.sql.delta.catalog.DeltaCatalog
  "spark.sql.warehouse.dir=$DIR/spark-warehouse"
  "spark.local.dir=$DIR/spark-tmp"
  "spark.driver.memory=${SPARK_CONNECT_DRIVER_MEMORY:-1g}"
  "spark.driver.extraJavaOptions=-XX:+UseSerialGC -Dderby.system.home=$DIR -Djava.io.tmpdir=$DIR/spark-tmp"
  spark.driver.host=127.0.0.1
  spark.driver.bindAddress=127.0.0.1
  spark.ui.enabled=false
  spark.ui.showConsoleProgress=false
  spark.sql.shuffle.partitions=1
  spark.default.parallelism=1
  spark.databricks.delta.snapshotPartitions=1
  spark.sql.session.timeZone=UTC
)
while IFS= read -r c; do [[ -z $c ]] || CONFS+=("$c"); done <<<"${SPARK_CONNECT_CONF:-}"
CONF_ARGS=()
for c in "${CONFS[@]}"; do CONF_ARGS+=(--conf "$c"); done

# setsid: the JVM (spark-submit execs into it) leads its own process group; stop.sh ends it.
# PYSPARK_PYTHON: Python UDFs sent by clients run in the venv's python.
# shellcheck disable=SC2016  # $$ and "$@" belong to the inner sh
setsid sh -c 'echo $$ >"$0"; exec "$@"' "$DIR/server.pid" \
  env SPARK_CONF_DIR="$DIR/conf" SPARK_LOCAL_IP=127.0.0.1 PYSPARK_PYTHON="$PY" \
  "$SPARK_HOME/bin/spark-submit" --master "${SPARK_CONNECT_MASTER:-local[2]}" \
  --name delta-spark-connect --class org.apache.spark.sql.connect.service.SparkConnectServer \
  "${JAR_ARGS[@]}" "${CONF_ARGS[@]}" \
  </dev/null >"$DIR/server.log" 2>&1 9>&- &
fail() {
  local pid; pid=$(cat "$DIR/server.pid" 2>/dev/null || echo 0)
  if [[ $pid -gt 0 ]]; then kill -9 -- "-$pid" 2>/dev/null || kill -9 "$pid" 2>/dev/null || true; fi
  echo "start.sh: $* (logs kept in $DIR)" >&2
  echo "--- last lines of $DIR/server.log" >&2; tail -n 40 "$DIR/server.log" >&2 || true
  exit 1
}
trap 'fail "interrupted"' INT TERM

t0=$(date +%s%N)
deadline=$(( $(date +%s) + TIMEOUT ))
until grep -q 'Spark Connect server started' "$DIR/server.log" 2>/dev/null; do
  pid=$(cat "$DIR/server.pid" 2>/dev/null || echo 0)
  if [[ $pid -gt 0 ]] && ! kill -0 "$pid" 2>/dev/null; then fail "the server exited"; fi
  (( $(date +%s) < deadline )) || fail "not started after ${TIMEOUT}s"
  sleep 0.3
done
trap - INT TERM
pid=$(cat "$DIR/server.pid")
# "Spark Connect server started at: /127.0.0.1:PORT"
bound=$(sed -n 's/.*Spark Connect server started at: .*:\([0-9][0-9]*\).*/\1/p' "$DIR/server.log" | head -n 1)
[[ -n $bound ]] || fail "no port in the 'Spark Connect server started at' line"
[[ $RETRIES -gt 0 || $bound == "$PORT" ]] || fail "bound to port $bound, not $PORT"
PORT=$bound
if [[ $RESOLVE == 1 ]]; then   # first start: remember the resolved jars
  printf '%s\n' "$IVY"/jars/*.jar | paste -sd, >"$JARLIST.tmp" && mv "$JARLIST.tmp" "$JARLIST"
fi
exec 9>&-

URL=sc://127.0.0.1:$PORT
cat >"$DIR/env" <<ENV
export SPARK_CONNECT_URL=$URL
export SPARK_CONNECT_DIR=$DIR
export SPARK_CONNECT_PID=$pid
export SPARK_CONNECT_PORT=$PORT
ENV
chmod 600 "$DIR/env"
echo "start.sh: ready at $URL in $(( ($(date +%s%N) - t0) / 1000000 ))ms after spawn; source $DIR/env" >&2
echo "$DIR"
