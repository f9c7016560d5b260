"""The pieces the hooks stand on: project identity, the stdlib store readers, the context
block, the auto-memory mirror."""

from __future__ import annotations

import os
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from conftest import assert_clean, git
from hookkit import make_project

from gitmem.agents import settings as hooksettings
from gitmem.agents.automemory import changed_files, memory_dir, mirror, project_slug
from gitmem.agents.contextblock import Item, render
from gitmem.agents.project import find_project, normalise_remote
from gitmem.api import Store
from gitmem.index import stamp
from gitmem.store import gitfiles, location
from gitmem.store.config import resolve_store_path

# --- project identity ----------------------------------------------------------------------


@pytest.mark.parametrize(
    "url",
    [
        "git@github.com:Acme/Widget.git",
        "https://github.com/acme/widget",
        "https://github.com/acme/widget.git/",
        "ssh://git@github.com/acme/widget.git",
        "ssh://git@github.com:22/acme/widget",
        "https://user:token@github.com/acme/widget",
        "git://github.com/acme/widget.git",
    ],
)
def test_every_spelling_of_a_remote_is_one_project(url: str) -> None:
    assert normalise_remote(url) == "github.com/acme/widget"


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("/srv/git/team/widget.git", "team/widget"),
        ("file:///srv/git/team/widget.git", "team/widget"),
        ("../widget", "widget"),
        ("git@gitlab.example.com:group/sub/widget.git", "gitlab.example.com/group/sub/widget"),
    ],
)
def test_other_remotes(url: str, expected: str) -> None:
    assert normalise_remote(url) == expected


def test_two_clones_at_different_paths_are_one_project(tmp_path: Path) -> None:
    one = make_project(tmp_path / "laptop", "git@github.com:acme/widget.git")
    two = make_project(tmp_path / "desktop" / "code", "https://github.com/acme/widget")
    (one / "src").mkdir()
    assert find_project(one / "src") == find_project(two) == "github.com/acme/widget"


def test_without_a_remote_the_directory_name_is_the_project(tmp_path: Path) -> None:
    assert find_project(make_project(tmp_path, remote=None)) == "widget"


def test_a_worktree_finds_its_main_repositorys_remote(tmp_path: Path) -> None:
    main = make_project(tmp_path)
    git(main, "commit", "-q", "--allow-empty", "-m", "first")
    git(main, "worktree", "add", "-q", str(tmp_path / "feature"))
    assert find_project(tmp_path / "feature") == "github.com/acme/widget"


# --- the light modules (the hook path's stdlib-only reads) ------------------------------


@pytest.mark.parametrize(
    ("flag", "env", "expected"),
    [
        ("/x/flag", {"GITMEM_STORE": "/x/env"}, "/x/flag"),
        (None, {"GITMEM_STORE": "/x/env", "XDG_DATA_HOME": "/x/xdg"}, "/x/env"),
        (None, {"XDG_DATA_HOME": "/x/xdg", "HOME": "/x/home"}, "/x/xdg/gitmem/store"),
        (None, {"HOME": "/x/home"}, "/x/home/.local/share/gitmem/store"),
        (None, {"GITMEM_STORE": "  ", "HOME": "/x/home"}, "/x/home/.local/share/gitmem/store"),
    ],
)
def test_the_hook_finds_the_store_where_the_cli_does(
    flag: str | None, env: dict[str, str], expected: str
) -> None:
    # One function serves both (config.resolve_store_path is location.store_path).
    assert location.store_path(flag, env) == resolve_store_path(flag, env) == Path(expected)


def test_head_is_read_like_git_reads_it(store_path: Path) -> None:
    store = Store.open(store_path)
    store.record("fact", "x", title="one")
    git_dir = store_path / ".git"
    assert gitfiles.head_commit(git_dir) == git(store_path, "rev-parse", "HEAD").strip()
    git(store_path, "pack-refs", "--all")
    assert not (git_dir / "refs" / "heads" / "main").exists()
    assert gitfiles.head_commit(git_dir) == git(store_path, "rev-parse", "HEAD").strip()
    git(store_path, "checkout", "-q", "--detach")
    assert gitfiles.head_commit(git_dir) == git(store_path, "rev-parse", "HEAD").strip()


