"""What each import-light stand-in buys a whole `gitmem` process (issue 17: keep a second
implementation only where a measurement shows the whole-process budget cannot be met otherwise).

    .venv/bin/python benchmarks/bench_seams.py --recall-store STORE100K --record-store STORE1K \
        [--runs 15] [--json benchmarks/results/seams_s8.json]

Each variant is a small `python -c` wrapper that sets up what the stand-in spares (numpy imported
first, the real tokenizer forced, pygit2 imported first, the fast path bypassed) and then calls
`gitmem.__main__.main()` with the command's argv, so the product's code is the same in every
variant. The wrapper first sets the environment `gitmem.__main__` would set for the command
(OPENBLAS_THREAD_TIMEOUT, and OPENBLAS_NUM_THREADS for recall), so that numpy imported early
starts OpenBLAS as the fast path would. Variants run alternated run by run (the order rotated
each run) after one untimed warm-up round; each is checked once first (which heavy modules it
loaded, and for recall that its output is the plain fast path's).

- `gitmem recall QUERY` (budget 400 ms, model load included) on STORE100K, a store with a
  current index whose config names the model (e.g. one bench_recall.py made):
  as it is; + numpy imported first (the index then ranks with numpy: the cost literank/blas
  save); + the real `tokenizers` tokenizer (LazyTokenizer.read declines: the cost the lazy
  tokenizer saves); + pygit2 imported; + pygit2 imported and HEAD read through it; all of these;
  the full CLI (typer, the store opened with pygit2: what the fast path as a whole saves).
- `gitmem record` (budget 250 ms) on STORE1K: the fast path (cli/quickrecord.py) and the full
  CLI. Each run adds a record to STORE1K.
- `gitmem hook post-tool-use` with a Bash tool payload (the no-op path, budget 60 ms): as it is
  and with pygit2 imported first.

The processes run the work tree installed as a user installs gitmem (benchmarks/.venvs/worktree,
a regular pip install), outside the repository, as bench_recall.py's do; `--revision REV` runs
that revision's code instead (benchmarks/.venvs/ab-REV, as ab_cli_recall.py installs it). The
wrappers name one gitmem module, the lazy tokenizer's, and find it in either layout.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import (
    REPO,
    installed_env,
    installed_worktree,
    machine,
    median,
    outside,
    percentile,
    write_json,
)
from ab_cli_recall import install
from bench_recall import queries

# What `gitmem.__main__.main` sets for the command before it imports anything heavy; set here
# first, so that a variant importing numpy before main() starts OpenBLAS the same way.
PRELUDE = """\
import os, sys
os.environ.setdefault("OPENBLAS_THREAD_TIMEOUT", "4")
if sys.argv[1:2] == ["recall"]:
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
"""
MAIN = "from gitmem.__main__ import main\nmain()\n"

NUMPY = "import numpy\n"
# The lazy tokenizer's reader declines every file: embedding then builds the real one. The
# module is looked for where each layout keeps it (the house's, then the flat package's).
TOKENIZER = """\
try:
    from gitmem.index.lazytokenizer import LazyTokenizer
except ImportError:  # the flat package of before the house
    from gitmem.lazytokenizer import LazyTokenizer
