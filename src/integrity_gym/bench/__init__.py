"""Benchmark runner, logs, results database and reports."""
