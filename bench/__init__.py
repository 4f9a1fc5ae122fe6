"""Benchmarks: each prints its measured numbers beside the ceiling they are compared to."""
