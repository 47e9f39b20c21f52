"""The ``datagen`` source plugin: deterministic test data, one folder per version."""