def test_remotes_and_stamps(store_path: Path) -> None:
    assert not gitfiles.has_remote(store_path / ".git")
    git(store_path, "remote", "add", "origin", "https://example.invalid/m.git")
    assert gitfiles.has_remote(store_path / ".git")
    assert stamp.catalog_stamp(store_path) is None
    Store.open(store_path).index()
    assert stamp.catalog_stamp(store_path) == git(store_path, "rev-parse", "HEAD").strip()
    (store_path / stamp.CATALOG).write_bytes(b"garbage" * 100)
    assert stamp.catalog_stamp(store_path) is None


def test_hook_settings_fall_back_field_by_field(store_path: Path) -> None:
    config = store_path / "config.toml"
    config.write_text(
        config.read_text() + '\n[hooks]\ncontext_bytes = "big"\nprompt_recall = true\n'
        'watch = ["docs/", "design"]\ntimeout = -1\n'
    )
    settings, problems = hooksettings.hook_settings(store_path)
    assert settings.context_bytes == 8192 and settings.timeout == 8.0
    assert settings.prompt_recall and settings.watch == ("docs", "design")
    assert len(problems) == 2 and "hooks.context_bytes" in problems[0]


def test_hook_settings_are_cached_by_the_text_of_config_toml(store_path: Path) -> None:
    """The parsed `[hooks]` table is kept in the cache, so that hooks need not import tomllib;
    a changed config.toml, or a broken cache, is parsed again."""
    import json

    config = store_path / "config.toml"
    config.write_text(config.read_text() + "\n[hooks]\ncontext_bytes = 1000\n")
    assert hooksettings.hook_settings(store_path)[0].context_bytes == 1000
    cache = store_path / ".gitmem" / hooksettings.SETTINGS_CACHE
    data = json.loads(cache.read_text())
    assert data["config"] == config.read_text() and data["hooks"] == {"context_bytes": 1000}
    cache.write_text(json.dumps({**data, "hooks": {"context_bytes": 2000}}))
    assert hooksettings.hook_settings(store_path)[0].context_bytes == 2000  # the cache is read
    config.write_text(config.read_text().replace("1000", "3000"))
    assert hooksettings.hook_settings(store_path)[0].context_bytes == 3000
    cache.write_text("{not json")
    assert hooksettings.hook_settings(store_path)[0].context_bytes == 3000
    assert json.loads(cache.read_text())["hooks"] == {"context_bytes": 3000}


def test_hook_settings_with_dates_are_not_cached(store_path: Path) -> None:
    config = store_path / "config.toml"
    config.write_text(config.read_text() + "\n[hooks]\ntimeout = 2021-01-01\n")
    settings, problems = hooksettings.hook_settings(store_path)
    assert settings.timeout == 8.0 and "hooks.timeout" in problems[0]
    assert not (store_path / ".gitmem" / hooksettings.SETTINGS_CACHE).exists()


# --- the context block ---------------------------------------------------------------------

NOW = datetime(2026, 6, 1, tzinfo=UTC)
DAY = 86400


def item(rid: str, days_ago: float, weight: float = 1.0, *tags: str, title: str = "") -> Item:
    stamp = int(NOW.timestamp() - days_ago * DAY)
    return Item(rid, "fact", title or rid, f"about {rid}", tags, stamp, weight)


def test_the_block_fits_its_budget_and_names_every_record() -> None:
    items = [item(f"r{n}", n, 1.0, title="ü" * 50) for n in range(300)]
    for budget in (500, 1000, 8192):
        block = render(items, budget=budget, now=NOW)
        assert 0 < block.bytes <= budget
        lines = [ln for ln in block.text.splitlines() if ln.startswith("- [")]
        assert [ln.split("]")[0][3:] for ln in lines] == list(block.ids)


def test_weight_and_recency_rank_the_important_part() -> None:
    items = [
        item("heavy-old", 400, 4.0),
        item("light-new", 20, 0.5),
        item("plain-mid", 60),
        *(item(f"recent{n}", n / 10) for n in range(5)),
    ]
    block = render(items, now=NOW)
    important = block.text.split("## Important\n")[1]
    order = [ln.split("]")[0][3:] for ln in important.splitlines()]
    assert order == ["heavy-old", "plain-mid", "light-new"]
    assert block.ids[:5] == tuple(f"recent{n}" for n in range(5))


