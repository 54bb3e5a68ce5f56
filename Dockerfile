# syntax=docker/dockerfile:1
# The operator image: the release binary on distroless (glibc, libgcc, CA certificates),
# as a non-root user. Build: docker build -t delta-operator:0.1.0 .
# The build step is e2e/ship/build-binary.sh, which `make test` also runs (dev profile).

FROM docker.io/library/rust:1.95-bookworm AS build
WORKDIR /src
# protoc: the Spark Connect client's protobuf types are generated at build time
RUN apt-get update -qq && apt-get install -y -qq --no-install-recommends protobuf-compiler \
    && rm -rf /var/lib/apt/lists/*
COPY . .
RUN --mount=type=cache,target=/root/.cache/delta-operator/target \
    --mount=type=cache,target=/usr/local/cargo/registry \
    e2e/ship/build-binary.sh release /out

FROM gcr.io/distroless/cc-debian12:nonroot
COPY --from=build /out/delta-operator /usr/local/bin/delta-operator
USER 65532:65532
ENTRYPOINT ["/usr/local/bin/delta-operator"]
CMD ["run"]
