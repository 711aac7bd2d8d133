"""Stage 10: the book build (papermill, change detection), the exercises, each chapter's prologue and presentation."""
