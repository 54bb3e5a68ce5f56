# Sourced by the scripts that build Go programs from the module proxy (control plane,
# helm/kubeconform, the kstatus and Argo CD health checkers): one cache layout and one set
# of flags. Every Go cache lives under $CACHE so reruns and CI cache restores are fast;
# any go.work / GOFLAGS of the caller is ignored; GOTOOLCHAIN=auto lets an older local go
# fetch the toolchain the modules require. Needs CACHE set; `go_env NAME` checks for go.
go_env() {
  command -v go >/dev/null || { echo "$1: 'go' not found in PATH" >&2; exit 1; }
  export GOPATH=$CACHE/go GOMODCACHE=$CACHE/go/mod GOCACHE=$CACHE/go/build
  export GOFLAGS="-buildvcs=false -trimpath" GOWORK=off CGO_ENABLED=0
  export GOTOOLCHAIN=${GOTOOLCHAIN:-auto}
  mkdir -p "$CACHE/bin" "$CACHE/src"
}

# A throwaway module in $CACHE/src/<name> to `go get` a tool into (dependency replace
# directives are ignored there); the caller's shell ends up in it.
wrapper() { rm -rf "$CACHE/src/$1"; mkdir -p "$CACHE/src/$1"; cd "$CACHE/src/$1"; go mod init "local/$1" >/dev/null 2>&1; }
