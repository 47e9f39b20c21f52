"""The executor's writers, one per kind of target, each idempotent on (connector, topic, partition,
offset range): files (``files``: Parquet, JSON lines, CSV, laid out as ``layout`` says), Delta
tables (``delta``, with what a table's log says in ``deltalog``) and JDBC tables (``jdbc``);
what they share is ``writing``."""
