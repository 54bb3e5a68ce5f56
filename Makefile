# delta-operator — one test command: `make test`.
# Heavy builds are cached outside the clone (never required: a cold run works).
CACHE ?= $(HOME)/.cache/delta-operator
# the e2e scripts read DELTA_OPERATOR_CACHE: one cache for all of them
export DELTA_OPERATOR_CACHE := $(CACHE)
# One build for the README's first command (`cargo run`, into ./target) and `make test`: cargo's
# own ./target unless CARGO_TARGET_DIR says otherwise (.ci/run points it at the cache, which
# outlives the clones CI makes).
export CARGO_TARGET_DIR ?= $(CURDIR)/target
export DELTA_OPERATOR_PYTHON ?= $(CACHE)/venv/bin/python
export PIP_CACHE_DIR ?= $(CACHE)/pip
CARGO ?= cargo

# CLIPPY_IN_BUILD=1 (the default where clippy-driver is installed): clippy lints the workspace while `build` compiles it,
# clippy-driver being the workspace's rustc wrapper as under `cargo clippy` itself, so every
# dependency is compiled once instead of once more in check mode for the lint. The wrapper is
# part of the workspace crates' fingerprints, so every cargo command of the run sees it
# (exported); the fuzz build, its own workspace, does not.
CLIPPY_IN_BUILD ?= $(if $(shell command -v clippy-driver),1,0)
ifeq ($(CLIPPY_IN_BUILD),1)
export RUSTC_WORKSPACE_WRAPPER := $(shell command -v clippy-driver)
export CLIPPY_ARGS := -D__CLIPPY_HACKERY__warnings__CLIPPY_HACKERY__
endif

# Pinned Python packages: the outside reader (deltalake) and an S3 server (moto) for the tests.
PY_PACKAGES = deltalake==1.6.6 pyarrow==26.0.1 moto[server]==5.2.5 pyyaml==6.0.4
PY_STAMP := $(CACHE)/venv/.installed-$(shell echo '$(PY_PACKAGES)' | md5sum | cut -c1-8)

.PHONY: test prepare build lint image node go-tools python controlplane crds bench bench-planners bench-controller bench-shards bench-statements bench-rewrite bench-rewrite-memory bench-spark-rewrite bench-depends example ship-tools gen-config warehouse fuzz

# The Databricks SQL warehouse + Unity Catalog emulator: real Delta Lake on Spark
# (pyspark from PyPI, delta-spark jars from Maven Central), see e2e/warehouse/README.md.
WAREHOUSE_PY_PACKAGES = pyspark==4.2.0 delta-spark==4.4.0 pytest==8.4.2

# The builds and installs are independent and each has serial stretches (linking, big
# single crates, downloads), so they run side by side: on a cold 2-core machine this is
# markedly shorter than one after another.
test:
	$(MAKE) --no-print-directory -j4 prepare
	e2e/side-by-side.sh \
	  "CARGO=$(CARGO) e2e/with-controlplane.sh e2e/warehouse/with-warehouse.sh e2e/spark-connect/with-spark-connect.sh e2e/run-tests.sh" \
	  "e2e/node/with-node.sh e2e/node/tests.sh"
	e2e/with-controlplane.sh e2e/ship/check.sh
	env -u RUSTC_WORKSPACE_WRAPPER -u CLIPPY_ARGS fuzz/run.sh $(FUZZ_SECONDS_CI)

prepare: python go-tools warehouse build lint image node

# Coverage-guided fuzzing (cargo-fuzz on stable, docs/reliability.md): bounded in
# `make test`; `make fuzz` runs longer and merges what it finds into fuzz/corpus.
FUZZ_SECONDS_CI ?= 30
FUZZ_SECONDS ?= 600
fuzz:
	fuzz/run.sh $(FUZZ_SECONDS) merge

# fmt and clippy clean, warnings are errors (beside the other builds in prepare; with
# CLIPPY_IN_BUILD=1 the clippy part runs inside `build`)
lint:
	$(CARGO) fmt --all --check
ifneq ($(CLIPPY_IN_BUILD),1)
	$(CARGO) clippy --locked --workspace --all-targets -- -D warnings
endif

build:
ifeq ($(CLIPPY_IN_BUILD),1)
	@test -n "$$RUSTC_WORKSPACE_WRAPPER" || { echo "CLIPPY_IN_BUILD=1 needs clippy-driver on PATH (rustup component add clippy)" >&2; exit 1; }
endif
	$(CARGO) build --locked --workspace --all-targets

# The operator image built from the Dockerfile with podman, on bases made here (no registry, no
# Docker engine; e2e/image/build.sh), and what a user would check of it. After `build`: the image's
# build step is that build, fresh; after `controlplane`, which fetches the pause image's source.
image: build controlplane
	out=$$(e2e/image/build.sh) && eval "$$out" && e2e/image/check.sh

