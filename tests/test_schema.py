from __future__ import annotations

import shutil
from datetime import UTC, datetime
from pathlib import Path

import pytest

from gitmem.errors import GitmemError, UsageError
from gitmem.store.record import BASE_FIELDS, FieldValue, Record
from gitmem.store.recordfile import dump, parse
from gitmem.store.schema import KINDS, FieldSpec, Schema, check_record, coerce, load_schemas

ROOT = Path(__file__).parents[1]
TEMPLATE = ROOT / "store-template" / "schemas"
SHIPPED = (
    "context",
    "decision",
    "fact",
    "lesson",
    "message",
    "pattern",
    "preference",
    "procedure",
    "reference",
    "task",
)
REQUIRED = {"message": "to", "reference": "url", "task": "state"}  # the own fields they require
# Written by gitmem itself, not by agents: the work graph's entities (docs/graph.md).
WRITTEN = ("entity",)
T0 = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)


@pytest.fixture(scope="module")
def shipped() -> dict[str, Schema]:
    return load_schemas(TEMPLATE)


def make(type_: str, **fields: FieldValue) -> Record:
    return Record(
        id="some-memory-abc123",
        type=type_,
        title="Some memory",
        body="Text.\n",
        created=T0,
        updated=T0,
        fields=tuple(sorted(fields.items())),
    )


def from_file(type_: str, extra_yaml: str) -> Record:
    return parse(
        f"---\nid: some-memory-abc123\ntype: {type_}\ntitle: Some memory\n"
        f"created: 2026-03-01T12:00:00Z\n{extra_yaml}---\n\nText.\n"
    )


# --- the shipped template -------------------------------------------------------------------


def test_template_ships_the_ten_types_and_the_entity(shipped: dict[str, Schema]) -> None:
    assert sorted(shipped) == sorted((*SHIPPED, *WRITTEN))
    for schema in (shipped[t] for t in SHIPPED):
        assert schema.description
        # Few fields for the types people write (decision: its key fields too); the
        # coordination ones are the commands'.
        most = 8 if schema.type in ("message", "task") else 5
        assert 1 <= len(schema.fields) <= most, schema.type
        assert all(spec.description for spec in schema.fields), schema.type


def test_only_reference_message_and_task_require_an_own_field(
    shipped: dict[str, Schema],
) -> None:
    required = [(t, f.name) for t in SHIPPED for f in shipped[t].fields if f.required]
    assert required == sorted(REQUIRED.items())


def test_template_files_explain_themselves() -> None:
    for type_ in (*SHIPPED, *WRITTEN):
        text = (TEMPLATE / f"{type_}.toml").read_text(encoding="utf-8")
        assert text.startswith(f"# {type_} — "), type_
        assert " | ".join(KINDS) in text, type_


VALID = {
    "decision": "rationale: Fewer moving parts.\nalternatives: [MongoDB, SQLite]\n"
    "decided_on: 2026-02-27\n",
    "pattern": "applies_to:\n  - gitmem/*.py\n  - tests/\nexample: gitmem/errors.py\n",
    "context": "project: gitmem\n",
    "fact": "confidence: high\nvalid_until: 2026-12-31\n",
    "preference": "strength: strong\n",
    "procedure": "steps: [bump version, tag, push]\nprerequisites: [clean tree]\n",
    "lesson": "trigger: before a release\nincident: |\n  The tag went out untested.\n",
    "reference": "url: https://example.org/spec\nkind: spec\n",
    "message": "to: bob\nkind: request\npriority: high\nacked_by: [bob]\n",
    "task": "state: suspended\nowner: alice\nnote: waiting on infra\n",
}


@pytest.mark.parametrize("type_", SHIPPED)
def test_a_valid_record_of_each_type_passes(shipped: dict[str, Schema], type_: str) -> None:
    record = from_file(type_, VALID[type_])
    assert record.fields, "the example should exercise the type's own fields"
    assert check_record(record, shipped) == []


@pytest.mark.parametrize("type_", [t for t in SHIPPED if t not in REQUIRED])
def test_own_fields_are_optional_except_the_required_ones(
    shipped: dict[str, Schema], type_: str
) -> None:
    assert check_record(make(type_), shipped) == []


def test_the_template_refuses_fields_it_does_not_list(shipped: dict[str, Schema]) -> None:
    [problem] = check_record(make("fact", source_ticket="OPS-12"), shipped)
    assert problem.startswith("source_ticket: not a field of fact records")
    assert "schemas/fact.toml" in problem


