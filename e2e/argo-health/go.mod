module delta-operator.io/e2e/argo-health

go 1.26.0

require github.com/yuin/gopher-lua v1.1.2
