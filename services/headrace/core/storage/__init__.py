"""Where state lives: the topic log (Kafka, or in memory for tests), the cluster's topics and how
they come to exist, and the stores that keep a fold of the status and offsets topics current."""
