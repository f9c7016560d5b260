"""The quick record path (gitmem.cli.quickrecord) writes and answers exactly as the full CLI does,
or leaves the command to it having read, written and printed nothing; it never loads typer
or rich."""

from __future__ import annotations

import errno
import io
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

import pytest
from conftest import Result, assert_clean, git, snapshot
from test_quickrecall import interrupted_at

from gitmem.cli import quickrecord
from gitmem.store.store import Store

SECRET = "ghp_" + "aB3dE5fG7hJ9kL1mN3pQ5rS7tU9vW1xY3z5A"  # a GitHub token's shape
MOMENT = datetime(2026, 5, 1, 12, 0, 0, tzinfo=UTC)


@dataclass
class Case:
    """One `gitmem record ARGS`: with STORE, FILE, BADFILE, LINK and PRIVATE in `args` standing
    for the store, a UTF-8 body file, a file that is not UTF-8, and two records' ids."""

    args: list[str]
    stdin: bytes = b""
    env: dict[str, str] = field(default_factory=dict)
    tty: bool = False  # stdin is a terminal
    setup: Callable[[Path, pytest.MonkeyPatch], None] | None = None


def busy(root: Path, patches: pytest.MonkeyPatch) -> None:
    (root / ".git" / "index.lock").write_text("")


def broken_commit(root: Path, patches: pytest.MonkeyPatch) -> None:
    """A bug in the write itself, after the lock is held: reported, never retried."""
    from gitmem.store.git import GitRepo

    def commit_files(*args: object, **kwargs: object) -> str:
        raise RuntimeError("the disk is on fire")

    patches.setattr(GitRepo, "commit_files", commit_files)


def full_disk(root: Path, patches: pytest.MonkeyPatch) -> None:
    """The machine refuses the write: said as such (exit code 1), not as a bug."""
    from gitmem.store.git import GitRepo

    def commit_files(*args: object, **kwargs: object) -> str:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(root / ".git" / "objects"))

    patches.setattr(GitRepo, "commit_files", commit_files)