# --- problems -------------------------------------------------------------------------------


def test_unknown_type_lists_known_types_and_how_to_add_one(shipped: dict[str, Schema]) -> None:
    [problem] = check_record(make("widget"), shipped)
    assert problem.startswith("type: ")
    assert "'widget'" in problem
    assert ", ".join(sorted((*SHIPPED, *WRITTEN))) in problem
    assert "add schemas/widget.toml" in problem


@pytest.mark.parametrize("url", [None, "", ()])
def test_missing_required_field(shipped: dict[str, Schema], url: FieldValue | None) -> None:
    record = make("reference") if url is None else make("reference", url=url)
    [problem] = check_record(record, shipped)
    assert problem.startswith("url: missing — reference records require it")
    assert "add url: <value>" in problem


ALL_KINDS = Schema(
    type="probe",
    description="One field of each kind.",
    fields=(
        FieldSpec("a_text", "text"),
        FieldSpec("a_int", "int"),
        FieldSpec("a_float", "float"),
        FieldSpec("a_bool", "bool"),
        FieldSpec("a_date", "date"),
        FieldSpec("a_datetime", "datetime"),
        FieldSpec("a_list", "list"),
        FieldSpec("a_enum", "enum", choices=("low", "medium", "high")),
    ),
)
PROBE = {"probe": ALL_KINDS}


def test_probe_schema_covers_every_kind() -> None:
    assert sorted(spec.kind for spec in ALL_KINDS.fields) == sorted(KINDS)


GOOD = [
    ("a_text", "anything, even 3 or true"),
    ("a_int", "42"),
    ("a_int", "-3"),
    ("a_int", "+0"),
    ("a_float", "0.5"),
    ("a_float", "-2."),
    ("a_float", ".5"),
    ("a_float", "1e3"),
    ("a_float", "7"),
    ("a_bool", "true"),
    ("a_bool", "false"),
    ("a_date", "2024-02-29"),
    ("a_datetime", "2026-03-01T14:30:00Z"),
    ("a_datetime", "2026-03-01T14:30Z"),
    ("a_datetime", "2026-03-01T14:30:00+02:00"),
    ("a_datetime", "2026-03-01T14:30:00.25-05:00"),
    ("a_list", ("one",)),
    ("a_list", ("one", "two")),
    ("a_enum", "medium"),
]


@pytest.mark.parametrize(("name", "value"), GOOD)
def test_good_values_pass(name: str, value: FieldValue) -> None:
    assert check_record(make("probe", **{name: value}), PROBE) == []


BAD = [
    ("a_int", "3.5", "whole number"),
    ("a_int", "1_000", "whole number"),
    ("a_int", " 3", "whole number"),
    ("a_int", "three", "whole number"),
    ("a_float", "abc", "a number"),
    ("a_float", "nan", "a number"),
    ("a_float", "inf", "a number"),
    ("a_float", "1e999", "a number"),
    ("a_bool", "yes", "true or false"),
    ("a_bool", "True", "true or false"),
    ("a_bool", "1", "true or false"),
    ("a_date", "2026-02-30", "YYYY-MM-DD"),
    ("a_date", "20260301", "YYYY-MM-DD"),
    ("a_date", "2026-03-01T00:00:00Z", "YYYY-MM-DD"),
    ("a_date", "1 March 2026", "YYYY-MM-DD"),
    ("a_datetime", "2026-03-01T14:30:00", "Z or an offset"),
    ("a_datetime", "2026-03-01", "Z or an offset"),
    ("a_datetime", "2026-03-01T25:00:00Z", "Z or an offset"),
    ("a_datetime", "2026-03-01 14:30:00Z", "Z or an offset"),
    ("a_enum", "maybe", "not one of low, medium, high"),
    ("a_enum", "High", "not one of low, medium, high"),
    ("a_text", ("a", "b"), "is a list"),
    ("a_int", ("1",), "is a list"),
    ("a_enum", ("low",), "is a list"),
    ("a_list", "one", "is text"),
]


@pytest.mark.parametrize(("name", "value", "says"), BAD)
def test_bad_values_name_the_field_and_the_fix(name: str, value: FieldValue, says: str) -> None:
    [problem] = check_record(make("probe", **{name: value}), PROBE)
    assert problem.startswith(f"{name}: ")
    assert says in problem
    assert " — " in problem


def test_bad_value_quotes_the_value() -> None:
    [problem] = check_record(make("probe", a_date="2026-02-30"), PROBE)
    assert problem == "a_date: '2026-02-30' is not a valid date — write YYYY-MM-DD, e.g. 2026-03-01"


