"""Re-ranking on a time budget: the library behind the book's chapters.

Sub-modules: :mod:`lib.paths` (where data and artifacts live), :mod:`lib.atomic` (atomic
writes), :mod:`lib.profiles` (the smoke / book / paper profiles), :mod:`lib.data` (registry,
fetch, conversion, readers, splits), :mod:`lib.first_stage` (pyserini BM25 / QLD / RM3),
:mod:`lib.evaluation` (trec_eval-semantics metrics, depth sweeps, significance, run files) and
:mod:`lib.chapters` (executes the chapters with papermill for the book build).
"""

__version__ = "0.1.0"
