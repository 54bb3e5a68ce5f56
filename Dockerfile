# syntax=docker/dockerfile:1
# The operator image: the release binary on distroless (glibc, libgcc, CA certificates),
# as a non-root user. Build: docker build -t delta-operator:0.1.0 .
# The build step is e2e/ship/build-binary.sh. `make test` builds this file for real
# (e2e/image/build.sh): bases made on the machine, the dev profile, and the host's toolchain,
# sources and cargo target mounted at their own paths, so that build is the host's, already done.

# The bases, by default the public images.
ARG BUILD_IMAGE=docker.io/library/rust:1.95-bookworm
ARG RUNTIME_IMAGE=gcr.io/distroless/cc-debian12:nonroot

FROM ${BUILD_IMAGE} AS build
# where the sources go: a build that mounts the checkout at its own path sets this to that path,
# since cargo keys its fingerprints on the sources' absolute paths
ARG SRC=/src
WORKDIR ${SRC}
# protoc: the Spark Connect client's protobuf types are generated at build time
RUN command -v protoc >/dev/null || { apt-get update -qq \
    && apt-get install -y -qq --no-install-recommends protobuf-compiler \
    && rm -rf /var/lib/apt/lists/*; }
COPY . .
# release | dev (build-binary.sh's argument)
ARG PROFILE=release
# CARGO_TARGET_DIR: unset, build-binary.sh's default under $HOME, kept between builds by the cache
# mount at TARGET_CACHE (and the crates at REGISTRY_CACHE); a build that mounts its own target dir
# and cargo home moves the cache mounts out of their way.
ARG CARGO_TARGET_DIR
ARG TARGET_CACHE=/root/.cache/delta-operator/target
ARG REGISTRY_CACHE=/usr/local/cargo/registry
# the rustc wrapper that lints during the build and its arguments: part of cargo's fingerprints,
# so a build reusing a target dir built with them must pass them for the build to be fresh
ARG RUSTC_WORKSPACE_WRAPPER
ARG CLIPPY_ARGS
RUN --mount=type=cache,target=${TARGET_CACHE} \
    --mount=type=cache,target=${REGISTRY_CACHE} \
    e2e/ship/build-binary.sh "${PROFILE}" /out

FROM ${RUNTIME_IMAGE}
COPY --from=build /out/delta-operator /usr/local/bin/delta-operator
USER 65532:65532
ENTRYPOINT ["/usr/local/bin/delta-operator"]
CMD ["run"]
