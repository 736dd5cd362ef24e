"""Throughput and scale benchmark for the job queue (``make bench``); not a test suite."""
