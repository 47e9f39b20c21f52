"""The write path, one way: admit -> check -> lay out -> write.

1. **admit** (``admission``): room for the batch's bytes, or ``Busy``;
2. **check** (``batches.validate_write``): the request's fields, options and rows, or
   ``InvalidRequest`` naming the field; nothing is written for a batch refused here;
3. **lay out** and **write** (the format's writer: ``files``, ``delta`` or ``jdbc``): under the
   lock of its partition or table, which rows an earlier try already committed, the job's
   transform of the rest (``writing.Prepare``: the SQL transform's), and their commit.

The gRPC edge (``service``) only converts the request and turns errors into status codes.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from pyspark.sql import SparkSession

from headrace.executor.admission import Admission, Limits
from headrace.executor.batches import InvalidRequest, WriteBatch, WriteResult, validate_write
from headrace.executor.options import DELTA, JDBC
from headrace.executor.writers.delta import DeltaWriter
from headrace.executor.writers.files import FileWriter
from headrace.executor.writers.jdbc import JdbcWriter
from headrace.executor.writers.writing import Prepare
from headrace.sdk.paths import Paths


@dataclass(frozen=True)
class WriteRequest:
    """A batch as asked for, before any check: the request's fields without its rows."""

    connector: str
    task: int
    topic: str
    topic_id: str
    partition: int
    first_offset: int
    last_offset: int
    format: str
    path: str
    options: Mapping[str, str] = field(default_factory=dict)

    def checked(self, arrow_ipc: bytes, roots: Paths) -> WriteBatch:
        """The batch, or ``InvalidRequest`` saying why not."""
        return validate_write(
            connector=self.connector,
            task=self.task,
            topic=self.topic,
            topic_id=self.topic_id,
            partition=self.partition,
            first_offset=self.first_offset,
            last_offset=self.last_offset,
            format=self.format,
            path=self.path,
            arrow_ipc=arrow_ipc,
            roots=roots,
            options=self.options,
        )


class WritePath:
    """Admits, checks and writes batches through one SparkSession. Thread-safe."""

    def __init__(self, spark: SparkSession, limits: Limits, roots: Paths, prepare: Prepare) -> None:
        self.admission = Admission(limits)
        self._max_bytes = limits.largest_batch
        self._roots = roots  # the only folders a request may name
        self._files = FileWriter(spark, prepare)
        self._delta = DeltaWriter(spark, prepare)
        self._jdbc = JdbcWriter(spark, prepare)

    def write(self, request: WriteRequest, size: int, read: Callable[[], bytes]) -> WriteResult:
        """Writes the batch whose ``size`` bytes ``read`` gives, once admitted on that size; a
        retried batch writes only the rows no earlier try committed."""
        if not 0 <= size <= self._max_bytes:
            raise InvalidRequest(
                "arrow_ipc", f"{size} bytes; this executor admits at most {self._max_bytes}"
            )
        with self.admission.admit(size):
            batch = request.checked(read(), self._roots)
            return self._writer_of(batch.format).write(batch)

    def _writer_of(self, fmt: str) -> FileWriter | DeltaWriter | JdbcWriter:
        if fmt == DELTA:
            return self._delta
        if fmt == JDBC:
            return self._jdbc
        return self._files
