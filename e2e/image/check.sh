#!/usr/bin/env bash
# What a user of the operator image would check, on the image e2e/image/build.sh built from the
# Dockerfile (IMAGE, PAUSE_IMAGE from its output; without them it runs build.sh, cached). The
# checks run in order; the first failure ends the script non-zero with its reason.
#   1. the image's user is numeric and non-root (65532), its entrypoint the binary
#   2. it starts with a read-only root file system (the chart's /tmp emptyDir as the only
#      writable place) and runs as that user
#   3. `--version` and `run --help` work
#   4. the binary finds the image's CA certificates: the bundle is there, and an HTTPS client
#      of the binary (the Databricks target) loads it and verifies a server's certificate with
#      it; hiding the bundle must make the same client fail (the check can fail)
#   5. the pause image runs
# Then prints the image and binary sizes.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
cd "$repo"
start=$(date +%s)
steps=0
fail() { echo "image/check.sh: FAILED: $*" >&2; echo "image: $(( steps > 0 ? steps - 1 : 0 )) passed, 1 failed"; exit 1; }
step() { steps=$(( steps + 1 )); echo "--- image: $* ($(( $(date +%s) - start ))s)" >&2; }
for t in podman openssl python3; do command -v "$t" >/dev/null || fail "needs $t on PATH"; done
if [[ -z ${IMAGE:-} || -z ${PAUSE_IMAGE:-} ]]; then
  out=$("$here/build.sh") || fail "e2e/image/build.sh"
  eval "$out"
