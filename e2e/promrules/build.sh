#!/usr/bin/env bash
# Build the alerting-rules checker (main.go: Prometheus' own rule-file and PromQL parsers
# over the chart's rendered PrometheusRule and Grafana dashboard) and print its path
# (see e2e/go-program.sh).
exec "$(dirname "$0")/../go-program.sh" promrules