LazyTokenizer.read = classmethod(lambda cls, path, build: None)
"""
PYGIT2 = "import pygit2\n"
PYGIT2_HEAD = (
    "import pygit2\n"
    "str(pygit2.Repository(os.environ['GITMEM_STORE']).head.target)\n"  # HEAD as git.py reads it
)


def without_quick(command: str) -> str:
    """The full CLI: the command's quick path taken out of gitmem.__main__'s table."""
    return f"import gitmem.__main__ as m\nm.QUICK_PATHS.pop({command!r})\n"


RECALL_VARIANTS = {
    "as_is": "",
    "numpy": NUMPY,
    "real_tokenizer": TOKENIZER,
    "pygit2_import": PYGIT2,
    "pygit2_head": PYGIT2_HEAD,
    "all_stand_ins_off": NUMPY + TOKENIZER + PYGIT2_HEAD,
    "full_cli": without_quick("recall"),
}
RECORD_VARIANTS = {"as_is": "", "full_cli": without_quick("record")}
HOOK_VARIANTS = {"as_is": "", "pygit2_import": PYGIT2}

# Loaded or not, for each variant's check: (present, absent).
RECALL_EXPECT = {
    "as_is": ((), ("numpy", "tokenizers", "pygit2", "typer")),
    "numpy": (("numpy", ".vectors"), ("tokenizers", "pygit2", "typer")),
    "real_tokenizer": (("tokenizers",), ("numpy", "pygit2", "typer")),
    "pygit2_import": (("pygit2",), ("numpy", "tokenizers", "typer")),
    "pygit2_head": (("pygit2",), ("numpy", "tokenizers", "typer")),
    "all_stand_ins_off": (("numpy", "tokenizers", "pygit2"), ("typer",)),
    "full_cli": (("typer", "pygit2"), ()),
}
RECORD_EXPECT = {"as_is": (("pygit2",), ("typer",)), "full_cli": (("typer", "pygit2"), ())}
HOOK_EXPECT = {"as_is": ((), ("pygit2", "typer")), "pygit2_import": (("pygit2",), ("typer",))}

# The check's probe: the modules loaded when the process leaves, through os._exit (the fast
# paths) or the interpreter's exit (the full CLI), written to the file GITMEM_BENCH_PROBE names.
PROBE = """\
import atexit, json
def _probe_dump():
    names = [m for m in sys.modules if m.split(".")[0] in (
        "numpy", "tokenizers", "pygit2", "typer", "rich", "tantivy", "model2vec", "yaml")
        and "." not in m]
    names += [m for m in sys.modules if m.startswith("gitmem.")]
    with open(os.environ["GITMEM_BENCH_PROBE"], "w") as f:
        json.dump(sorted(names), f)
_probe_exit = os._exit
def _probe_quick_exit(code):
    _probe_dump()
    _probe_exit(code)
os._exit = _probe_quick_exit
atexit.register(_probe_dump)
"""


def _has(loaded: list[str], module: str) -> bool:
    if module.startswith("."):
        return any(name.startswith("gitmem.") and name.endswith(module) for name in loaded)
    return module in loaded


def program(setup: str, probe: bool = False) -> str:
    return PRELUDE + (PROBE if probe else "") + setup + MAIN


class Runner:
    """Runs wrapper programs with the installed work tree's python, outside the repository."""

    def __init__(self, python: Path, env: dict[str, str]) -> None:
        self.python = python
        self.env = env

    def run(
        self, code: str, argv: list[str], stdin: bytes = b"", **extra: str
    ) -> tuple[float, float, bytes]:
        """Wall ms, CPU ms (user + system of the child) and stdout."""
        used = resource.getrusage(resource.RUSAGE_CHILDREN)
        start = time.perf_counter()
        done = subprocess.run(
            [str(self.python), "-c", code, *argv],
            input=stdin,
            capture_output=True,
            env={**self.env, **extra},
            cwd=outside(),
        )
        wall = (time.perf_counter() - start) * 1000
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu = (after.ru_utime - used.ru_utime + after.ru_stime - used.ru_stime) * 1000
        if done.returncode:
            sys.stderr.write(done.stderr.decode(errors="replace"))
            raise subprocess.CalledProcessError(done.returncode, argv)
        return wall, cpu, done.stdout

    def check(
        self, name: str, setup: str, argv: list[str], expect: tuple[Any, Any], stdin: bytes = b""
    ) -> tuple[list[str], bytes]:
        """The modules the variant loaded (asserting what it must and must not load), and its
        stdout."""
        with tempfile.NamedTemporaryFile(suffix=".json") as report:
            _, _, out = self.run(program(setup, True), argv, stdin, GITMEM_BENCH_PROBE=report.name)
            loaded = json.loads(Path(report.name).read_text() or "[]")
        present, absent = expect
        # A name starting with a dot: a module of gitmem's, in whichever wing it lives.
        missing = [m for m in present if not _has(loaded, m)]
        extra = [m for m in absent if _has(loaded, m)]
        if missing or extra:
            raise SystemExit(f"variant {name}: expected {missing} loaded and {extra} not")
        return loaded, out


