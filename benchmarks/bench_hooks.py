"""Agent-facing latency, whole process, as a host sees it: the PostToolUse no-op hook, the
SessionStart hook with context injection (no network) on a store of 10k records, and the MCP
server from start to its first answers; plus the size of the default SessionStart block.

    .venv/bin/python benchmarks/bench_hooks.py [--records 10000] [--runs 15] \
        [--json benchmarks/results/hooks.json]

Each figure is the median of --runs processes. `python -c pass` is measured in the same run,
so the share of the hook's own work is visible (an editable install adds its import finder
to every start; a wheel install does not). The package's bytecode is compiled first, as a
wheel install does.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import compiled, machine, make_store, median, write_json

from gitmem.api import Store


def timed(cmd: list[str], stdin: bytes, env: dict[str, str], runs: int) -> tuple[float, bytes]:
    """Median wall time (ms) of `cmd` as a new process, and its last stdout."""
    times = []
    out = b""
    for _ in range(runs):
        start = time.perf_counter()
        done = subprocess.run(cmd, input=stdin, capture_output=True, env=env, check=True)
        times.append((time.perf_counter() - start) * 1000)
        out = done.stdout
    return median(times), out


OWN = """
import io, os, sys, time
start = time.perf_counter()
from gitmem.hooks.main import main
out = io.StringIO()
main([sys.argv[1]], os.environ, io.BytesIO(sys.stdin.buffer.read()), out)
print((time.perf_counter() - start) * 1000)
"""


def own_ms(event: str, stdin: bytes, env: dict[str, str], runs: int) -> float:
    """Median ms the hook itself takes in a new process: its imports and its work, without
    the interpreter's start (what a wheel install pays on top of `python -c pass`)."""
    times = []
    for _ in range(runs):
        done = subprocess.run(
            [sys.executable, "-c", OWN, event],
            input=stdin,
            capture_output=True,
            env=env,
            check=True,
        )
        times.append(float(done.stdout.decode().strip().splitlines()[-1]))
    return median(times)


def project_dir() -> Path:
    project = Path(tempfile.mkdtemp(prefix="gitmem-bench-project-")) / "widget"
    project.mkdir()
    subprocess.run(["git", "init", "-q", str(project)], check=True)
    subprocess.run(
        ["git", "-C", str(project), "remote", "add", "origin", "git@github.com:acme/widget.git"],
        check=True,
    )
    return project


def payload(event: str, project: Path, **extra: object) -> bytes:
    data = {
        "session_id": "bench-session",
        "transcript_path": str(project / "no-transcript.jsonl"),
        "cwd": str(project),
        "hook_event_name": event,
        **extra,
    }
    return json.dumps(data).encode()


