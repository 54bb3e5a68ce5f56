#!/usr/bin/env bash
# Start etcd + kube-apiserver on 127.0.0.1 for e2e tests (envtest-like, no kind/docker).
# Usage: start.sh [DIR]   (DIR defaults to a new mktemp -d; it holds certs, data, logs)
# Env:   ETCD_PORT, APISERVER_PORT (default: free ports picked at runtime),
#        START_TIMEOUT (seconds, default 60), ETCD_BIN / KUBE_APISERVER_BIN (skip build.sh),
#        NODE_IP: set by e2e/node/start.sh for a cluster with pods: the apiserver listens on
#        every address, advertises NODE_IP (the `kubernetes` Service's endpoint, reached
#        from pods), its certificate also names NODE_IP and the Service IP 10.0.0.1, and
#        ServiceAccount admission is on (a controller-manager creates the default SAs).
# Writes $DIR/kubeconfig (admin, system:masters), $DIR/kubeconfig-operator (user
# `operator`, no RBAC), $DIR/env (exports), $DIR/*.log; prints DIR on stdout.
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

for t in openssl curl base64; do
  command -v "$t" >/dev/null || { echo "start.sh: '$t' is required" >&2; exit 1; }
done

# Binaries: given by env, else build.sh (a no-op once cached) prints their paths.
if [[ -z ${ETCD_BIN:-} || -z ${KUBE_APISERVER_BIN:-} ]]; then
  paths=$("$HERE/build.sh")   # assignment, so set -e sees a failed build
  eval "$paths"
fi

DIR=${1:-$(mktemp -d -t delta-cp.XXXXXX)}
mkdir -p "$DIR"
DIR=$(cd "$DIR" && pwd)
[[ ! -e $DIR/env ]] || { echo "start.sh: $DIR already holds a control plane (stop.sh it first)" >&2; exit 1; }
chmod 700 "$DIR"
mkdir -p -m 700 "$DIR/pki" "$DIR/etcd-data"   # etcd warns unless its data dir is 0700

