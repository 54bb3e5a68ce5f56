#!/usr/bin/env bash
# Benchmark (not a test): statements and HTTP requests the Databricks backend needs for
# (a) the first read of N unchanged tables in one schema and (b) a steady-state re-check,
# against the warehouse emulator, beside what delta-engine and stevin need for the same tables.
#
#   e2e/bench/statements.sh [N]      (N defaults to 200)
#
# Starts an emulator (e2e/warehouse/with-warehouse.sh) unless WAREHOUSE_URL is already set,
# then runs: BENCH_TABLES=N cargo bench --profile dev --bench statements
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
export BENCH_TABLES="${1:-200}"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/delta-operator/target}"
cd "$root"
if [[ -n ${WAREHOUSE_URL:-} ]]; then
  exec cargo bench --locked --profile dev --bench statements
fi
exec "$root/e2e/warehouse/with-warehouse.sh" cargo bench --locked --profile dev --bench statements
