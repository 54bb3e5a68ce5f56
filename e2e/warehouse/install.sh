#!/usr/bin/env bash
# Install the warehouse emulator's dependencies (idempotent, stamped): a venv with pinned
# pyspark + delta-spark (+ pytest) from PyPI. The delta-spark jars come from Maven Central
# through Spark's Ivy on the first start (start.sh); both caches live under CACHE.
# Prints the venv's python on stdout.
set -euo pipefail
CACHE=${DELTA_OPERATOR_CACHE:-$HOME/.cache/delta-operator}
WAREHOUSE_PY_PACKAGES=${WAREHOUSE_PY_PACKAGES:-"pyspark==4.2.0 delta-spark==4.4.0 pytest==8.4.2"}
VENV=$CACHE/warehouse-venv
STAMP=$VENV/.installed-$(echo "$WAREHOUSE_PY_PACKAGES" | md5sum | cut -c1-8)
if [[ ! -e $STAMP ]]; then
  command -v java >/dev/null || { echo "install.sh: java (17+) is required by Spark" >&2; exit 1; }
  t0=$(date +%s)
  python3 -m venv "$VENV"
  # shellcheck disable=SC2086
  PIP_CACHE_DIR=${PIP_CACHE_DIR:-$CACHE/pip} "$VENV/bin/pip" install --quiet --disable-pip-version-check $WAREHOUSE_PY_PACKAGES >&2
  rm -f "$VENV"/.installed-*
  touch "$STAMP"
  echo "install.sh: installed $WAREHOUSE_PY_PACKAGES in $(( $(date +%s) - t0 ))s" >&2
fi
echo "$VENV/bin/python"
