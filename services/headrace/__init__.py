"""headrace: a connector runtime in the spirit of Kafka Connect. One folder per service."""
