"""Which ``lib/`` files a Python source depends on, and one hash over them: what the book build's change
detection (:mod:`lib.book.build`) fingerprints.

The imports are read with :mod:`ast` (never executed), anywhere in a file, relative ones resolved; the
dependencies are followed transitively, with the ``__init__`` files of every package on the way and the
data files (not Python) beside each module. Nothing here knows about chapters: any source file works.
"""

from __future__ import annotations

import ast
import hashlib
from pathlib import Path

from lib.core import paths


def _imported_names(path: Path, root: Path) -> set[str]:
    """The dotted names of every module ``path`` imports (relative imports resolved), anywhere in the file."""
    try:
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    except SyntaxError as error:
        raise ValueError(f"{path}:{error.lineno}: cannot parse its imports: {error.msg}") from None
    package = list(path.relative_to(root).with_suffix("").parts) if path.is_relative_to(root) else []
    if path.name != "__init__.py":
        package = package[:-1]
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = package[: len(package) - node.level + 1] if node.level else []
            module = ".".join(base + ([node.module] if node.module else []))
            names.add(module)
            names.update(f"{module}.{alias.name}" for alias in node.names)  # `from package import module`
    return names


def _files_of(name: str, root: Path) -> list[Path]:
    """The files of ``lib`` module ``name``: the ``__init__.py`` of every package on the way, then its own."""
    parts = name.split(".")
    if parts[0] != "lib":
        return []
    files = []
    for depth in range(1, len(parts) + 1):
        folder = root.joinpath(*parts[:depth])
        if (folder / "__init__.py").is_file():
            files.append(folder / "__init__.py")
        elif depth == len(parts) and folder.with_suffix(".py").is_file():
            files.append(folder.with_suffix(".py"))
    return files


def library_files(source: Path, root: Path = paths.REPO_ROOT) -> list[Path]:
    """The ``lib/`` files ``source`` depends on: the modules it imports, transitively, with the ``__init__``
    files of their packages and the data files (not Python, not caches) beside them. A file that does not
    parse is a :class:`ValueError` naming its path and line."""
    seen: set[Path] = set()
    pending = [source]
    while pending:
        for name in _imported_names(pending.pop(), root):
            for path in _files_of(name, root):
                if path not in seen:
                    seen.add(path)
                    pending.append(path)
    data = {path for module in seen for path in module.parent.iterdir() if path.is_file() and path.suffix != ".py"}
    return sorted(seen | data)


def library_fingerprint(source: Path, root: Path = paths.REPO_ROOT) -> str:
    """The sha256 over :func:`library_files` of ``source`` (path and content)."""
    digest = hashlib.sha256()
    for path in library_files(source, root):
        digest.update(str(path.relative_to(root)).encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()