# A port is taken as free when nothing accepts on it (bash /dev/tcp; no extra tools).
# Pick below the kernel's ephemeral range: an outgoing connection's local port would
# pass the probe yet make bind() fail with "address already in use".
EPH_LOW=$(cut -f1 /proc/sys/net/ipv4/ip_local_port_range 2>/dev/null || echo 32768)
free_port() {
  local p
  for _ in $(seq 1 100); do
    p=$(( 10000 + RANDOM % (EPH_LOW - 10000) ))
    if ! (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then echo "$p"; return; fi
  done
  echo "start.sh: no free port found" >&2; return 1
}
ETCD_PORT=${ETCD_PORT:-$(free_port)}
APISERVER_PORT=${APISERVER_PORT:-$(free_port)}
[[ $ETCD_PORT != "$APISERVER_PORT" ]] || APISERVER_PORT=$(free_port)

# --- PKI: a CA for the serving cert (so kubeconfigs verify TLS), plus SA signing keys.
# EC P-256 keys: generated in milliseconds, unlike RSA.
P=$DIR/pki
EC=(-newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes)
openssl req -x509 "${EC[@]}" -days 3650 -subj "/CN=delta-e2e-ca" \
  -keyout "$P/ca.key" -out "$P/ca.crt" 2>/dev/null
openssl req "${EC[@]}" -subj "/CN=kube-apiserver" \
  -keyout "$P/apiserver.key" -out "$P/apiserver.csr" 2>/dev/null
SANS=IP:127.0.0.1${NODE_IP:+,IP:$NODE_IP,IP:10.0.0.1}
printf 'subjectAltName=%s,DNS:localhost,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,DNS:kubernetes.default.svc.cluster.local\nextendedKeyUsage=serverAuth\n' "$SANS" >"$P/ext.cnf"
openssl x509 -req -in "$P/apiserver.csr" -CA "$P/ca.crt" -CAkey "$P/ca.key" -CAcreateserial \
  -days 3650 -extfile "$P/ext.cnf" -out "$P/apiserver.crt" 2>/dev/null
if [[ -n ${NODE_IP:-} ]]; then   # the apiserver's client certificate for kubelets (logs, exec)
  openssl req "${EC[@]}" -subj "/O=system:masters/CN=kube-apiserver-kubelet-client" \
    -keyout "$P/kubelet-client.key" -out "$P/kubelet-client.csr" 2>/dev/null
  printf 'extendedKeyUsage=clientAuth\n' >"$P/client.cnf"
  openssl x509 -req -in "$P/kubelet-client.csr" -CA "$P/ca.crt" -CAkey "$P/ca.key" -CAcreateserial \
    -days 3650 -extfile "$P/client.cnf" -out "$P/kubelet-client.crt" 2>/dev/null
fi
openssl ecparam -name prime256v1 -genkey -noout -out "$P/sa.key"
openssl ec -in "$P/sa.key" -pubout -out "$P/sa.pub" 2>/dev/null

# --- Static tokens: admin in system:masters (bypasses RBAC); `operator` has no groups
# beyond system:authenticated, so RBAC tests start from zero permissions.
ADMIN_TOKEN=$(openssl rand -hex 24)
OPERATOR_TOKEN=$(openssl rand -hex 24)
cat >"$P/tokens.csv" <<EOF
$ADMIN_TOKEN,admin,uid-admin,"system:masters"
$OPERATOR_TOKEN,operator,uid-operator
EOF
chmod 600 "$P"/*.key "$P/tokens.csv"

# Run a daemon in its own session (survives this script, not tied to the caller's
# terminal); the pid file is written by the process itself, then it execs.
spawn() { # name cmd...
  local name=$1; shift
  # env -u: etcd reads ETCD_* variables as flags and warns about unknown ones.
  env -u ETCD_BIN -u ETCD_PORT setsid sh -c 'echo $$ >"$0"; exec "$@"' "$DIR/$name.pid" "$@" \
    </dev/null >"$DIR/$name.log" 2>&1 &
}
pidof_() { local i; for i in $(seq 1 50); do [[ -s $DIR/$1.pid ]] && { cat "$DIR/$1.pid"; return; }; sleep 0.1; done; echo 0; }
fail() {
  # SIGKILL first (a starting apiserver can ignore SIGTERM for many seconds, and printing
  # to a closed stderr could kill us before cleanup); DIR is kept for debugging.
  local pid
  for pid in ${APISERVER_PID:-0} ${ETCD_PID:-0}; do [[ $pid -gt 0 ]] && kill -9 "$pid" 2>/dev/null || true; done
  echo "start.sh: $* (logs kept in $DIR)" >&2
  for f in etcd kube-apiserver; do echo "--- last lines of $DIR/$f.log" >&2; tail -n 25 "$DIR/$f.log" >&2 || true; done
  exit 1
}
trap 'fail "interrupted"' INT TERM

# etcd: single member, loopback only; peer port 0 (never used); no fsync (test data).
spawn etcd "$ETCD_BIN" --name=e2e --data-dir="$DIR/etcd-data" \
  --listen-client-urls="http://127.0.0.1:$ETCD_PORT" --advertise-client-urls="http://127.0.0.1:$ETCD_PORT" \
  --listen-peer-urls=http://127.0.0.1:0 --initial-advertise-peer-urls=http://127.0.0.1:0 \
  --initial-cluster=e2e=http://127.0.0.1:0 --unsafe-no-fsync=true --log-level=warn
ETCD_PID=$(pidof_ etcd)

# kube-apiserver: flags as controller-runtime envtest uses, plus token auth.
# Without NODE_IP: ServiceAccount admission is off because no controller-manager creates
# default SAs, and the endpoint reconciler is off: it refuses a loopback advertise address
# (1.37 exits at start).
if [[ -n ${NODE_IP:-} ]]; then
  NET=(--bind-address=0.0.0.0 --advertise-address="$NODE_IP" --endpoint-reconciler-type=lease
       --kubelet-preferred-address-types=InternalIP
       --kubelet-client-certificate="$P/kubelet-client.crt" --kubelet-client-key="$P/kubelet-client.key")
else
  NET=(--bind-address=127.0.0.1 --advertise-address=127.0.0.1 --endpoint-reconciler-type=none
       --disable-admission-plugins=ServiceAccount)
fi
spawn kube-apiserver "$KUBE_APISERVER_BIN" \
  --etcd-servers="http://127.0.0.1:$ETCD_PORT" \
  --secure-port="$APISERVER_PORT" "${NET[@]}" \
  --cert-dir="$P" --tls-cert-file="$P/apiserver.crt" --tls-private-key-file="$P/apiserver.key" \
  --client-ca-file="$P/ca.crt" --token-auth-file="$P/tokens.csv" \
  --authorization-mode=RBAC --allow-privileged=true \
  --service-cluster-ip-range=10.0.0.0/24 \
  --service-account-issuer="https://127.0.0.1:$APISERVER_PORT" \
  --service-account-key-file="$P/sa.pub" --service-account-signing-key-file="$P/sa.key" \
  --profiling=false --v=0
APISERVER_PID=$(pidof_ kube-apiserver)
[[ $ETCD_PID -gt 0 && $APISERVER_PID -gt 0 ]] || fail "a process did not start"

URL=https://127.0.0.1:$APISERVER_PORT
kubeconfig() { # file user token
  cat >"$1" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: delta-e2e
  cluster:
    server: $URL
    certificate-authority-data: $(base64 -w0 <"$P/ca.crt")
users:
- name: $2
  user:
    token: $3
contexts:
- name: delta-e2e-$2
  context: {cluster: delta-e2e, user: $2, namespace: default}
current-context: delta-e2e-$2
EOF
  chmod 600 "$1"
}
kubeconfig "$DIR/kubeconfig" admin "$ADMIN_TOKEN"
kubeconfig "$DIR/kubeconfig-operator" operator "$OPERATOR_TOKEN"
cat >"$DIR/env" <<EOF
export CONTROLPLANE_DIR=$DIR
export KUBECONFIG=$DIR/kubeconfig
export KUBECONFIG_OPERATOR=$DIR/kubeconfig-operator
export APISERVER_URL=$URL
export APISERVER_PORT=$APISERVER_PORT APISERVER_PID=$APISERVER_PID
export ETCD_PORT=$ETCD_PORT ETCD_PID=$ETCD_PID
export ADMIN_TOKEN=$ADMIN_TOKEN OPERATOR_TOKEN=$OPERATOR_TOKEN
export CA_CERT=$P/ca.crt
EOF

# Bounded wait for /readyz (all post-start hooks incl. RBAC bootstrap done).
t0=$(date +%s%N)
deadline=$(( $(date +%s) + ${START_TIMEOUT:-60} ))
until curl -fsS --max-time 2 --cacert "$P/ca.crt" -H "Authorization: Bearer $ADMIN_TOKEN" "$URL/readyz" >/dev/null 2>&1; do
  kill -0 "$ETCD_PID" 2>/dev/null || fail "etcd exited"
  kill -0 "$APISERVER_PID" 2>/dev/null || fail "kube-apiserver exited"
  (( $(date +%s) < deadline )) || fail "/readyz not ok after ${START_TIMEOUT:-60}s: $(curl -sS --max-time 2 --cacert "$P/ca.crt" -H "Authorization: Bearer $ADMIN_TOKEN" "$URL/readyz?verbose" 2>&1 | grep -v '\[+\]' | head -5)"
  sleep 0.2
done
trap - INT TERM
echo "start.sh: ready at $URL in $(( ($(date +%s%N) - t0) / 1000000 ))ms after spawn; source $DIR/env" >&2
echo "$DIR"
