"""Shared helpers for the benchmark scripts: synthetic stores and honest statistics."""

from __future__ import annotations

import argparse
import functools
import hashlib
import json
import os
import platform
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

TYPES = ("decision", "pattern", "context", "fact", "preference", "procedure", "lesson", "lesson")
WORDS = (
    "cache index commit deploy retry webhook postgres redis session token queue worker api "
    "schema migration latency timeout payment invoice customer dashboard react component state "
    "terraform module bucket policy lambda pipeline batch parquet spark airflow metric alert "
    "incident rollback release version branch merge conflict test fixture mock coverage lint "
    "config secret vault rotate certificate tls proxy nginx kubernetes pod replica autoscale"
).split()


def machine() -> dict[str, Any]:
    return {
        "python": platform.python_version(),
        "cpu": _cpu_name(),
        "cores": os.cpu_count(),
        "date": datetime.now(UTC).strftime("%Y-%m-%d"),
    }


def _cpu_name() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    k = (len(ordered) - 1) * q
    lo, hi = int(k), min(int(k) + 1, len(ordered) - 1)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (k - lo)


def median(values: list[float]) -> float:
    return statistics.median(values)


def synthetic_items(
    count: int, seed: int = 7, start: datetime | None = None
) -> Iterator[dict[str, Any]]:
    """Export-format records spread over two years, ~80 words of body each."""
    rng = random.Random(seed)
    begin = start or datetime(2024, 11, 1, tzinfo=UTC)
    span = timedelta(days=730).total_seconds()
    for i in range(count):
        words = [rng.choice(WORDS) for _ in range(80)]
        created = begin + timedelta(seconds=int(span * i / max(count, 1)))
        stamp = created.strftime("%Y-%m-%dT%H:%M:%SZ")
        title = " ".join(words[:6]).capitalize()
        yield {
            "id": f"{'-'.join(words[:4])}-{i:06x}",
            "type": TYPES[i % len(TYPES)],
            "title": title,
            "abstract": " ".join(words[6:20]),
            "tags": sorted(set(words[20:23])),
            "agent": rng.choice(("claude-code", "codex", "alice")),
            "scope": "shared",
            "source": "",
            "created": stamp,
            "updated": stamp,
            "weight": 1.0,
            "links": [],
            "supersedes": [],
            "superseded_by": "",
            "status": "active",
            "body": " ".join(words) + "\n",
        }


def make_store(count: int, seed: int = 7) -> Path:
    """A new store with `count` synthetic records imported in one commit."""
    from gitmem.store.store import Store

    root = Path(tempfile.mkdtemp(prefix=f"gitmem-bench-{count}-")) / "store"
    store, _ = Store.init(root)
    if count:
        store.import_records(synthetic_items(count, seed), agent="bench")
    return root


def git_identity_env() -> dict[str, str]:
    env = dict(os.environ)
    env.setdefault("GIT_AUTHOR_NAME", "bench")
    return env


def write_json(path: str | None, data: dict[str, Any]) -> None:
    if path:
        Path(path).write_text(json.dumps(data, indent=2) + "\n")


def ab_parser(doc: str) -> argparse.ArgumentParser:
    """The arguments of a before/after script run through `alternated`."""
    parser = argparse.ArgumentParser(description=doc.splitlines()[0])
    parser.add_argument("store", type=Path)
    parser.add_argument("--trees", nargs=2, type=Path, metavar=("BEFORE", "AFTER"))
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--json")
    parser.add_argument("--one", action="store_true", help=argparse.SUPPRESS)
    return parser


def ab_report(path: str | None, runs: dict[str, list[Any]], summary: dict[str, Any]) -> None:
    print(json.dumps(summary, indent=1), flush=True)
    write_json(path, {"machine": machine(), "runs": runs, "summary": summary})