CASES: list[Case] = [
    # Written.
    Case(["fact", "Postgres 15 behind pgbouncer.", "--title", "Payments db"]),
    Case(["decision", "We retry webhooks.", "-t", "Retry webhooks", "--json"]),
    Case(
        [
            "fact",
            "Many options.",
            "--title=With options",
            "--abstract=A short line",
            "--tags",
            "infra, ops",
            "--tags=db",
            "--tags",
            "",
            "--scope",
            "agent",
            "--agent",
            "bob",
            "--source",
            "https://example.com/x",
            "--weight",
            "2.5",
            "-f",
            "confidence=high",
            "--field=valid_until=2027-01-01",
        ]
    ),
    Case(["decision", "Why", "-t", "Fields", "-f", "alternatives=a, b,,c", "--json"]),
    Case(["fact", "-", "--title", "From stdin"], stdin=b"Read from standard input.\n"),
    Case(["fact", "--title", "Stdin by default"], stdin="日本語の本文です。\n".encode()),
    Case(["fact", "--body-file", "FILE", "--title", "From a file", "--json"]),
    Case(["--title", "Options first", "--json", "fact", "Body after the options."]),
    Case(["fact", "--title", "Dashes", "--", "- a list item\n- another"]),
    Case(["fact", "-t", "Help as a body", "--", "--help"]),
    Case(["fact", "Body", "-t", "first", "--title", "second wins"]),
    Case(["fact", "Body", "-t", "Weight zero", "--weight", "0"]),
    Case(["fact", "Body", "-t", "Weight ten", "--weight", "10.0", "--json"]),
    Case(["fact", "Linked", "-t", "Linked", "--link", "LINK", "--link", "LINK"]),
    Case(["fact", "Private link", "-t", "Private link", "--link", "PRIVATE", "--scope", "private"]),
    Case(["fact", f"token {SECRET}", "-t", "Redacted", "--redact"]),
    Case(["fact", f"token {SECRET}", "-t", "Redacted json", "--redact", "--json"]),
    Case(["fact", f"token {SECRET}", "-t", "Allowed", "--allow-secret"]),
    Case(["fact", "Store named", "-t", "Store named", "--store", "STORE"]),
    Case(["fact", "Agent from env", "-t", "Agent from env"], env={"GITMEM_AGENT": " carol "}),
    Case(["fact", "Agent flag wins", "-t", "Flag", "--agent", "dave"], env={"GITMEM_AGENT": "x"}),
    Case(["fact", "Agent blank", "-t", "Agent blank", "--agent", "  "]),
    Case(["fact", "[b]markup[/b] and \\[ brackets", "-t", "[red]Brackets[/]"]),
    # Refused, with the full CLI's message and exit code; the store unchanged.
    Case(["nosuchtype", "Body", "-t", "Unknown type"]),
    Case(["fact", "Body"]),
    Case(["fact", "Body", "--title", "   "]),
    Case(["fact", "", "-t", "Empty body"]),
    Case(["fact", "-t", "Empty stdin"]),
    Case(["fact", "-", "-t", "Not UTF-8"], stdin=b"caf\xe9\n"),
    Case(["fact", "-t", "No body at a terminal"], tty=True),
    Case(["fact", "--body-file", "BADFILE", "-t", "Bad file"]),
    Case(["fact", "Both", "--body-file", "FILE", "-t", "Both"]),
    Case(["fact", f"token {SECRET}", "-t", "Refused"]),
    Case(["fact", f"token {SECRET}", "-t", "Refused json", "--json"]),
    Case(["fact", "Body", "-t", "Both policies", "--redact", "--allow-secret"]),
    Case(["fact", "Body", "-t", "Bad field", "--field", "novalue"]),
    Case(["fact", "Body", "-t", "Base field", "-f", "title=again"]),
    Case(["fact", "Body", "-t", "Bad field name", "-f", "Bad-Name=x"]),
    Case(["fact", "Body", "-t", "Bad choice", "-f", "confidence=certain"]),
    Case(["fact", "Body", "-t", "Unknown field", "-f", "colour=red"]),
    Case(["fact", "Body", "-t", "Bad date", "-f", "valid_until=tomorrow"]),
    Case(["fact", "Body", "-t", "Missing link", "--link", "no-such-record"]),
    Case(["fact", "Body", "-t", "Not an id", "--link", "../etc/passwd"]),
    Case(["fact", "Body", "-t", "Ambiguous link", "--link", "a"]),
    Case(["fact", "Body", "-t", "Private from shared", "--link", "PRIVATE"]),
    Case(["fact", "Body", "-t", "Bad scope", "--scope", "public"]),
    Case(["fact", "Body", "-t", "Long abstract", "-a", "word " * 60]),
    Case(["fact", "Body", "-t", "No store", "--store", "STORE/nowhere"]),
    Case(["fact", "Body", "-t", "Store first", "--redact", "--allow-secret", "--store", "/"]),
    Case(["fact", "Body", "-t", "Git is busy"], setup=busy),
    Case(["fact", "Body", "-t", "A bug"], setup=broken_commit),
    Case(["fact", "Body", "-t", "A full disk"], setup=full_disk),
]


