"""Plugins kept apart from the services: discovery on the plugin path without importing any
plugin code (``plugins``), per-version environments of their requirements (``pluginenv``), one
OS process per plugin version (``supervisor``), and the typed client the services drive those
processes with (``client``)."""