def alternated(script: str, store: Path, trees: list[Path], rounds: int) -> dict[str, list[Any]]:
    """Each round, one process of `script STORE --one` for each code tree in turn (`PYTHONPATH`
    that tree; ABBA order across rounds), and the JSON each printed last, by tree."""
    runs: dict[str, list[Any]] = {str(tree): [] for tree in trees}
    for n in range(rounds):
        for tree in trees if n % 2 == 0 else trees[::-1]:
            env = {**os.environ, "PYTHONPATH": str(tree)}
            command = [sys.executable, script, str(store), "--one"]
            done = subprocess.run(command, env=env, capture_output=True, text=True)
            if done.returncode:
                print(f"round {n} {tree}: failed\n{done.stderr[-2000:]}", flush=True)
                continue
            result = json.loads(done.stdout.strip().splitlines()[-1])
            runs[str(tree)].append(result)
            print(f"round {n} {tree}: {result}", flush=True)
    return runs


def run_quiet(cmd: list[str], env: dict[str, str] | None = None) -> None:
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, env=env)


REPO = Path(__file__).resolve().parents[1]


def checkout(revision: str, into: Path, whole_tree: bool = False) -> Path:
    """The `gitmem` package of `revision` (with `whole_tree`, all its files: what `pip install`
    needs), unpacked into `into` (the work tree is left alone)."""
    paths = [] if whole_tree else ["gitmem"]
    archive = subprocess.run(
        ["git", "-C", str(REPO), "archive", revision, *paths], check=True, capture_output=True
    )
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive.stdout, check=True)
    return into


