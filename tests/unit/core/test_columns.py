"""pyarrow stays out of the processes that never meet a column (``headrace.sdk.columns``), and
PySpark with it out of an executor that has not started Spark."""

from __future__ import annotations

import subprocess
import sys

import pyarrow as pa
import pytest

from headrace.sdk.columns import is_arrow

ENTRY_POINTS = [
    "headrace.config.__main__",
    "headrace.coordinator.__main__",
    "headrace.worker.__main__",
    # a plugin process with its source and sink loops and the Java plugins' bridge
    "headrace.runtime.host.__main__, headrace.runtime.source.loop, headrace.runtime.sink.loop, "
    "headrace.runtime.host.java",
    # an executor started on demand, before the first call that needs Spark
    "headrace.executor.__main__",
]


@pytest.mark.parametrize("modules", ENTRY_POINTS)
def test_a_process_that_meets_no_column_does_not_load_pyarrow(modules: str) -> None:
    """About 40 MiB resident each (pyarrow with numpy), in every worker and plugin process; the
    executor's Spark libraries (PySpark, py4j, the JDBC writer's psycopg) about 25 more."""
    libraries = "{'pyarrow', 'numpy', 'pyspark', 'py4j', 'psycopg'}"
    check = f"import sys, {modules}; print(sorted({libraries} & set(sys.modules)))"
    loaded = subprocess.run(
        [sys.executable, "-c", check], capture_output=True, text=True, check=True, timeout=60
    )
    assert loaded.stdout.strip() == "[]", f"{modules} loads {loaded.stdout.strip()}"


def test_only_a_pyarrow_array_is_one() -> None:
    assert is_arrow(pa.array([b"a"]))
    assert not is_arrow([b"a"])
    assert not is_arrow(pa.table({"a": [1]}))


def test_the_sdk_gives_the_table_sink_on_first_use() -> None:
    import headrace.sdk as sdk
    from headrace.sdk.tablesink import TableSinkTask

    assert sdk.TableSinkTask is TableSinkTask
    with pytest.raises(AttributeError, match="no attribute 'Nothing'"):
        sdk.Nothing  # noqa: B018 - the attribute's lookup is the test
