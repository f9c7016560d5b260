"""The record file format: deterministic, exact round trips, and YAML's conversions pinned."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gitmem.errors import RecordInvalid
from gitmem.store.record import BASE_FIELDS, Record, make_id, record_path, slugify
from gitmem.store.recordfile import dump, parse
from gitmem.store.textrules import body_problems

T0 = datetime(2026, 11, 30, 20, 1, 16, tzinfo=UTC)


def sample(**changes: object) -> Record:
    base = Record(
        id="use-jina-v5-for-embeddings-k3x9q2",
        type="decision",
        title="Use Jina v5 for embeddings",
        body="We compared three models.\n\n## Why\nIt is small.\n",
        created=T0,
        updated=T0,
        abstract="Jina v5 small wins on our eval.",
        tags=("embeddings", "ml"),
        agent="claude-code",
    )
    return base.with_(**changes)


def test_dump_is_exactly_this() -> None:
    assert dump(sample()) == (
        "---\n"
        "id: use-jina-v5-for-embeddings-k3x9q2\n"
        "type: decision\n"
        "title: Use Jina v5 for embeddings\n"
        "abstract: Jina v5 small wins on our eval.\n"
        "tags: [embeddings, ml]\n"
        "agent: claude-code\n"
        "scope: shared\n"
        'source: ""\n'
        "created: 2026-11-30T20:01:16Z\n"
        "updated: 2026-11-30T20:01:16Z\n"
        "weight: 1.0\n"
        "links: []\n"
        "supersedes: []\n"
        'superseded_by: ""\n'
        "status: active\n"
        "---\n"
        "\n"
        "We compared three models.\n\n## Why\nIt is small.\n"
    )


def test_type_fields_come_after_base_fields_sorted() -> None:
    text = dump(sample(fields={"rationale": "cheap", "alternatives": ["a", "b"]}))
    keys = [line.split(":")[0] for line in text.split("---\n")[1].splitlines()]
    assert keys[-2:] == ["alternatives", "rationale"]


@pytest.mark.parametrize("value", ["yes", "no", "on", "null", "2026-01-01", "1e3", "0x10", "~"])
def test_yaml_never_converts_values(value: str) -> None:
    record = sample(title=value, tags=(value,), fields={"note": value})
    again = parse(dump(record))
    assert again.title == value
    assert again.tags == (value,)
    assert again.extra["note"] == value


def test_hand_written_file_without_blank_line_and_crlf_parses() -> None:
    text = "---\r\nid: a-b\r\ntype: fact\r\ntitle: T\r\ncreated: 2026-01-02\r\n---\r\nBody line\r\n"
    record = parse(text)
    assert record.body == "Body line\r\n"
    assert record.created == datetime(2026, 1, 2, tzinfo=UTC)
    assert record.updated == record.created


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        ("no frontmatter", "no frontmatter"),
        ("---\nid: a\n", "not closed"),
        ("---\n- a\n---\nx", "mapping"),
        ("---\nid: a\ntype: fact\ntitle: t\ncreated: someday\n---\nx", "created"),
        ("---\nid: A/../b\ntype: fact\ntitle: t\ncreated: 2026-01-01\n---\nx", "id"),
        ("---\nid: a\ntype: fact\ntitle: t\ncreated: 2026-01-01\nscope: world\n---\nx", "scope"),
        ("---\nid: a\ntype: fact\ntitle: t\ncreated: 2026-01-01\nweight: heavy\n---\nx", "weight"),
        ("---\nid: a\ntype: fact\ncreated: 2026-01-01\n---\nx", "title: required"),
        (
            "---\nid: a\ntype: fact\ntitle: t\ncreated: 2026-01-01\nabstract: "
            + "x" * 241
            + "\n---\nx",
            "abstract",
        ),
    ],
)
def test_bad_files_name_the_problem(text: str, needle: str) -> None:
    with pytest.raises(RecordInvalid) as caught:
        parse(text)
    assert needle in str(caught.value)


def test_ids_are_slug_plus_suffix_and_differ() -> None:
    ids = {make_id("Use Jina v5 for embeddings!") for _ in range(200)}
    assert len(ids) == 200
    assert all(i.startswith("use-jina-v5-for-embeddings-") and len(i) == 33 for i in ids)
    assert slugify("日本語のタイトル", "fact") == "fact"
    assert slugify("x" * 80) == "x" * 48


def test_id_suffixes_use_every_letter_of_their_alphabet_about_evenly() -> None:
    from collections import Counter

    letters = Counter(ch for _ in range(4000) for ch in make_id("x")[-6:])
    assert set(letters) == set("0123456789abcdefghjkmnpqrstvwxyz")
    assert max(letters.values()) < 2 * min(letters.values())  # 750 expected each


def test_path_is_type_and_month() -> None:
    assert record_path("decision", T0, "a-b") == "records/decision/2026-11/a-b.md"


def test_body_rules() -> None:
    assert body_problems("  \n", 100)
    assert body_problems("x" * 101, 100)
    assert body_problems("---\nid: evil\n---\n", 100)
    assert not body_problems("text\n---\nmore", 100)


_text = st.text(
    st.characters(blacklist_categories=("Cs", "Cc"), blacklist_characters="\ufffe\uffff"),
    max_size=40,
)
_line = _text.map(lambda s: " ".join(s.split()))
_body = (
    st.lists(
        st.one_of(_text, st.just("---"), st.just(""), st.just("\r"), st.just("## h")), max_size=8
    )
    .map(lambda parts: "\n".join(parts))
    .filter(lambda b: b.strip() != "")
)
_word = st.text("abcdefghijklmnopqrstuvwxyz0123456789", min_size=1, max_size=8)
_moment = st.datetimes(
    min_value=datetime(1990, 1, 1), max_value=datetime(2100, 1, 1), timezones=st.just(UTC)
).map(lambda d: d.replace(microsecond=0))


@settings(max_examples=300, deadline=None)
@given(
    title=_line.filter(lambda s: s.strip() != ""),
    abstract=_line.map(lambda s: s[:240]),
    body=_body,
    tags=st.lists(_line.filter(lambda s: s.strip() != "" and "," not in s), max_size=4),
    created=_moment,
    weight=st.floats(min_value=0, max_value=10, allow_nan=False),
    fields=st.dictionaries(
        st.from_regex(r"[a-z][a-z0-9_]{0,10}", fullmatch=True).filter(
            lambda k: k not in (*BASE_FIELDS, "body")
        ),
        st.one_of(_line, st.lists(_line, max_size=3).map(tuple)),
        max_size=3,
    ),
    slug=st.lists(_word, min_size=1, max_size=4).map("-".join),
)
def test_round_trip(
    title: str,
    abstract: str,
    body: str,
    tags: list[str],
    created: datetime,
    weight: float,
    fields: dict[str, object],
    slug: str,
) -> None:
    body = "x" + body if body_problems(body, 10**9) else body
    record = Record(
        id=slug,
        type="fact",
        title=title.strip(),
        body=body,
        created=created,
        updated=created,
        abstract=abstract.strip(),
        tags=tuple(t.strip() for t in tags),
        weight=weight,
    ).with_(fields=fields)
    text = dump(record)
    assert parse(text) == record
    assert dump(parse(text)) == text


@settings(max_examples=500, deadline=None)
@given(value=_line, in_list=st.booleans())
def test_other_yaml_readers_see_the_same_text(value: str, in_list: bool) -> None:
    """A tool reading a record with plain yaml.safe_load gets our strings, not bools or dates."""
    import yaml

    record = sample(tags=(value,) if in_list and value.strip() and "," not in value else ())
    record = record.with_(fields={"note": value})
    loaded = yaml.safe_load(dump(record).split("---\n")[1])
    assert loaded["note"] == value
    assert loaded["tags"] == list(record.tags)


@pytest.mark.parametrize(
    "value",
    [
        "yes",
        "No",
        "~",
        "null",
        "1.5",
        "1_000",
        "0x1F",
        "12:30",
        "2026-01-01",
        ".inf",
        "- item",
        "a: b",
        "a #b",
        "trailing ",
        "[x]",
        "{x}",
        "@me",
        "`x`",
        "%x",
        "'q'",
        '"q"',
        "tab\there",
        "é ☕ 日本",
        "\u2028",
        "\ufeff",
    ],
)
def test_tricky_scalars(value: str) -> None:
    import yaml

    text = dump(sample(fields={"note": value}, tags=("t",)))
    assert yaml.safe_load(text.split("---\n")[1])["note"] == value
    assert parse(text).extra["note"] == value


def test_body_key_in_frontmatter_and_bom() -> None:
    with pytest.raises(RecordInvalid, match="body"):
        parse("---\nid: a\ntype: fact\ntitle: t\ncreated: 2026-01-01\nbody: x\n---\ny")
    with pytest.raises(RecordInvalid, match=r"byte-order mark.*without a BOM"):
        parse("\ufeff" + dump(sample()))
    assert slugify("Straße") == "strasse"


@settings(max_examples=300, deadline=None)
@given(value=_line, items=st.lists(_line.filter(lambda s: s.strip() != ""), max_size=3))
def test_fast_reader_agrees_with_yaml(value: str, items: list[str]) -> None:
    """Frontmatter as dump writes it reads the same with the fast reader and with PyYAML."""
    from gitmem.store.recordfile import _fast_load, load_yaml, split

    record = sample(title=value.strip() or "t", fields={"note": value, "many": tuple(items)})
    front, _ = split(dump(record))
    fast = _fast_load(front)
    assert fast is not None
    assert fast == load_yaml(front)


@pytest.mark.parametrize(
    "front",
    [
        "id: a # a comment\n",
        "tags:\n- a\n- b\n",
        "title: 'single quoted'\n",
        'title: "bad \\q escape"\n',
        "weight: 2\n",
        "tags: [a, 'b']\n",
    ],
)
def test_fast_reader_leaves_other_yaml_to_pyyaml(front: str) -> None:
    from gitmem.store.recordfile import _fast_load

    assert _fast_load(front) is None
