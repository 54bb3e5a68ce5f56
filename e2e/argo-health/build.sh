#!/usr/bin/env bash
# Build the Argo CD health checker (main.go: a Lua health script run by gopher-lua the
# way Argo CD runs it, over JSON on stdin) and print its path (see e2e/go-program.sh).
exec "$(dirname "$0")/../go-program.sh" argo-health