def test_the_project_sees_its_own_and_untagged_records_only() -> None:
    items = [
        item("mine", 1, 1.0, "project:github.com/acme/widget"),
        item("everyone", 1),
        item("theirs", 1, 1.0, "project:github.com/o/other"),
        item("last-session", 0.5, 1.0, "session", "project:github.com/acme/widget"),
        item("their-session", 0.1, 1.0, "session", "project:github.com/o/other"),
    ]
    block = render(items, project="github.com/acme/widget", now=NOW)
    assert set(block.ids) == {"mine", "everyone", "last-session"}
    assert block.text.index("## Last session\n- [last-session]") > 0
    assert set(render(items, now=NOW).ids) == {i.id for i in items} - {"last-session"}


def test_the_catalog_shortcut_picks_what_a_full_scan_picks(store_path: Path) -> None:
    """build() asks SQLite for candidates only; render() over every record must agree, with
    the index current and behind HEAD."""
    import random

    from gitmem.agents import context
    from gitmem.agents.context import build

    rng = random.Random(3)
    store = Store.open(store_path)
    projects = ["project:github.com/acme/widget", "project:github.com/o/other", ""]
    for n in range(70):
        tags = [t for t in (rng.choice(projects), rng.choice(["session", "x", ""])) if t]
        moment = datetime(2026, 1, 1, tzinfo=UTC) + rng.random() * (
            NOW - datetime(2026, 1, 1, tzinfo=UTC)
        )
        store.record(
            "fact",
            f"body {n}",
            title=f"fact {n}",
            tags=tags,
            weight=rng.choice([0.5, 1, 3]),
            now=moment.replace(microsecond=0),
        )

    def full_scan(project: str, budget: int) -> tuple[str, ...]:
        items = [
            Item(r.id, r.type, r.title, r.abstract, r.tags, int(r.updated.timestamp()), r.weight)
            for r in Store.open(store_path).records()
            if r.status != "superseded"
        ]
        return render(items, project=project, budget=budget, now=NOW).ids

    Store.open(store_path).index()
    for project in ("github.com/acme/widget", ""):
        for budget in (600, 8192):
            block = build(store_path, project=project, budget=budget, now=NOW)
            assert block.source == "index" and block.ids == full_scan(project, budget)
    # Behind HEAD: a new record, a superseded one and a forgotten one since the catalog's commit.
    ids = [r.id for r in Store.open(store_path).records()]
    store = Store.open(store_path)
    store.record("fact", "late", title="late fact", weight=4, now=NOW.replace(microsecond=0))
    store.supersede(ids[0], "newer", title="replacement")
    store.forget(ids[1], reason="wrong")
    for project in ("github.com/acme/widget", ""):
        block = build(store_path, project=project, budget=8192, now=NOW)
        assert block.source == "index+git" and block.ids == full_scan(project, 8192)
        assert ids[1] not in block.ids and ids[0] not in block.ids
        # Without the git command, pygit2 reads the same changes.
        with pytest.MonkeyPatch.context() as patch:
            spy = _Spy(context._changes)
            patch.setattr(context, "changed_paths", _no_git)
            patch.setattr(context, "_changes", spy)
            assert build(store_path, project=project, budget=8192, now=NOW).ids == block.ids
            assert spy.calls == 1


def _no_git(*args: object) -> None:
    raise OSError("no git here")


class _Spy:
    def __init__(self, real: Any) -> None:
        self.real, self.calls = real, 0

    def __call__(self, *args: Any) -> Any:
        self.calls += 1
        return self.real(*args)


def test_an_empty_store_has_no_block() -> None:
    assert render([], now=NOW).text == ""


