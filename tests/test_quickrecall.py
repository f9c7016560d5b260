"""The fast recall path (gitmem.cli.quickrecall) answers exactly as the full CLI does, or leaves
the command to it having printed nothing; and it never loads pygit2, typer or rich."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import IO

import pytest
from conftest import Result, git
from tinymodel import build_tiny_model

from gitmem.cli import quickrecall
from gitmem.index import embedding, literank, modelfiles
from gitmem.index.stamp import catalog_stamp
from gitmem.store.store import Store

NOW = ["--now", "2030-01-01"]  # decay depends on the clock; both runs must see one moment
QUERIES = [
    "retry webhook deliveries",
    "PAY-1423",
    "how do we handle failed callback sends",
    "日本語",
    'weird "quotes" AND (parens OR : colons) * ~ 🙂',
    "zzzz nothing like this",
]
OPTIONS: list[list[str]] = [
    [],
    ["--json"],
    ["--explain"],
    ["--json", "--explain"],
    ["--mode", "keyword"],
    ["--mode=semantic", "--json"],
    ["--mode", ""],
    ["-n", "2"],
    ["--limit=1", "--explain"],
    ["--limit", "1000"],
    ["--type", "decision"],
    ["--type", "decision", "--type=lesson", "--json"],
    ["--tag", "infra"],
    ["--tag", "infra,payments", "--tag", "ops"],
    ["--agent", "bob"],
    ["--scope", "shared"],
    ["--since", "2026-01-01"],
    ["--until", "2000-01-01"],
    ["--since", "2020-01-01", "--until", "2099-12-31", "--json"],  # bare days: all of them
    ["--type", "decision,lesson"],
    ["--include-superseded", "--json"],
    ["--fusion", "rrf", "--explain"],
    ["--fusion", "linear"],
    ["--mode", "keyword", "--mode", "hybrid"],  # the last one wins, as in the CLI
]


@pytest.fixture(scope="session")
def model_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("model") / "tiny"
    build_tiny_model(out)
    return out


def use_model(root: Path, spec: str) -> None:
    """Point the store's config.toml at a model and commit it, as a user would."""
    config = root / "config.toml"
    text = config.read_text()
    start = text.index('model = "')
    end = text.index('"', start + len('model = "'))
    config.write_text(f'{text[:start]}model = "{spec}"{text[end + 1 :]}')
    git(root, "commit", "-qam", "use a local model")


def fill(root: Path) -> None:
    store = Store.open(root)
    when = datetime(2026, 3, 1, tzinfo=UTC)
    first = store.record(
        "decision",
        "We retry webhook deliveries with backoff, 24h max.",
        title="Retry webhooks",
        tags=["infra", "payments", "ops"],
        agent="bob",
        now=when,
    )
    store.supersede(
        first.record.id, "Webhook deliveries retry for 48h now.", title="Retry webhooks longer"
    )
    store.record("lesson", "Deploying on Friday broke checkout; see PAY-1423.", title="No Friday")
    store.record("fact", "Postgres 15 behind pgbouncer.", title="Payments db", tags=["infra"])
    store.record("fact", "日本語で書かれた記録です。", title="日本語のメモ", scope="agent")
    store.record("context", "word " * 400 + "failed callback sends", title="Long note")


@pytest.fixture
def searchable(store_path: Path, model_dir: Path, gm: Callable[..., Result]) -> Path:
    use_model(store_path, str(model_dir))
    fill(store_path)
    assert gm("rebuild").code == 0
    return store_path


def quick(args: list[str], capsys: pytest.CaptureFixture[str]) -> Result | None:
    """The fast path in this process: its result, or None where it left the command."""
    capsys.readouterr()
    code = quickrecall.run(args, os.environ)
    captured = capsys.readouterr()
    if code is None:
        assert (captured.out, captured.err) == ("", ""), "declined after printing"
        return None
    return Result(code, captured.out, captured.err)


def test_answers_as_the_full_cli_does(
    searchable: Path, gm: Callable[..., Result], capsys: pytest.CaptureFixture[str]
) -> None:
    compared = 0
    for query in QUERIES:
        for options in OPTIONS:
            args = [query, *options, *NOW]
            fast = quick(args, capsys)
            assert fast is not None, args
            assert fast == gm("recall", *args), args
            compared += 1
    assert compared == len(QUERIES) * len(OPTIONS)


