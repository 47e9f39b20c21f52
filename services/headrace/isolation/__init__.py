"""Plugins kept apart from the services: discovery on the plugin path without importing any
plugin code (``plugins``), per-version environments of their requirements (``pluginenv``), one
OS process per plugin version (``supervisor``), the typed client the services drive those
processes with (``client``), and the confinement each process puts itself in before it imports
its plugin (``sandbox``). Shared by the config service, the worker and the plugin host."""