def mcp_first_answers(cmd: list[str], env: dict[str, str]) -> tuple[float, float]:
    """(ms to the initialize answer, ms to the first tool answer) from process start."""
    messages = [
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": "bench", "version": "0"},
            },
        },
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {
            "jsonrpc": "2.0",
            "id": 2,
            "method": "tools/call",
            "params": {
                "name": "recall",
                "arguments": {"query": "retry webhook", "mode": "keyword"},
            },
        },
    ]
    start = time.perf_counter()
    proc = subprocess.Popen(
        cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env
    )
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.write((json.dumps(messages[0]) + "\n").encode())
    proc.stdin.flush()
    json.loads(proc.stdout.readline())
    initialized = (time.perf_counter() - start) * 1000
    for message in messages[1:]:
        proc.stdin.write((json.dumps(message) + "\n").encode())
    proc.stdin.flush()
    answer = json.loads(proc.stdout.readline())
    answered = (time.perf_counter() - start) * 1000
    assert "result" in answer, answer
    proc.stdin.close()
    proc.wait(timeout=30)
    return initialized, answered


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--records", type=int, default=10_000)
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--json", default="benchmarks/results/hooks.json")
    args = parser.parse_args()
    results: dict[str, object] = {"machine": machine(), "records": args.records, "runs": args.runs}

    start = time.perf_counter()
    root = make_store(args.records)
    Store.open(root).index()  # the catalog SessionStart reads; no embedding model needed
    print(f"store of {args.records} records, indexed, in {time.perf_counter() - start:.0f} s")
    project = project_dir()
    env = compiled({**os.environ, "GITMEM_STORE": str(root), "HOME": tempfile.mkdtemp()})
    script = shutil.which("gitmem", path=str(Path(sys.executable).parent)) or "gitmem"
    runs = args.runs

    python_ms, _ = timed([sys.executable, "-c", "pass"], b"", env, runs)
    results["python_startup_ms"] = python_ms
    print(f"python -c pass: {python_ms:.1f} ms")

    noop = payload("PostToolUse", project, tool_name="Bash", tool_input={"command": "ls"})
    for label, cmd in (
        ("post_tool_use_noop_ms", [script, "hook", "post-tool-use"]),
        (
            "post_tool_use_noop_python_m_ms",
            [sys.executable, "-m", "gitmem", "hook", "post-tool-use"],
        ),
    ):
        ms, out = timed(cmd, noop, env, runs)
        assert out == b"", out
        results[label] = ms
        print(f"{label}: {ms:.1f} ms")

    results["post_tool_use_noop_own_ms"] = own_ms("post-tool-use", noop, env, runs)
    print(
        f"post_tool_use_noop_own_ms (imports + work): {results['post_tool_use_noop_own_ms']:.1f} ms"
    )

    # The figure: a write of a file that is not Markdown (the session notes it).
    edit = payload(
        "PostToolUse",
        project,
        tool_name="Edit",
        tool_input={"file_path": str(project / "app.py"), "old_string": "a", "new_string": "b"},
    )
    ms, out = timed([script, "hook", "post-tool-use"], edit, env, runs)
    assert out == b"", out
    results["post_tool_use_code_edit_ms"] = ms
    print(f"post_tool_use_code_edit_ms (a non-Markdown write, noted): {ms:.1f} ms")

    start_payload = payload("SessionStart", project, source="startup")
    results["session_start_own_ms"] = own_ms("session-start", start_payload, env, runs)
    print(f"session_start_own_ms (imports + work): {results['session_start_own_ms']:.1f} ms")
    ms, out = timed([script, "hook", "session-start"], start_payload, env, runs)
    block = json.loads(out)["hookSpecificOutput"]["additionalContext"]
    results["session_start_ms"] = ms
    results["session_start_block_bytes"] = len(block.encode())
    results["session_start_block_tokens_approx"] = len(block.encode()) // 4
    print(f"session_start (context from the catalog, no network): {ms:.1f} ms")
    print(f"default block: {len(block.encode())} bytes, ~{len(block.encode()) // 4} tokens")

    # The index one commit behind HEAD: the block adds what git says changed.
    Store.open(root).record("fact", "Behind by one.", title="A new fact", agent="bench")
    ms, out = timed([script, "hook", "session-start"], start_payload, env, runs)
    assert b"A new fact" in out
    results["session_start_index_behind_ms"] = ms
    print(f"session_start, index one commit behind HEAD: {ms:.1f} ms")

    starts = [
        mcp_first_answers([script, "mcp", "--project", ""], env) for _ in range(max(3, runs // 3))
    ]
    results["mcp_initialize_ms"] = median([s[0] for s in starts])
    results["mcp_first_tool_answer_ms"] = median([s[1] for s in starts])
    print(
        f"mcp: initialize answered at {results['mcp_initialize_ms']:.0f} ms, first recall "
        f"answered at {results['mcp_first_tool_answer_ms']:.0f} ms (from process start)"
    )
    Path(args.json).parent.mkdir(parents=True, exist_ok=True)
    write_json(args.json, results)
    shutil.rmtree(root.parent, ignore_errors=True)
    shutil.rmtree(project.parent, ignore_errors=True)


if __name__ == "__main__":
    main()
