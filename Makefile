# headrace: `make run` starts everything on the embedded defaults; `make test` runs the suite.
SHELL := /bin/bash
PY ?= python3.11
VENV := .venv
BIN := $(VENV)/bin
# The embedded broker's release (and the benchmarks' Kafka Connect's): `make test
# KAFKA_VERSION=3.9.1` runs the suite on the last Kafka 3.
KAFKA_VERSION ?= 4.3.0
export HEADRACE_KAFKA_VERSION := $(KAFKA_VERSION)
KAFKA_LIB := deploy/kafka/lib/$(KAFKA_VERSION)
KAFKA_PROFILE := $(if $(filter 4.%,$(KAFKA_VERSION)),-Pkafka4,-Pkafka3)
STAMP := $(VENV)/.installed

.PHONY: all install bytecode jvm proto kafka-jars spark-jars connect-jars kafka-up kafka-down connect-up connect-down run down test browser unit lint typecheck bench bench-smoke chaos clean

# `make`: the Python environment and the Java parts.
all: install bytecode jvm

install: $(STAMP)

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PY) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -e '.[dev,bench,connect]'
	touch $(STAMP)

# headrace's own modules compiled ahead, as pip compiles the packages it installs: every
# service and plugin process imports them as it starts, and without the bytecode (an editable
# install has none, and PYTHONDONTWRITEBYTECODE keeps Python from writing it) each start
# compiles them again, about 0.15 s. Only files changed since are compiled; plugin folders are
# left as their authors made them.
bytecode: $(STAMP)
	$(BIN)/python -m compileall -q -x '/plugins/' services/headrace

# Regenerate the protobuf and gRPC code under services/headrace/v1 (importable as headrace.v1).
proto: $(STAMP)
	$(BIN)/python -m headrace.local.protogen

# The JVM plugin host, which runs Kafka Connect's Java connectors, and the jar Java connector
# authors compile against for the deletion stop (installed in the local Maven repository, where
# a connector's build finds it); the host's gRPC code is generated from protos/, and its unit
# tests run as it is built.
JVM_HOST := services/jvm/host/target/headrace-jvm-host.jar
JVM_SOURCES := $(shell find services/jvm -name pom.xml -o -name '*.java' -not -path '*/target/*') \
	$(wildcard protos/headrace/v1/*.proto)
jvm: $(JVM_HOST)

$(JVM_HOST): $(JVM_SOURCES)
	mvn -q -B -f services/jvm/pom.xml install
	touch $@

kafka-jars: $(KAFKA_LIB)/.resolved

$(KAFKA_LIB)/.resolved: deploy/kafka/pom.xml
	mvn -q -B -f deploy/kafka/pom.xml -Dkafka.version=$(KAFKA_VERSION) $(KAFKA_PROFILE) \
		dependency:copy-dependencies
	touch $@

# The jars the Spark executor adds to PySpark's: Delta Lake and the PostgreSQL JDBC driver.
SPARK_LIB := deploy/spark/lib
spark-jars: $(SPARK_LIB)/.resolved

$(SPARK_LIB)/.resolved: deploy/spark/pom.xml
	mvn -q -B -f deploy/spark/pom.xml dependency:copy-dependencies
	touch $@

# Kafka Connect itself: the benchmarks' peer, the cluster the migration tests move from, and
# `make connect-up`'s.
CONNECT_LIB := deploy/kafka-connect/lib/$(KAFKA_VERSION)
connect-jars: $(CONNECT_LIB)/.resolved

$(CONNECT_LIB)/.resolved: deploy/kafka-connect/pom.xml
	mvn -q -B -f deploy/kafka-connect/pom.xml -Dkafka.version=$(KAFKA_VERSION) $(KAFKA_PROFILE) \
		dependency:copy-dependencies
	touch $@

kafka-up: install kafka-jars
	$(BIN)/python -m headrace.local kafka start

kafka-down: $(STAMP)
	$(BIN)/python -m headrace.local kafka stop

# Kafka Connect on the embedded broker, its REST API on 127.0.0.1:8093: a cluster to try
# `headrace migrate` against (docs/migration.md).
connect-up: install kafka-jars connect-jars
	$(BIN)/python -m headrace.local connect start

connect-down: $(STAMP)
	$(BIN)/python -m headrace.local connect stop

run: install bytecode jvm kafka-jars spark-jars
	$(BIN)/python -m headrace.local stack up --demo

down: $(STAMP)
	$(BIN)/python -m headrace.local stack down

# The suite; a test that hangs past pytest's timeout ends the run and its report says where.
# Each test's time is kept in var/test-report.xml (JUnit XML): where the suite's minutes go.
test: install bytecode jvm kafka-jars spark-jars connect-jars typecheck lint browser
	$(BIN)/python -m pytest --junitxml=var/test-report.xml || { cat var/test-hang.txt 2>/dev/null && head -1 var/test-hang.txt; exit 1; }

# The console's browser tests drive Debian's Chromium; said before the suite starts when it is
# missing (under CI its tests then fail; elsewhere they are skipped).
CHROMIUM ?= $(or $(HEADRACE_CHROMIUM),/usr/bin/chromium)
browser:
	@test -x $(CHROMIUM) || echo "*** no Chromium at $(CHROMIUM): the console's browser tests" \
		"need Debian's packages: apt-get install chromium chromium-driver"

unit: install
	$(BIN)/python -m pytest tests/unit

lint: install
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

# The package and the tests in one run (pyproject.toml says what); then each plugin version
# folder on its own, since two versions of one plugin share a module name.
typecheck: install
	$(BIN)/mypy
	for d in services/headrace/plugins/*/* tests/plugins/*/* docs/example/*/*; do $(BIN)/mypy --no-error-summary $$d/*.py || exit 1; done

# Every workload (or only W=<name>), measured side by side with its peers; reports in var/bench/.
bench: install bytecode jvm kafka-jars spark-jars connect-jars
	$(BIN)/python -m bench $(W)

# Each workload once, small: a check that the harness still runs end to end (about 6 minutes,
# so outside make test; tests/unit/bench checks the harness's logic).
bench-smoke: install bytecode jvm kafka-jars spark-jars connect-jars
	$(BIN)/python -m bench --smoke

# The nemesis: DURATION seconds of random, overlapping faults across every process while
# pipelines and connector changes run, then a check of everything written (tests/chaos).
# SEED replays a run's faults; unset, a random one is drawn and printed.
DURATION ?= 600
chaos: install bytecode kafka-jars spark-jars
	$(BIN)/python -m tests.chaos --duration $(DURATION) $(if $(SEED),--seed $(SEED))

clean:
	rm -rf var .pytest_cache
