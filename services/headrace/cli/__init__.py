"""The `headrace` command: manage connectors over gRPC, and ask the services how they are."""