# kubelet, kube-controller-manager, kube-scheduler and kube-proxy for the node the chart's tests
# run on (e2e/node), built from the Go module proxy in one `go build` (cached in $(CACHE)/bin);
# after the apiserver's build, whose compiled packages they share.
node: controlplane
	e2e/node/build.sh >/dev/null

# Every Go program the tests use, one after another (each Go build already uses every core).
go-tools: controlplane
	e2e/ship/tools.sh >/dev/null
	e2e/promrules/build.sh >/dev/null

# etcd + kube-apiserver built from the Go module proxy (cached in $(CACHE)/bin).
controlplane:
	e2e/controlplane/build.sh >/dev/null
	e2e/kstatus/build.sh >/dev/null
	e2e/argo-health/build.sh >/dev/null

warehouse:
	WAREHOUSE_PY_PACKAGES='$(WAREHOUSE_PY_PACKAGES)' e2e/warehouse/install.sh >/dev/null

# helm + kubeconform built from the Go module proxy (cached in $(CACHE)/bin).
ship-tools:
	e2e/ship/tools.sh >/dev/null

# Regenerate the chart's CRD copy and the kustomize config/ from the chart (check.sh fails when stale).
gen-config:
	e2e/ship/gen-config.sh

# A Python with deltalake: the reader outside the project that the tests use.
python: $(PY_STAMP)
$(PY_STAMP):
	python3 -m venv $(CACHE)/venv
	$(CACHE)/venv/bin/pip install --quiet --disable-pip-version-check $(foreach p,$(PY_PACKAGES),'$(p)')
	touch $@

# Regenerate the committed CRDs (a test fails when they are stale).
crds:
	$(CARGO) run --quiet -- crds > crds/delta-operator.yaml
	e2e/ship/gen-config.sh

# Benchmarks: release build, prints figures.
bench:
	$(CARGO) bench -p delta-operator-core --bench plan

# Our planner against stevin's and delta-engine's on the same 1,000 x 50 input, one table
# (installs both from PyPI into $(CACHE)/bench-venv; needs python3 >= 3.11 and python3.12).
bench-planners:
	e2e/bench/planners.sh

# N new DeltaTables to Ready on the real control plane, one release operator: time, applies in
# flight, reconciles/s, RSS and CPU (converging and idle), apiserver requests per reconcile.
# BENCH_N lists the sizes on the lake target, BENCH_N_DATABRICKS those on the warehouse
# emulator (every DDL runs on Spark in one local JVM: minutes per hundred tables, so fewer);
# one control plane per size.
BENCH_N ?= 100 1000 5000
BENCH_N_DATABRICKS ?= 100
bench-controller: controlplane warehouse
	$(CARGO) build --locked --release --bin delta-operator
	for n in $(BENCH_N); do PROFILE=release e2e/with-controlplane.sh e2e/bench/controller.sh $$n || exit 1; done
	for n in $(BENCH_N_DATABRICKS); do PROFILE=release BENCH_TARGET=databricks e2e/with-controlplane.sh e2e/warehouse/with-warehouse.sh e2e/bench/controller.sh $$n || exit 1; done

# Two release replicas sharing N DeltaTables (BENCH_SHARDS_N, default 5000) by shard on the real
# control plane: each applies only its own; one is killed and the other takes its shards
# within the Lease duration; tables of the dead one's shards changed become Ready through it.
BENCH_SHARDS_N ?= 5000
bench-shards: controlplane
	$(CARGO) build --locked --release --bin delta-operator
	PROFILE=release e2e/with-controlplane.sh e2e/bench/shards.sh $(BENCH_SHARDS_N)

# A steady-state drift check on Databricks (the warehouse emulator): statements and HTTP
# requests per schema and per table, beside what delta-engine and stevin would send.
bench-statements: warehouse
	e2e/bench/statements.sh

# Lake rewrites: bytes written per table size and rows/s, beside a plain delta-rs copy.
# the same staged rewrite on the lake and on a Spark Connect target (BENCH_ROWS, default 5000000)
BENCH_ROWS ?= 5000000
bench-spark-rewrite: warehouse python build
	e2e/bench/spark-rewrite.sh $(BENCH_ROWS)

bench-rewrite:
	$(CARGO) bench --locked --bench rewrite

# Peak RSS and time of the lake's rewrites of tables of 0.25, 1 and 4 GiB beside a plain
# delta-rs copy of each, in the same run (release; ~20 GiB of disk at the largest;
# REWRITE_MEMORY_GIB=0.05,0.2 for a quick one).
bench-rewrite-memory:
	$(CARGO) bench --locked --bench rewrite_memory

# One admission and one reconcile's dependency lookup beside 1,000 and 20,000 cached
# DeltaTables, in the same run, with the ratio (no cluster: the stores are fed in process).
bench-depends:
	$(CARGO) bench --locked -p delta-operator-controller --bench depends

# The README's first command.
example:
	$(CARGO) run -- apply -f examples/
