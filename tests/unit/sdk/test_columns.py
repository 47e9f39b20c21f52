"""Columns made from Python values, equal to pyarrow's own, without loading pandas."""

from __future__ import annotations

import subprocess
import sys

import pyarrow as pa
import pytest
from hypothesis import given
from hypothesis import strategies as st

from headrace.sdk.columns import binary_column, int64_column, string_column


@given(st.lists(st.one_of(st.none(), st.binary(max_size=20)), max_size=50))
def test_a_binary_column_holds_the_bytes_and_nulls_it_was_given(data: list[bytes | None]) -> None:
    column = binary_column(data)
    column.validate(full=True)
    assert column.type == pa.binary()
    assert column.to_pylist() == data
    assert column.null_count == data.count(None)


@given(st.lists(st.one_of(st.none(), st.text(max_size=20)), max_size=50))
def test_a_string_column_holds_the_text(texts: list[str | None]) -> None:
    column = string_column([None if t is None else t.encode() for t in texts])
    column.validate(full=True)
    assert column.type == pa.string()
    assert column.to_pylist() == texts


def test_bytes_that_are_not_utf8_are_refused_in_a_string_column() -> None:
    with pytest.raises(pa.ArrowInvalid):
        string_column([b"fine", b"\xff\xfe"])


@given(st.lists(st.integers(-(2**63), 2**63 - 1), max_size=50))
def test_an_int64_column_holds_the_numbers(numbers: list[int]) -> None:
    column = int64_column(numbers)
    column.validate(full=True)
    assert column.type == pa.int64()
    assert column.to_pylist() == numbers


def test_making_columns_does_not_load_pandas() -> None:
    script = (
        "import sys\n"
        "from headrace.sdk.columns import binary_column, int64_column, string_column\n"
        "binary_column([b'a', None]); string_column([b'a']); int64_column([1, 2])\n"
        "print('pandas' in sys.modules)\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "False"
