"""`gitmem graph handoff`, whole process, on a store of 10k records with the coordination a
busy team leaves: messages, tasks, session log entries and decisions, most of them recent.

    .venv/bin/python benchmarks/bench_handoff.py [--records 10000] [--runs 15] \
        [--baseline DIR] [--json benchmarks/results/handoff.json]

Each figure is the median of --runs processes, the JSON and the text form alternated, with
`python -c pass` and `gitmem --version` (the CLI's start alone) measured in the same run so
the handoff's own share is visible; the in-process call (Store.coord().handoff), median of
--runs calls; and the SessionStart hook with and without `hooks.handoff_bytes = 2048`,
alternated (config.toml edited in the work tree between runs; the hook reads it from there).
The package's bytecode is compiled first, as a wheel install does. --entities (2,000) of the
records are work-graph entities (bench_graph.write_entities: tasks under 20 initiatives, some
blocked), indexed through the product, so the handoff's graph part has a real graph to read.

--baseline DIR: a checkout of other code to compare (`git archive COMMIT gitmem | tar -x -C
DIR`), run as `python -m gitmem graph handoff --json` with PYTHONPATH=DIR on a copy of the
store (its own cache), alternated run by run with the same command on this checkout's code:
before and after a change, measured in one run under the same load.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import REPO, compiled, machine, make_store, median, write_json
from bench_graph import write_entities
from bench_hooks import project_dir

from gitmem.api import Store
from gitmem.graph.indexer import Watched

AGENTS = ("alice", "bob", "claude-code", "codex")


def _item(i: int, type_: str, when: datetime, title: str, **fields: Any) -> dict[str, Any]:
    stamp = when.strftime("%Y-%m-%dT%H:%M:%SZ")
    return {
        "id": f"{type_}-bench-{i:05d}",
        "type": type_,
        "title": title,
        "abstract": title,
        "tags": fields.pop("tags", []),
        "agent": AGENTS[i % len(AGENTS)],
        "scope": "shared",
        "created": stamp,
        "updated": stamp,
        "body": f"{title}.\n",
        **fields,
    }


def coordination(now: datetime) -> list[dict[str, Any]]:
    """300 messages, 100 tasks, 200 log entries and 50 decisions over the last ten days."""
    items = []
    for i in range(300):
        when = now - timedelta(hours=i * 0.8)
        to = AGENTS[(i + 1) % len(AGENTS)] if i % 5 else "*"
        items.append(
            _item(
                i,
                "message",
                when,
                f"Message {i} about the webhook queue",
                to=to,
                kind="info",
                priority="normal",
            )
        )
    for i in range(100):
        state = ("active", "suspended", "done", "failed")[i % 4]
        items.append(
            _item(
                i,
                "task",
                now - timedelta(hours=i * 2.4),
                f"Task {i}: migrate handler",
                state=state,
                owner=AGENTS[i % len(AGENTS)],
            )
        )
    for i in range(200):
        items.append(
            _item(
                i,
                "context",
                now - timedelta(hours=i * 1.2),
                f"fixed: step {i}",
                tags=["session", "log", "action:fixed"],
            )
        )
    for i in range(50):
        items.append(_item(i, "decision", now - timedelta(hours=i * 4.8), f"Decision {i}"))
    return items


def timed(cmd: list[str], env: dict[str, str]) -> float:
    start = time.perf_counter()
    subprocess.run(cmd, capture_output=True, env=env, check=True)
    return (time.perf_counter() - start) * 1000


def session_start(root: Path, env: dict[str, str], runs: int) -> dict[str, float]:
    """Median ms of `gitmem hook session-start`, the block alone and with the handoff."""
    Store.open(root).index()  # the catalog the block reads (no model is loaded for it)
    config = root / "config.toml"
    plain = config.read_text(encoding="utf-8")
    asked = plain + "\n[hooks]\nhandoff_bytes = 2048\n"
    stdin = json.dumps(
        {
            "session_id": "bench",
            "cwd": str(root),
            "hook_event_name": "SessionStart",
            "source": "startup",
        }
    ).encode()
    cmd = [str(Path(sys.executable).with_name("gitmem")), "hook", "session-start"]
    times: dict[str, list[float]] = {"session_start_ms": [], "session_start_handoff_ms": []}
    sizes = {}
    hook_env = {k: v for k, v in env.items() if k != "GITMEM_AGENT"}
    try:
        for _ in range(runs + 1):
            for name, text in (("session_start_ms", plain), ("session_start_handoff_ms", asked)):
                config.write_text(text, encoding="utf-8")
                start = time.perf_counter()
                done = subprocess.run(
                    cmd, input=stdin, capture_output=True, env=hook_env, check=True
                )
                times[name].append((time.perf_counter() - start) * 1000)
                sizes[name] = len(done.stdout)
    finally:
        config.write_text(plain, encoding="utf-8")
    found = {k: round(median(v[1:]), 1) for k, v in times.items()}  # the first warms up
    found.update({k.replace("_ms", "_output_bytes"): float(v) for k, v in sizes.items()})
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--records", type=int, default=10000)
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--entities", type=int, default=2000)
    parser.add_argument("--baseline", type=Path, help="a checkout of code to compare with")
    parser.add_argument("--json")
    args = parser.parse_args()

    load_before = round(os.getloadavg()[0], 2)
    root = make_store(args.records - args.entities)
    project: Path | None = None
    try:
        store = Store.open(root)
        store.import_records(coordination(datetime.now(UTC)), agent="bench")
        if args.entities:
            project = project_dir()
            write_entities(project, args.entities)
            where = Watched(project, "github.com/acme/widget", ("docs", "notes"))
            indexed = store.graph.index_all(where)
            assert indexed.report.count("new") == args.entities
        env = compiled(
            {
                **os.environ,
                "GITMEM_STORE": str(root),
                "GITMEM_AGENT": "bob",
                "GITMEM_DEVICE": "bench",
                "GITMEM_BACKGROUND_INDEX": "off",
            }
        )
        gitmem = str(Path(sys.executable).with_name("gitmem"))
        commands = {
            "python_pass": ([sys.executable, "-c", "pass"], env),
            "gitmem_version": ([gitmem, "--version"], env),
            "handoff_json": ([gitmem, "graph", "handoff", "--json"], env),
            "handoff_text": ([gitmem, "graph", "handoff"], env),
        }
        if args.baseline:
            # -P: not the current directory first on sys.path, which would import this
            # checkout's gitmem whatever PYTHONPATH says.
            module = [sys.executable, "-P", "-m", "gitmem", "graph", "handoff", "--json"]
            copy = root.parent / "store-baseline"
            shutil.copytree(root, copy, symlinks=True)
            base_env = compiled(
                {**env, "PYTHONPATH": str(args.baseline), "GITMEM_STORE": str(copy)},
                args.baseline / "gitmem",
            )
            commands["baseline_handoff_json_m"] = (module, base_env)
            commands["handoff_json_m"] = (module, {**env, "PYTHONPATH": str(REPO)})
        for cmd, cmd_env in commands.values():  # warm the page cache and the caches
            subprocess.run(cmd, capture_output=True, env=cmd_env, check=True)
        times: dict[str, list[float]] = {name: [] for name in commands}
        for _ in range(args.runs):
            for name, (cmd, cmd_env) in commands.items():
                times[name].append(timed(cmd, cmd_env))
        coord = Store.open(root).coord("bob", "bench")
        calls = []
        for _ in range(args.runs):
            start = time.perf_counter()
            data = coord.handoff()
            calls.append((time.perf_counter() - start) * 1000)
        figures = {f"{name}_ms": round(median(v), 1) for name, v in times.items()}
        figures.update(session_start(root, env, args.runs))
        figures["in_process_ms"] = round(median(calls), 1)
        figures["load_average_start"] = load_before
        figures["load_average"] = round(os.getloadavg()[0], 2)
        sizes = {k: len(v) for k, v in data.items() if isinstance(v, list)}
        report = {
            "machine": machine(),
            "records": args.records + 650,
            "entities": args.entities,
            "runs": args.runs,
            "figures": figures,
            "handoff_parts": sizes,
        }
        print(json.dumps(report, indent=2))
        write_json(args.json, report)
    finally:
        shutil.rmtree(root.parent, ignore_errors=True)
        if project is not None:  # the entity files (bench_graph.write_entities)
            shutil.rmtree(project.parent, ignore_errors=True)


if __name__ == "__main__":
    main()
