"""The Spark executor's client inside a plugin process (``client``): a sink task's
``context.executor``."""