def test_cli_context_prints_the_block(gm, store_path: Path, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    store = Store.open(store_path)
    rid = store.record("fact", "The queue is Redis.", title="Queue", weight=2).record.id
    result = gm("context", "--project", "", "--budget", "400")
    assert result.code == 0 and f"[{rid}] (fact" in result.out
    assert len(result.out.encode()) <= 400
    data = gm("context", "--project", "github.com/o/none", "--json")
    assert data.code == 0 and f'"{rid}"' in data.out  # untagged: every project sees it
    assert Store.open(store_path).context(project="github.com/o/none").ids == (rid,)


# --- auto-memory mirror --------------------------------------------------------------------


def memory_file(folder: Path, name: str, text: str, mtime: int | None = None) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_text(text)
    if mtime is not None:
        os.utime(path, (mtime, mtime))
    return path


def test_auto_memory_is_mirrored_by_content(store_path: Path, tmp_path: Path) -> None:
    folder = tmp_path / "projects" / "-home-me-widget" / "memory"
    march = int(datetime(2026, 3, 2, 12, 0, tzinfo=UTC).timestamp())
    memory_file(folder, "MEMORY.md", "- [Testing](testing.md)\n")
    memory_file(
        folder,
        "testing.md",
        "---\nname: Testing\ndescription: How to run the tests\ntype: feedback\n---\n"
        "Run `make test`, not pytest directly.\n",
        march,
    )
    memory_file(folder, "user_role.md", "---\nname: Role\ntype: user\n---\nI am the DBA.\n")
    store = Store.open(store_path)
    head = git(store_path, "rev-parse", "HEAD").strip()
    result = mirror(store, folder, project="github.com/acme/widget")
    assert len(result.added) == 2 and result.left == 0
    assert git(store_path, "rev-list", "--count", f"{head}..HEAD").strip() == "2"
    records = {r.title: r for r in Store.open(store_path).records()}
    testing = records["Testing"]
    assert testing.type == "lesson" and records["Role"].type == "preference"
    assert testing.abstract == "How to run the tests"
    assert testing.created == datetime(2026, 3, 2, 12, 0, tzinfo=UTC)
    assert {"auto-memory", "project:github.com/acme/widget"} <= set(testing.tags)
    # Nothing changed: nothing to do, and the stdlib check says so without the store.
    assert changed_files(store.cache_dir, folder) == ([], [])
    assert mirror(store, folder).added == ()
    # A change updates in place; a deletion forgets.
    memory_file(folder, "testing.md", "---\nname: Testing\n---\nRun `make check`.\n")
    (folder / "user_role.md").unlink()
    again = mirror(Store.open(store_path), folder)
    assert again.updated == (testing.id,) and again.forgotten == (records["Role"].id,)
    now = {r.title: r for r in Store.open(store_path).records()}
    assert set(now) == {"Testing"} and "make check" in now["Testing"].body
    assert now["Testing"].created == testing.created
    assert_clean(store_path)


def test_auto_memory_folder_follows_claude_codes_layout(tmp_path: Path) -> None:
    assert project_slug(Path("/home/me/my.project")) == "-home-me-my-project"
    home = tmp_path / "home"
    assert memory_dir("", Path("/home/me/w"), home) == home / ".claude/projects/-home-me-w/memory"
    assert memory_dir("/t/p/abc.jsonl", Path("/x"), home) == Path("/t/p/memory")


def test_session_start_mirrors_auto_memory(store_path: Path, tmp_path: Path) -> None:
    from hookkit import payload, run_hook

    project = make_project(tmp_path / "work")
    talk = tmp_path / "claude" / "projects" / "slug" / "s.jsonl"
    memory_file(talk.parent / "memory", "deploy.md", "---\nname: Deploys\n---\nUse make ship.\n")
    run = run_hook("session-start", payload("claude-code/session_start", project, talk), store_path)
    assert "Deploys" in run.context()


def test_an_auto_memory_file_the_store_refuses_harms_nothing(
    store_path: Path, tmp_path: Path
) -> None:
    """A long description is clipped to the abstract's limit; a file the store still refuses
    (a body over limits.max_body_bytes) is reported, the others are mirrored, and it is not
    tried again until it changes."""
    folder = tmp_path / "memory"
    memory_file(folder, "long.md", "---\nname: Long\ndescription: " + "d" * 300 + "\n---\nok\n")
    memory_file(folder, "huge.md", "---\nname: Huge\n---\n" + "x" * 70_000 + "\n")
    result = mirror(Store.open(store_path), folder)
    assert len(result.added) == 1 and result.left == 0
    assert len(result.problems) == 1 and result.problems[0].startswith("huge.md: ")
    (long,) = [r for r in Store.open(store_path).records() if r.title == "Long"]
    assert len(long.abstract) == 240 and long.abstract.endswith("…")
    assert changed_files(Store.open(store_path).cache_dir, folder) == ([], [])


def test_a_failing_mirror_still_injects_the_context(store_path: Path, tmp_path: Path) -> None:
    from hookkit import log_text, payload, run_hook

    project = make_project(tmp_path / "work")
    rid = Store.open(store_path).record("fact", "Redis.", title="Queue").record.id
    talk = tmp_path / "claude" / "projects" / "slug" / "s.jsonl"
    memory_file(talk.parent / "memory", "huge.md", "---\nname: Huge\n---\n" + "x" * 70_000)
    run = run_hook("session-start", payload("claude-code/session_start", project, talk), store_path)
    assert f"[{rid}]" in run.context()
    assert "auto-memory: huge.md: body:" in log_text(store_path)
