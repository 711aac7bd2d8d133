"""Benchmarks that write JSON (DESIGN.md: speed targets are met in benchmarks, never in timed tests)."""
