"""The worker: runs assigned connectors and tasks in plugin processes and reports status."""
