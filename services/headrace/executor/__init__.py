"""The Spark executor: one shared SparkSession behind gRPC that writes record batches.

Plugin processes send each Kafka partition's batch as an Arrow IPC stream (their client is
``headrace.clients.executor``, reached by plugins through the SDK). The gRPC edge
(``service``) hands it to the write path (``writepath``), which goes one way: admit
(``admission``) -> check (``batches``) -> lay out and write, idempotently on (topic, partition,
offset range), with the format's writer (``writers``: files, Delta or JDBC). ``python -m
headrace.executor`` runs it.

Importing this package loads neither Spark nor gRPC.
"""
