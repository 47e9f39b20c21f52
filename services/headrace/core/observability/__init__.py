"""What an operator sees of every process: JSON log lines (``log``), Prometheus metrics
(``metrics``), and gRPC health and server reflection (``health``)."""
