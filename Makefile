# delta-operator — one test command: `make test`.
# Heavy builds are cached outside the clone (never required: a cold run works).
CACHE ?= $(HOME)/.cache/delta-operator
# the e2e scripts read DELTA_OPERATOR_CACHE: one cache for all of them
export DELTA_OPERATOR_CACHE := $(CACHE)
export CARGO_TARGET_DIR ?= $(CACHE)/target
export DELTA_OPERATOR_PYTHON ?= $(CACHE)/venv/bin/python
export PIP_CACHE_DIR ?= $(CACHE)/pip
CARGO ?= cargo

# Pinned Python packages: the outside reader (deltalake) and an S3 server (moto) for the tests.
PY_PACKAGES = deltalake==1.6.6 pyarrow==26.0.1 moto[server]==5.2.5 pyyaml==6.0.4
PY_STAMP := $(CACHE)/venv/.installed-$(shell echo '$(PY_PACKAGES)' | md5sum | cut -c1-8)

.PHONY: test prepare build lint go-tools python controlplane crds bench bench-planners bench-controller bench-statements bench-rewrite example ship-tools gen-config warehouse fuzz

# The Databricks SQL warehouse + Unity Catalog emulator: real Delta Lake on Spark
# (pyspark from PyPI, delta-spark jars from Maven Central), see e2e/warehouse/README.md.
WAREHOUSE_PY_PACKAGES = pyspark==4.2.0 delta-spark==4.4.0 pytest==8.4.2

# The builds and installs are independent and each has serial stretches (linking, big
# single crates, downloads), so they run side by side: on a cold 2-core machine this is
# markedly shorter than one after another.
test:
	$(MAKE) --no-print-directory -j4 prepare
	CARGO=$(CARGO) e2e/with-controlplane.sh e2e/warehouse/with-warehouse.sh e2e/run-tests.sh
	e2e/with-controlplane.sh e2e/ship/check.sh
	fuzz/run.sh $(FUZZ_SECONDS_CI)

prepare: python go-tools warehouse build lint

# Coverage-guided fuzzing (cargo-fuzz on stable, docs/reliability.md): bounded in
# `make test`; `make fuzz` runs longer and merges what it finds into fuzz/corpus.
FUZZ_SECONDS_CI ?= 30
FUZZ_SECONDS ?= 600
fuzz:
	fuzz/run.sh $(FUZZ_SECONDS) merge

# fmt and clippy clean, warnings are errors (beside the other builds in prepare)
lint:
	$(CARGO) fmt --all --check
	$(CARGO) clippy --locked --workspace --all-targets -- -D warnings

build:
	$(CARGO) build --locked --workspace --all-targets

# Every Go program the tests use, one after another (each Go build already uses every core).
go-tools: controlplane
	e2e/ship/tools.sh >/dev/null

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

# N new DeltaTables to Ready on the real control plane, one release operator, the lake target:
# time, applies in flight, reconciles/s, RSS and CPU (converging and idle), apiserver requests
# per reconcile. BENCH_N lists the sizes; one control plane per size.
BENCH_N ?= 100 1000 5000
bench-controller: controlplane
	$(CARGO) build --locked --release --bin delta-operator
	for n in $(BENCH_N); do PROFILE=release e2e/with-controlplane.sh e2e/bench/controller.sh $$n || exit 1; done

# A steady-state drift check on Databricks (the warehouse emulator): statements and HTTP
# requests per schema and per table, beside what delta-engine and stevin would send.
bench-statements: warehouse
	e2e/bench/statements.sh

# Lake rewrites: bytes written per table size and rows/s, beside a plain delta-rs copy.
bench-rewrite:
	$(CARGO) bench --locked --bench rewrite

# The README's first command.
example:
	$(CARGO) run -- apply -f examples/