def test_every_problem_is_reported_not_just_the_first() -> None:
    record = make("probe", a_int="x", a_bool="yes", a_list="one")
    problems = check_record(record, PROBE)
    assert [p.split(":")[0] for p in problems] == ["a_int", "a_bool", "a_list"]


def test_yaml_that_looks_typed_is_checked_as_written(shipped: dict[str, Schema]) -> None:
    # BaseLoader keeps "yes" a string, so it must fail as an enum value, not turn into True.
    record = from_file("fact", "confidence: yes\nvalid_until: 2026-3-1\n")
    problems = check_record(record, shipped)
    assert [p.split(":")[0] for p in problems] == ["confidence", "valid_until"]


def test_unknown_fields_refused_when_additional_fields_is_false() -> None:
    closed = Schema("note", "A closed type.", (FieldSpec("topic", "text"),), False)
    [problem] = check_record(make("note", topic="x", colour="red"), {"note": closed})
    assert problem.startswith("colour: not a field of note records (allowed: topic)")
    assert "additional_fields = true in schemas/note.toml" in problem
    open_ = Schema("note", "An open type.", (FieldSpec("topic", "text"),), True)
    assert check_record(make("note", topic="x", colour="red"), {"note": open_}) == []


# --- loading user schemas -------------------------------------------------------------------

TASK = """\
# chore — work to do.
type = "chore"
description = "Work someone means to do."
additional_fields = false

[fields.state]
kind = "enum"
choices = ["open", "done"]
required = true
description = "Where it stands."

[fields.due]
kind = "date"

[fields.owner]
description = "Who does it; kind defaults to text."
"""


def test_a_user_added_file_adds_a_type(tmp_path: Path) -> None:
    schemas_dir = tmp_path / "schemas"
    shutil.copytree(TEMPLATE, schemas_dir)
    (schemas_dir / "chore.toml").write_text(TASK, encoding="utf-8")
    (schemas_dir / "README.md").write_text("not a schema\n", encoding="utf-8")
    schemas = load_schemas(schemas_dir)
    assert sorted(schemas) == sorted((*SHIPPED, *WRITTEN, "chore"))
    chore = schemas["chore"]
    assert chore == Schema(
        type="chore",
        description="Work someone means to do.",
        fields=(
            FieldSpec("state", "enum", True, ("open", "done"), "Where it stands."),
            FieldSpec("due", "date"),
            FieldSpec("owner", "text", description="Who does it; kind defaults to text."),
        ),
        additional_fields=False,
    )
    assert check_record(make("chore", state="open", due="2026-04-01"), schemas) == []
    problems = check_record(make("chore", due="soon", priority="p1"), schemas)
    assert [p.split(":")[0] for p in problems] == ["state", "due", "priority"]


def test_minimal_schema_file_is_enough(tmp_path: Path) -> None:
    (tmp_path / "note.toml").write_text('type = "note"\ndescription = "A note."\n')
    assert load_schemas(tmp_path) == {"note": Schema("note", "A note.", (), True)}


def test_missing_schemas_directory(tmp_path: Path) -> None:
    with pytest.raises(GitmemError, match=r"no schemas directory at .*nowhere"):
        load_schemas(tmp_path / "nowhere")


