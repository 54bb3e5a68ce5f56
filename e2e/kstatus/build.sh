#!/usr/bin/env bash
# Build the kstatus checker (main.go: sigs.k8s.io/cli-utils kstatus over JSON on stdin)
# and print its path (see e2e/go-program.sh).
exec "$(dirname "$0")/../go-program.sh" kstatus
