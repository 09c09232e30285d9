"""Reviews: the verdict a reviewer agent answers with, and its settings' words.

A team file gives an agent ``reviews = ["writer", ...]``: each delegation to one of those
workers is checked by that reviewer before the delegation completes (``review = "always"``,
the default, set on the coordinator or per delegation) or when the coordinator calls the
``review`` tool (``"on_request"``). The reviewer answers with a :data:`VERDICT_SCHEMA` value:
a verdict, the fixes it asks for and its evidence. On ``changes_requested`` the worker gets the
fixes as its next turn, up to the reviewer's ``max_review_rounds`` reviews.

The reviewer's answer is structured output (:mod:`._output`): the parser gives a reviewer the
verdict schema as its ``output_schema``, so a model is asked for it (a response format or a
tool) and a scripted reviewer's answer is checked against it.

Pure: no trio and no IO.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final, Literal, TypeAlias, get_args

import attrs

__all__ = [
    "DEFAULT_MAX_REVIEW_ROUNDS",
    "EVIDENCE_KINDS",
    "REVIEW_MODES",
    "VERDICTS",
    "VERDICT_SCHEMA",
    "EvidenceItem",
    "EvidenceKind",
    "ReviewMode",
    "Verdict",
    "VerdictKind",
    "verdict_of",
]

#: When a reviewed worker's delegation is reviewed: each time it finishes (``always``), or
#: when the coordinator calls the ``review`` tool (``on_request``).
ReviewMode: TypeAlias = Literal["always", "on_request"]
REVIEW_MODES: Final = get_args(ReviewMode)
#: What a reviewer decides.
VerdictKind: TypeAlias = Literal["passed", "changes_requested", "failed"]
VERDICTS: Final = get_args(VerdictKind)
#: What a piece of evidence is: a quote of the work, a tool's result, a link, or a fact of the
#: session (``ref`` is then the fact's id: a tool call id, a task id or a sequence number).
EvidenceKind: TypeAlias = Literal["quote", "tool_result", "link", "fact"]
EVIDENCE_KINDS: Final = get_args(EvidenceKind)
#: Reviews of one delegation when the reviewer's table sets no ``max_review_rounds``.
DEFAULT_MAX_REVIEW_ROUNDS: Final = 2

#: The JSON Schema a reviewer's answer fits (its ``output_schema``).
VERDICT_SCHEMA: Final[Mapping[str, Any]] = {
    "type": "object",
    "properties": {
        "verdict": {"type": "string", "enum": list(VERDICTS)},
        "summary": {"type": "string"},
        "fixes": {"type": "array", "items": {"type": "string", "minLength": 1}},
        "evidence": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {
                    "kind": {"type": "string", "enum": list(EVIDENCE_KINDS)},
                    "text": {"type": "string"},
                    "ref": {"type": "string"},
                },
                "required": ["kind", "text"],
                "additionalProperties": False,
            },
        },
    },
    "required": ["verdict"],
    "additionalProperties": False,
}


@attrs.frozen(kw_only=True)
class EvidenceItem:
    """One piece of a reviewer's evidence: what it is, its text, and what it points at."""

    kind: EvidenceKind
    text: str
    # A link's URL, or the id of a fact of the session (a tool call, a task, a sequence).
    ref: str | None = None


@attrs.frozen(kw_only=True)
class Verdict:
    """A reviewer's answer.

    Invariant: not self.fixes or self.verdict != "passed"
    """

    verdict: VerdictKind
    summary: str = ""
    fixes: tuple[str, ...] = ()
    evidence: tuple[EvidenceItem, ...] = ()


def verdict_of(value: Mapping[str, Any]) -> Verdict:
    """The :class:`Verdict` of a reviewer's answer, a value that fits :data:`VERDICT_SCHEMA`
    (the runtime checked it). A ``passed`` verdict's fixes are dropped: nothing is asked."""
    verdict: VerdictKind = value["verdict"]
    fixes = tuple(str(f) for f in value.get("fixes", ())) if verdict != "passed" else ()
    evidence = tuple(
        EvidenceItem(kind=item["kind"], text=str(item["text"]), ref=item.get("ref"))
        for item in value.get("evidence", ())
    )
    return Verdict(
        verdict=verdict, summary=str(value.get("summary", "")), fixes=fixes, evidence=evidence
    )
