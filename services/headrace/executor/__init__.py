"""The Spark executor: one shared SparkSession behind gRPC that writes record batches.

Plugin processes send each Kafka partition's batch as an Arrow IPC stream (their client is
``headrace.runtime.executor.client``, reached by plugins through the SDK); the service
(``service.py``) validates it (``batches.py``), admits it if there is room (``admission.py``), and
writes it idempotently on (topic, partition, offset range) under a dataset root (``writer.py``,
layout in ``layout.py``). ``python -m headrace.executor`` runs it.

Importing this package loads neither Spark nor gRPC.
"""
