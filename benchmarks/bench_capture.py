"""Capture (issue 20): what distilling sessions costs the agent and gitmem, and how well
de-duplication works.

    .venv/bin/python benchmarks/bench_capture.py [--runs 15] [--messages 10000] \
        [--json benchmarks/results/capture.json]

1. The Stop hook, whole process as a host runs it, archiving a grown transcript: with the
   detached launch of the distillation and without it (GITMEM_CAPTURE=off), alternated run by
   run; median of --runs each. Each launched child is left to finish before the next run.
2. Distillation overhead, excluding the model: a transcript of --messages messages (Claude
   Code lines), distilled whole through `Store.distill` with an instant distiller (`sh`
   printing a small answer), in a store of the coding-agent corpus (336 records); the
   distiller's own time (the same command run as often, alone) is subtracted. Median of 3.
3. Reading a 200 MB transcript: wall time and peak Python memory of the first span.
4. De-duplication: half the corpus is the store; the fake distiller returns one planted
   duplicate of each of its current records (six kinds of restatement, in turn) mixed with the
   other half's records (new: each should be written). Rate = duplicates left out / planted;
   false positives = new records left out / new.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import subprocess
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import compiled, machine, median, write_json

from gitmem.api import Store
from gitmem.store.config import DEFAULT_MODEL

REPO = Path(__file__).resolve().parents[1]
CORPUS = REPO / "benchmarks" / "retrieval" / "coding-agent" / "records.jsonl"
SESSION = "bench-capture-session"


def _git(root: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(root), *args], check=True, capture_output=True)


def timed_hook(event: str, data: dict[str, Any], env: dict[str, str], capture: str) -> float:
    """One whole `gitmem hook EVENT` process as a host runs it, capture on or off: ms."""
    start = time.perf_counter()
    subprocess.run(
        [sys.executable, "-m", "gitmem", "hook", event],
        input=json.dumps(data).encode(),
        capture_output=True,
        env={**env, "GITMEM_CAPTURE": capture},
        check=True,
    )
    return (time.perf_counter() - start) * 1000


def new_store(records: list[dict[str, Any]], capture: str) -> Path:
    root = Path(tempfile.mkdtemp(prefix="gitmem-bench-capture-")) / "store"
    store, _ = Store.init(root)
    if records:
        store.import_records(records, agent="bench")
    text = (root / "config.toml").read_text().split("\n[capture]")[0]
    text = text.replace(f'model = "{DEFAULT_MODEL}"', 'model = "none"')
    (root / "config.toml").write_text(text + "\n[capture]\n" + capture)
    _git(root, "commit", "-qam", "bench settings")
    return root


def corpus() -> list[dict[str, Any]]:
    """The coding-agent corpus; its references get the url their schema requires."""
    records = [json.loads(line) for line in CORPUS.read_text().splitlines()]
    for r in records:
        if r["type"] == "reference":
            r["url"] = f"https://docs.example.invalid/{r['id']}"
    return records


def _fields(record: dict[str, Any]) -> dict[str, Any]:
    return {"url": record["url"]} if "url" in record else {}


def claude_line(i: int, rng: random.Random) -> str:
    words = "queue retry postgres index commit deploy webhook cache token worker migration"
    text = f"message {i}: " + " ".join(rng.choice(words.split()) for _ in range(40))
    if i % 3 == 2:
        content: Any = [{"type": "tool_result", "tool_use_id": f"toolu_{i}", "content": text}]
        return json.dumps({"type": "user", "message": {"role": "user", "content": content}})
    if i % 3 == 1:
        blocks = [{"type": "text", "text": text}]
        return json.dumps(
            {"type": "assistant", "message": {"role": "assistant", "content": blocks}}
        )
    return json.dumps({"type": "user", "message": {"role": "user", "content": text}})


def enqueue(root: Path, lines: list[str]) -> Path:
    from gitmem.capture.queue import enqueue as note

    archive = root / ".gitmem" / "transcripts" / "bench" / f"{SESSION}.jsonl"
    archive.parent.mkdir(parents=True, exist_ok=True)
    archive.write_text("".join(line + "\n" for line in lines))
    note(root / ".gitmem", SESSION, "claude-code", archive)
    return archive


# --- 1. the hook --------------------------------------------------------------------------


def hook_times(runs: int) -> dict[str, float]:
    fake = Path(tempfile.mkdtemp(prefix="gitmem-bench-fake-")) / "distiller.py"
    fake.write_text("import sys\nsys.stdin.read()\nprint('{\"records\": []}')\n")
    root = new_store([], f"command = {json.dumps([sys.executable, str(fake)])}\n")
    project = Path(tempfile.mkdtemp(prefix="gitmem-bench-project-"))
    transcript = project / "t.jsonl"
    env = compiled({**os.environ, "GITMEM_STORE": str(root)})
    rng = random.Random(3)
    times: dict[str, list[float]] = {"on": [], "off": []}
    number = 0
    for _ in range(runs):
        for mode in ("on", "off"):
            with transcript.open("a") as handle:  # a turn's worth of new lines to archive
                for _ in range(6):
                    handle.write(claude_line(number, rng) + "\n")
                    number += 1
            data = {
                "session_id": SESSION,
                "transcript_path": str(transcript),
                "cwd": str(project),
                "hook_event_name": "Stop",
                "stop_hook_active": False,
            }
            times[mode].append(timed_hook("stop", data, env, mode))
            if mode == "on":
                time.sleep(2.0)  # the launched distillation finishes before the next run
    bare = []
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run([sys.executable, "-c", "pass"], env=env, check=True)
        bare.append((time.perf_counter() - start) * 1000)
    on, off = median(times["on"]), median(times["off"])
    return {
        "stop_hook_with_launch_ms": on,
        "stop_hook_without_ms": off,
        "launch_ms": on - off,
        "python_c_pass_ms": median(bare),
        "runs": runs,
    }


# --- 2. overhead on a long transcript ---------------------------------------------------------

INSTANT = (
    'cat > /dev/null; n=$(date +%N); printf \'{"records": [{"type": "fact", "title": '
    '"Seen in span %s", "body": "Span %s of the session named port %s."}]}\' $n $n $n'
)


def overhead(messages: int) -> dict[str, float]:
    capture = f"command = {json.dumps(['/bin/sh', '-c', INSTANT])}\nspans_per_run = 1000\n"
    rng = random.Random(5)
    lines = [claude_line(i, rng) for i in range(messages)]
    totals: list[float] = []
    spans = 0
    for _ in range(3):
        root = new_store(corpus(), capture)
        enqueue(root, lines)
        store = Store.open(root)
        store.index()  # built before, as a store in use has it
        start = time.perf_counter()
        report = store.distill(dict(os.environ), SESSION)
        totals.append(time.perf_counter() - start)
        spans = len(report.spans)
        assert all(not s.problem for s in report.spans), report.spans[0].problem
    alone: list[float] = []
    for _ in range(3):
        start = time.perf_counter()
        for _ in range(spans):
            subprocess.run(["/bin/sh", "-c", INSTANT], input=b"x", capture_output=True, check=True)
        alone.append(time.perf_counter() - start)
    total, distiller = median(totals), median(alone)
    return {
        "messages": messages,
        "spans": spans,
        "distill_total_s": total,
        "distiller_alone_s": distiller,
        "overhead_s": total - distiller,
    }


def big_read(megabytes: int) -> dict[str, float]:
    from gitmem.capture.transcript import read_span

    path = Path(tempfile.mkdtemp(prefix="gitmem-bench-big-")) / "big.jsonl"
    rng = random.Random(9)
    line = claude_line(0, rng)
    with path.open("w") as handle:
        for i in range(megabytes * (1 << 20) // (len(line) + 1)):
            handle.write(claude_line(i, rng) + "\n")
    tracemalloc.start()
    start = time.perf_counter()
    span = read_span(path, 0, 0, max_chars=120_000, message_chars=2_000)
    took = time.perf_counter() - start
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    size = path.stat().st_size
    path.unlink()
    return {
        "transcript_mb": size / 1e6,
        "first_span_messages": len(span.messages),
        "first_span_s": took,
        "first_span_peak_mb": peak / 1e6,
    }


# --- 4. de-duplication ------------------------------------------------------------------------


def _sentences(text: str) -> list[str]:
    return [s for s in re.split(r"(?<=[.!?])\s+|\n+", text.strip()) if s]


def restate(record: dict[str, Any], kind: int) -> dict[str, Any]:
    """A planted duplicate: the same memory said again, six ways in turn."""
    title, abstract, body = record["title"], record["abstract"], record["body"]
    if kind == 1:  # case, punctuation, spacing
        title = title.upper() + "!"
        abstract = "  ".join(abstract.replace(",", " ;").split())
        body = body.replace(".", " .").lower()
    elif kind == 2:  # the title reworded
        title = "Note: " + " ".join(reversed(title.split()))
    elif kind == 3:  # a sentence added
        body = body + "\nThis came up again in today's session."
    elif kind == 4:  # a sentence left out
        parts = _sentences(body)
        body = " ".join(parts[:-1]) if len(parts) > 1 else body
    elif kind == 5:  # the abstract alone, as a short restatement
        body = abstract
    item = {"type": record["type"], "title": title, "abstract": abstract, "body": body}
    return {**item, "tags": record["tags"], "fields": _fields(record)}


def dedup(batch: int = 25) -> dict[str, Any]:
    rng = random.Random(11)
    records = [r for r in corpus() if r["status"] == "active"]
    rng.shuffle(records)
    half = len(records) // 2
    stored, fresh = records[:half], records[half:]
    for r in stored:  # as active records with no links, so the import stands alone
        r.update(links=[], supersedes=[], superseded_by="")
    planted = [(restate(r, i % 6), "dup") for i, r in enumerate(stored)]
    new = [
        (
            {
                **{k: r[k] for k in ("type", "title", "abstract", "body", "tags")},
                "fields": _fields(r),
            },
            "new",
        )
        for r in fresh
    ]
    answers = planted + new
    rng.shuffle(answers)
    batches = [answers[i : i + batch] for i in range(0, len(answers), batch)]
    folder = Path(tempfile.mkdtemp(prefix="gitmem-bench-dedup-"))
    (folder / "batches.json").write_text(json.dumps([[a for a, _ in b] for b in batches]))
    script = folder / "distiller.py"
    script.write_text(
        "import json, pathlib, sys\n"
        "sys.stdin.read()\n"
        f"here = pathlib.Path({str(folder)!r})\n"
        "count = here / 'count'\n"
        "n = int(count.read_text()) if count.exists() else 0\n"
        "count.write_text(str(n + 1))\n"
        "batches = json.loads((here / 'batches.json').read_text())\n"
        "print(json.dumps({'records': batches[n]}))\n"
    )
    capture = (
        f"command = {json.dumps([sys.executable, str(script)])}\n"
        f"span_chars = 1\nspans_per_run = {len(batches)}\nmax_records = {batch}\n"
    )
    root = new_store(stored, capture)
    enqueue(root, [claude_line(i, rng) for i in range(len(batches))])
    report = Store.open(root).distill(dict(os.environ), SESSION)
    assert all(not s.problem for s in report.spans), [s.problem for s in report.spans]
    left_out = sum(s.duplicates for s in report.spans)
    written = {t for s in report.spans for t in s.written}
    titles = {Store.open(root).get(i).title for i in written}
    new_written = sum(a["title"] in titles for a, kind in new)
    dups_written = sum(a["title"] in titles for a, kind in planted)
    missed = sorted(a["title"] for a, _ in new if a["title"] not in titles)
    by_kind = [0] * 6
    for i, (a, _) in enumerate(planted):
        by_kind[i % 6] += a["title"] not in titles
    return {
        "planted": len(planted),
        "new": len(new),
        "duplicates_left_out": len(planted) - dups_written,
        "dedup_rate": (len(planted) - dups_written) / len(planted),
        "new_written": new_written,
        "false_positive_rate": (len(new) - new_written) / len(new),
        "left_out_total": left_out,
        "caught_by_kind": by_kind,
        "per_kind": len(planted) // 6,
        "new_left_out": missed,
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--messages", type=int, default=10_000)
    parser.add_argument("--big-mb", type=int, default=200)
    parser.add_argument("--json", default="benchmarks/results/capture.json")
    args = parser.parse_args()
    results: dict[str, Any] = {"machine": machine()}
    results["dedup"] = dedup()
    print(json.dumps(results["dedup"]), flush=True)
    results["overhead"] = overhead(args.messages)
    print(json.dumps(results["overhead"]), flush=True)
    results["big"] = big_read(args.big_mb)
    print(json.dumps(results["big"]), flush=True)
    results["hook"] = hook_times(args.runs)
    print(json.dumps(results["hook"]), flush=True)
    write_json(args.json, results)


if __name__ == "__main__":
    main()
