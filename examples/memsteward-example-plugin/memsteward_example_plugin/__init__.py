"""An example memsteward plugin: rebuild a user profile from its retained facts, and check it.

* ``profile-merge`` (group ``memsteward.operators``) — the successor of a ``profile`` artifact is
  ``{"name": …, "bio": …}`` where the bio is the retained facts' sentences about the user, in input
  order, without repeats; it reads only what :class:`~memsteward.repair.operators.RepairContext`
  gives it (post-event support), never the withdrawn profile's text.
* ``profile-check`` (group ``memsteward.oracles``) — the bio is non-empty, at most
  ``settings.max_chars`` characters, and every sentence of it occurs in a retained input
  (nothing comes from the deleted facts).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from memsteward.repair.artifacts import Artifact
from memsteward.repair.operators import OperatorError, RepairContext, Successor, sentences, text_of
from memsteward.repair.oracles import OracleInput, Report

__version__ = "0.1.0"


def _facts(ctx: RepairContext) -> list[str]:
    seen: list[str] = []
    for artifact in ctx.inputs:
        text = text_of(artifact.content)
        for sentence in sentences(text or ""):
            if sentence not in seen:
                seen.append(sentence)
    return seen


class ProfileMerge:
    """regen for a profile: the bio is rebuilt from the retained facts only."""

    name = "profile-merge"
    checks_content = False

    def check(self, artifact: Artifact) -> str | None:
        return None

    def __call__(self, artifact: Artifact, ctx: RepairContext) -> Successor:
        facts = _facts(ctx)
        if not facts:
            raise OperatorError("no retained facts to build the profile from")
        name = artifact.meta.get("user", "the user")
        return Successor({"name": str(name), "bio": " ".join(facts)}, dict(artifact.meta))


class ProfileCheck:
    """The rebuilt bio is bounded and every sentence of it is a retained fact."""

    def __call__(self, settings: Mapping[str, Any], x: OracleInput) -> Report:
        content = x.successor.content
        bio = content.get("bio") if isinstance(content, dict) else None
        if not isinstance(bio, str) or not bio.strip():
            return Report("profile-check", False, "the successor has no bio")
        limit = settings.get("max_chars", 2000)
        if isinstance(limit, int) and len(bio) > limit:
            return Report("profile-check", False, f"the bio has {len(bio)} characters, over {limit}")
        retained = set(_facts(x.ctx))
        foreign = [k for k, s in enumerate(sentences(bio), 1) if s not in retained]
        if foreign:
            return Report("profile-check", False, f"{len(foreign)} sentence(s) of the bio are not retained facts")
        return Report("profile-check", True, f"{len(sentences(bio))} sentence(s), all retained facts")
