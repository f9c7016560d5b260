"""The JSON answers of capture, shared by `gitmem distill/trace --json`, `gitmem status` and
the MCP server's tools, so that each says the same (schemas in docs/capture.md)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from gitmem.capture import queue
from gitmem.capture.distill import DistillReport
from gitmem.capture.trace import Trace

__all__ = ["capture_status", "distill_json", "trace_json"]


def distill_json(report: DistillReport) -> dict[str, Any]:
    return {
        "spans": [
            {
                "session": s.session,
                "lines": s.lines,
                "source": s.source,
                "written": list(s.written),
                "superseded": list(s.superseded),
                "duplicates": s.duplicates,
                "dropped": list(s.dropped),
                "commit": s.commit,
                "problem": s.problem or None,
            }
            for s in report.spans
        ],
        "notes": list(report.notes),
        "waiting": list(report.waiting),
    }


def trace_json(found: Trace) -> dict[str, Any]:
    return {
        "id": found.record,
        "source": found.source,
        "session": found.session or None,
        "lines": f"{found.first}-{found.last}" if found.session else None,
        "messages": [{"line": m.line, "role": m.role, "text": m.text} for m in found.messages],
        "problem": found.problem or None,
    }


def capture_status(cache: Path) -> dict[str, Any]:
    """Sessions with transcript not yet distilled, and the latest failures (`gitmem status`)."""
    states = queue.load_all(cache)
    waiting = [
        {"session": s.session, "host": s.host, "bytes": s.waiting(cache), "attempts": s.attempts}
        for s in states
        if s.waiting(cache)
    ]
    failures = sorted(
        ({"session": s.session, **f.__dict__} for s in states for f in s.failures),
        key=lambda f: str(f["time"]),
    )[-queue.FAILURES_KEPT :]
    return {
        "sessions": len(states),
        "waiting": waiting,
        "records": sum(s.records for s in states),
        "failures": failures,
    }