@pytest.fixture
def filled(store_path: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A store with a shared and a private record, two ids that share the prefix "a", and a
    clock, a commit time and record ids that do not change between runs."""
    from gitmem.store import git as gitmodule
    from gitmem.store import record as recordmodule
    from gitmem.store import store as storemodule
    from gitmem.store import writes as writesmodule

    class Frozen(datetime):
        @classmethod
        def now(cls, tz: object = None) -> Frozen:  # type: ignore[override]
            return cls.fromtimestamp(MOMENT.timestamp(), UTC)

    real_make_id = recordmodule.make_id

    def fixed_id(title: str, fallback: str = "record") -> str:
        return real_make_id(title, fallback).rsplit("-", 1)[0] + "-q7r8s9"

    monkeypatch.setattr(gitmodule, "datetime", Frozen)
    monkeypatch.setattr(storemodule, "_now", lambda: MOMENT)
    monkeypatch.setattr(writesmodule, "make_id", fixed_id)
    store = Store.open(store_path)
    store.record("fact", "Linked to.", title="Alpha one", agent="setup")
    store.record("fact", "Also linked to.", title="Alpha two", agent="setup")
    store.record("fact", "Only here.", title="Private note", scope="private", agent="setup")
    (tmp_path / "body.md").write_text("A body from a file.\n\nSecond paragraph.\n")
    (tmp_path / "latin1.md").write_bytes(b"caf\xe9\n")
    return store_path


def ids(root: Path) -> dict[str, str]:
    found = {p.stem for p in (root / "records").rglob("*.md")}
    return {
        "LINK": next(i for i in found if i.startswith("alpha-one")),
        "PRIVATE": next(i for i in found if i.startswith("private-note")),
    }


def expand(case: Case, root: Path) -> list[str]:
    names = {
        **ids(root),
        "FILE": str(root.parent / "body.md"),
        "BADFILE": str(root.parent / "latin1.md"),
    }
    out = []
    for arg in case.args:
        if arg.startswith("STORE"):
            arg = str(root) + arg.removeprefix("STORE")
        out.append(names.get(arg, arg))
    return out


class Stdin(io.TextIOWrapper):
    tty = False

    def isatty(self) -> bool:
        return self.tty


def stdin(data: bytes, tty: bool) -> Stdin:
    stream = Stdin(io.BytesIO(data))
    stream.tty = tty
    return stream


@dataclass
class Outcome:
    result: Result
    head: str  # the commit: its id, tree, author, committer and message
    status: str
    files: str
    commits: int


def outcome(root: Path, result: Result) -> Outcome:
    head, status, files = snapshot(root)
    shown = git(root, "log", "-1", "--format=%H%n%T%n%an <%ae> %at%n%cn <%ce> %ct%n%B")
    assert shown.startswith(head.strip())
    count = int(git(root, "rev-list", "--count", "HEAD"))
    return Outcome(result, shown, status, files, count)


def quick(args: list[str], case: Case, capsys: pytest.CaptureFixture[str]) -> Result | None:
    """The quick path in this process: its result, or None where it left the command (having
    printed nothing and read nothing)."""
    capsys.readouterr()
    sys.stdin = stdin(case.stdin, case.tty)
    code = quickrecord.run(args, os.environ)
    captured = capsys.readouterr()
    if code is None:
        assert (captured.out, captured.err) == ("", ""), "declined after printing"
        assert sys.stdin.buffer.tell() == 0, "declined after reading stdin"
        return None
    return Result(code, captured.out, captured.err)


def full(args: list[str], case: Case, capsys: pytest.CaptureFixture[str]) -> Result:
    from gitmem.cli.main import run

    capsys.readouterr()
    sys.stdin = stdin(case.stdin, case.tty)
    code = run(["record", *args])
    captured = capsys.readouterr()
    return Result(code, captured.out, captured.err)


def both_ways(
    root: Path, case: Case, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> tuple[Outcome, Outcome]:
    """The case on the store as it is, once through each path: the store is put back between
    the two, at the same path, so that messages naming it are the same."""
    pristine = root.parent / "pristine"
    shutil.rmtree(pristine, ignore_errors=True)
    shutil.copytree(root, pristine, symlinks=True)
    args = expand(case, root)
    monkeypatch.setattr(sys, "stdin", sys.stdin)  # put pytest's back afterwards
    for key, value in case.env.items():
        monkeypatch.setenv(key, value)
    outcomes = []
    for way in (quick, full):
        with pytest.MonkeyPatch.context() as patches:
            if case.setup is not None:
                case.setup(root, patches)
            result = way(args, case, capsys)
        assert result is not None, f"the quick path left {args} to the full CLI"
        outcomes.append(outcome(root, result))
        shutil.rmtree(root)
        shutil.copytree(pristine, root, symlinks=True)
    return outcomes[0], outcomes[1]


@pytest.mark.parametrize("case", CASES, ids=[" ".join(c.args)[:60] for c in CASES])
def test_records_as_the_full_cli_does(
    case: Case,
    filled: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    before = outcome(filled, Result(0, "", ""))
    fast, slow = both_ways(filled, case, capsys, monkeypatch)
    assert fast == slow
    if fast.result.code == 0:
        assert fast.commits == before.commits + 1  # one write, one commit
        assert fast.status == ""
    else:
        assert (fast.head, fast.status, fast.files, fast.commits) == (
            before.head,
            before.status,
            before.files,
            before.commits,
        )
        assert fast.result.out == "" and fast.result.err.startswith("gitmem: ")


def test_a_refusal_leaves_everything_as_it_was(
    filled: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    before = snapshot(filled)
    monkeypatch.setattr(sys, "stdin", sys.stdin)
    done = quick(["fact", f"token {SECRET}", "-t", "Leak"], Case([]), capsys)
    assert done is not None and done.code == 1 and "possible secret" in done.err
    assert SECRET not in done.err
    assert snapshot(filled) == before
    assert_clean(filled)


@pytest.mark.parametrize(
    "args",
    [
        ["--help"],
        ["fact", "Body", "-t", "T", "-h"],
        ["fact", "Body", "-t", "T", "--no-such-option"],
        ["fact", "Body", "-t", "T", "--json=yes"],
        ["fact", "Body", "-t", "T", "--redact=1"],
        ["fact", "Body", "-tT"],  # an attached short value: typer takes it, this parser does not
        ["fact", "Body", "-t=T"],  # typer: the title "=T"
        ["fact", "Body", "-jt", "T"],
        ["fact", "Body", "--title"],
        ["fact", "Body", "--title", "-looks-like-an-option"],  # typer: the title; left to it
        ["fact", "Body", "--title", "--json"],
        ["fact", "Body", "-t", "T", "--weight", "11"],
        ["fact", "Body", "-t", "T", "--weight", "-1"],
        ["fact", "Body", "-t", "T", "--weight", "1e0"],
        ["fact", "Body", "-t", "T", "--weight", "nan"],
        ["fact", "Body", "-t", "T", "--weight", " 2"],
        ["fact", "Body", "-t", "T", "--weight", ""],
        ["fact", "Body", "-t", "T", "--body-file", "DIR"],
        ["fact", "-t", "T", "--body-file", "DIR/missing.md"],
        ["fact", "-t", "T", "--body-file", ""],
        ["fact", "-t", "T", "--body-file", "/dev/null"],
        ["fact", "Body", "extra", "-t", "T"],
        ["-t", "T"],
        [],
        ["fact", "\udcff", "-t", "T"],  # undecodable bytes in argv
        ["fact", "Body", "-t", "T", "--sope", "agent"],
        ["fact", "Body", "-t", "T", "--tag", "x"],  # --tags has no prefix form in typer
    ],
)
def test_leaves_to_the_full_cli_what_it_does_not_understand(
    args: list[str],
    filled: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    before = snapshot(filled)
    monkeypatch.setattr(sys, "stdin", sys.stdin)
    args = [a.replace("DIR", str(tmp_path)) for a in args]
    assert quick(args, Case([], stdin=b"unread"), capsys) is None
    assert snapshot(filled) == before


def test_leaves_shell_completion_to_the_full_cli(
    filled: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("_GITMEM_COMPLETE", "bash_complete")
    monkeypatch.setattr(sys, "stdin", sys.stdin)
    assert quick(["fact", "Body", "-t", "T"], Case([]), capsys) is None


def test_leaves_a_closed_stdin_to_the_full_cli(
    filled: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sys, "stdin", None)
    assert quickrecord.run(["fact", "-", "-t", "T"], os.environ) is None
    assert capsys.readouterr() == ("", "")


def test_records_with_the_full_clis_own_library_call() -> None:
    """The quick path opens a gitmem.store.store.Store, the CLI a gitmem.api.Store: the same
    record() as long as the search layer adds nothing to writing. (Its steps in
    gitmem.store.writes are functions, which no subclass can change.)"""
    from gitmem import api
    from gitmem.store import commit, reader, store

    writing = ["record", "_write"]
    committing = ["__init__", "_commit", "_exclusive", "_recover"]
    reading = ["open", "__init__", "_follow", "catalog", "resolve", "previous", "head"]
    reading += ["default_agent"]
    assert [name for name in writing + committing + reading if name in vars(api.Store)] == []
    assert all(name in vars(store.Store) for name in writing)
    assert all(name in vars(commit.Committer) for name in committing)
    assert all(name in vars(reader.Reader) for name in reading)


# --- whole processes ---------------------------------------------------------------------

# `python -c BOTH_WAYS quick|full record ...`: gitmem's entry point, with the quick paths only
# (the full CLI cannot be imported) or without them.
BOTH_WAYS = (
    "import sys; from gitmem import __main__ as m\n"
    "if sys.argv.pop(1) == 'full': m.QUICK_PATHS.clear()\n"
    "else: sys.modules['gitmem.cli.main'] = None\n"
    "m.main()\n"
)


def python(
    code: str, store: Path, *args: str, stdout: int | None = subprocess.PIPE, input: str = ""
) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"}
    env["GITMEM_STORE"] = str(store)
    return subprocess.run(
        [sys.executable, "-c", code, *args],
        input=input,
        stdout=stdout,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )


def test_loads_neither_typer_nor_rich(store_path: Path) -> None:
    code = (
        "import json, os, sys\n"
        "from gitmem.cli.quickrecord import run\n"
        "code = run(sys.argv[1:], os.environ)\n"
        "print(json.dumps([code, sorted(sys.modules)]), file=sys.stderr)\n"
    )
    done = python(code, store_path, "fact", "Loaded lightly.", "--title", "Light", "--json")
    answered, modules = json.loads(done.stderr.strip().splitlines()[-1])
    assert answered == 0 and json.loads(done.stdout)["operation"] == "record"
    heavy = {
        "typer",
        "click",
        "rich",
        "gitmem.cli.app",
        "gitmem.api",
        "gitmem.index.embedding",
        "yaml",
    }
    assert [m for m in modules if m in heavy or m.split(".")[0] in heavy] == []


def test_the_console_entry_point_takes_the_quick_path(store_path: Path) -> None:
    code = (  # a quick path leaves by os._exit (no teardown): report from there
        "import os, sys; sys.argv[0] = 'gitmem'; from gitmem.__main__ import main\n"
        "leave = os._exit\n"
        "def spy(code):\n"
        "    print('typer' in sys.modules, file=sys.stderr); sys.stderr.flush(); leave(code)\n"
        "os._exit = spy\n"
        "main()\n"
    )
    done = python(code, store_path, "record", "fact", "Quickly.", "--title", "Quick")
    assert done.returncode == 0 and done.stdout.startswith("recorded fact quick-")
    assert done.stderr.strip().splitlines()[-1] == "False"
    assert_clean(store_path)


def test_a_whole_process_writes_one_commit_either_way(store_path: Path) -> None:
    said = {}
    for way in ("quick", "full"):
        count = int(git(store_path, "rev-list", "--count", "HEAD"))
        done = python(
            BOTH_WAYS, store_path, way, "record", "fact", "-", "-t", f"Way {way}", input="Body."
        )
        assert done.returncode == 0 and done.stderr == "", done.stderr
        head = git(store_path, "rev-parse", "HEAD").strip()
        assert int(git(store_path, "rev-list", "--count", "HEAD")) == count + 1
        rid = git(store_path, "log", "-1", "--format=%(trailers:key=Gitmem-Record,valueonly)")
        said[way] = done.stdout.replace(head[:10], "COMMIT").replace(rid.strip(), "ID")
        assert_clean(store_path)
    assert said["quick"] == said["full"]
    assert said["quick"].startswith("recorded fact ID in commit COMMIT\n")


def test_a_reader_that_left_gets_the_same_exit_code_and_the_record_is_kept(
    store_path: Path,
) -> None:
    """`gitmem record ... | head -0`: the commit is made, nothing is said, and 141 tells."""
    read, write = os.pipe()
    os.close(read)
    try:
        for way in ("quick", "full"):
            count = int(git(store_path, "rev-list", "--count", "HEAD"))
            done = python(
                BOTH_WAYS, store_path, way, "record", "fact", "Kept.", "-t", way, stdout=write
            )
            assert (done.returncode, done.stderr) == (141, ""), way
            assert int(git(store_path, "rev-list", "--count", "HEAD")) == count + 1
    finally:
        os.close(write)
    assert_clean(store_path)


# Put before BOTH_WAYS, with two more arguments: POINT (module:attribute, or module:Class.method)
# and a file descriptor. The command stops there, writes one byte to the descriptor and waits for
# the test's SIGINT, with Python's default handler, as a terminal's foreground job has it.
STOPPING = (
    "import importlib, os, signal, sys, time\n"
    "signal.signal(signal.SIGINT, signal.default_int_handler)\n"
    "point, ready = sys.argv.pop(1), int(sys.argv.pop(1))\n"
    "def stop(*args, **kwargs):\n"
    "    os.write(ready, b'!')\n"
    "    time.sleep(600)\n"
    "module, name = point.split(':')\n"
    "owner = importlib.import_module(module)\n"
    "*path, name = name.split('.')\n"
    "for part in path:\n"
    "    owner = getattr(owner, part)\n"
    "setattr(owner, name, stop)\n"
)


@pytest.mark.parametrize(
    "point",
    [
        "gitmem.store.lock:acquire",
        "gitmem.store.guard:scan",
        "gitmem.store.git:GitRepo._sync_worktree",
    ],
    ids=["locking", "guarding", "after-the-commit"],
)
def test_an_interrupt_is_said_alike_and_leaves_the_store_alike(
    store_path: Path, tmp_path: Path, point: str
) -> None:
    pristine = tmp_path / "pristine"
    shutil.copytree(store_path, pristine, symlinks=True)
    seen = {}
    for way in ("quick", "full"):
        env = {**os.environ, "GITMEM_STORE": str(store_path)}
        args = ["record", "fact", "Stopped.", "-t", "Stopped"]
        done = interrupted_at(STOPPING + BOTH_WAYS, point, way, args, env)
        assert done == (130, "", "gitmem: interrupted\n"), way
        # What the next write finds: the commit made or not, and the journal it recovers from.
        commits = git(store_path, "log", "--format=%s")
        journal = (store_path / ".git" / "gitmem-journal.json").exists()
        seen[way] = (commits, journal)
        Store.open(store_path).record("fact", "Next write.", title="Next")  # recovers
        assert_clean(store_path)
        shutil.rmtree(store_path)
        shutil.copytree(pristine, store_path, symlinks=True)
    assert seen["quick"] == seen["full"]
