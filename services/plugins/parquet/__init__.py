"""The ``parquet`` sink plugin: Kafka into Parquet through the Spark executor."""
