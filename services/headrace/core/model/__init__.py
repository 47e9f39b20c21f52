"""The shared vocabulary and the pure folds of the topics: frozen values, events, and functions
``apply(state, event) -> state``. Nothing here does I/O; ``headrace.core.storage`` reads and
appends the records these modules encode and decode."""
