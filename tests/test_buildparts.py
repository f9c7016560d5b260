"""The shortcuts a full build takes in its one process give what the plain ways give: a
document's context added to its made fields (no JSON round trip), a record's lead (its first
words, the rest unsplit), a record file's id (no pathlib)."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path

import pytest

from gitmem.index import catchup, neighbours
from gitmem.index.textdoc import TextDoc, text_fields, with_context
from gitmem.store.record import Record

DOCS = [
    TextDoc("a-1", "b1", "Title", "abstract", "body", ("t1", "t2"), "fact"),
    TextDoc("b-2", "b2", 'quote " and \\ back', "", "line\nbreak\ttab", (), "decision"),
    TextDoc("c-3", "b3", "日本語", "ünïcode", "emoji 🚲 " * 50, ("ταγ",), "fact"),
    TextDoc("d-4", "b4", "lone \ud800 surrogate", "", "", (), "fact", key=7),
]
CONTEXTS = ["", "one lead", 'a "quoted" lead\nand \\ another', "日本語の文脈 🚲", "bad \udfff one"]


@pytest.mark.parametrize("doc", DOCS, ids=lambda d: d.id)
@pytest.mark.parametrize("context", CONTEXTS)
def test_context_added_to_made_fields_is_the_document_made_with_it(
    doc: TextDoc, context: str
) -> None:
    made = with_context(text_fields(doc), context)
    assert made == text_fields(replace(doc, context=context))


def record(body: str, title: str = "A title", abstract: str = "") -> Record:
    at = datetime(2030, 1, 1, tzinfo=UTC)
    return Record(
        id="a-title-abcd", type="fact", title=title, abstract=abstract, body=body, agent="a",
        created=at, updated=at,
    )  # fmt: skip


@pytest.mark.parametrize(
    "body",
    [
        "",
        "few words here",
        " ".join(f"w{i}" for i in range(37)),  # with the title's two: 39
        " ".join(f"w{i}" for i in range(38)),  # exactly 40
        " ".join(f"w{i}" for i in range(39)),  # 41
        "\n\n  lead\twith\u00a0odd \u2003 spaces\n" + "x " * 500,
        "word " * 2000 + "\n",
    ],
)
def test_a_lead_is_the_first_words_of_title_abstract_and_body(body: str) -> None:
    r = record(body, abstract="  an  abstract ")
    words = " ".join((r.title, r.abstract, r.body)).split()
    assert neighbours.lead(r) == " ".join(words[: neighbours.LEAD_WORDS])


@pytest.mark.parametrize(
    "path",
    [
        "records/fact/2030/01/a-title-abcd.md",
        "records/a.md",
        "records/x/.md",
        "records/x/..md",
        "records/x/a.b.md",
        "records/x.y/z.md",
    ],
)
def test_a_record_file_id_is_its_path_stem(path: str) -> None:
    assert catchup._is_record(path)
    assert catchup._stem(path) == Path(path).stem
