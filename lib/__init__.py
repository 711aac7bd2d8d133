"""Re-ranking on a time budget: the library behind the book's chapters.

One sub-package per stage of the data flow, each importing only from the stages before it:
``core`` → ``data`` → ``representations`` → ``first_stage`` → ``models`` → ``reranking`` →
``evaluation`` → ``training`` → ``analyses`` → ``chapters``. ARCHITECTURE.md at the repository root
is the map.
"""

__version__ = "0.1.0"

import warnings

# transformers imports huggingface_hub, which imports tqdm.auto: in a Jupyter kernel without ipywidgets
# that warns "IProgress not found" on every chapter page. The book's own bars are plain text tqdm.
warnings.filterwarnings("ignore", message="IProgress not found")