def measure(
    runner: Runner,
    variants: dict[str, str],
    argv_of: Any,
    runs: int,
    stdin: bytes = b"",
) -> dict[str, Any]:
    """Each variant `runs` times, alternated run by run with the order rotated; one untimed
    round first. `argv_of(i)` is run i's argv (the same for every variant of the run)."""
    names = list(variants)
    codes = {name: program(setup) for name, setup in variants.items()}
    for name in names:  # warm-up: the page cache, bytecode, the model's files
        runner.run(codes[name], argv_of(-1 - names.index(name)), stdin)
    wall: dict[str, list[float]] = {name: [] for name in names}
    cpu: dict[str, list[float]] = {name: [] for name in names}
    loads = [os.getloadavg()[0]]
    for i in range(runs):
        argv = argv_of(i)
        shift = i % len(names)
        for name in names[shift:] + names[:shift]:
            w, c, _ = runner.run(codes[name], argv, stdin)
            wall[name].append(w)
            cpu[name].append(c)
        loads.append(os.getloadavg()[0])
    base = names[0]
    figures: dict[str, Any] = {}
    for name in names:
        paired = [v - b for v, b in zip(wall[name], wall[base], strict=True)]
        figures[name] = {
            "median_ms": median(wall[name]),
            "p90_ms": percentile(wall[name], 0.9),
            "min_ms": min(wall[name]),
            "cpu_median_ms": median(cpu[name]),
            "n": runs,
            "paired_diff_median_ms": median(paired),
            "ratio_of_medians": median(wall[name]) / median(wall[base]),
            "wall_ms": wall[name],
            "cpu_ms": cpu[name],
        }
    return {"variants": figures, "load_average": loads, "load_min_max": [min(loads), max(loads)]}


def table(title: str, budget: float, result: dict[str, Any]) -> None:
    lo, hi = result["load_min_max"]
    print(f"\n{title} (budget {budget:.0f} ms; load {lo:.2f}-{hi:.2f})")
    print(
        f"  {'variant':<20} {'median':>8} {'p90':>8} {'min':>7} {'CPU':>7} {'+ vs as is':>11} "
        f"{'ratio':>6}  n"
    )
    for name, f in result["variants"].items():
        print(
            f"  {name:<20} {f['median_ms']:8.1f} {f['p90_ms']:8.1f} {f['min_ms']:7.1f} "
            f"{f['cpu_median_ms']:7.1f} {f['paired_diff_median_ms']:+11.1f} "
            f"{f['ratio_of_medians']:6.2f}  {f['n']}",
            flush=True,
        )


