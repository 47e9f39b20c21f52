"""The core shared by every service: events and their folds, the topic log, settings, logging."""