def test_both_paths_log_the_recall_for_sleep(
    searchable: Path, gm: Callable[..., Result], capsys: pytest.CaptureFixture[str]
) -> None:
    """Recall statistics (gitmem.consolidate.recallstats) see a quick recall as a full one."""
    log = searchable / ".gitmem" / "recalls.log"
    log.unlink(missing_ok=True)
    args = [QUERIES[0], "--json", *NOW]
    assert quick(args, capsys) is not None
    full = gm("recall", *args)
    ids = [hit["id"] for hit in json.loads(full.out)["hits"]]
    lines = log.read_text().splitlines()
    assert ids and [line.split()[1:] for line in lines] == [ids, ids]


@pytest.mark.parametrize(
    "args",
    [
        ["--json", "--", "-looks like an option"],  # after --, a query
        ["--store", "STORE", "PAY-1423"],
        ["--explain", "PAY-1423", "--json"],  # options after the query
        ["-"],
    ],
)
def test_other_spellings_answer_as_the_full_cli_does(
    args: list[str],
    searchable: Path,
    gm: Callable[..., Result],
    capsys: pytest.CaptureFixture[str],
) -> None:
    args = NOW + [str(searchable) if a == "STORE" else a for a in args]
    fast = quick(args, capsys)
    assert fast is not None
    assert fast == gm("recall", *args)