def hook_payload(project: Path) -> bytes:
    """The Claude Code fixture of a Bash tool use (tests/fixtures/hooks): the no-op path."""
    fixture = REPO / "tests" / "fixtures" / "hooks" / "claude-code" / "post_tool_use_bash.json"
    text = fixture.read_text()
    text = text.replace("{cwd}", str(project)).replace(
        "{transcript}", str(project / "transcript.jsonl")
    )
    return text.encode()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--recall-store", help="A 100k store with a current index and a model.")
    parser.add_argument("--record-store", help="A small store (1k records) to write to.")
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--only", default="recall,record,hook", help="Which commands to measure.")
    parser.add_argument(
        "--revision", help="Measure this git revision's code (default: the work tree as it is)."
    )
    parser.add_argument("--json")
    args = parser.parse_args()
    only = set(args.only.split(","))
    python = install(args.revision) if args.revision else installed_worktree()
    results: dict[str, Any] = {
        "machine": machine(),
        "revision": subprocess.run(
            ["git", "-C", str(REPO), "rev-parse", "--short", args.revision or "HEAD"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip(),
        "runs": args.runs,
        "load_at_start": os.getloadavg(),
    }

    if "recall" in only:
        if not args.recall_store:
            parser.error("--recall-store is needed for recall")
        store = str(Path(args.recall_store).resolve())
        runner = Runner(python, installed_env(python, {**os.environ, "GITMEM_STORE": store}))
        words = queries(args.runs + len(RECALL_VARIANTS) + 1, seed=9)

        def recall_argv(i: int) -> list[str]:
            return ["recall", words[i]]

        checks = {}
        reference = None
        for name, setup in RECALL_VARIANTS.items():
            loaded, out = runner.check(name, setup, recall_argv(0), RECALL_EXPECT[name])
            reference = out if reference is None else reference
            if out != reference:
                raise SystemExit(f"recall variant {name}: output differs from the fast path's")
            checks[name] = [m for m in loaded if "." not in m]
        print("recall: every variant printed the same; heavy modules loaded:")
        for name, loaded in checks.items():
            print(f"  {name}: {', '.join(loaded) or '-'}")
        recall = measure(runner, RECALL_VARIANTS, recall_argv, args.runs)
        recall["modules"] = checks
        recall["store"] = store
        results["recall"] = recall
        table("gitmem recall QUERY, whole process, 100k store", 400, recall)

    if "record" in only:
        if not args.record_store:
            parser.error("--record-store is needed for record")
        store = str(Path(args.record_store).resolve())
        runner = Runner(python, installed_env(python, {**os.environ, "GITMEM_STORE": store}))
        tag = int(time.time())

        def record_argv(i: int) -> list[str]:
            return ["record", "fact", f"seam body {tag} {i}", "--title", f"Seam fact {tag} {i}"]

        checks = {}
        for name, setup in RECORD_VARIANTS.items():
            loaded, _ = runner.check(
                name, setup, record_argv(1000 + len(checks)), RECORD_EXPECT[name]
            )
            checks[name] = [m for m in loaded if "." not in m]
        record = measure(runner, RECORD_VARIANTS, record_argv, args.runs)
        record["modules"] = checks
        record["store"] = store
        results["record"] = record
        table("gitmem record, whole process, 1k store", 250, record)

    if "hook" in only:
        project = Path(tempfile.mkdtemp(prefix="gitmem-bench-project-")) / "widget"
        project.mkdir()
        subprocess.run(["git", "init", "-q", str(project)], check=True)
        env = {**os.environ, "HOME": tempfile.mkdtemp(prefix="gitmem-bench-home-")}
        if args.record_store:
            env["GITMEM_STORE"] = str(Path(args.record_store).resolve())
        runner = Runner(python, installed_env(python, env))
        payload = hook_payload(project)

        def hook_argv(i: int) -> list[str]:
            return ["hook", "post-tool-use"]

        checks = {}
        for name, setup in HOOK_VARIANTS.items():
            loaded, out = runner.check(name, setup, hook_argv(0), HOOK_EXPECT[name], payload)
            assert out == b"", out
            checks[name] = [m for m in loaded if "." not in m]
        hook = measure(runner, HOOK_VARIANTS, hook_argv, args.runs, payload)
        hook["modules"] = checks
        results["hook"] = hook
        table("gitmem hook post-tool-use (Bash tool: no-op), whole process", 60, hook)

    results["load_at_end"] = os.getloadavg()
    if args.json:
        Path(args.json).parent.mkdir(parents=True, exist_ok=True)
    write_json(args.json, results)


if __name__ == "__main__":
    main()
