"""Built-in plugins: each plugin a folder, each version a folder with a manifest.json."""
