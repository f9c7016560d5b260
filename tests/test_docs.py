"""The docs say what the code does: docs/cli.md is the real --help, every command is in it,
its --json schemas match real output, the README opens with the two commands, and the record
format's example is what the serializer writes."""

from __future__ import annotations

import importlib.util
import json
import re
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from gitmem.store.record import BASE_FIELDS
from gitmem.store.recordfile import dump, parse

ROOT = Path(__file__).resolve().parent.parent
CLI_MD = ROOT / "docs" / "cli.md"


@pytest.fixture(scope="module")
def gen() -> ModuleType:
    """scripts/gen_cli_docs.py, imported from its path (scripts/ is not a package)."""
    spec = importlib.util.spec_from_file_location("gen_cli_docs", ROOT / "scripts/gen_cli_docs.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_cli_md_is_the_generators_current_output(gen: ModuleType) -> None:
    assert CLI_MD.read_text(encoding="utf-8") == gen.render(), (
        "docs/cli.md is out of date with the CLI's --help: run make docs"
    )


def test_every_command_has_a_section(gen: ModuleType) -> None:
    text = CLI_MD.read_text(encoding="utf-8")
    names = [name for name, _, _ in gen.commands()]
    assert len(names) > 10
    missing = [name for name in names if f"\n## {name}\n\n```\n" not in text]
    assert not missing, f"docs/cli.md has no section for {missing}: run make docs"


def test_readme_starts_with_the_two_commands() -> None:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    assert text.startswith("# gitmem\n")
    first = re.search(r"^```[^\n]*\n(.*?)^```$", text, re.MULTILINE | re.DOTALL)
    assert first is not None, "README.md has no code block"
    assert first.group(1) == "make demo\nmake test\n"


def test_record_format_example_round_trips() -> None:
    text = (ROOT / "docs" / "record-format.md").read_text(encoding="utf-8")
    found = re.search(r"^````markdown\n(.*?)^````$", text, re.MULTILINE | re.DOTALL)
    assert found is not None, "docs/record-format.md has no ````markdown example"
    example = found.group(1)
    record = parse(example)
    assert dump(record) == example
    assert record.path.endswith(f"/{record.id}.md")
    assert f"`{record.path}`" in text


# --- the --json schemas documented in docs/cli.md ----------------------------------------------


def documented(gen: ModuleType, title: str) -> list[str]:
    return [key for key, _, _ in _rows(gen, title) if not key.startswith("*")]


def _rows(gen: ModuleType, title: str) -> list[tuple[str, str, str]]:
    for name, _, _, rows in gen.JSON_SCHEMAS:
        if name == title:
            return list(rows)
    raise AssertionError(f"no JSON schema titled {title!r} in scripts/gen_cli_docs.py")


def run_json(gm: Any, *args: str) -> Any:
    result = gm(*args, "--json")
    assert result.code in (0, 1), result.err
    return json.loads(result.out)


def test_json_output_has_exactly_the_documented_keys(
    gen: ModuleType, gm: Any, store_path: Path
) -> None:
    hint = "update JSON_SCHEMAS in scripts/gen_cli_docs.py, then run make docs"
    assert tuple(key for key, _, _ in gen.RECORD_FIELDS) == BASE_FIELDS

    first = run_json(gm, "record", "fact", "Port 5432.", "--title", "DB port")
    assert list(first) == documented(gen, "Write result"), hint
    second = run_json(gm, "supersede", first["ids"][0], "Port 6432.", "--title", "DB port now")
    assert second["ids"] == [second["ids"][0], first["ids"][0]]

    shown = run_json(gm, "read", second["ids"][0])
    assert list(shown) == documented(gen, "Record"), hint
    listed = run_json(gm, "list", "--status", "all")
    assert [list(item) for item in listed] == [documented(gen, "List")] * 2, hint
    versions = run_json(gm, "history", first["ids"][0])
    assert [list(v) for v in versions] == [documented(gen, "History")] * 2, hint
    assert list(versions[0]["record"]) == [*BASE_FIELDS, "body"]

    status = run_json(gm, "status")
    assert list(status) == documented(gen, "Status"), hint

    found = run_json(gm, "recall", "port", "--include-superseded")
    assert list(found) == documented(gen, "Recall result"), hint
    per_hit = [
        name.strip()
        for key, _, _ in _rows(gen, "Recall result")
        if key.startswith("*hits[].")
        for name in key.removeprefix("*hits[].").split(",")
    ]
    assert len(found["hits"]) == 2 and all(list(h) == per_hit for h in found["hits"]), hint
    assert {h["status"] for h in found["hits"]} == {"active", "superseded"}

    bad = store_path / "records" / "fact" / "2026-01" / "bad.md"
    bad.parent.mkdir(parents=True)
    bad.write_text("no frontmatter\n", encoding="utf-8")
    problems = run_json(gm, "validate")
    assert problems and all(list(p) == documented(gen, "Validation problems") for p in problems)


def test_capture_json_has_exactly_the_documented_keys(
    gen: ModuleType, gm: Any, store_path: Path
) -> None:
    """`distill --json` and `trace --json` (issue 20), as docs/cli.md documents them."""
    hint = "update JSON_SCHEMAS in scripts/gen_cli_docs.py, then run make docs"
    report = run_json(gm, "distill")
    assert list(report) == documented(gen, "Distill result"), hint
    made = run_json(gm, "record", "fact", "Port 5432.", "--title", "DB port")
    traced = run_json(gm, "trace", made["ids"][0])
    assert list(traced) == documented(gen, "Trace"), hint
    from gitmem.capture.distill import DistillReport, SpanReport
    from gitmem.capture.report import distill_json

    span = distill_json(DistillReport((SpanReport("s", "1-2", "transcript:s#1-2"),), ()))
    spans = [k.removeprefix("*spans[].") for k in (r[0] for r in _rows(gen, "Distill result"))]
    tops = ("spans", "notes", "waiting")
    assert list(span["spans"][0]) == [k for k in spans if k not in tops], hint