@pytest.mark.parametrize(
    "args",
    [
        ["--help"],
        ["PAY-1423", "-h"],
        ["PAY-1423", "--batch", "queries.jsonl"],
        ["PAY-1423", "--as-of", "2026-01-01"],
        ["PAY-1423", "--no-such-option"],
        ["PAY-1423", "--json=yes"],
        ["PAY-1423", "-n", "0"],
        ["PAY-1423", "-n", "1001"],
        ["PAY-1423", "-n", "+5"],
        ["PAY-1423", "-n5"],
        ["PAY-1423", "--agent", "-bob"],  # the CLI takes "-bob" as the value; left to it
        ["PAY-1423", "--limit"],
        ["PAY-1423", "--mode", "fuzzy"],
        ["PAY-1423", "--since", "not a date"],
        ["PAY-1423", "--since", "2030-01-02", "--until", "2030-01-01"],
        ["PAY-1423", "--type", "nosuchtype"],
        ["PAY-1423", "--scope", "weird"],
        ["two", "queries"],
        [],
        ["   "],
        ["\udcff"],  # undecodable bytes in argv
    ],
)
def test_leaves_to_the_full_cli_what_it_does_not_understand(
    args: list[str], searchable: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert quick(args, capsys) is None


def test_leaves_a_stale_index_to_the_full_cli_which_catches_up(
    searchable: Path, gm: Callable[..., Result], capsys: pytest.CaptureFixture[str]
) -> None:
    Store.open(searchable).record("fact", "Redis holds the sessions.", title="Sessions")
    args = ["sessions redis", *NOW]
    assert quick(args, capsys) is None
    full = gm("recall", *args)
    assert "Sessions" in full.out
    assert quick(args, capsys) == full  # current again


def test_never_catches_up_even_when_head_moves_after_its_check(
    searchable: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    stamp = git(searchable, "rev-parse", "HEAD").strip()
    Store.open(searchable).record("fact", "Redis holds the sessions.", title="Sessions")

    def head(root: Path) -> str:  # the first check sees a current index; the index knows better
        return git(root, "rev-parse", "HEAD").strip()

    monkeypatch.setattr(quickrecall, "catalog_stamp", head)
    assert quick(["sessions", *NOW], capsys) is None
    assert catalog_stamp(searchable) == stamp  # not caught up here


@pytest.mark.parametrize(
    "damage", ["missing index", "missing model", "other model", "no store", "broken schema"]
)
def test_leaves_an_index_it_cannot_read_to_the_full_cli(
    damage: str,
    searchable: Path,
    model_dir: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    if damage == "missing index":
        (searchable / ".gitmem" / "index" / "catalog.sqlite").unlink()
    elif damage == "missing model":
        use_model(searchable, str(tmp_path / "gone"))
    elif damage == "other model":
        other = tmp_path / "other"
        build_tiny_model(other, seed=3)
        use_model(searchable, str(other))
        stamp = git(searchable, "rev-parse", "HEAD").strip()
        monkeypatch.setattr(quickrecall, "catalog_stamp", lambda root: stamp)
    elif damage == "no store":
        monkeypatch.setenv("GITMEM_STORE", str(tmp_path / "nowhere"))
    else:
        (searchable / "schemas" / "fact.toml").write_text("not = [valid")
    assert quick(["PAY-1423", *NOW], capsys) is None


def test_a_store_without_a_model_answers_with_keywords_and_says_so(
    store_path: Path, gm: Callable[..., Result], capsys: pytest.CaptureFixture[str]
) -> None:
    use_model(store_path, "none")
    fill(store_path)
    assert gm("rebuild").code == 0
    fast = quick(["webhook", "--json", *NOW], capsys)
    assert fast is not None and "semantic search is off" in fast.err
    assert fast == gm("recall", "webhook", "--json", *NOW)


def run_python(code: str, store: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "GITMEM_STORE": str(store)}
    return subprocess.run(
        [sys.executable, "-c", code, *args], capture_output=True, text=True, env=env, check=True
    )


def test_loads_neither_pygit2_nor_typer_nor_rich_nor_numpy(searchable: Path) -> None:
    code = (
        "import json, os, sys\n"
        "from gitmem.cli.quickrecall import run\n"
        "code = run(sys.argv[1:], os.environ)\n"
        "print(json.dumps([code, sorted(sys.modules)]), file=sys.stderr)\n"
    )
    done = run_python(code, searchable, "PAY-1423", "--explain", *NOW)
    answered, modules = json.loads(done.stderr.strip().splitlines()[-1])
    assert answered == 0 and "No Friday" in done.stdout
    heavy = {"pygit2", "typer", "click", "rich", "yaml", "multiprocessing", "gitmem.store.store"}
    heavy.add("tokenizers")  # an ASCII query is tokenized by gitmem.index.tokenizer
    if literank.available():  # numpy's OpenBLAS ranks the rows through ctypes
        heavy.add("numpy")
    assert [m for m in modules if m in heavy or m.split(".")[0] in heavy] == []


def test_the_console_entry_point_takes_the_fast_path(
    searchable: Path, gm: Callable[..., Result]
) -> None:
    code = (  # the quick path leaves by os._exit (no teardown): report from there
        "import os, sys; sys.argv[0] = 'gitmem'; from gitmem.__main__ import main\n"
        "leave = os._exit\n"
        "def spy(code):\n"
        "    print('typer' in sys.modules, file=sys.stderr); sys.stderr.flush(); leave(code)\n"
        "os._exit = spy\n"
        "main()\n"
    )
    args = ["PAY-1423", "--json", *NOW]
    done = run_python(code, searchable, "recall", *args)
    assert done.stdout == gm("recall", *args).out
    # The same answer from the full CLI would pass the line above: the fast path gave it.
    assert done.stderr.strip().splitlines()[-1] == "False"


def test_main_tells_openblas_to_start_one_thread_and_not_to_spin(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from gitmem import __main__

    seen: list[str | None] = []

    def answer(args: list[str], env: dict[str, str]) -> int:
        seen.append(env.get("OPENBLAS_THREAD_TIMEOUT"))
        seen.append(env.get("OPENBLAS_NUM_THREADS"))
        return 0

    monkeypatch.setenv("OPENBLAS_THREAD_TIMEOUT", "")  # so that teardown removes what main sets
    monkeypatch.delenv("OPENBLAS_THREAD_TIMEOUT")
    monkeypatch.setenv("OPENBLAS_NUM_THREADS", "")
    monkeypatch.delenv("OPENBLAS_NUM_THREADS")

    def leave(code: int) -> None:
        raise SystemExit(code)

    monkeypatch.setattr(quickrecall, "run", answer)
    monkeypatch.setattr(__main__, "_leave", leave)  # not os._exit: that would end pytest
    monkeypatch.setattr(sys, "argv", ["gitmem", "recall", "x"])
    for name in ("stdout", "stderr"):  # main() wraps them: put pytest's back afterwards
        monkeypatch.setattr(sys, name, getattr(sys, name))
    with pytest.raises(SystemExit) as exited:
        __main__.main()
    assert exited.value.code == 0 and seen == ["4", "1"]
    monkeypatch.setenv("OPENBLAS_NUM_THREADS", "2")  # a user's own setting is kept
    with pytest.raises(SystemExit):
        __main__.main()
    assert seen[-1] == "2"


def test_openblas_settings_change_no_score_gitmem_computes() -> None:
    """What __main__ sets changes how many BLAS threads start and how they wait, never a
    score: gitmem's products over a matrix large enough to be split come out the same."""
    code = (
        "import hashlib, numpy as np\n"
        "from gitmem.index.vectors import Ranking, normalise\n"
        "rng = np.random.default_rng(7)\n"
        "m = normalise(rng.standard_normal((60000, 256), dtype=np.float32))\n"
        "q = normalise(rng.standard_normal(256, dtype=np.float32))\n"
        "top = Ranking(m, q).top(50) + Ranking(m, q, list(range(0, 60000, 3))).top(50)\n"
        "print(hashlib.sha256(repr(top).encode()).hexdigest())\n"
    )
    digests = set()
    for threads, timeout in ((None, None), ("1", "4"), ("2", None)):
        env = {k: v for k, v in os.environ.items() if not k.startswith("OPENBLAS_")}
        env.update({"OPENBLAS_NUM_THREADS": threads} if threads else {})
        env.update({"OPENBLAS_THREAD_TIMEOUT": timeout} if timeout else {})
        done = subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True
        )
        digests.add(done.stdout)
    assert len(digests) == 1


def test_openblas_thread_timeout_changes_no_score() -> None:
    """The setting __main__ makes changes how BLAS threads wait, never what they compute: a
    product large enough to be split over threads comes out the same, bit for bit."""
    code = (
        "import hashlib, numpy as np\n"
        "rng = np.random.default_rng(7)\n"
        "m = rng.standard_normal((60000, 256), dtype=np.float32)\n"
        "q = rng.standard_normal(256, dtype=np.float32)\n"
        "print(hashlib.sha256((m @ q).tobytes() + (m[::3] @ q).tobytes()).hexdigest())\n"
    )
    digests = set()
    for timeout in (None, "4"):
        env = {k: v for k, v in os.environ.items() if k != "OPENBLAS_THREAD_TIMEOUT"}
        if timeout is not None:
            env["OPENBLAS_THREAD_TIMEOUT"] = timeout
        done = subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True
        )
        digests.add(done.stdout)
    assert len(digests) == 1


def test_the_index_reads_records_where_the_store_keeps_them() -> None:
    from gitmem.index import catchup
    from gitmem.store import reader

    assert catchup.RECORDS_DIR == reader.RECORDS_DIR


def test_loading_a_model_reuses_its_fingerprint_until_a_file_changes(
    model_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = tmp_path / "copy"
    build_tiny_model(folder)
    hashed: list[Path] = []
    real = modelfiles._hash_model

    def counting(where: Path, layout: object) -> str:
        hashed.append(where)
        return real(where, layout)  # type: ignore[arg-type]

    monkeypatch.setattr(modelfiles, "_hash_model", counting)
    stamp = modelfiles.fingerprint(folder)
    loaded = embedding.load(str(folder))
    assert loaded is not None and loaded.info.fingerprint == stamp and len(hashed) == 1
    config = folder / "config.json"
    config.write_text(json.dumps({**json.loads(config.read_text()), "max_length": 64}))
    again = embedding.load(str(folder))
    assert again is not None and again.info.fingerprint != stamp and len(hashed) == 2


@pytest.mark.parametrize("name", ["notes#2", "what?", "100%25"])
def test_the_index_stamp_is_read_at_any_store_path(tmp_path: Path, name: str) -> None:
    """SQLite's URIs end a path at "?" or "#" and decode "%": read as they were, the stamp of
    a store at `notes#2` came from (a new, empty) `notes`, never from the store's own index."""
    import sqlite3

    root = tmp_path / name
    (root / ".gitmem" / "index").mkdir(parents=True)
    db = sqlite3.connect(root / ".gitmem" / "index" / "catalog.sqlite")
    db.execute("CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
    db.execute("INSERT INTO meta VALUES ('commit', 'abc')")
    db.commit()
    db.close()
    assert catalog_stamp(root) == "abc"
    assert sorted(p.name for p in tmp_path.iterdir()) == [name]  # nothing made beside it


# `python -c BOTH_WAYS quick|full recall ...`: gitmem's entry point, the fast path on or off.
BOTH_WAYS = (
    "import sys; from gitmem import __main__ as m\n"
    "if sys.argv.pop(1) == 'full': m.QUICK_PATHS.clear()\n"
    "m.main()\n"
)


def test_a_failure_while_printing_is_reported_as_the_full_cli_reports_it(searchable: Path) -> None:
    """Past the search the fast path cannot hand over any more (it has printed): an output that
    cannot encode a title is a bug report with exit code 3 either way, not a traceback and 1."""
    env = {**os.environ, "GITMEM_STORE": str(searchable), "PYTHONIOENCODING": "ascii"}
    code = BOTH_WAYS
    done = {
        way: subprocess.run(
            [sys.executable, "-c", code, way, "recall", "日本語", *NOW],
            capture_output=True,
            text=True,
            env=env,
        )
        for way in ("quick", "full")
    }
    assert done["quick"].returncode == done["full"].returncode == 3
    assert done["quick"].stderr == done["full"].stderr
    assert "internal error" in done["quick"].stderr


def run_both_ways(
    store: Path,
    stdout: IO[str] | int,
    stderr: IO[str] | int = subprocess.PIPE,
    *,
    buffered: bool = True,
) -> dict[str, subprocess.CompletedProcess[str]]:
    """`gitmem recall` through the fast path and through the full CLI, stdout as given. Block
    buffered, as a user's shell has it, the output is written as the process leaves;
    unbuffered (PYTHONUNBUFFERED), at each print, so that losing it stops the command."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"}
    if not buffered:
        env["PYTHONUNBUFFERED"] = "1"
    env["GITMEM_STORE"] = str(store)
    code = BOTH_WAYS
    return {
        way: subprocess.run(
            [sys.executable, "-c", code, way, "recall", "webhook", "--explain", *NOW],
            stdout=stdout,
            stderr=stderr,
            text=True,
            env=env,
        )
        for way in ("quick", "full")
    }


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="needs /dev/full")
@pytest.mark.parametrize("buffered", [True, False], ids=["buffered", "unbuffered"])
def test_output_lost_on_a_full_disk_is_an_error_said_in_one_line(
    searchable: Path, buffered: bool
) -> None:
    """Lost output is not a success, nor a bug in gitmem, nor Python's "Exception ignored":
    one line and exit code 120, whether the loss shows at a print or as the process leaves."""
    with open("/dev/full", "w") as full:
        done = run_both_ways(searchable, full, buffered=buffered)
    for way in ("quick", "full"):
        assert (done[way].returncode, done[way].stderr) == (
            120,
            "gitmem: cannot write to standard output: No space left on device\n",
        ), way


def closed_pipe() -> int:
    """The writing end of a pipe whose reader has left (`| head -0`, or a parent that closed
    its end): every write to it fails with EPIPE."""
    read, write = os.pipe()
    os.close(read)
    return write


def into_closed_pipe(
    store: Path, args: list[str], stdin: str | None = None
) -> subprocess.CompletedProcess[str]:
    """`gitmem ARGS` on `store`, buffered, its stdout a pipe whose reader has left."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"}
    env["GITMEM_STORE"] = str(store)
    write = closed_pipe()
    try:
        return subprocess.run(
            [sys.executable, "-m", "gitmem", *args],
            input=stdin,
            stdout=write,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
        )
    finally:
        os.close(write)


@pytest.mark.parametrize("buffered", [True, False], ids=["buffered", "unbuffered"])
def test_a_reader_that_left_is_no_error_to_report(searchable: Path, buffered: bool) -> None:
    write = closed_pipe()
    try:
        done = run_both_ways(searchable, write, buffered=buffered)
    finally:
        os.close(write)
    for way in ("quick", "full"):
        assert (done[way].returncode, done[way].stderr) == (141, ""), way


def test_a_reader_of_both_streams_that_left_gets_the_same_exit_code(searchable: Path) -> None:
    """`gitmem recall x 2>&1 | head -0`: nothing can be said, the exit code still tells."""
    write = closed_pipe()
    try:
        done = run_both_ways(searchable, write, write)
    finally:
        os.close(write)
    assert done["quick"].returncode == done["full"].returncode == 141


@pytest.mark.parametrize("args", [["list"], ["status"], ["--help"], ["recall", "--help"]])
def test_every_command_leaves_a_closed_pipe_alone(searchable: Path, args: list[str]) -> None:
    """The full CLI's entry point is every command's: none of them reports a reader that left."""
    done = into_closed_pipe(searchable, args)
    assert (done.returncode, done.stderr) == (141, "")


def test_a_closed_stdout_is_lost_output_said_in_one_line(searchable: Path) -> None:
    """With fd 1 closed (`>&-`), sys.stdout is None: lost output, not a traceback or a bug."""
    env = {**os.environ, "GITMEM_STORE": str(searchable)}
    code = BOTH_WAYS
    for way in ("quick", "full"):
        done = subprocess.run(
            ["sh", "-c", '"$@" >&-', "sh", sys.executable, "-c", code, way, "recall", "webhook"],
            stderr=subprocess.PIPE,
            text=True,
            env=env,
        )
        assert (done.returncode, done.stderr) == (
            120,
            "gitmem: cannot write to standard output: Bad file descriptor\n",
        ), way


# Put before BOTH_WAYS, with two more arguments: POINT and a file descriptor. The command stops
# at POINT (a function to replace, or "importing" the code that answers), writes one byte to
# the descriptor and waits there for the test's SIGINT. SIGINT is made Python's default again,
# as a terminal's foreground job has it: a shell starts background jobs with it ignored.
STOPPING = (
    "import importlib, os, signal, sys, time\n"
    "signal.signal(signal.SIGINT, signal.default_int_handler)\n"
    "point, ready = sys.argv.pop(1), int(sys.argv.pop(1))\n"
    "def stop(*args, **kwargs):\n"
    "    os.write(ready, b'!')\n"
    "    time.sleep(600)\n"
    "class Importing:\n"
    "    def find_spec(self, name, path=None, target=None):\n"
    "        if name in ('gitmem.cli.app', 'gitmem.cli.quickrecall'):\n"
    "            stop()\n"
    "if point == 'importing':\n"
    "    sys.meta_path.insert(0, Importing())\n"
    "else:\n"
    "    module, name = point.rsplit('.', 1)\n"
    "    setattr(importlib.import_module(module), name, stop)\n"
)


@pytest.mark.parametrize(
    "point",
    ["importing", "gitmem.recall.recall.recall", "gitmem.cli.display.recall"],
    ids=["importing", "searching", "printing"],
)
@pytest.mark.parametrize("way", ["quick", "full"])
def test_an_interrupt_says_so_in_one_line_and_exits_130(
    searchable: Path, way: str, point: str
) -> None:
    env = {**os.environ, "GITMEM_STORE": str(searchable)}
    done = interrupted_at(STOPPING + BOTH_WAYS, point, way, ["recall", "webhook", *NOW], env)
    assert done == (130, "", "gitmem: interrupted\n")


def interrupted_at(
    code: str, point: str, way: str, args: list[str], env: dict[str, str]
) -> tuple[int, str, str]:
    """`python -c CODE POINT FD WAY ARGS` (a STOPPING prelude, then a BOTH_WAYS entry point),
    stopped at `point` and sent SIGINT there: its exit code, stdout and stderr."""
    read, write = os.pipe()
    with subprocess.Popen(
        [sys.executable, "-c", code, point, str(write), way, *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        pass_fds=(write,),
    ) as proc:
        os.close(write)
        with os.fdopen(read, "rb") as ready:
            reached = ready.read(1)  # b"" if it ended without getting there
        if reached:
            proc.send_signal(signal.SIGINT)
        try:
            out, err = proc.communicate(timeout=300)  # a safety net, not a speed limit
        except subprocess.TimeoutExpired:
            proc.kill()  # the signal did not end it: fail, do not wait out its sleep
            raise
    assert reached == b"!", err
    return proc.returncode, out, err


def test_a_hook_whose_host_left_still_fails_open(searchable: Path, tmp_path: Path) -> None:
    """`gitmem hook` leaves through the same entry point: context its host did not stay to
    read is dropped, with exit code 0 and nothing on stderr (docs/hooks.md: hooks fail open)."""
    from hookkit import make_project, payload

    hook_input = payload("claude-code/session_start", make_project(tmp_path)).decode()
    done = into_closed_pipe(searchable, ["hook", "session-start"], hook_input)
    assert (done.returncode, done.stderr) == (0, "")
    assert "Broken pipe" in (searchable / ".gitmem" / "hooks.log").read_text()  # it did write


@pytest.mark.parametrize(
    ("raised", "code", "said"),
    [
        (KeyboardInterrupt(), 130, "gitmem: interrupted\n"),
        # typer makes any EPIPE a silent exit 1; stdout's never reaches it (gitmem.__main__
        # turns it into its own exit), so this one is another pipe's: a worker's that died.
        (
            BrokenPipeError(32, "Broken pipe"),
            3,
            "gitmem: internal error (a bug in gitmem, please report it): "
            "BrokenPipeError(32, 'Broken pipe')\n",
        ),
    ],
    ids=["interrupt", "broken-pipe"],
)
def test_the_full_cli_says_what_typer_would_end_in_silence(
    store_path: Path,
    gm: Callable[..., Result],
    monkeypatch: pytest.MonkeyPatch,
    raised: BaseException,
    code: int,
    said: str,
) -> None:
    from gitmem.cli import reads as cli

    def opening(store: str | None) -> None:
        raise raised

    monkeypatch.setattr(cli, "open_store", opening)
    assert gm("status") == Result(code, "", said)


# Awaits the change to gitmem/mcp_server.py given in review 2's report (serve: the SDK's
# ExceptionGroup of its stdout writer's BrokenPipeError becomes SystemExit(141)); then drop it.
def test_an_mcp_client_that_stops_reading_ends_the_server_as_a_reader_that_left(
    store_path: Path,
) -> None:
    """`gitmem mcp` writes JSON-RPC on the stdout its client reads. A client that stopped
    reading (it closed its end, or died) is no bug in gitmem: the server leaves as every
    command leaves a reader that left, 141 and nothing said."""
    import contextlib
    import time

    env = {**os.environ, "GITMEM_STORE": str(store_path)}
    proc = subprocess.Popen(
        [sys.executable, "-m", "gitmem", "mcp"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
    )
    assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None

    def send(message: dict[str, object]) -> None:
        assert proc.stdin is not None
        proc.stdin.write(json.dumps({"jsonrpc": "2.0", **message}).encode() + b"\n")
        proc.stdin.flush()

    try:
        hello = {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t"}}
        send({"id": 1, "method": "initialize", "params": hello})
        assert json.loads(proc.stdout.readline())["id"] == 1  # the server is up and answering
        send({"method": "notifications/initialized"})
        proc.stdout.close()  # the client stops reading
        # Pings it answers into the closed pipe; stdin stays open meanwhile, so that the server
        # meets the closed pipe before the end of its input (which would end it quietly).
        with contextlib.suppress(BrokenPipeError):  # it left before the last ping
            for n in range(2, 17):
                send({"id": n, "method": "ping"})
                time.sleep(0.2)
            proc.stdin.close()
        code = proc.wait(timeout=120)
    finally:
        proc.kill()  # if it is still there: fail, do not hang
    assert (code, proc.stderr.read().decode()) == (141, "")
    proc.stderr.close()
