"""parquet 1.0.0 (loaded by the plugin host as the top-level module ``connector``)."""
