"""Every command block of README.md and docs/ (``tests/docblocks.py``) is run by a test as the
page has it, or is listed here with why it is not (yet). A block added, changed or dropped
without its test, or a test whose block is gone, fails here: a page and its test cannot drift
apart."""

from __future__ import annotations

from pathlib import Path

from tests.docblocks import ROOT, command_blocks

DOCS_E2E = "tests/e2e/test_docs_commands.py"
GUIDE = "docs/writing-a-connector.md"
MAKE_RUN = (
    f"{DOCS_E2E}::test_make_run_the_readme_s_first_steps_and_debezium_s_five_commands_as_written"
)

RUN: dict[tuple[str, str], str] = {
    (GUIDE, "export HEADRACE_PLUGIN_PATH=$PWD/services/headrace/plugins:$PWD/docs/example"): (
        f"{DOCS_E2E}::test_the_guide_s_commands_run_its_example_plugins_as_it_says"
    ),
    (GUIDE, ".venv/bin/headrace plugins list"): (
        f"{DOCS_E2E}::test_the_guide_s_commands_run_its_example_plugins_as_it_says"
    ),
    (GUIDE, ".venv/bin/headrace apply -f docs/example-connectors/ --wait"): (
        f"{DOCS_E2E}::test_the_guide_s_commands_run_its_example_plugins_as_it_says"
    ),
    (GUIDE, ".venv/bin/headrace delete connector counts --wait    # gives var/files/counts up"): (
        f"{DOCS_E2E}::test_the_guide_s_commands_run_its_example_plugins_as_it_says"
    ),
    (GUIDE, ".venv/bin/mypy --strict docs/example/text-lines/1.0.0/*.py"): (
        f"{DOCS_E2E}::test_the_guide_s_type_check_passes_as_it_says"
    ),
    (
        "README.md",
        "make kafka-up         # the embedded broker on 127.0.0.1:9092; or name yours in the "
        "worker file",
    ): f"{DOCS_E2E}::test_the_standalone_quickstart_moves_every_line_as_the_page_says",
    ("docs/standalone.md", "make kafka-up"): (
        f"{DOCS_E2E}::test_the_standalone_quickstart_moves_every_line_as_the_page_says"
    ),
    (
        "README.md",
        "make run     # install, start Kafka and every service, run the demo pipeline end to end",
    ): MAKE_RUN,
    ("README.md", ".venv/bin/headrace plugins list"): (MAKE_RUN),
    (
        "README.md",
        "curl -X POST -H 'Content-Type: application/json' localhost:8083/connectors \\",
    ): MAKE_RUN,
    (
        "docs/reference/rest.md",
        "curl -X POST -H 'Content-Type: application/json' localhost:8083/connectors \\",
    ): f"{DOCS_E2E}::test_the_guide_s_commands_run_its_example_plugins_as_it_says",
    (
        "docs/java-connectors.md",
        "make run                                      # in another shell: the stack, running on",
    ): MAKE_RUN,
    (
        "docs/java-connectors.md",
        "headrace plugins install org.apache.kafka:connect-file:3.9.1   # answers once it is "
        "recorded",
    ): "tests/e2e/test_live_install.py::"
    "test_one_install_reaches_every_worker_live_and_a_worker_that_joins_later",
    (
        "docs/architecture.md",
        ".venv/bin/headrace probe 127.0.0.1:50051 --service headrace.v1.ConfigService   # ready: "
        "replayed",
    ): MAKE_RUN,
    (
        "README.md",
        "make connect-up           # a Kafka Connect to try it on, on 127.0.0.1:8093; or set "
        "CONNECT to yours",
    ): MAKE_RUN,
    **{
        ("docs/migration.md", first): MAKE_RUN
        for first in (
            "make run                                      # in another shell: headrace, on the "
            "embedded broker",
            "headrace migrate --from $CONNECT --plan                      # every connector",
            "headrace migrate --from $CONNECT --plan --worker-properties $WORKER",
            "headrace migrate --from $CONNECT --cutover --install --worker-properties $WORKER",
            "headrace migrate --to $CONNECT --cutover --connector lines-in --connector lines-out",
            "curl -s -X POST -H 'Content-Type: application/json' localhost:8083/migrations -d '{",
        )
    },
}
"""The blocks a test runs as written: by (page, first line), the test."""

NOT_YET: dict[tuple[str, str], str] = {
    ("docs/migration.md", "headrace migrate --from https://connect:8443 --plan \\"): (
        "a guarded cluster's, with the user's own credentials and certificate files"
    ),
    ("docs/operations/deploy.md", "docker build -t headrace:0.1.0 ."): (
        "needs Docker, which the suite's machines do not have"
    ),
    (
        "docs/operations/deploy.md",
        "docker run headrace:0.1.0 config --address=0.0.0.0:50051 --rest-address=0.0.0.0:8083",
    ): "needs Docker",
    (
        "docs/operations/deploy.md",
        "docker compose -f deploy/compose.yaml up -d --wait      # builds the image, starts "
        "everything",
    ): "needs Docker",
    (
        "docs/operations/deploy.md",
        "kubectl apply -k deploy/overlays/local          # one of each, small, with its own Kafka",
    ): "needs a Kubernetes cluster",
    ("docs/operations/deploy.md", "for s in config coordinator worker executor; do"): (
        "needs a Kubernetes cluster"
    ),
    (
        "docs/operations/observability.md",
        "headrace probe 127.0.0.1:50054      # in the worker's container, or wherever its "
        "--address is",
    ): "a worker given that address, as a deployment gives it: make run's workers take free ports",
    (
        "docs/operations/security.md",
        "$ HEADRACE_TOKEN=91b2d4... headrace delete connector orders",
    ): ("a transcript, with its token elided"),
    (
        "docs/standalone.md",
        "headrace standalone worker.properties connector.properties [connector.json ...]",
    ): ("a synopsis, with its optional parts in brackets"),
}
"""The blocks no test runs as written, and why."""


def test_every_command_block_is_run_by_a_test_or_said_why_not() -> None:
    found = {(b.page, b.first.strip()) for b in command_blocks()}
    unaccounted = sorted(found - set(RUN) - set(NOT_YET))
    assert not unaccounted, f"command blocks no test runs and none says why: {unaccounted}"
    gone = sorted((set(RUN) | set(NOT_YET)) - found)
    assert not gone, f"listed here, but no such block in the pages: {gone}"
    assert not set(RUN) & set(NOT_YET)


def test_each_block_s_test_exists() -> None:
    for test in set(RUN.values()):
        path, _, name = test.partition("::")
        assert f"def {name}(" in (ROOT / path).read_text(), test


def test_the_block_reader_reads_a_block_as_a_shell_runs_it(tmp_path: Path) -> None:
    from tests.docblocks import blocks

    page = tmp_path / "page.md"
    page.write_text(
        "# Title\n\n```\nheadrace create connector a \\\n    --set x=1   # a comment\n"
        "# a line of comment\nmake down\n```\n\n```json\n{}\n```\n"
    )
    [shell, data] = blocks(page)
    assert shell.commands == ["headrace create connector a --set x=1", "make down"]
    assert shell.line == 3 and data.info == "json"
