"""Clients of headrace's own services, as the other services and the ``headrace`` command ask
them: each call made once here, its answers as the callers use them."""
