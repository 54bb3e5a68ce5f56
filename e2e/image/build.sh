#!/usr/bin/env bash
# Build the operator image from the repo's Dockerfile, here, with no image registry: its bases
# are made on this machine, then it and a pause image (the node's sandbox image) are saved as
# tarballs for `ctr -n k8s.io images import`.
#
#   BUILD base    a Debian bookworm root fs from mmdebstrap (compiler, libc headers, protoc,
#                 CA certificates), imported into podman. The Rust toolchain is not in it: the
#                 build step mounts the host's $RUSTUP_HOME and $CARGO_HOME at their own paths.
#   RUNTIME base  what the distroless cc base gives the binary and nothing else: the shared
#                 libraries ldd lists (copied from the host at the same paths), the CA
#                 bundle, /etc/passwd and /etc/group with `nonroot` (65532), /tmp.
#   PAUSE image   Kubernetes' own pause.c (from the Go module cache), static, on an empty base.
#   IMAGE         the Dockerfile with PROFILE=dev on those bases. The checkout and the cargo
#                 target dir are mounted at their own paths and the build gets the same
#                 CARGO_TARGET_DIR and rustc wrapper as the host, so the build step is the
#                 host's `make test` build, already done: cargo finds everything fresh.
#
# Every image is tagged by a key of its content and reused when present: podman's storage is
# the cache (it outlives clones; a cold machine just builds). Needs root (podman runs with runc
# and cgroupfs here), podman, mmdebstrap, gcc with a static libc, ldd.
# Stdout: `export IMAGE=… IMAGE_TAR=… PAUSE_IMAGE=… PAUSE_TAR=…` lines; progress on stderr.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
cd "$repo"
CACHE=${DELTA_OPERATOR_CACHE:-$HOME/.cache/delta-operator}
IMAGES=$CACHE/images
start=$(date +%s)
say() { echo "image/build.sh: $* ($(( $(date +%s) - start ))s)" >&2; }
die() { echo "image/build.sh: FAILED: $*" >&2; exit 1; }

for t in podman mmdebstrap gcc ldd sha256sum tar; do
  command -v "$t" >/dev/null || die "needs $t on PATH (Debian: podman runc mmdebstrap gcc libc6-dev)"
done
[[ $(id -u) == 0 ]] || die "needs root: podman runs here with runc and cgroupfs, as root"
# crun refuses this machine's cgroup layout; the default ulimits exceed the hard limits
PODMAN=(podman --runtime runc --cgroup-manager=cgroupfs)
ULIMITS=(--ulimit nofile=1024:1024 --ulimit nproc=1024:1024)
have_image() { "${PODMAN[@]}" image exists "$1"; }
key_of() { sha256sum | cut -c1-16; }
mkdir -p "$IMAGES"
work=$(mktemp -d -t delta-image.XXXXXX)
trap 'rm -rf "$work"' EXIT

# ---------------------------------------------------------------- the binary (host build)
# Fresh after `make build` (the Makefile runs this after it); its ldd list makes the runtime base.
# The target dir is mounted at its own path: absolute (symlinks kept, as cargo saw it).
export CARGO_TARGET_DIR
CARGO_TARGET_DIR=$(realpath -s -m "${CARGO_TARGET_DIR:-$CACHE/target}")
BIN=$("$repo/e2e/ship/build-binary.sh" dev 2>"$work/host-build.log") \
  || { tail -n 30 "$work/host-build.log" >&2; die "e2e/ship/build-binary.sh dev"; }
