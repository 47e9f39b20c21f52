"""The config service: the connector lifecycle, every change an event on the configs topic."""
