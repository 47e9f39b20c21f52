"""The coordinator: worker membership and the incremental, cooperative assignment of work."""
