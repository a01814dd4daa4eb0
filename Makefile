# `make demo` and `make test` work on a fresh machine: they make the virtualenv, install the
# pinned Python dependencies and build the extension (release, once) before running. `make jars`
# copies the JVM jars the tests and the demo use (Delta Lake and Spark's Kafka source for Spark;
# an Apache Kafka broker) from Maven Central with Maven's own client, once, into .cache/jars.

PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
export MATURIN_NO_INSTALL_RUST := 1
export CARGO_TARGET_DIR ?= $(CURDIR)/target
JARS := .cache/jars

.PHONY: demo test lint test-rust test-python develop jars bench clean

$(VENV)/.installed: requirements-dev.txt
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -r requirements-dev.txt
	touch $@

develop: $(VENV)/.installed
	VIRTUAL_ENV=$(CURDIR)/$(VENV) $(VENV)/bin/maturin develop --release --quiet

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

# ruff over the Python (config in pyproject.toml), rustfmt (rustfmt.toml) over the crate and the
# fuzz target, and clippy with and without the PyO3 bindings, warnings as errors.
lint: $(VENV)/.installed
	$(VENV)/bin/ruff check python tests examples benches fuzz .ci
	cargo fmt --check
	rustfmt --check --edition 2021 fuzz/fuzz_targets/*.rs
	cargo clippy --all-targets -- -D warnings
	cargo clippy --all-targets --features python -- -D warnings

test-rust:
	cargo test --release

test-python: develop jars
	$(PY) -m pytest -q

bench: develop
	cargo bench --bench decode
	$(PY) benches/peers.py

clean:
	rm -rf $(VENV) target .cache
