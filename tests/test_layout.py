"""The layout of ``lib/`` (ARCHITECTURE.md): each stage imports only from itself and the stages before it."""

from __future__ import annotations

import ast
from pathlib import Path

LIB = Path(__file__).resolve().parents[1] / "lib"
#: The stages of the data flow, in order.
STAGES = [
    "core",
    "data",
    "representations",
    "first_stage",
    "models",
    "reranking",
    "evaluation",
    "training",
    "analyses",
    "experiments",
    "chapters",
]


def lib_imports(path: Path) -> list[str]:
    """The ``lib.*`` modules a file imports (at any depth of the file)."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] == "lib":
            found.append(node.module)
            found += [f"{node.module}.{alias.name}" for alias in node.names if node.module == "lib"]
        elif isinstance(node, ast.Import):
            found += [alias.name for alias in node.names if alias.name.split(".")[0] == "lib"]
    return found


def test_every_lib_module_lives_in_a_stage() -> None:
    stray = [p.name for p in LIB.glob("*.py") if p.name != "__init__.py"]
    assert not stray, f"modules outside the stage folders: {stray}"
    assert sorted(p.name for p in LIB.iterdir() if p.is_dir() and p.name != "__pycache__") == sorted(STAGES)


def test_no_stage_imports_a_later_stage() -> None:
    wrong = []
    for path in LIB.rglob("*.py"):
        stage = path.relative_to(LIB).parts[0]
        if stage not in STAGES:
            continue
        for module in lib_imports(path):
            target = module.split(".")[1] if "." in module else None
            if target in STAGES and STAGES.index(target) > STAGES.index(stage):
                wrong.append(f"{path.relative_to(LIB)} imports {module}")
    assert not wrong, "\n".join(wrong)