GOOD_HEAD = 'type = "note"\ndescription = "A note."\n'
MALFORMED = [
    ("note.toml", GOOD_HEAD + "[fields.x\n", "is not valid TOML"),
    ("note.toml", GOOD_HEAD + '[fields.x]\nkind = "string"\n', "kind 'string' is not one of"),
    ("note.toml", GOOD_HEAD + '[fields.x]\nkind = "enum"\n', "an enum needs choices"),
    ("note.toml", GOOD_HEAD + '[fields.x]\nkind = "enum"\nchoices = []\n', "an enum needs"),
    ("note.toml", GOOD_HEAD + '[fields.x]\nkind = "enum"\nchoices = ["a", "a"]\n', "distinct"),
    ("note.toml", GOOD_HEAD + '[fields.x]\nkind = "enum"\nchoices = [1, 2]\n', "an enum needs"),
    ("note.toml", GOOD_HEAD + '[fields.x]\nkind = "enum"\nchoices = "a,b"\n', "an enum needs"),
    ("note.toml", GOOD_HEAD + '[fields.x]\nchoices = ["a"]\n', 'only apply to kind = "enum"'),
    ("note.toml", GOOD_HEAD + "[fields.x]\nrequird = true\n", "unknown key requird"),
    ("note.toml", GOOD_HEAD + '[fields.x]\nrequired = "yes"\n', "required must be true or false"),
    ("note.toml", GOOD_HEAD + "[fields.x]\ndescription = 3\n", "description must be text"),
    ("note.toml", GOOD_HEAD + "[fields.title]\n", "'title' is a base field"),
    ("note.toml", GOOD_HEAD + "[fields.body]\n", "'body' is a base field"),
    ("note.toml", GOOD_HEAD + '[fields."Due-Date"]\n', "field names are lower-case"),
    ("note.toml", GOOD_HEAD + "fields = 3\n", "fields must be tables"),
    ("note.toml", GOOD_HEAD + "[fields]\nx = 1\n", "[fields.x] must be a table"),
    ("note.toml", GOOD_HEAD + "additional_field = false\n", "unknown key additional_field"),
    ("note.toml", GOOD_HEAD + 'additional_fields = "no"\n', "additional_fields must be true"),
    ("note.toml", 'type = "task"\ndescription = "x"\n', 'write type = "note"'),
    ("note.toml", 'description = "x"\n', "type is missing"),
    ("note.toml", 'type = "note"\n', "description is missing"),
    ("note.toml", 'type = "note"\ndescription = "  "\n', "description is missing"),
    ("Note.toml", GOOD_HEAD, "the file name must be <type>.toml"),
]


@pytest.mark.parametrize(("filename", "text", "says"), MALFORMED)
def test_malformed_schema_names_the_file_and_the_problem(
    tmp_path: Path, filename: str, text: str, says: str
) -> None:
    shutil.copy(TEMPLATE / "decision.toml", tmp_path)
    (tmp_path / filename).write_text(text, encoding="utf-8")
    with pytest.raises(GitmemError) as caught:
        load_schemas(tmp_path)
    message = str(caught.value)
    assert str(tmp_path / filename) in message
    assert says in message


def test_schema_that_is_not_utf8(tmp_path: Path) -> None:
    (tmp_path / "note.toml").write_bytes(b'type = "note"\ndescription = "caf\xe9"\n')
    with pytest.raises(GitmemError, match=r"note\.toml: cannot be read .* UTF-8"):
        load_schemas(tmp_path)


# --- coerce ---------------------------------------------------------------------------------


def test_coerce_splits_lists_on_commas(shipped: dict[str, Schema]) -> None:
    decision = shipped["decision"]
    assert coerce(decision, "alternatives", " MongoDB, SQLite ,, ") == ("MongoDB", "SQLite")
    assert coerce(decision, "alternatives", "") == ()


def test_coerce_keeps_other_values_as_written(shipped: dict[str, Schema]) -> None:
    decision = shipped["decision"]
    assert coerce(decision, "rationale", " cheap, fast ") == " cheap, fast "
    assert coerce(decision, "decided_on", "2026-02-27") == "2026-02-27"
    assert coerce(decision, "ticket", "a,b") == "a,b"  # not in the schema: no kind to go by
    assert coerce(None, "alternatives", "a,b") == "a,b"


@pytest.mark.parametrize("name", [*BASE_FIELDS, "body"])
def test_coerce_refuses_base_fields(shipped: dict[str, Schema], name: str) -> None:
    with pytest.raises(UsageError, match=f"--field {name}: '{name}' is a base field"):
        coerce(shipped["decision"], name, "x")


@pytest.mark.parametrize("name", ["Rationale", "due-date", "", "1st"])
def test_coerce_refuses_bad_field_names(name: str) -> None:
    with pytest.raises(UsageError, match="field names are lower-case"):
        coerce(None, name, "x")


def test_coerced_values_survive_the_file_and_pass(shipped: dict[str, Schema]) -> None:
    decision = shipped["decision"]
    given = {"alternatives": "MongoDB, SQLite", "decided_on": "2026-02-27", "rationale": "a, b"}
    record = make("decision", **{k: coerce(decision, k, v) for k, v in given.items()})
    again = parse(dump(record))
    assert again.fields == record.fields
    assert again.extra["alternatives"] == ("MongoDB", "SQLite")
    assert check_record(again, shipped) == []


# --- docs -----------------------------------------------------------------------------------


def test_docs_describe_every_kind_and_shipped_type() -> None:
    text = (ROOT / "docs" / "schemas.md").read_text(encoding="utf-8")
    for word in (*KINDS, *SHIPPED, "additional_fields", "required", "choices"):
        assert f"`{word}`" in text, word