fi
PODMAN=(podman --runtime runc --cgroup-manager=cgroupfs)
# the default ulimits exceed this machine's hard limits
RUN_D=("${PODMAN[@]}" run --ulimit nofile=1024:1024 --ulimit nproc=1024:1024)
RUN=("${RUN_D[@]}" --rm)
# as the chart runs it: read-only root, an emptyDir at /tmp and nothing else writable
RO=(--read-only --read-only-tmpfs=false --tmpfs /tmp)
work=$(mktemp -d -t delta-image-check.XXXXXX)
chmod 755 "$work"
cids=()
srv_pid=
cleanup() {
  for c in "${cids[@]}"; do "${PODMAN[@]}" rm -f -t 0 "$c" >/dev/null 2>&1 || true; done
  [[ -z $srv_pid ]] || kill "$srv_pid" 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT
"${PODMAN[@]}" image exists "$IMAGE" || fail "no image $IMAGE (run e2e/image/build.sh)"

# ---------------------------------------------------------------- 1. config
step "user and entrypoint of $IMAGE"
user=$("${PODMAN[@]}" image inspect --format '{{.Config.User}}' "$IMAGE")
[[ $user =~ ^[1-9][0-9]*(:[1-9][0-9]*)?$ ]] || fail "the image's user '$user' is not a numeric non-root uid[:gid] (Kubernetes' runAsNonRoot needs a number)"
[[ $user == 65532:65532 ]] || fail "the image's user is $user, not 65532:65532 (nonroot, as the distroless base)"
entry=$("${PODMAN[@]}" image inspect --format '{{json .Config.Entrypoint}}' "$IMAGE")
[[ $entry == '["/usr/local/bin/delta-operator"]' ]] || fail "the entrypoint is $entry, not the binary"

# ---------------------------------------------------------------- 2. read-only root, as 65532
step "starts with a read-only root file system as 65532"
# `validate -f /dev/stdin` waits on the open stdin: a running process to look at
cid=$("${RUN_D[@]}" -d -i "${RO[@]}" "$IMAGE" validate -f /dev/stdin) || fail "podman run --read-only $IMAGE did not start"
cids+=("$cid")
pid=
for _ in $(seq 1 20); do
  pid=$("${PODMAN[@]}" inspect --format '{{if .State.Running}}{{.State.Pid}}{{end}}' "$cid")
  [[ -n $pid ]] && break; sleep 0.25
done
[[ -n $pid ]] || { "${PODMAN[@]}" logs "$cid" >&2 || true; fail "the container exited at once under --read-only (log above)"; }
[[ $("${PODMAN[@]}" inspect --format '{{.HostConfig.ReadonlyRootfs}}' "$cid") == true ]] || fail "the container's root is not read-only"
uids=$(awk '/^Uid:/ {print $2, $3, $4, $5}' "/proc/$pid/status")
[[ $uids == "65532 65532 65532 65532" ]] || fail "the process runs as uid $uids, not 65532"
[[ $(readlink "/proc/$pid/exe") == */usr/local/bin/delta-operator ]] || fail "the running process is $(readlink "/proc/$pid/exe"), not the binary"
"${PODMAN[@]}" rm -f -t 0 "$cid" >/dev/null

# ---------------------------------------------------------------- 3. commands
step "--version and run --help"
version=$("${RUN[@]}" "${RO[@]}" "$IMAGE" --version 2>&1) || fail "--version failed: $version"
want=$(sed -n '/^\[workspace.package\]/,/^\[/ s/^version = "\(.*\)"/\1/p' Cargo.toml)
[[ $version == "delta-operator $want" ]] || fail "--version says '$version', not 'delta-operator $want'"
"${RUN[@]}" "${RO[@]}" "$IMAGE" run --help >"$work/help.txt" 2>&1 || { cat "$work/help.txt" >&2; fail "run --help failed"; }
grep -q -- '--leader-elect' "$work/help.txt" || fail "run --help does not list --leader-elect"

# ---------------------------------------------------------------- 4. CA certificates
step "CA certificates: the bundle, and the binary's HTTPS client verifying with it"
mnt=$("${PODMAN[@]}" image mount "$IMAGE")
bundle=/etc/ssl/certs/ca-certificates.crt
n=$(grep -c 'BEGIN CERTIFICATE' "$mnt$bundle" 2>/dev/null || true)
env_file=$("${PODMAN[@]}" image inspect --format '{{range .Config.Env}}{{println .}}{{end}}' "$IMAGE" | sed -n 's/^SSL_CERT_FILE=//p')
env_ok=1; [[ -z $env_file || -s $mnt$env_file ]] || env_ok=0
"${PODMAN[@]}" image unmount "$IMAGE" >/dev/null
[[ ${n:-0} -gt 0 ]] || fail "the image has no certificates in $bundle (the binary loads its roots from there: rustls-native-certs)"
(( env_ok )) || fail "the image's SSL_CERT_FILE=$env_file does not exist in it"
# A TLS server with a self-signed certificate: a client that loaded the system roots reaches
# certificate verification and refuses it; one that found no roots fails building its client.
openssl req -x509 -newkey rsa:2048 -nodes -keyout "$work/key.pem" -out "$work/cert.pem" -days 1 \
  -subj /CN=localhost >/dev/null 2>&1 || fail "openssl req"
python3 - "$work" >"$work/port" 2>"$work/server.log" <<'PY' &
import http.server, ssl, sys
d = sys.argv[1]
srv = http.server.HTTPServer(("127.0.0.1", 0), http.server.BaseHTTPRequestHandler)
ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
ctx.load_cert_chain(d + "/cert.pem", d + "/key.pem")
srv.socket = ctx.wrap_socket(srv.socket, server_side=True)
print(srv.server_address[1], flush=True)
srv.serve_forever()
PY
srv_pid=$!
for _ in $(seq 1 40); do [[ -s $work/port ]] && break; sleep 0.25; done
port=$(cat "$work/port")
[[ -n $port ]] || { cat "$work/server.log" >&2; fail "the local TLS server did not start"; }
cat >"$work/config.yaml" <<EOF
targets:
  dbx:
    databricks:
      host: https://127.0.0.1:$port
      warehouseId: check
      auth: {tokenEnv: DATABRICKS_TOKEN}
defaultTarget: dbx
EOF
chmod 644 "$work/config.yaml"
# the container's log in $work/tls.log, once it shows how the client fared (or after 30s)
tls_try() {
  local c log=
  c=$("${RUN_D[@]}" -d --network host "${RO[@]}" -e DATABRICKS_TOKEN=check \
    -v "$work/config.yaml:/etc/delta-operator/config.yaml:ro" -v "$repo/examples:/examples:ro" "$@" \
    "$IMAGE" --config /etc/delta-operator/config.yaml plan -f /examples/) || fail "podman run (TLS client)"
  cids+=("$c")
  for _ in $(seq 1 120); do
    log=$("${PODMAN[@]}" logs "$c" 2>&1 || true)
    grep -q -e 'invalid peer certificate' -e 'HTTP client' <<<"$log" && break
    sleep 0.25
  done
  "${PODMAN[@]}" rm -f -t 0 "$c" >/dev/null 2>&1 || true
  echo "$log" >"$work/tls.log"
}
tls_try; log=$(cat "$work/tls.log")
if ! grep -q 'invalid peer certificate' <<<"$log" || grep -q 'HTTP client' <<<"$log"; then
  tail -n 20 <<<"$log" >&2
  fail "the binary's HTTPS client did not verify a server certificate against the image's CA bundle (log above)"
fi
# the same with the bundle hidden (an empty tmpfs: without notmpcopyup podman fills it from the
# image): must fail for want of roots
tls_try --mount type=tmpfs,destination=/etc/ssl/certs,notmpcopyup; log=$(cat "$work/tls.log")
grep -q 'HTTP client' <<<"$log" \
  || { tail -n 20 <<<"$log" >&2; fail "with $bundle hidden the HTTPS client still started: the check above proves nothing (log above)"; }
kill "$srv_pid" 2>/dev/null || true; srv_pid=

# ---------------------------------------------------------------- 5. pause
step "the pause image $PAUSE_IMAGE"
pv=$("${RUN[@]}" --read-only "$PAUSE_IMAGE" -v 2>&1) || fail "$PAUSE_IMAGE -v failed: $pv"
[[ $pv == pause.c* ]] || fail "$PAUSE_IMAGE -v says '$pv', not pause.c's version"

# ---------------------------------------------------------------- sizes
mib() { awk -v b="$1" 'BEGIN {printf "%.1f MiB", b / 1048576}'; }
size=$("${PODMAN[@]}" image inspect --format '{{.Size}}' "$IMAGE")
mnt=$("${PODMAN[@]}" image mount "$IMAGE")
bin_size=$(stat -c %s "$mnt/usr/local/bin/delta-operator")
"${PODMAN[@]}" image unmount "$IMAGE" >/dev/null
base_size=$(( size - bin_size ))
echo "image/check.sh: $IMAGE is the dev-profile test image: $(mib "$size") ($(mib "$bin_size") binary with debug info on a $(mib "$base_size") base)" >&2
release=${CARGO_TARGET_DIR:-${DELTA_OPERATOR_CACHE:-$HOME/.cache/delta-operator}/target}/release/delta-operator
if [[ -x $release ]]; then
  rsize=$(stat -c %s "$release")
  echo "image/check.sh: the release image would weigh about $(mib $(( rsize + base_size ))) (release binary $(mib "$rsize"), built $(date -u -r "$release" '+%F %H:%M UTC'), not necessarily from this commit)" >&2
else
  echo "image/check.sh: release binary size not measured (make test builds no release binary; \`cargo build --release --bin delta-operator\` makes one): the release image is that plus the $(mib "$base_size") base" >&2
fi
echo "image/check.sh: all checks passed in $(( $(date +%s) - start ))s" >&2
echo "image: $steps passed, 0 failed"
