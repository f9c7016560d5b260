"""The model that ships inside gitmem ("builtin:minilm-256"): a fresh install recalls by meaning
with no download and no network, a store naming the former default hub model gets it as a
stand-in (and says so), and an index built without it is rebuilt by itself."""

from __future__ import annotations

import fnmatch
import json
import os
import subprocess
import sys
import tomllib
from collections.abc import Callable
from pathlib import Path

import pytest
from conftest import Result, set_model

from gitmem.api import Store
from gitmem.index.model import configured_model
from gitmem.index.modelfiles import ModelUnavailable, builtin_folder, builtin_names, locate
from gitmem.store.config import DEFAULT_MODEL, FORMER_DEFAULT_MODEL

REPO = Path(__file__).resolve().parents[1]
GITMEM = str(Path(sys.executable).parent / "gitmem")
# A record and a question about it that share no word, stemmed or not: only meaning joins them.
RECORD = "The car would not start because the battery was flat after the cold night."
QUERY = "vehicle ignition trouble in winter"
OTHERS = (
    ("Deploy strategy", "We deploy the API with blue green releases on Kubernetes."),
    ("Job queue store", "Use PostgreSQL for the job queue instead of Redis."),
    ("Code review", "Every pull request needs one approving review before merge."),
)


def offline_env(home: Path, store: Path) -> dict[str, str]:
    """A user's environment on a machine with no network and nothing downloaded: an empty
    home (no Hugging Face cache), and any attempt at HTTP sent to a closed port."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GITMEM_", "HF_"))}
    env.update(HOME=str(home), GITMEM_STORE=str(store), HF_HUB_OFFLINE="1")
    env.update(GITMEM_BACKGROUND_INDEX="off", GITMEM_CAPTURE="off")
    for proxy in ("http_proxy", "https_proxy", "HTTP_PROXY", "HTTPS_PROXY"):
        env[proxy] = "http://127.0.0.1:9"
    return env


def gitmem(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([GITMEM, *args], env=env, capture_output=True, text=True, timeout=120)


def test_a_fresh_store_recalls_by_meaning_with_no_network(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    (home / ".gitconfig").write_text("[user]\n\tname = U\n\temail = u@example.com\n")
    env = offline_env(home, tmp_path / "store")
    assert gitmem(env, "init").returncode == 0
    assert f'model = "{DEFAULT_MODEL}"' in (tmp_path / "store" / "config.toml").read_text()
    assert gitmem(env, "record", "fact", RECORD, "--title", "Flat battery").returncode == 0
    for title, body in OTHERS:
        assert gitmem(env, "record", "fact", body, "--title", title).returncode == 0

    keyword = gitmem(env, "recall", QUERY, "--mode", "keyword", "--json")
    assert json.loads(keyword.stdout)["hits"] == []  # no shared word: keywords find nothing
    first = gitmem(env, "recall", QUERY, "--json")  # builds the index (the full CLI)
    assert first.returncode == 0, first.stderr
    again = gitmem(env, "recall", QUERY, "--json")  # the index is current: the fast path
    for done in (first, again):
        data = json.loads(done.stdout)
        assert data["mode"] == "hybrid"
        assert data["hits"][0]["title"] == "Flat battery"
        assert data["hits"][0]["semantic_rank"] == 1
    assert "keywords only" not in first.stderr + again.stderr
    assert not (home / ".cache" / "huggingface").exists()  # nothing was fetched

    status = gitmem(env, "status")
    assert f"model     {DEFAULT_MODEL}\n" in status.stdout
    doctor = gitmem(env, "doctor", "--json")
    report = json.loads(doctor.stdout)
    assert report["model"] == DEFAULT_MODEL and report["model_problem"] is None
    assert report["index"]["model"].startswith(f"{DEFAULT_MODEL}@")


def test_the_former_default_stands_in_for_the_built_in_model_and_says_so(
    gm: Callable[..., Result], store_path: Path
) -> None:
    set_model(store_path, FORMER_DEFAULT_MODEL)
    gm("record", "fact", RECORD, "--title", "Flat battery")
    r = gm("recall", QUERY, "--json")
    assert r.code == 0, r.err
    assert json.loads(r.out)["hits"][0]["title"] == "Flat battery"
    notice = next(line for line in r.err.splitlines() if FORMER_DEFAULT_MODEL in line)
    assert "not on this machine" in notice and DEFAULT_MODEL in notice
    assert '"gitmem model fetch"' in notice
    lines = gm("status").out.splitlines()
    at = next(i for i, line in enumerate(lines) if line.startswith("model "))
    assert lines[at] == (
        f"model     {FORMER_DEFAULT_MODEL} (not on this machine: the built-in model stands in)"
    )
    assert "gitmem model fetch" in lines[at + 1]
    assert gm("doctor").code == 0  # semantic search works: nothing to fix


def test_an_other_missing_hub_model_still_turns_semantic_search_off(
    gm: Callable[..., Result], store_path: Path
) -> None:
    """Only the former default, which `gitmem init` wrote for the user, gets a stand-in: a
    model the user chose gives no silent substitute."""
    set_model(store_path, "acme/chosen-model")
    gm("record", "fact", RECORD, "--title", "Flat battery")
    r = gm("recall", "battery", "--json")
    assert json.loads(r.out)["mode"] == "keyword" and "keywords only" in r.err
    assert gm("doctor").code == 1


def test_an_index_built_without_the_model_is_rebuilt_with_it(store_path: Path) -> None:
    """A store from before gitmem shipped a model: its index holds no vectors. Upgrading
    rebuilds it by itself at the next recall, which then finds by meaning."""
    set_model(store_path, "none")
    store = Store.open(store_path)
    store.record("fact", RECORD, title="Flat battery")
    before = store.recall(QUERY)
    assert before.mode == "keyword" and before.hits == ()
    set_model(store_path, FORMER_DEFAULT_MODEL)
    after = Store.open(store_path).recall(QUERY)
    assert after.mode == "hybrid" and after.hits[0].title == "Flat battery"
    assert any("rebuilding it from git" in n for n in after.notices), after.notices


def test_builtin_names_resolve_only_to_what_ships(store_path: Path) -> None:
    assert builtin_names() == [DEFAULT_MODEL]
    folder = builtin_folder(DEFAULT_MODEL)
    assert folder == REPO / "gitmem" / "models" / "minilm-256"
    assert locate(DEFAULT_MODEL) == folder
    ref = configured_model(DEFAULT_MODEL, store_path)
    assert ref is not None and ref.folder == folder and ref.notice == ""
    for wrong in ("builtin:nope", "builtin:../models/minilm-256", "builtin:"):
        assert locate(wrong) is None
        with pytest.raises(ModelUnavailable, match="not on this machine"):
            configured_model(wrong, store_path)


def test_model_fetch_names_an_unknown_builtin_model_and_what_ships(
    gm: Callable[..., Result], store_path: Path
) -> None:
    r = gm("model", "fetch", "builtin:nope")
    assert r.code != 0
    assert "gitmem ships no model of that name" in r.err and DEFAULT_MODEL in r.err
    ok = gm("model", "fetch")  # the store's model, the built-in one: nothing to download
    assert ok.code == 0 and ok.out.startswith(f"{DEFAULT_MODEL}: 256 dimensions")


def test_the_shipped_model_fits_the_wheel_and_carries_its_license() -> None:
    folder = REPO / "gitmem" / "models" / "minilm-256"
    files = sorted(p.name for p in folder.iterdir())
    assert files == ["LICENSE", "README.md", "config.json", "model.safetensors", "tokenizer.json"]
    assert sum(p.stat().st_size for p in folder.iterdir()) <= 20_000_000
    assert (folder / "LICENSE").read_text().lstrip().startswith("Apache License")
    readme = (folder / "README.md").read_text()
    assert "sentence-transformers/all-MiniLM-L6-v2" in readme and "make builtin-model" in readme
    config = json.loads((folder / "config.json").read_text())
    assert config["tokenizer_name"] == "sentence-transformers/all-MiniLM-L6-v2"  # no local path
    setup = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["setuptools"]
    globs = setup["package-data"]["gitmem"]
    for name in files:
        assert any(fnmatch.fnmatch(f"models/minilm-256/{name}", g) for g in globs), name


class _Distilled:
    """What model2vec's save_pretrained leaves: a config naming the source folder's path."""

    dim = 4

    def save_pretrained(self, path: Path, model_name: str) -> None:
        config = {"model_type": "model2vec", "tokenizer_name": "/home/builder/teacher/model"}
        (path / "config.json").write_text(json.dumps(config))
        (path / "model.safetensors").write_bytes(b"matrix")
        (path / "tokenizer.json").write_text("{}")


def test_a_saved_model_names_its_teacher_not_the_build_machine(tmp_path: Path) -> None:
    from gitmem.index.modelbuild import save

    info = save(_Distilled(), tmp_path / "named", name="named", teacher="org/teacher")
    config = json.loads((Path(info.path) / "config.json").read_text())
    assert config == {"model_type": "model2vec", "tokenizer_name": "org/teacher"}
    save(_Distilled(), tmp_path / "as-is", name="as-is")  # no teacher: left as written
    kept = json.loads((tmp_path / "as-is" / "config.json").read_text())
    assert kept["tokenizer_name"] == "/home/builder/teacher/model"
