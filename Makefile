# `make demo` and `make test` work on a fresh machine: they make the virtualenv, install the
# pinned Python dependencies and build the extension (release, profile-guided, once) before
# running. `make jars` copies the JVM jars the tests and the demo use (Delta Lake and Spark's Kafka
# source for Spark; an Apache Kafka broker) from Maven Central with Maven's own client, once, into
# .cache/jars.

PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
export MATURIN_NO_INSTALL_RUST := 1
export CARGO_TARGET_DIR ?= $(CURDIR)/target
JARS := .cache/jars

.PHONY: demo test lint test-rust test-python develop jars bench clean fuzz fuzz-build fuzz-smoke

$(VENV)/.installed: requirements-dev.txt
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -r requirements-dev.txt
	touch $@

# The extension, optimised with the profile of a training run (tools/pgo/build.py; TICDC_PGO=0
# builds it plainly, as a quick edit-and-test loop wants).
develop: $(VENV)/.installed
	$(PY) tools/pgo/build.py

# One folder of jars per pom in jvm/: spark (added to the Spark session), kafka (the test broker).
# Names without versions, so that examples/jvm.py can leave out the jars pyspark already ships.
$(JARS)/%/.fetched: jvm/%/pom.xml
	rm -rf $(JARS)/$*
	mvn -q -B -f $< dependency:copy-dependencies -DincludeScope=runtime -Dmdep.stripVersion=true \
		-DoutputDirectory=$(CURDIR)/$(JARS)/$*
	touch $@

jars: $(JARS)/spark/.fetched $(JARS)/kafka/.fetched

demo: develop jars
	$(PY) examples/demo.py

test: lint test-rust test-python

# ruff over the Python (config in pyproject.toml), rustfmt (rustfmt.toml) over the crate, the
# fuzz target and tools/tables, and clippy with and without the PyO3 bindings, warnings as errors.
lint: $(VENV)/.installed
	$(VENV)/bin/ruff check python tests examples benches fuzz tools .ci
	cargo fmt --check
	rustfmt --check --edition 2021 fuzz/fuzz_targets/*.rs tools/tables/*.rs
	cargo clippy --all-targets -- -D warnings
	cargo clippy --all-targets --features python -- -D warnings

# Optimised, with overflow checks and debug assertions (the `checked` profile in Cargo.toml).
test-rust:
	cargo test --profile checked

test-python: develop jars
	$(PY) -m pytest -q

bench: develop
	cargo bench --bench decode
	$(PY) benches/peers.py

# Fuzzing (README, Development): cargo-fuzz is installed into .cache/cargo on first use; the targets
# are built with the nightly flags cargo-fuzz needs (RUSTC_BOOTSTRAP) and run one after another,
# FUZZ_SECONDS each, at the lowest priority; fuzz/runs.log keeps each target's last statistics.
# Built optimised with debug assertions and overflow checks, and without a sanitizer: under ASan
# (its allocator, in this allocation-heavy code) the targets ran 115-270 executions a second, about
# a tenth of the speed without it (BENCHMARKS.md). The crate is safe Rust but for a few blocks
# whose output the checks validate in full (fuzz/check.rs), and fuzz/alloc_cap.rs stands in for
# -malloc_limit_mb. `make fuzz FUZZ_SANITIZER=address` builds and runs them under ASan.
FUZZ_SECONDS ?= 60
FUZZ_STOP ?= -max_total_time=$(FUZZ_SECONDS)
FUZZ_MAX_LEN ?= 2048
FUZZ_SANITIZER ?= none
FUZZ_TARGETS ?= open craft canal_json simple_json simple_avro decode differential
FUZZ_CORPUS ?= corpus
FUZZ_ENV := PATH="$(CURDIR)/.cache/cargo/bin:$$PATH" RUSTC_BOOTSTRAP=1 CARGO_TARGET_DIR="$(CURDIR)/fuzz/target"
FUZZ_BUILD := -O --debug-assertions --sanitizer $(FUZZ_SANITIZER)

.cache/cargo/bin/cargo-fuzz:
	cargo install --locked --root .cache/cargo cargo-fuzz

fuzz-build: .cache/cargo/bin/cargo-fuzz
	cd fuzz && $(FUZZ_ENV) nice -n 19 cargo fuzz build $(FUZZ_BUILD)

fuzz: fuzz-build
	$(PYTHON) fuzz/seed_corpus.py --max-len $(FUZZ_MAX_LEN) --out fuzz/$(FUZZ_CORPUS)
	@rm -f fuzz/runs.log
	@set -e; for t in $(FUZZ_TARGETS); do \
	  echo "== $$t: $(FUZZ_STOP)"; \
	  (cd fuzz && $(FUZZ_ENV) nice -n 19 cargo fuzz run $(FUZZ_BUILD) $$t $(FUZZ_CORPUS)/$$t -- \
	    $(FUZZ_STOP) -max_len=$(FUZZ_MAX_LEN) -timeout=10 -rss_limit_mb=2048 \
	    -malloc_limit_mb=256 -print_final_stats=1 2> target/$$t.log) || { tail -60 fuzz/target/$$t.log; exit 1; }; \
	  grep -E '^(Done|stat::number_of_executed_units|stat::average_exec_per_sec|stat::peak_rss_mb)' fuzz/target/$$t.log \
	    | sed "s/^/$$t /" | tee -a fuzz/runs.log; \
	done
	@awk '/number_of_executed_units/ {n += $$3} END {print "total executions:", n}' fuzz/runs.log

# The short run CI makes (.ci/run, the workflow): 50,000 executions a target from the seeds alone
# (a fresh corpus, as on a new clone), with a fixed random seed, so that it does not depend on the
# machine's speed or on earlier runs (10-20 s a target). Two runs still differ: a folder is read in
# the file system's order, and hash tables in the dependencies seed themselves per process, which
# steers the coverage. So a smoke run can find an old bug that others missed (it did, 2026-11-26).
# Open-ended search is `make fuzz`, which keeps its corpus in fuzz/corpus.
fuzz-smoke:
	rm -rf fuzz/target/smoke-corpus
	$(MAKE) fuzz FUZZ_STOP="-runs=50000 -seed=1" FUZZ_CORPUS=target/smoke-corpus

clean:
	rm -rf $(VENV) target .cache fuzz/target
