"""What `gitmem record` and the other write commands read from their user: the body (an
argument, a file or stdin, as UTF-8), tags, K=V fields, the secret policy; and how a write is
reported. Shared by the full CLI (gitmem.cli.writes) and its fast path for `record`
(gitmem.cli.quickrecord), so that both answer alike; no typer here.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from gitmem import answers
from gitmem.cli import display
from gitmem.errors import RecordInvalid, UsageError
from gitmem.store.store import Store, WriteResult
from gitmem.store.writes import SecretPolicy

__all__ = [
    "body_text",
    "parse_fields",
    "read_text",
    "record_new",
    "report_write",
    "secret_policy",
    "split_tags",
    "stdin_text",
]


def secret_policy(redact: bool, allow: bool) -> SecretPolicy:
    if redact and allow:
        raise UsageError("choose one of --redact and --allow-secret")
    return "redact" if redact else "allow" if allow else "refuse"


def split_tags(values: list[str] | None) -> list[str]:
    return [t.strip() for v in values or [] for t in v.split(",") if t.strip()]


def parse_fields(values: list[str] | None, store: Store, type_: str) -> dict[str, Any]:
    from gitmem.store.schema import coerce

    out: dict[str, Any] = {}
    for item in values or []:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise UsageError(f'--field wants K=V, got "{item}"')
        out[key.strip()] = coerce(store.schemas.get(type_), key.strip(), value)
    return out


def read_text(path: Path) -> str:
    try:
        return path.read_bytes().decode("utf-8")
    except FileNotFoundError:
        raise UsageError(f"{path}: no such file") from None
    except IsADirectoryError:
        raise UsageError(f"{path} is a directory; give a file") from None
    except PermissionError:
        raise UsageError(f"{path}: not allowed to read it (check its permissions)") from None
    except UnicodeDecodeError as exc:
        raise RecordInvalid(f"{path}: not UTF-8 text (byte {exc.start}); save it as UTF-8") from exc


def stdin_text() -> str:
    try:
        return sys.stdin.buffer.read().decode("utf-8")
    except UnicodeDecodeError as exc:
        raise RecordInvalid(f"standard input is not UTF-8 text (byte {exc.start})") from exc


def body_text(body: str | None, body_file: Path | None) -> str:
    if body is not None and body_file is not None:
        raise UsageError("give the body as an argument or with --body-file, not both")
    if body_file is not None:
        return read_text(body_file)
    if body == "-" or (body is None and not sys.stdin.isatty()):
        return stdin_text()
    if body is None:
        raise UsageError(
            "a record needs a body: give it as an argument, - for stdin, or --body-file"
        )
    return body


def report_write(result: WriteResult, as_json: bool, store: Store) -> None:
    """Say what a write did; then, if it committed, have the index catch up in the background
    (gitmem.cli.background), so that the next recall finds it current."""
    if as_json:
        display.json_out(answers.write_json(result))
    else:
        display.write_result(result)
    if result.commit is not None:
        import os

        from gitmem.cli.background import catch_up_later

        catch_up_later(store.root, os.environ)


def record_new(
    opened: Store,
    type_: str,
    body: str | None,
    body_file: Path | None,
    *,
    title: str,
    abstract: str,
    tags: list[str] | None,
    agent: str,
    scope: str,
    source: str,
    weight: float,
    links: list[str],
    fields: list[str] | None,
    redact: bool,
    allow_secret: bool,
    as_json: bool,
) -> None:
    """`gitmem record` once its store is open, for the full CLI and its fast path alike: the
    checks in the order a user meets them, one write, the report."""
    policy = secret_policy(redact, allow_secret)
    if not title.strip():
        raise UsageError("a record needs a title: pass --title")
    result = opened.record(
        type_,
        body_text(body, body_file),
        title=title,
        abstract=abstract,
        tags=split_tags(tags),
        agent=agent,
        scope=scope,
        source=source,
        weight=weight,
        links=links,
        fields=parse_fields(fields, opened, type_),
        secrets=policy,
    )
    report_write(result, as_json, opened)
