"""Clients of headrace's own services, as the other services and the ``headrace`` command ask
them, and of Kafka Connect's REST API, as a migration and the benchmarks call it: each call made
once here, its answers as the callers use them."""
