"""Stage 6: effectiveness measures and significance, efficiency (throughput, latency) and time budgets."""