[[ $BIN == "$CARGO_TARGET_DIR"/* ]] || die "the binary $BIN is not under CARGO_TARGET_DIR=$CARGO_TARGET_DIR"

# ---------------------------------------------------------------- BUILD base
RUSTUP_HOME=${RUSTUP_HOME:-$HOME/.rustup}
CARGO_HOME=${CARGO_HOME:-$HOME/.cargo}
[[ -x $CARGO_HOME/bin/cargo && -d $RUSTUP_HOME ]] \
  || die "the build mounts the host's toolchain: no cargo in CARGO_HOME=$CARGO_HOME or no RUSTUP_HOME=$RUSTUP_HOME"
BUILD_PACKAGES=gcc,libc6-dev,protobuf-compiler,ca-certificates,pkg-config
BUILD_ENV=("RUSTUP_HOME=$RUSTUP_HOME" "CARGO_HOME=$CARGO_HOME" "PATH=$CARGO_HOME/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin")
build_key=$(printf '%s\n' bookworm minbase "$BUILD_PACKAGES" "${BUILD_ENV[@]}" | key_of)
BUILD_BASE=localhost/delta-operator-build-base:$build_key
if have_image "$BUILD_BASE"; then
  say "build base $BUILD_BASE (cached)"
else
  say "build base: mmdebstrap bookworm ($BUILD_PACKAGES)"
  changes=()
  for e in "${BUILD_ENV[@]}"; do changes+=(--change "ENV $e"); done
  # documentation and translations are never read by a build
  mmdebstrap --variant=minbase --include="$BUILD_PACKAGES" \
    --dpkgopt='path-exclude=/usr/share/doc/*' --dpkgopt='path-exclude=/usr/share/man/*' \
    --dpkgopt='path-exclude=/usr/share/locale/*' --dpkgopt='path-exclude=/usr/share/info/*' \
    bookworm "$work/build-base.tar" >"$work/mmdebstrap.log" 2>&1 \
    || { tail -n 30 "$work/mmdebstrap.log" >&2; die "mmdebstrap bookworm"; }
  "${PODMAN[@]}" import -q "${changes[@]}" "$work/build-base.tar" "$BUILD_BASE" >/dev/null \
    || die "podman import of the build base"
  rm -f "$work/build-base.tar"
  say "build base $BUILD_BASE built"
fi

# ---------------------------------------------------------------- RUNTIME base
rt=$work/runtime
mkdir -p "$rt/etc/ssl/certs" "$rt/tmp" "$rt/home/nonroot"
libs=$(ldd "$BIN") || die "ldd $BIN"
if grep -q 'not found' <<<"$libs"; then echo "$libs" >&2; die "ldd: a library of the binary is missing"; fi
# `name => /path (addr)` and the loader's own `/path (addr)`; linux-vdso is the kernel's
while read -r lib; do
  cp -L --parents "$lib" "$rt/"
done < <(awk '$2 == "=>" && $3 ~ /^\// {print $3} $1 ~ /^\// {print $1}' <<<"$libs")
[[ -s /etc/ssl/certs/ca-certificates.crt ]] || die "no /etc/ssl/certs/ca-certificates.crt on the host (apt-get install ca-certificates)"
cp -L /etc/ssl/certs/ca-certificates.crt "$rt/etc/ssl/certs/"
cat >"$rt/etc/passwd" <<'EOF'
root:x:0:0:root:/root:/sbin/nologin
nobody:x:65534:65534:nobody:/nonexistent:/sbin/nologin
nonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin
EOF
cat >"$rt/etc/group" <<'EOF'
root:x:0:
nobody:x:65534:
nonroot:x:65532:
EOF
printf 'hosts: files dns\n' >"$rt/etc/nsswitch.conf"
chmod 1777 "$rt/tmp"
chmod 700 "$rt/home/nonroot"
chown 65532:65532 "$rt/home/nonroot"
# a reproducible tarball: its digest is the key
tar --sort=name --mtime=@0 --numeric-owner -C "$rt" -cf "$work/runtime.tar" .
RUNTIME_CONFIG=("USER 65532:65532" "WORKDIR /home/nonroot"
  "ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
  "ENV SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt")
runtime_key=$( { sha256sum <"$work/runtime.tar"; printf '%s\n' "${RUNTIME_CONFIG[@]}"; } | key_of)
RUNTIME_BASE=localhost/delta-operator-runtime-base:$runtime_key
if have_image "$RUNTIME_BASE"; then
  say "runtime base $RUNTIME_BASE (cached)"
else
  changes=()
  for c in "${RUNTIME_CONFIG[@]}"; do changes+=(--change "$c"); done
  "${PODMAN[@]}" import -q "${changes[@]}" "$work/runtime.tar" "$RUNTIME_BASE" >/dev/null \
    || die "podman import of the runtime base"
  say "runtime base $RUNTIME_BASE built ($(awk '{printf "%s ", $0}' < <(tar -tf "$work/runtime.tar" | grep -v '/$')))"
fi

# ---------------------------------------------------------------- PAUSE image
K8S_VERSION=$(sed -n 's/^K8S_VERSION=//p' "$repo/e2e/controlplane/build.sh")
PAUSE_DIR=$CACHE/go/mod/k8s.io/kubernetes@v$K8S_VERSION/build/pause
if [[ ! -f $PAUSE_DIR/linux/pause.c ]]; then
  say "no $PAUSE_DIR/linux/pause.c: e2e/controlplane/build.sh downloads the Kubernetes module"
  "$repo/e2e/controlplane/build.sh" >/dev/null || die "e2e/controlplane/build.sh"
  [[ -f $PAUSE_DIR/linux/pause.c ]] || die "still no $PAUSE_DIR/linux/pause.c"
fi
PAUSE_TAG=$(sed -n 's/^TAG ?= *//p' "$PAUSE_DIR/Makefile")
[[ -n $PAUSE_TAG ]] || die "no TAG in $PAUSE_DIR/Makefile"
PAUSE_IMAGE=registry.k8s.io/pause:$PAUSE_TAG
pause_key=$( { cat "$PAUSE_DIR/linux/pause.c"; gcc --version | head -n 1; echo "$PAUSE_TAG"; } | key_of)
PAUSE_TAR=$IMAGES/pause-$PAUSE_TAG-$pause_key.tar
label() { "${PODMAN[@]}" image inspect --format '{{index .Config.Labels "delta-operator.key"}}' "$1" 2>/dev/null || true; }
if [[ $(label "$PAUSE_IMAGE") == "$pause_key" ]]; then
  say "pause image $PAUSE_IMAGE (cached)"
else
  mkdir -p "$work/pause"
  # as Kubernetes builds it (build/pause/Makefile's CFLAGS)
  gcc -Os -Wall -Werror -static "-DVERSION=v$PAUSE_TAG" -o "$work/pause/pause" "$PAUSE_DIR/linux/pause.c" \
    || die "gcc -static pause.c (needs libc6-dev's static libc)"
  tar --sort=name --mtime=@0 --numeric-owner -C "$work/pause" -cf "$work/pause.tar" pause
  "${PODMAN[@]}" import -q --change 'ENTRYPOINT ["/pause"]' --change 'USER 65535:65535' \
    --change "LABEL delta-operator.key=$pause_key" "$work/pause.tar" "$PAUSE_IMAGE" >/dev/null \
    || die "podman import of the pause image"
  rm -f "$PAUSE_TAR"
  say "pause image $PAUSE_IMAGE built from $PAUSE_DIR/linux/pause.c"
fi
if [[ ! -s $PAUSE_TAR ]]; then
  "${PODMAN[@]}" save -o "$PAUSE_TAR.tmp" "$PAUSE_IMAGE" >/dev/null 2>&1 || die "podman save $PAUSE_IMAGE"
  mv "$PAUSE_TAR.tmp" "$PAUSE_TAR"
fi

# ---------------------------------------------------------------- the operator image
# Its content is the binary on the runtime base as the Dockerfile puts it there.
bin_sum=$(sha256sum <"$BIN" | cut -d' ' -f1)
image_key=$( { echo "$bin_sum"; echo "$RUNTIME_BASE"; sha256sum <Dockerfile; } | key_of | cut -c1-12)
IMAGE=docker.io/library/delta-operator:test-$image_key
IMAGE_TAR=$IMAGES/delta-operator-test-$image_key.tar
if have_image "$IMAGE"; then
  say "image $IMAGE (cached)"
else
  args=(--build-arg "BUILD_IMAGE=$BUILD_BASE" --build-arg "RUNTIME_IMAGE=$RUNTIME_BASE"
    --build-arg PROFILE=dev --build-arg "SRC=$repo" --build-arg "CARGO_TARGET_DIR=$CARGO_TARGET_DIR"
    # the Dockerfile's cache mounts stay clear of the mounted target dir and cargo home
    --build-arg TARGET_CACHE=/var/cache/delta-operator/unused-target
    --build-arg REGISTRY_CACHE=/var/cache/delta-operator/unused-registry)
  # the rustc wrapper (clippy in the build) is part of cargo's fingerprints: without it every
  # workspace crate would compile again, into the host's target dir
  if [[ -n ${RUSTC_WORKSPACE_WRAPPER:-} ]]; then
    for d in "$CARGO_HOME" "$RUSTUP_HOME"; do [[ $RUSTC_WORKSPACE_WRAPPER == "$d"/* ]] && break; done \
      || die "RUSTC_WORKSPACE_WRAPPER=$RUSTC_WORKSPACE_WRAPPER is outside CARGO_HOME and RUSTUP_HOME (the build mounts only those)"
    args+=(--build-arg "RUSTC_WORKSPACE_WRAPPER=$RUSTC_WORKSPACE_WRAPPER" --build-arg "CLIPPY_ARGS=${CLIPPY_ARGS:-}")
  fi
  # same paths as on the host; the checkout read-only (the build writes only to the target dir);
  # no network: every crate is in the mounted cargo home
  vols=(-v "$RUSTUP_HOME:$RUSTUP_HOME:ro" -v "$CARGO_HOME:$CARGO_HOME" -v "$repo:$repo:ro"
    -v "$CARGO_TARGET_DIR:$CARGO_TARGET_DIR")
  say "podman build $IMAGE (Dockerfile, PROFILE=dev)"
  t0=$(date +%s)
  # --layers=false: no intermediate images (the build stage holds a copy of the binary)
  "${PODMAN[@]}" build "${ULIMITS[@]}" --network none --layers=false "${args[@]}" "${vols[@]}" \
    -t "$IMAGE" -f Dockerfile . >"$work/podman-build.log" 2>&1 \
    || { tail -n 40 "$work/podman-build.log" >&2; die "podman build of the Dockerfile"; }
  if grep -E '^\s+Compiling ' "$work/podman-build.log" >"$work/compiled.log"; then
    head -n 20 "$work/compiled.log" >&2
    echo "image/build.sh: WARNING: cargo compiled again inside the image build (above): its environment differs from the host's build" >&2
  fi
  took=$(( $(date +%s) - t0 ))
  say "podman build took ${took}s; cargo: $(grep -E '^\s+Finished ' "$work/podman-build.log" | sed 's/^ *//')"
  # kept for the next look (a cold CI once spent 8 min in this cargo with nothing compiled)
  mkdir -p "$CACHE/logs" && cp "$work/podman-build.log" "$CACHE/logs/podman-build.log"
  if (( took > 60 )); then
    echo "image/build.sh: the podman build took ${took}s; what cargo said other than Fresh (all of it in $CACHE/logs/podman-build.log):" >&2
    grep -vE '^\s+Fresh ' "$work/podman-build.log" | tail -n 15 >&2 || true
  fi
  # the image must hold the very binary the host built (a fresh build copies it)
  mnt=$("${PODMAN[@]}" image mount "$IMAGE")
  in_image=$(sha256sum <"$mnt/usr/local/bin/delta-operator" | cut -d' ' -f1)
  "${PODMAN[@]}" image unmount "$IMAGE" >/dev/null
  [[ $in_image == "$bin_sum" ]] || die "the image's binary differs from the host's $BIN (the build in the image was not the host's)"
  rm -f "$IMAGE_TAR"
fi
if [[ ! -s $IMAGE_TAR ]]; then
  "${PODMAN[@]}" save -o "$IMAGE_TAR.tmp" "$IMAGE" >/dev/null 2>&1 || die "podman save $IMAGE"
  mv "$IMAGE_TAR.tmp" "$IMAGE_TAR"
fi
# each test image is a few hundred MB: keep this one and the two newest others, images and tarballs
for old in $("${PODMAN[@]}" images --format '{{.Repository}}:{{.Tag}}' --sort created docker.io/library/delta-operator \
    | grep ':test-' | grep -vx "$IMAGE" | tail -n +3); do  # newest first
  "${PODMAN[@]}" rmi "$old" >/dev/null 2>&1 || true
done
ls -t "$IMAGES"/delta-operator-test-*.tar 2>/dev/null | tail -n +4 | xargs -r rm -f

say "done"
printf 'export IMAGE=%q\nexport IMAGE_TAR=%q\nexport PAUSE_IMAGE=%q\nexport PAUSE_TAR=%q\n' \
  "$IMAGE" "$IMAGE_TAR" "$PAUSE_IMAGE" "$PAUSE_TAR"
