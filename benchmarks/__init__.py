"""Benchmarks that write JSON (ARCHITECTURE.md, "Conventions": speed is measured here, never in timed tests)."""
