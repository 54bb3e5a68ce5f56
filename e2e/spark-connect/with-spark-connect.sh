#!/usr/bin/env bash
# Run a command with a Spark Connect server up (its env exported), stop it afterwards.
# Usage: e2e/spark-connect/with-spark-connect.sh CMD...
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
dir="$("$here/start.sh")"
trap '"$here/stop.sh" "$dir" >/dev/null 2>&1 || true' EXIT
# shellcheck disable=SC1091
. "$dir/env"
"$@"
