"""The JSON answers of sleep, proposals, decide and feedback: what `--json` prints and what
the MCP tools return, built in one place so the two answer identically (docs/cli.md)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from gitmem.consolidate.decide import Decision, Feedback
from gitmem.consolidate.proposals import Proposal
from gitmem.consolidate.sleep import SleepReport

__all__ = ["decision_json", "feedback_json", "proposals_json", "sleep_json"]


def sleep_json(report: SleepReport) -> dict[str, Any]:
    return {
        "scanned": report.scanned,
        "found": report.found,
        "done": list(report.done),
        "proposed": [p.to_dict() for p in report.proposed],
        "known": report.known,
        "held": report.held,
        "dry_run": report.dry_run,
        "semantic": report.semantic,
        "stopped": report.stopped,
        "commits": list(report.commits),
        "report": report.text(),
    }


def proposals_json(proposals: Sequence[Proposal]) -> dict[str, Any]:
    return {
        "pending": sum(p.status == "pending" for p in proposals),
        "proposals": [p.to_dict() for p in proposals],
    }


def decision_json(decision: Decision) -> dict[str, Any]:
    return {
        "proposal": decision.proposal.to_dict(),
        "commit": decision.commit,
        "records": [r.id for r in decision.records],
    }


def feedback_json(result: Feedback) -> dict[str, Any]:
    return {
        "id": result.record.id,
        "before": result.before,
        "weight": result.record.weight,
        "commit": result.commit,
    }
