"""The record of decisions (``lib.core.decisions``): complete for ``book`` and ``paper``, true to the profiles, and
never resting on a test year."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from lib.core import decisions
from lib.core.decisions import AUDITED_PROFILES, DECISIONS, Decision, decisions_table, names_a_test_year
from lib.core.profiles import SECTIONS, get_profile


def non_default_settings(profile_name: str) -> set[tuple[str, str]]:
    """Every ``(section, setting)`` of the profile whose value differs from its section's default."""
    profile = get_profile(profile_name)
    found = set()
    for section in SECTIONS:
        settings = getattr(profile, section)
        default = type(settings)()
        for item in dataclasses.fields(settings):
            if getattr(settings, item.name) != getattr(default, item.name):
                found.add((section, item.name))
    return found


@pytest.mark.parametrize("profile_name", AUDITED_PROFILES)
def test_every_non_default_setting_has_an_entry(profile_name: str) -> None:
    recorded = {(d.section, d.setting) for d in DECISIONS if d.profile == profile_name}
    missing = non_default_settings(profile_name) - recorded
    assert not missing, f"{profile_name}: settings without a decision in lib/core/decisions.py: {sorted(missing)}"


def test_every_entry_holds_the_profiles_value_once() -> None:
    seen = set()
    for decision in DECISIONS:
        key = (decision.profile, decision.section, decision.setting)
        assert key not in seen, f"two entries for {key}"
        seen.add(key)
        actual = getattr(getattr(get_profile(decision.profile), decision.section), decision.setting)
        assert actual == decision.value, f"{key}: the record says {decision.value!r}, the profile has {actual!r}"


def test_no_entry_rests_on_a_test_year_and_validation_names_its_set() -> None:
    for decision in DECISIONS:
        assert not names_a_test_year(decision.text()), f"{decision.setting}: names a test year: {decision.text()}"
        if decision.evidence == "validation":
            expected = "DL21" if decision.profile == "book" else "dev-small"
            assert expected in decision.measure, f"{decision.setting}: validation evidence without {expected}"
            assert decision.results and all(measured for _, measured in decision.results)
        assert decision.date or decision.profile != "book", f"{decision.setting}: a book decision without a date"


def test_the_test_year_check_can_fail() -> None:
    for text in ("0.62 on DL19", "dl20 liked it", "TREC DL 2019", "TREC-DL 2020", "the test years agreed"):
        assert names_a_test_year(text), text
    for text in ("DL21 validation nDCG@10", "dev-small MRR@10", "Hofstätter et al. 2020", "TK §4.3", "step 2019"):
        assert not names_a_test_year(text), text
    leaky = Decision("book", "training", "patience", 4, "validation", "DL21 nDCG@10", (("4", "0.62 on DL19"),), "x")
    assert names_a_test_year(leaky.text())


def test_a_record_missing_an_entry_is_caught(monkeypatch: pytest.MonkeyPatch) -> None:
    shorter = tuple(d for d in DECISIONS if d.setting != "word_learning_rate")
    monkeypatch.setattr(decisions, "DECISIONS", shorter)
    recorded = {(d.section, d.setting) for d in decisions.DECISIONS if d.profile == "book"}
    assert ("training", "word_learning_rate") in non_default_settings("book") - recorded


def test_entries_are_checked_when_made() -> None:
    with pytest.raises(ValueError, match="evidence 'hunch'"):
        Decision("book", "training", "patience", 4, "hunch", "a feeling")
    with pytest.raises(ValueError, match="lists the values it compared"):
        Decision("book", "training", "patience", 4, "validation", "DL21 nDCG@10")


def test_the_profiles_comments_cite_no_test_year() -> None:
    source = Path(get_profile.__code__.co_filename).read_text(encoding="utf-8")
    comments = [line for line in source.splitlines() if line.strip().startswith("#")]
    assert comments and not [line for line in comments if names_a_test_year(line)]


def test_the_table_has_a_row_per_entry_with_its_evidence() -> None:
    table = decisions_table("book")
    lines = table.strip().splitlines()
    book = [d for d in DECISIONS if d.profile == "book"]
    assert len(lines) == 2 + len(book)
    assert lines[0].startswith("| setting | adopted | evidence |")
    row = next(line for line in lines if "`training.bert_lr_by_model`" in line)
    assert "tk-bert6: 3e-05" in row and "| validation |" in row and "DL21" in row
    odd = Decision("book", "x", "y", "a|b", "budget", "one | two", date="2026-11-27")
    assert "a\\|b" in decisions_table("book", [odd]) and "one \\| two" in decisions_table("book", [odd])
