"""Standalone mode: one process for the control plane, configs from Kafka Connect's own files,
source offsets in a file (``headrace.core.storage.filelog``)."""
