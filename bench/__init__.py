"""Benchmarks (``make bench``): figures as ratios against peers measured in the same run."""
