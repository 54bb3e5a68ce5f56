#!/usr/bin/env bash
# The test run of `make test`, inside the control plane and the warehouse emulator
# (e2e/with-controlplane.sh e2e/warehouse/with-warehouse.sh e2e/run-tests.sh): every
# cargo test of the workspace (no fail-fast), then the emulator's own pytest suite
# against the same running emulator. Fails when either failed.
set -uo pipefail
cd "$(dirname "$0")/.."
CACHE=${DELTA_OPERATOR_CACHE:-$HOME/.cache/delta-operator}
status=0
"${CARGO:-cargo}" test --locked --no-fail-fast --workspace --all-targets || status=1
"$CACHE/warehouse-venv/bin/python" -m pytest -q e2e/warehouse/tests || status=1
exit $status
