"""Benchmarks: ratios measured in one run on one machine (never timed tests)."""
