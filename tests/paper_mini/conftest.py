"""``make paper-mini`` runs these tests after building the miniature and the ``paper-mini`` book (Makefile).

``TKBOOK_REQUIRE_PAPER_MINI=1`` (set there) makes a missing miniature or chapter a failure; elsewhere the tests
are skipped with the command that builds what they read.
"""

from __future__ import annotations

import os

import pytest


def require(ready: bool, what: str) -> None:
    """Fail (under ``make paper-mini``) or skip when ``what`` is not built yet."""
    if ready:
        return
    if os.environ.get("TKBOOK_REQUIRE_PAPER_MINI") == "1":
        pytest.fail(f"{what} is missing after `make paper-mini` built it")
    pytest.skip(f"{what} is built by `make paper-mini`")
