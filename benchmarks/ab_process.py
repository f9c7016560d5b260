"""Whole `gitmem` processes with the code of two git revisions, alternated process by process:
`gitmem recall QUERY` on a 100k store, `gitmem record` on a small store and the no-op hook
(`gitmem hook post-tool-use` with a Bash tool payload). A ratio from one run is what a shared
machine can measure honestly.

    .venv/bin/python benchmarks/ab_process.py --base c4affaa [--head HEAD] \
        --recall-store STORE100K --record-store STORE1K [--runs 20] [--only recall,record,hook] \
        [--json benchmarks/results/process_ab_s8.json]

Each process is the `gitmem` console script of a regular install of the revision (`pip install`
of its tree) in benchmarks/.venvs/ab-<revision>, as ab_cli_recall.py makes them, run outside the
repository. Nothing here imports a gitmem module by name, so any two layouts compare: before
timing, each revision runs each command once through a wrapper that calls
`gitmem.__main__.main()` (both layouts have it) and reports the modules loaded, to check that
recall and record took their fast path (no typer) and the hook its no-op path (no pygit2), and
that both revisions printed the same recall.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import installed_env, machine, median, outside, percentile, write_json
from ab_cli_recall import install
from bench_recall import queries
from bench_seams import hook_payload, program

# Loaded or not when the command leaves: (present, absent), top-level module names.
EXPECT = {
    "recall": ((), ("typer", "pygit2", "numpy", "tokenizers")),
    "record": (("pygit2",), ("typer",)),
    "hook": ((), ("typer", "pygit2")),
}


def loaded_modules(python: Path, argv: list[str], env: dict[str, str], stdin: bytes) -> Any:
    with tempfile.NamedTemporaryFile(suffix=".json") as report:
        done = subprocess.run(
            [str(python), "-c", program("", probe=True), *argv],
            input=stdin,
            capture_output=True,
            env={**env, "GITMEM_BENCH_PROBE": report.name},
            cwd=outside(),
            check=True,
        )
        return json.loads(Path(report.name).read_text()), done.stdout


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base", required=True)
    parser.add_argument("--head", default="HEAD")
    parser.add_argument("--recall-store")
    parser.add_argument("--record-store")
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--only", default="recall,record,hook")
    parser.add_argument("--json")
    args = parser.parse_args()
    pythons = {name: install(getattr(args, name)) for name in ("base", "head")}
    project = Path(tempfile.mkdtemp(prefix="gitmem-bench-project-")) / "widget"
    project.mkdir()
    subprocess.run(["git", "init", "-q", str(project)], check=True)
    payload = hook_payload(project)
    home = tempfile.mkdtemp(prefix="gitmem-bench-home-")
    words = queries(args.runs + 1, seed=9)
    tag = int(time.time())

    def setup(command: str) -> tuple[dict[str, str], Any, bytes]:
        """The environment, argv of run i, and stdin of `command`."""
        if command == "recall":
            if not args.recall_store:
                parser.error("--recall-store is needed for recall")
            store = str(Path(args.recall_store).resolve())
            return {"GITMEM_STORE": store}, lambda i: ["recall", words[i]], b""
        if not args.record_store:
            parser.error(f"--record-store is needed for {command}")
        store = str(Path(args.record_store).resolve())
        if command == "record":

            def argv(i: int) -> list[str]:
                return ["record", "fact", f"ab body {tag} {i}", "--title", f"AB fact {tag} {i}"]

            return {"GITMEM_STORE": store}, argv, b""
        return {"GITMEM_STORE": store, "HOME": home}, lambda i: ["hook", "post-tool-use"], payload

    results: dict[str, Any] = {
        "machine": machine(),
        "base": args.base,
        "head": args.head,
        "runs": args.runs,
        "load_at_start": os.getloadavg(),
    }
    for command in args.only.split(","):
        extra, argv_of, stdin = setup(command)
        envs = {
            name: installed_env(python, {**os.environ, **extra}) for name, python in pythons.items()
        }
        outputs = {}
        for name, python in pythons.items():
            loaded, out = loaded_modules(python, argv_of(0), envs[name], stdin)
            present, absent = EXPECT[command]
            wrong = [m for m in present if m not in loaded] + [m for m in absent if m in loaded]
            if wrong:
                raise SystemExit(f"{command} at {name}: not the path expected ({wrong})")
            outputs[name] = out
        if command == "recall" and outputs["base"] != outputs["head"]:
            raise SystemExit("recall: the two revisions printed different results")
        scripts = {name: python.parent / "gitmem" for name, python in pythons.items()}
        for name in ("base", "head"):  # warm-up
            subprocess.run(
                [str(scripts[name]), *argv_of(args.runs)],
                input=stdin,
                capture_output=True,
                env=envs[name],
                cwd=outside(),
                check=True,
            )
        times: dict[str, list[float]] = {"base": [], "head": []}
        loads = [os.getloadavg()[0]]
        for i in range(args.runs):
            for name in ("base", "head") if i % 2 == 0 else ("head", "base"):
                start = time.perf_counter()
                subprocess.run(
                    [str(scripts[name]), *argv_of(i)],
                    input=stdin,
                    capture_output=True,
                    env=envs[name],
                    cwd=outside(),
                    check=True,
                )
                times[name].append((time.perf_counter() - start) * 1000)
            loads.append(os.getloadavg()[0])
        ratios = [h / b for h, b in zip(times["head"], times["base"], strict=True)]
        summary = {
            name: {
                "median_ms": median(values),
                "p90_ms": percentile(values, 0.9),
                "min_ms": min(values),
                "n": len(values),
            }
            for name, values in times.items()
        }
        results[command] = {
            **times,
            "summary": summary,
            "ratio_of_medians": summary["head"]["median_ms"] / summary["base"]["median_ms"],
            "paired_ratio_median": median(ratios),
            "load_average": loads,
        }
        print(f"\n{command} (load {min(loads):.2f}-{max(loads):.2f})")
        for name, s in summary.items():
            print(
                f"  {name} ({getattr(args, name)}): median {s['median_ms']:.1f} ms, "
                f"p90 {s['p90_ms']:.1f}, min {s['min_ms']:.1f}, n {s['n']}"
            )
        print(
            f"  head / base: {results[command]['ratio_of_medians']:.2f} (ratio of medians), "
            f"{results[command]['paired_ratio_median']:.2f} (median of paired ratios)",
            flush=True,
        )
    results["load_at_end"] = os.getloadavg()
    write_json(args.json, results)


if __name__ == "__main__":
    main()
