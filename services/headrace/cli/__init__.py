"""The `headrace` command: manage connectors over gRPC, and run the whole system locally."""
