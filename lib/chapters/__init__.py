"""Stage 10: the book build (papermill, change detection) and per-chapter tables, figures and accessors."""
