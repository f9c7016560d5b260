"""`gitmem report --html` and `gitmem stats` on a 10k-record store: whole-process time and the
page's size (issue 23's budget: file <= 2 MB, generated <= 3 s with 10k records).

    .venv/bin/python benchmarks/bench_report.py [--records 10000] [--runs 5] [--json out.json]
        [--screenshot PNG]

--screenshot also opens the page in headless Chromium and saves what it shows (docs/report.md's
picture is `--records 1400 --runs 1 --screenshot docs/images/report.png`).

The store: `--records` synthetic records (two years of them, seven types, three agents) in one
import, 40 decision supersede chains of three, and a history as long as the record count (each
record a commit of its own, as a store written by agents has): the extra commits are made
directly with pygit2, empty, with the trailers gitmem writes (record, supersede, forget), since
writing 10k records one command at a time would take the benchmark ten minutes. The report
reads the history's trailers, so its length is what costs. A small project's plans (an
initiative, its tasks, one blocked by a chain of two) are indexed as the work graph, and one
`gitmem sleep` leaves its proposals, so that every section of the page has something to show.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import pygit2
from _common import machine, make_store, median, write_json

from gitmem.api import Store

GITMEM = str(Path(sys.executable).with_name("gitmem"))


def add_history(root: Path, commits: int) -> None:
    repo = pygit2.Repository(str(root))
    sig = pygit2.Signature("bench", "bench@example.com")
    parent = repo.head.target
    tree = repo[parent].tree.id
    kinds = ["record"] * 8 + ["supersede", "forget"]
    for i in range(commits):
        op = kinds[i % len(kinds)]
        message = f"{op}(fact): bench {i}\n\nGitmem-Operation: {op}\nGitmem-Record: bench-{i}\n"
        parent = repo.create_commit(None, sig, sig, message, tree, [parent])
    repo.references["refs/heads/main"].set_target(parent)


def add_chains(store: Store, chains: int) -> None:
    by = {"agent": "claude-code"}
    for i in range(chains):
        first = store.record(
            "decision", f"Option A for area {i}.", title=f"Area {i}: option A", **by
        )
        second = store.supersede(
            first.record.id, f"Option B for area {i}.", title=f"Area {i}: B", **by
        )
        store.supersede(
            second.record.id, f"Option C for area {i}.", title=f"Area {i}: option C", **by
        )


def add_graph(root: Path, env: dict[str, str]) -> None:
    project = root.parent / "widget"
    docs = project / "docs"
    docs.mkdir(parents=True)
    (docs / "launch.md").write_text("---\ntype: initiative\nstatus: active\n---\n# Launch v2\n")
    tasks = [
        ("certs", "Renew the TLS certs", "todo", ""),
        ("dns", "Move DNS to the new provider", "blocked", "certs"),
        ("deploy", "Deploy v2 to production", "blocked", "dns"),
        ("docs", "Write the v2 upgrade guide", "done", ""),
        ("perf", "Load-test the v2 API", "in-progress", ""),
    ]
    for slug, title, status, blocker in tasks:
        blocked = f"blocked_by: {blocker}\n" if blocker else ""
        (docs / f"{slug}.md").write_text(
            f"---\ntype: task\nstatus: {status}\ninitiative: launch\n{blocked}---\n# {title}\n"
        )
    gitmem = [GITMEM, "entity", "index-all", "--project-dir", str(project)]
    subprocess.run(gitmem, env=env, check=True, capture_output=True)
    subprocess.run([GITMEM, "sleep"], env=env, check=True, capture_output=True)


def screenshot(page: Path, png: Path) -> None:
    profile = page.parent / "chromium-profile"
    flags = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--hide-scrollbars"]
    flags += ["--disable-background-networking", f"--user-data-dir={profile}"]
    flags += ["--window-size=1100,4000", f"--screenshot={png.resolve()}"]
    subprocess.run(["chromium", *flags, page.as_uri()], check=True, capture_output=True)


def timed(args: list[str], env: dict[str, str]) -> float:
    start = time.perf_counter()
    subprocess.run(args, env=env, check=True, capture_output=True)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--records", type=int, default=10_000)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--json")
    parser.add_argument("--screenshot", type=Path, help="save Chromium's picture of the page")
    args = parser.parse_args()
    root = make_store(args.records)
    store = Store.open(root)
    add_chains(store, 40)
    add_history(root, args.records)
    env = {**os.environ, "GITMEM_STORE": str(root), "GITMEM_BACKGROUND_INDEX": "off"}
    env["GITMEM_AGENT"] = "claude-code"  # the work graph and sleep write as an agent would
    out = root.parent / "report.html"
    report = [GITMEM, "report", "--html", str(out)]
    stats = [GITMEM, "stats", "--json"]
    subprocess.run([GITMEM, "rebuild"], env=env, check=True, capture_output=True)
    add_graph(root, env)
    timed(report, env)  # warm: the page cache, the timeline of nothing
    rounds: dict[str, list[float]] = {"report": [], "stats": []}
    for _ in range(args.runs):  # alternated
        rounds["report"].append(timed(report, env))
        rounds["stats"].append(timed(stats, env))
    size = out.stat().st_size
    commits = int(
        subprocess.run(
            ["git", "rev-list", "--count", "HEAD"], cwd=root, capture_output=True, text=True
        ).stdout
    )
    result = {
        "machine": machine(),
        "load": os.getloadavg()[0],
        "records": args.records + 120,
        "commits": commits,
        "report_s": {"median": median(rounds["report"]), "all": rounds["report"]},
        "stats_s": {"median": median(rounds["stats"]), "all": rounds["stats"]},
        "report_bytes": size,
    }
    print(
        f"{result['records']} records, {commits} commits (load {result['load']:.1f}): "
        f"report {result['report_s']['median']:.2f} s (median of {args.runs}), "
        f"{size / 1e6:.2f} MB; stats {result['stats_s']['median']:.2f} s"
    )
    write_json(args.json, result)
    if args.screenshot:
        screenshot(out, args.screenshot)


if __name__ == "__main__":
    main()
