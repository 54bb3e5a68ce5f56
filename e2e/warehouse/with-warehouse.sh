#!/usr/bin/env bash
# Run a command with the warehouse emulator up (its env exported), stop it afterwards.
# Usage: e2e/warehouse/with-warehouse.sh CMD...
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
dir="$("$here/start.sh")"
trap '"$here/stop.sh" "$dir" >/dev/null 2>&1 || true' EXIT
# shellcheck disable=SC1091
. "$dir/env"
"$@"
