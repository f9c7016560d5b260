"""Shared helpers for the benchmark scripts: synthetic stores and honest statistics."""

from __future__ import annotations

import json
import os
import platform
import random
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
    from gitmem.store import Store

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


def run_quiet(cmd: list[str], env: dict[str, str] | None = None) -> None:
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, env=env)


REPO = Path(__file__).resolve().parents[1]


def checkout(revision: str, into: Path) -> Path:
    """The `gitmem` package of `revision`, unpacked into `into` (the work tree is left alone)."""
    archive = subprocess.run(
        ["git", "-C", str(REPO), "archive", revision, "gitmem"], check=True, capture_output=True
    )
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive.stdout, check=True)
    return into


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


def last_json(cmd: list[str], env: dict[str, str]) -> Any:
    """The JSON a child process prints on its last line."""
    done = subprocess.run(cmd, capture_output=True, text=True, check=True, env=env)
    return json.loads(done.stdout.strip().splitlines()[-1])


def process_figures(
    times: dict[str, list[float]], stages: list[dict[str, float]]
) -> dict[str, float]:
    """Medians of each timed process and of each stage, and the load they were measured at."""
    figures = {name: median(values) for name, values in times.items()}
    figures.update({key: median([s[key] for s in stages]) for key in stages[0]})
    figures["load_average"] = os.getloadavg()[0]
    return figures
