"""The three profiles of the book (DESIGN.md, "Profiles"): ``smoke``, ``book`` and ``paper``.

A chapter's papermill ``parameters`` cell names the profile; the chapter then asks this module
for the profile-wide settings and keeps its own knobs in its parameters cell.
"""

from __future__ import annotations

from dataclasses import dataclass

from lib.core.types import query_order


@dataclass(frozen=True)
class Profile:
    """Profile-wide settings.

    Attributes:
        name: ``smoke``, ``book`` or ``paper``.
        query_limit: evaluate and train on at most this many queries per query set (``None``: all).
            The smoke profile takes the first queries of each set, in sorted id order, so that
            every chapter runs in CI within minutes on a slice of the real data.
        description: one line for tables and logs.
    """

    name: str
    query_limit: int | None
    description: str


PROFILES: dict[str, Profile] = {
    "smoke": Profile("smoke", 8, "a slice of the real book data, for CI and tests"),
    "book": Profile("book", None, "the full shipped TREC DL subset (the default)"),
    "paper": Profile("paper", None, "full MS MARCO passage, GloVe and bert-base-uncased (GPU + internet)"),
}


def get_profile(name: str) -> Profile:
    """Return the profile called ``name``; an unknown name is a ``ValueError`` naming the parameter."""
    try:
        return PROFILES[name]
    except KeyError:
        raise ValueError(f"parameter 'profile' is {name!r}; expected one of {sorted(PROFILES)}") from None


def limit_queries(qids: list[str], profile: Profile) -> list[str]:
    """The profile's slice of a query set: all ids, or the first ``query_limit`` in sorted order."""
    ordered = sorted(qids, key=query_order)
    return ordered if profile.query_limit is None else ordered[: profile.query_limit]
