"""The layout of ``lib/`` (ARCHITECTURE.md): each stage imports only from itself and the stages before it, and
no function takes more than 10 parameters or 100 lines."""

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
    "book",
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


def module_name(path: Path) -> str:
    """The dotted name of a file of ``lib/`` (a package by its ``__init__.py``)."""
    parts = ("lib", *path.relative_to(LIB).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def test_no_import_cycle_between_modules() -> None:
    """The modules of ``lib/`` import each other without a cycle (inside a stage as well as across)."""
    modules = {module_name(path): path for path in LIB.rglob("*.py")}
    graph = {
        name: sorted({target for target in lib_imports(path) if target in modules and target != name})
        for name, path in modules.items()
    }
    state: dict[str, str] = {}

    def visit(name: str, trail: list[str]) -> list[str] | None:
        state[name] = "open"
        for target in graph[name]:
            if state.get(target) == "open":
                return [*trail, name, target]
            if target not in state and (cycle := visit(target, [*trail, name])):
                return cycle
        state[name] = "done"
        return None

    for name in sorted(graph):
        if name not in state:
            cycle = visit(name, [])
            assert cycle is None, " → ".join(cycle)


#: The most parameters a function of ``lib/`` takes (``self`` / ``cls`` not counted; ``*args``, ``**kwargs`` one
#: each): more belong in a settings object (a frozen dataclass such as :class:`lib.models.tk.TKConfig`).
MAX_PARAMETERS = 10
#: The most lines of a function of ``lib/``, its docstring included.
MAX_LINES = 100


def parameter_count(function: ast.FunctionDef | ast.AsyncFunctionDef) -> int:
    """The parameters of ``function``, a leading ``self`` or ``cls`` not counted."""
    arguments = function.args
    names = [argument.arg for argument in [*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs]]
    if names and names[0] in ("self", "cls"):
        names = names[1:]
    return len(names) + (arguments.vararg is not None) + (arguments.kwarg is not None)


def test_no_function_takes_too_many_parameters_or_lines() -> None:
    oversized = []
    for path in sorted(LIB.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                continue
            count, lines = parameter_count(node), node.end_lineno - node.lineno + 1
            if count > MAX_PARAMETERS or lines > MAX_LINES:
                where = f"{path.relative_to(LIB)}:{node.lineno}"
                oversized.append(f"{where} {node.name}: {count} parameters, {lines} lines")
    assert not oversized, "\n".join(oversized)
