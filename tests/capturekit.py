"""Helpers for the capture tests: fake distillers (small Python scripts the tests write),
a store configured to use one, and a session archived by the real Stop hook."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

from conftest import git
from hookkit import make_project, payload, run_hook

TRANSCRIPTS = Path(__file__).parent / "fixtures" / "transcripts"
CLAUDE_SESSION = "00893aaf-19fa-41d2-8238-13269b9b3ca0"


def fake_distiller(
    tmp_path: Path, answer: object, *, name: str = "distiller", code: str = ""
) -> Path:
    """A script that saves each prompt it reads (prompts.jsonl beside it) and prints `answer`
    (JSON unless a str); `code` runs first (a sleep, an exit)."""
    script = tmp_path / f"{name}.py"
    printed = answer if isinstance(answer, str) else json.dumps(answer)
    script.write_text(
        "import json, sys, time, pathlib\n"
        f"here = pathlib.Path({str(tmp_path)!r})\n"
        "prompt = sys.stdin.read()\n"
        f"with (here / '{name}-prompts.jsonl').open('a') as f:\n"
        "    f.write(json.dumps(prompt) + '\\n')\n"
        f"{code}\n"
        f"sys.stdout.write({printed!r})\n",
        encoding="utf-8",
    )
    return script


def prompts(tmp_path: Path, name: str = "distiller") -> list[str]:
    path = tmp_path / f"{name}-prompts.jsonl"
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines()]


def configure(store: Path, script: Path | None, **settings: object) -> None:
    """Point the store's [capture] at `script` (and other settings), committed."""
    text = (store / "config.toml").read_text(encoding="utf-8")
    text = text.split("\n[capture]")[0]
    lines = ["", "[capture]"]
    if script is not None:
        lines.append(f"command = {json.dumps([sys.executable, str(script)])}")
    for key, value in settings.items():
        lines.append(f"{key} = {json.dumps(value)}")
    (store / "config.toml").write_text(text + "\n".join(lines) + "\n", encoding="utf-8")
    git(store, "commit", "-qam", "capture settings")


def archive(tmp_path: Path, store: Path, fixture: str = "claude-code", *, extra: str = "") -> Path:
    """Run the Stop hook on a copy of a fixture transcript (plus `extra` lines): it archives
    the transcript and notes the session for capture. Returns the host's transcript file."""
    project = tmp_path / "project" / "widget"
    if not project.exists():
        make_project(tmp_path / "project")
    transcript = tmp_path / f"{fixture}.jsonl"
    if not transcript.exists():
        shutil.copy(TRANSCRIPTS / f"{fixture}.jsonl", transcript)
    if extra:
        with transcript.open("a", encoding="utf-8") as handle:
            handle.write(extra)
    host = "codex" if fixture == "codex" else "claude-code"
    run_hook("stop", payload(f"{host}/stop", project, transcript), store)
    return transcript


LESSON_ANSWER = {
    "records": [
        {
            "type": "lesson",
            "title": "Redis pub/sub drops jobs on restart",
            "body": "Pub/sub keeps nothing for absent subscribers; the queue moved to Postgres.",
        }
    ]
}


def decision(title: str, body: str, **fields: str) -> dict[str, object]:
    return {"type": "decision", "title": title, "abstract": body, "body": body, "fields": fields}
