"""Stage 11: the book itself: the chapters executed (papermill, change detection) and staged for Jupyter Book, the
students' exercise notebooks, and the lecture's slide map read from the chapters' headings."""
