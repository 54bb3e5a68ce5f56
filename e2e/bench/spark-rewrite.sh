#!/usr/bin/env bash
# Benchmark (not a test): the same rewrite of the same table on the lake backend (the
# operator's pod rewrites it with delta-rs) and on a Spark Connect target (Spark rewrites it;
# the operator only sends statements), with the operator process's peak RSS and the bytes it
# read from disk, so the two can be compared in one run.
#
#   e2e/bench/spark-rewrite.sh [ROWS]     (ROWS defaults to 5000000)
#
# The change is a staged type conversion (num: string → int, every value converts): a stage,
# its check, and the checked replace. Starts a Spark Connect server
# (e2e/spark-connect/with-spark-connect.sh) unless SPARK_CONNECT_URL is set. PROFILE=release
# uses the release binary (default: dev, as CI builds it).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
ROWS=${1:-5000000}
CACHE=${DELTA_OPERATOR_CACHE:-$HOME/.cache/delta-operator}
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$CACHE/target}"
PROFILE=${PROFILE:-dev}
if [[ -z ${SPARK_CONNECT_URL:-} ]]; then
  exec "$repo/e2e/spark-connect/with-spark-connect.sh" "$0" "$@"
fi
dir_for_profile=debug
[[ $PROFILE == release ]] && dir_for_profile=release
bin=$CARGO_TARGET_DIR/$dir_for_profile/delta-operator
[[ -x $bin ]] || { echo "spark-rewrite.sh: build the binary first (cargo build --profile $PROFILE)" >&2; exit 1; }
py=${DELTA_OPERATOR_PYTHON:-$CACHE/venv/bin/python}
[[ -x $py ]] || { echo "spark-rewrite.sh: no Python with deltalake at $py (make python)" >&2; exit 1; }

work=$(mktemp -d -t delta-bench-rw.XXXXXX)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/m"
cat >"$work/m/schema.yaml" <<'EOF'
apiVersion: delta-operator.io/v1alpha1
kind: DeltaSchema
metadata: {name: sales}
spec: {catalog: main}
EOF
spec() {
  cat >"$work/m/t.yaml" <<EOF
apiVersion: delta-operator.io/v1alpha1
kind: DeltaTable
metadata: {name: t}
spec:
  schemaRef: sales
  columns:
    - {name: id, type: bigint}
    - {name: num, type: $1}
    - {name: pad, type: string}
EOF
}
cat >"$work/config.yaml" <<EOF
targets:
  lake:
    lake: {root: $work/lake}
  spark:
    sparkConnect: {url: "$SPARK_CONNECT_URL", root: "$work/spark"}
EOF

# the table: created by the operator, filled by python deltalake, copied for the Spark target
spec string
"$bin" apply -f "$work/m" --config "$work/config.yaml" --target lake >/dev/null
"$py" - "$work/lake/main/sales/t" "$ROWS" <<'PY'
import sys, pyarrow as pa, pyarrow.compute as pc, deltalake
path, rows = sys.argv[1], int(sys.argv[2])
step = 1_000_000
for start in range(0, rows, step):
    n = min(step, rows - start)
    ids = pa.array(range(start, start + n), pa.int64())
    t = pa.table({"id": ids, "num": pc.cast(ids, pa.string()),
                  # 48 hex digits that do not repeat: the files are about as large as the data
                  "pad": pa.array([("%016x" % ((i * 0x9E3779B97F4A7C15) % 2**64)) * 3
                                   for i in range(start, start + n)])})
    deltalake.write_deltalake(path, t, mode="append")
PY
cp -a "$work/lake" "$work/spark"
size=$(du -sb "$work/lake/main/sales/t" | cut -f1)
echo "table: $ROWS rows, $(( size / 1024 / 1024 )) MiB on disk"

# runs the apply in the background, sampling the process's read bytes (rchar: everything it
# read, page cache or not) and its peak RSS until it exits
measure() {
  local target=$1 pid rchar=0 hwm=0 r h
  "$bin" apply -f "$work/m" --config "$work/config.yaml" --target "$target" >"$work/out.$target" 2>&1 &
  pid=$!
  while kill -0 "$pid" 2>/dev/null; do
    r=$(awk '/^rchar/ {print $2}' "/proc/$pid/io" 2>/dev/null || true)
    h=$(awk '/^VmHWM/ {print $2}' "/proc/$pid/status" 2>/dev/null || true)
    [[ -n $r ]] && rchar=$r
    [[ -n $h ]] && hwm=$h
    sleep 0.2
  done
  wait "$pid" || { cat "$work/out.$target"; exit 1; }
  echo "$rchar $hwm"
}
spec int
for target in lake spark; do
  t0=$(date +%s.%N)
  read -r rchar hwm < <(measure "$target")
  t1=$(date +%s.%N)
  secs=$(echo "$t1 - $t0" | bc)
  printf '%-6s rewrite %7.1f s  %9.0f rows/s  operator peak RSS %5d MiB  operator read %7d MiB\n' \
    "$target" "$secs" "$(echo "$ROWS / $secs" | bc -l)" $(( hwm / 1024 )) $(( rchar / 1024 / 1024 ))
done
for target in lake spark; do
  "$bin" plan -f "$work/m" --config "$work/config.yaml" --target "$target" >/dev/null \
    || { echo "$target: not converged after the apply" >&2; exit 1; }
done
