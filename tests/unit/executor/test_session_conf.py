"""The Spark settings the executor starts its session with."""

from __future__ import annotations

from pathlib import Path

from headrace.executor.session import session_conf


def test_spark_s_catalog_folder_is_under_var_not_the_working_directory(tmp_path: Path) -> None:
    """Found after a suite's run: an empty ``spark-warehouse/`` in the checkout, made by an
    executor started there, as Spark does in its working directory by default."""
    warehouse = tmp_path / "var" / "spark-warehouse"
    assert session_conf("local[1]", warehouse=warehouse)["spark.sql.warehouse.dir"] == str(
        warehouse
    )
    assert "spark.sql.warehouse.dir" not in session_conf("sc://spark:15002", warehouse=warehouse)
