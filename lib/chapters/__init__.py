"""Stage 10: each chapter's prologue and presentation: its tables, figures and generated readings."""
