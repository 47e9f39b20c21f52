# syntax=docker/dockerfile:1
# One image for every headrace service:
#   docker build -t headrace:0.1.0 .
#   docker run headrace:0.1.0 config|coordinator|worker|executor [FLAGS...]
# deploy/compose.yaml and the Kubernetes bases under deploy/ run it; deploy/entrypoint.sh says
# what the arguments do. Bookworm, not the newest Debian: it is the one that packages Java 17.
ARG PYTHON_IMAGE=python:3.11-slim-bookworm

# The distribution, built as a wheel from the source tree. Nothing else of this stage ships.
FROM ${PYTHON_IMAGE} AS build
WORKDIR /src
COPY pyproject.toml README.md ./
COPY services/ services/
RUN pip wheel --no-cache-dir --no-deps --wheel-dir /wheels .

# The jars the executor adds to PySpark's (Delta Lake, the PostgreSQL JDBC driver), resolved by
# Maven from the pom `make spark-jars` uses. Nothing else of this stage ships either.
FROM maven:3.9-eclipse-temurin-17 AS spark-jars
WORKDIR /spark
COPY deploy/spark/pom.xml ./
RUN --mount=type=cache,target=/root/.m2 \
    mvn -q -B dependency:copy-dependencies && test -n "$(ls lib/*.jar)"

# The JVM plugin host, which runs Kafka Connect's Java connectors (docs/java-connectors.md), built
# from services/jvm with its gRPC code generated from protos/.
FROM maven:3.9-eclipse-temurin-17 AS jvm-host
WORKDIR /src
COPY protos/ protos/
COPY services/jvm/ services/jvm/
RUN --mount=type=cache,target=/root/.m2 \
    mvn -q -B -f services/jvm/pom.xml package -DskipTests \
    && test -f services/jvm/host/target/headrace-jvm-host.jar

# The Java plugins deploy/java-plugins/plugins.txt names (Strimzi's spec.build, as a file): each
# resolved by Maven and checked against its SHA-512 by `headrace plugins install`, and scanned by
# the JVM host, as on a running cluster. Only the laid-out folders ship.
FROM ${PYTHON_IMAGE} AS java-plugins
RUN mkdir -p /usr/share/man/man1 \
    && apt-get update \
    && apt-get install -y --no-install-recommends openjdk-17-jre-headless maven \
    && rm -rf /var/lib/apt/lists/*
RUN --mount=type=bind,from=build,source=/wheels,target=/wheels \
    pip install --no-cache-dir "$(echo /wheels/headrace-*.whl)"
COPY --from=jvm-host /src/services/jvm/host/target/headrace-jvm-host.jar /opt/headrace/jvm/
COPY --from=jvm-host /src/services/jvm/host/target/lib/ /opt/headrace/jvm/lib/
COPY deploy/java-plugins/ /java-plugins/
RUN --mount=type=cache,target=/root/.m2 \
    HEADRACE_JVM_HOST=/opt/headrace/jvm/headrace-jvm-host.jar HEADRACE_VAR=/tmp/var \
    sh /java-plugins/install.sh /java-plugins/plugins.txt /plugins

FROM ${PYTHON_IMAGE}
# Java 17 for PySpark (the executor's driver runs in a JVM); tini as PID 1, to pass signals on
# and reap what the worker's plugin processes leave behind. The man folder is missing from slim
# images, and the JRE's post-install step fails without it.
RUN mkdir -p /usr/share/man/man1 \
    && apt-get update \
    && apt-get install -y --no-install-recommends openjdk-17-jre-headless tini \
    && rm -rf /var/lib/apt/lists/*

# A virtual environment of its own, so the built-in plugins (package data) sit at a known path.
# pip stays in it: the worker builds plugin versions' requirements with it
# (isolation/pluginenv.py).
ENV VIRTUAL_ENV=/opt/headrace/venv \
    PATH=/opt/headrace/venv/bin:$PATH \
    PYTHONUNBUFFERED=1 \
    PYTHONDONTWRITEBYTECODE=1
RUN python -m venv /opt/headrace/venv
# With the connect extra: an executor whose SPARK_MASTER is sc:// needs PySpark's Connect client.
RUN --mount=type=bind,from=build,source=/wheels,target=/wheels \
    pip install --no-cache-dir "$(echo /wheels/headrace-*.whl)[connect]"

COPY --from=spark-jars /spark/lib/ /opt/headrace/spark-jars/
COPY --from=jvm-host /src/services/jvm/host/target/headrace-jvm-host.jar /opt/headrace/jvm/
COPY --from=jvm-host /src/services/jvm/host/target/lib/ /opt/headrace/jvm/lib/
COPY --from=java-plugins /plugins/ /opt/headrace/image-plugins/

# Logs, sockets and plugin environments go under HEADRACE_VAR; connectors' files under its
# files/ (the default HEADRACE_FILE_ROOTS). After the built-in plugins, the plugin path has
# /opt/headrace/plugins, a volume in the deployments, where plugins installed live go (the first
# entry that is not the built-ins'), then /opt/headrace/image-plugins, baked in above.
ENV HEADRACE_VAR=/var/lib/headrace \
    HEADRACE_PLUGIN_PATH=/opt/headrace/venv/lib/python3.11/site-packages/headrace/plugins:/opt/headrace/plugins:/opt/headrace/image-plugins \
    HEADRACE_SPARK_JARS=/opt/headrace/spark-jars \
    HEADRACE_JVM_HOST=/opt/headrace/jvm/headrace-jvm-host.jar
RUN groupadd --system --gid 10001 headrace \
    && useradd --system --uid 10001 --gid 10001 --home-dir /var/lib/headrace \
        --shell /usr/sbin/nologin headrace \
    && mkdir -p /var/lib/headrace/files /opt/headrace/plugins \
    && chown -R 10001:10001 /var/lib/headrace
COPY --chmod=0755 deploy/entrypoint.sh /usr/local/bin/headrace-service

# Fail the build, not the first start, if the built-in plugins are not first on the plugin path,
# a service's command does not resolve, or the executor would find no jars.
RUN python -c "import sys; from headrace.core.settings import BUILTIN_PLUGINS, Settings; \
path = Settings().plugin_path; \
sys.exit(0 if path[0] == BUILTIN_PLUGINS and any(BUILTIN_PLUGINS.glob('*/*/manifest.json')) \
else f'built-in plugins {BUILTIN_PLUGINS} are not first on {path}')" \
    && python -c "import importlib.util as u, sys; \
missing = [s for s in ('config', 'coordinator', 'worker', 'executor') \
if u.find_spec(f'headrace.{s}.__main__') is None]; sys.exit(f'no module for {missing}' if missing else 0)" \
    && python -c "from headrace.executor.session import jar_folder, jars; print(jars(jar_folder()))" \
    && headrace probe --help >/dev/null \
    && java -version

USER 10001:10001
WORKDIR /var/lib/headrace
# gRPC: config 50051, coordinator 50052, executor 50053, worker health 50054; Kafka Connect's
# REST API 8083; Prometheus metrics 9400.
EXPOSE 50051 50052 50053 50054 8083 9400
HEALTHCHECK --interval=10s --timeout=5s --start-period=60s --retries=3 \
    CMD ["headrace-service", "health"]
ENTRYPOINT ["tini", "--", "headrace-service"]
CMD ["help"]