def _worktree(into: Path) -> Path:
    """The work tree's files as they are now (uncommitted edits included, ignored files left
    out), copied into `into`: pip builds in the directory it installs, and this is a snapshot
    that edits made meanwhile do not reach."""
    listed = subprocess.run(
        ["git", "-C", str(REPO), "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        check=True,
        capture_output=True,
        text=True,
    )
    for name in filter(None, listed.stdout.split("\0")):
        if (REPO / name).is_file():  # a tracked file deleted in the work tree is listed too
            (into / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(REPO / name, into / name)
    return into


VENVS = REPO / "benchmarks" / ".venvs"
# Top-level directories of a source tree that a `pip install` does not install.
NOT_INSTALLED = ("tests", "docs", "benchmarks", "build", ".git")


def _digest(source: Path, relatives: list[Path]) -> str:
    digest = hashlib.sha256()
    for relative in relatives:
        content = (source / relative).read_bytes()
        digest.update(f"{relative}\0{len(content)}\0".encode() + content)
    return digest.hexdigest()


def _source_digests(source: Path) -> str:
    """Two lines: one for the interpreter and the project's metadata (its dependencies among
    them), one for the files a `pip install` of `source` may install."""
    installed = sorted(
        path.relative_to(source)
        for path in source.rglob("*")
        if path.is_file()
        and path.relative_to(source).parts[0] not in NOT_INSTALLED
        and not path.relative_to(source).parts[0].endswith(".egg-info")
        and "__pycache__" not in path.parts
    )
    metadata = f"{sys.version} {_digest(source, [Path('pyproject.toml')])}"
    return f"{metadata}\n{_digest(source, installed)}\n"


def installed_python(source: Path, name: str, extras: str = "") -> Path:
    """The python of a venv, `benchmarks/.venvs/<name>`, where the project in `source` (a
    directory with its pyproject.toml) is installed as a user installs gitmem: a regular
    `pip install`, dependencies from the index, bytecode compiled by pip, with the optional
    `extras` ("scale": what a user past 200k vectors installs). The venv is reused
    while the files `source` would install are the same; when only the package's files
    changed, gitmem alone is installed again (about 10 s), otherwise the venv is made anew
    (about a minute, pip's cache holding the dependencies' wheels).

    Why not `.venv`, the dev install: `pip install -e` adds a .pth file whose finder module
    (`__editable___gitmem_0_1_0_finder`) runs at every interpreter start and imports pathlib,
    importlib.util, fnmatch, urllib.parse, ipaddress...: `python -X importtime -c pass` put
    `site` at 30-45 ms cumulative in .venv and 6-8 ms in such a venv (2 cores, December
    2026), a cost that whole-process figures from .venv carry and users' processes do not."""
    venv = VENVS / name
    python = venv / "bin" / "python"
    stamp = venv / "gitmem-source.sha256"
    digests = _source_digests(source)
    before = stamp.read_text() if stamp.is_file() and python.exists() else ""
    if before == digests:
        return python
    pip = [
        str(python),
        "-m",
        "pip",
        "install",
        "--quiet",
        f"{source}[{extras}]" if extras else str(source),
    ]
    if before.split("\n")[0] == digests.split("\n")[0]:  # the same dependencies
        pip[-1:-1] = ["--no-deps", "--force-reinstall"]
    else:
        shutil.rmtree(venv, ignore_errors=True)
        # From .venv's python, `venv` makes the new one on the same base interpreter.
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    stamp.unlink(missing_ok=True)  # until the install is through
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    print(f"installing {source} into {venv} (a regular pip install)...", flush=True)
    done = subprocess.run(pip, env=env, capture_output=True, text=True)
    if done.returncode:  # pip's warnings would drown the figures: shown only on failure
        sys.stderr.write(done.stdout + done.stderr)
        raise subprocess.CalledProcessError(done.returncode, pip)
    stamp.write_text(digests)
    return python


def installed_worktree(extras: str = "") -> Path:
    """`installed_python` of the work tree as it is now, in benchmarks/.venvs/worktree (with
    `extras`: worktree-<extras>)."""
    with tempfile.TemporaryDirectory() as tmp:
        name = f"worktree-{extras}" if extras else "worktree"
        return installed_python(_worktree(Path(tmp)), name, extras)


@functools.cache
def outside() -> Path:
    """An empty directory outside the repository, for the working directory of the processes
    that run an installed gitmem: `-c` and `-m` put the working directory first on sys.path,
    and from the repository's root they would import the work tree's gitmem."""
    return Path(tempfile.mkdtemp(prefix="gitmem-bench-cwd-"))


def installed_env(python: Path, env: dict[str, str]) -> dict[str, str]:
    """`env` for timing processes of `python` (from `installed_python`) as a user's: no
    PYTHONPATH, no PYTHONDONTWRITEBYTECODE. A child run in `outside()` checks first that
    `import gitmem` finds the installed package, compiled."""
    env = {k: v for k, v in env.items() if k not in ("PYTHONPATH", "PYTHONDONTWRITEBYTECODE")}
    venv = str(python.parent.parent)
    check = (
        "import importlib.util, os, gitmem\n"
        f"assert gitmem.__file__.startswith({venv!r}), gitmem.__file__\n"
        "assert os.path.exists(importlib.util.cache_from_source(gitmem.__file__))\n"
    )
    subprocess.run([str(python), "-c", check], cwd=outside(), env=env, check=True)
    return env


def run_code(source: Path, code: str, *args: str) -> str:
    """Run `code` with `python -c` so that `import gitmem` finds the package in `source`, and
    return its standard output. The child runs in `source`: `-c` puts the working directory
    first on sys.path, ahead of PYTHONPATH, so from the repository's root it would import the
    work tree's gitmem whatever PYTHONPATH says (checked in the child)."""
    check = f"import gitmem, sys; assert gitmem.__file__.startswith({str(source.resolve())!r})\n"
    done = subprocess.run(
        [sys.executable, "-c", check + code, *args],
        cwd=source,
        env={**os.environ, "PYTHONPATH": f"{source}{os.pathsep}{REPO / 'benchmarks'}"},
        capture_output=True,
        text=True,
        check=True,
    )
    return done.stdout


def compiled(env: dict[str, str], package: Path = REPO / "gitmem") -> dict[str, str]:
    """`env` for timing whole gitmem processes, `package` compiled to bytecode first: an
    installed wheel has its bytecode, while a checkout run with PYTHONDONTWRITEBYTECODE=1 (as
    on these machines) would compile each module anew on every start."""
    env = {k: v for k, v in env.items() if k != "PYTHONDONTWRITEBYTECODE"}
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(package)], env=env, check=True)
    return env


def last_json(cmd: list[str], env: dict[str, str], cwd: Path | None = None) -> Any:
    """The JSON a child process prints on its last line."""
    done = subprocess.run(cmd, capture_output=True, text=True, check=True, env=env, cwd=cwd)
    return json.loads(done.stdout.strip().splitlines()[-1])


def process_figures(
    times: dict[str, list[float]], stages: list[dict[str, float]]
) -> dict[str, float]:
    """Medians of each timed process and of each stage, and the load they were measured at."""
    figures = {name: median(values) for name, values in times.items()}
    figures.update({key: median([s[key] for s in stages]) for key in stages[0]})
    figures["load_average"] = os.getloadavg()[0]
    return figures
