"""The embedding layer: a tiny real model2vec model built offline, loading, encoding, chunking."""

from __future__ import annotations

import importlib.util
import itertools
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from tinymodel import build_tiny_model

from gitmem.errors import GitmemError
from gitmem.index import modelbuild, queryvec
from gitmem.index.build import chunks
from gitmem.index.embedding import load
from gitmem.index.modelfiles import ModelInfo, ModelUnavailable, fingerprint, locate

DISTILLED = Path(__file__).resolve().parents[1] / "benchmarks/.models/minilm-distilled-256"


@pytest.fixture(scope="module")
def tiny_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("models") / "tiny"
    build_tiny_model(out)
    return out


@pytest.fixture
def no_network(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Any attempt to resolve a name or open a connection is recorded and refused."""
    attempts: list[str] = []

    def refuse(name: str) -> Any:
        def fail(*args: object, **kwargs: object) -> None:
            attempts.append(f"{name}{args[:2]}")
            raise OSError(f"test: network use refused ({name})")

        return fail

    monkeypatch.setattr(socket, "getaddrinfo", refuse("getaddrinfo"))
    monkeypatch.setattr(socket, "create_connection", refuse("create_connection"))
    monkeypatch.setattr(socket.socket, "connect", refuse("connect"))
    monkeypatch.setattr(socket.socket, "connect_ex", refuse("connect_ex"))
    return attempts


def test_tiny_model_is_a_real_model2vec_model_on_disk(tiny_dir: Path) -> None:
    for name in ("config.json", "model.safetensors", "tokenizer.json"):
        assert (tiny_dir / name).is_file(), name
    assert not list(tiny_dir.parent.glob(".tiny.*")), "staging directory left behind"


@pytest.fixture
def model2vec_calls(monkeypatch: pytest.MonkeyPatch) -> list[object]:
    """Every folder model2vec's loader is asked to read (it still reads them)."""
    from model2vec import StaticModel

    calls: list[object] = []
    real = StaticModel.from_pretrained.__func__  # type: ignore[attr-defined]

    def spy(cls: type[StaticModel], /, path: object, **kwargs: object) -> StaticModel:
        calls.append(path)
        return real(cls, path, **kwargs)  # type: ignore[no-any-return]

    monkeypatch.setattr(StaticModel, "from_pretrained", classmethod(spy))
    return calls


def test_load_reads_the_folder_without_model2vec(
    tiny_dir: Path, model2vec_calls: list[object], no_network: list[str]
) -> None:
    model = load(str(tiny_dir))
    assert model is not None
    assert model2vec_calls == []
    assert model.info == ModelInfo("tiny", 32, str(tiny_dir), fingerprint(tiny_dir))
    assert no_network == []


def test_loading_and_encoding_import_neither_model2vec_nor_the_hub(tiny_dir: Path) -> None:
    code = (
        "import sys; from gitmem.index.embedding import load\n"
        f"load({str(tiny_dir)!r}).encode(['fix the flaky test'])\n"
        "heavy = ('model2vec', 'huggingface_hub', 'safetensors', 'torch', 'transformers')\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in heavy))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"


def test_encode_shape_dtype_and_unit_rows(tiny_dir: Path) -> None:
    model = load(str(tiny_dir))
    assert model is not None
    texts = ["fix the flaky test", "", "!!! ...", "Database migration failed\n\nat step 3"]
    vectors = model.encode(texts)
    assert vectors.shape == (4, 32)
    assert vectors.dtype == np.float32
    norms = np.linalg.norm(vectors, axis=1)
    # A text with no token the model knows stays a zero row instead of becoming NaN.
    np.testing.assert_allclose(norms, [1.0, 0.0, 0.0, 1.0], atol=1e-5)
    assert model.encode([]).shape == (0, 32)
    with pytest.raises(TypeError):
        model.encode("one string is not a list of texts")


def test_encoding_is_the_same_across_loads_and_builds(tiny_dir: Path, tmp_path: Path) -> None:
    texts = ["deploy the release to production", "the cat sat on the mat", "x"]
    first, second = load(str(tiny_dir)), load(str(tiny_dir))
    assert first is not None and second is not None
    np.testing.assert_array_equal(first.encode(texts), second.encode(texts))
    rebuilt = load(str(build_tiny_model(tmp_path / "again").path))
    assert rebuilt is not None
    np.testing.assert_array_equal(first.encode(texts), rebuilt.encode(texts))
    reseeded = load(build_tiny_model(tmp_path / "seed1", seed=1).path)
    assert reseeded is not None
    assert not np.allclose(first.encode(texts[:1]), reseeded.encode(texts[:1]))


def test_similar_texts_score_higher_than_unrelated(tiny_dir: Path) -> None:
    model = load(str(tiny_dir))
    assert model is not None
    pairs = [
        ("fixed the crash in the database query", "repaired a bug in the sql lookup"),
        ("login fails with the wrong password", "authentication error: bad credentials"),
        ("we decided to use postgres for storage", "the team chose a sql database"),
        ("my dog likes breakfast", "the puppy ate a meal"),
    ]
    vectors = model.encode([text for pair in pairs for text in pair])
    sims = vectors @ vectors.T
    for i in range(len(pairs)):
        related = sims[2 * i, 2 * i + 1]
        unrelated = [sims[2 * i, 2 * j + 1] for j in range(len(pairs)) if j != i]
        assert related > max(unrelated), (pairs[i], related, unrelated)


def test_build_with_own_vocabulary_and_dim(tmp_path: Path) -> None:
    info = build_tiny_model(tmp_path / "own", dim=8, vocab=["alpha", "beta", "Gamma"])
    model = load(info.path)
    assert model is not None and model.info.dim == 8 == info.dim
    vectors = model.encode(["alpha beta", "gamma", "delta"])
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)


def test_build_into_an_empty_directory(tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    info = build_tiny_model(tmp_path / "empty", dim=8, vocab=["alpha"])
    assert info.path == str(tmp_path / "empty") and fingerprint(tmp_path / "empty")


def test_a_failed_build_leaves_nothing_behind(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from model2vec import StaticModel

    def fail(self: StaticModel, path: Path, **kwargs: object) -> None:
        (Path(path) / "config.json").write_text("{}")
        raise OSError("test: disk full")

    monkeypatch.setattr(StaticModel, "save_pretrained", fail)
    with pytest.raises(OSError, match="disk full"):
        build_tiny_model(tmp_path / "out", dim=8, vocab=["alpha"])
    assert list(tmp_path.iterdir()) == []


def test_build_refuses_to_overwrite_a_model(tiny_dir: Path) -> None:
    before = (tiny_dir / "model.safetensors").read_bytes()
    with pytest.raises(GitmemError, match="already exists"):
        build_tiny_model(tiny_dir, seed=7)
    assert (tiny_dir / "model.safetensors").read_bytes() == before


@pytest.mark.parametrize("spec", ["none", "None", " NONE ", ""])
def test_none_means_no_model(spec: str) -> None:
    assert load(spec) is None


@pytest.mark.parametrize("cache", [True, False])
def test_missing_hub_model_offline_fails_fast_without_network(
    tmp_path: Path, no_network: list[str], cache: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))  # the default cache is under it
    start = time.monotonic()
    with pytest.raises(ModelUnavailable) as raised:
        load("some-org/not-there", offline=True, cache_dir=tmp_path if cache else None)
    assert time.monotonic() - start < 2.0
    assert no_network == []
    message = str(raised.value)
    assert "'some-org/not-there'" in message
    assert "offline" in message
    assert "config.toml" in message and "gitmem model build" in message


def test_hub_id_is_found_in_the_local_cache_offline(
    tiny_dir: Path, tmp_path: Path, no_network: list[str]
) -> None:
    repo = tmp_path / "models--acme--tiny"
    commit = "0123456789abcdef0123456789abcdef01234567"
    shutil.copytree(tiny_dir, repo / "snapshots" / commit)
    (repo / "refs").mkdir()
    (repo / "refs" / "main").write_text(commit)
    model = load("acme/tiny", cache_dir=tmp_path)
    assert model is not None
    assert model.info == ModelInfo(
        "acme/tiny", 32, str(repo / "snapshots" / commit), fingerprint(tiny_dir)
    )
    assert no_network == []


# --- the fast reader computes what model2vec computes -----------------------------------------

_LONG_PROSE = " ".join(
    "we fixed the flaky database test after the deploy and wrote the decision down"
    for _ in range(60)
)
TEXTS = [
    "",
    " ",
    "\n\t\r",
    "x",
    "fix the flaky test",
    "Fix The Flaky TEST",
    "FIXED fixes fixing fixer",
    "Database migration failed\n\nat step 3",
    "how do we retry webhooks",
    "we decided to use postgres for storage",
    "naïve café résumé Ünïcödé ÅÄÖ",
    "e\u0301 combining, ﬁ ligature, \u200bzero\u200dwidth",
    "日本語のテキスト",
    "中文 文本 检索",
    "Привет, мир; ελληνικά; עברית",
    "🚀🔥 emoji only 🚀",
    "mixed 日本 english café 🚀 words",
    "[UNK]",
    "[UNK] [UNK] word [UNK]",
    "[CLS] [SEP] [PAD] [MASK] <s> </s> <unk>",
    "##ing ##s ## #",
    "def retry(fn, attempts=3):\n    for i in range(attempts):\n        try:\n"
    "            return fn()\n        except Exception:\n            time.sleep(2 ** i)",
    "SELECT * FROM users WHERE id = 42 AND name LIKE '%bob%';",
    "const double = (xs) => xs.map((n) => n * 2); // arrow functions",
    "https://example.com/a/b?c=d&e=f#g and user@example.com",
    "C:\\Users\\dev\\project\\file.txt",
    "v1.2.3-rc.1+build.5 0x7fffffff 3.14159 1e-10 -42",
    "snake_case camelCase PascalCase kebab-case SCREAMING_CASE",
    "!!! ... ??? ;;; ---",
    "tab\tseparated\tvalues\r\nwindows line",
    "a" * 511,
    "b" * 512,
    "c" * 513,
    "d" * 5000,
    "the " * 600,
    "word " * 1000,
    _LONG_PROSE,
    _LONG_PROSE.upper(),
    " ".join(str(i) for i in range(2000)),
    # Mostly indentation: few tokens per character, so model2vec's cut at max_length × the
    # median token length in characters, not its cut at max_length tokens, decides the end.
    ("        " * 6 + "pass\n") * 200,
    "if x:\n" + "\t" * 3000 + "return y",
    # Words just either side of that cut, for medians of 6 and 7 and max_length 512 and 16.
    *(" " * n + "fixed the database" for n in (90, 100, 108, 115, 3060, 3080, 3570, 3590)),
    "déjà vu " * 300,
    "🙂" * 700,
    "mixed CASE and Ünïcödé " * 100 + "tail words at the very end",
    "\x00 nul and \x7f del",
    "one",
    "two words",
    "the",
    "a an the of to in",
]


def _reference(folder: Path, texts: list[str]) -> np.ndarray[Any, Any]:
    """What model2vec's own loader and encoder give, rows scaled to length 1 (zero rows kept).
    normalize=False as gitmem always asked: model2vec would round float16 unit rows to float16."""
    from model2vec import StaticModel

    raw = StaticModel.from_pretrained(folder).encode(texts, normalize=False).astype(np.float32)
    norms = np.linalg.norm(raw, axis=1, keepdims=True)
    unit: np.ndarray[Any, Any] = np.divide(raw, norms, out=np.zeros_like(raw), where=norms > 0)
    return unit


def _assert_fast_matches_model2vec(folder: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from model2vec import StaticModel

    with monkeypatch.context() as patch:
        patch.setattr(StaticModel, "from_pretrained", None)  # the fast path must not need it
        model = load(str(folder))
        assert model is not None
        vectors = model.encode(TEXTS)
    assert vectors.shape == (len(TEXTS), model.info.dim) and vectors.dtype == np.float32
    np.testing.assert_allclose(vectors, _reference(folder, TEXTS), rtol=0, atol=1e-5)


def _save_model(
    folder: Path,
    tokenizer: Any,
    vectors: np.ndarray[Any, Any],
    *,
    layout: str = "model2vec",
    **kwargs: Any,
) -> None:
    """Save with model2vec, then move the files into one of its other folder layouts."""
    from model2vec import StaticModel
    from safetensors.numpy import load_file, save_file

    StaticModel(vectors=vectors, tokenizer=tokenizer, **kwargs).save_pretrained(folder)
    if layout == "model2vec":
        return
    inner = folder / "0_StaticEmbedding" if layout == "nested" else folder
    inner.mkdir(exist_ok=True)
    tensors = load_file(folder / "model.safetensors")
    (folder / "model.safetensors").unlink()
    save_file({"embedding.weight": tensors["embeddings"]}, inner / "model.safetensors")
    (folder / "tokenizer.json").rename(inner / "tokenizer.json")
    (folder / "config.json").rename(folder / "config_sentence_transformers.json")


def _variants() -> dict[str, Callable[[Path, Path], None]]:
    """Ways model2vec writes a model (dtypes, layouts, tokenizers, weights, lengths): each
    builds one into its first argument from the tiny model in its second."""
    from model2vec import StaticModel
    from tokenizers import Tokenizer, models, normalizers, pre_tokenizers

    def tiny(source: Path) -> tuple[Any, np.ndarray[Any, Any]]:
        static = StaticModel.from_pretrained(source)
        vectors = np.array(static.embedding)
        vectors[1] = vectors[-1]  # [UNK]: not zero, so keeping it would show in the mean
        return static.tokenizer, vectors

    def quantized(
        to: str, first: Callable[[Path, Path], None] | None = None
    ) -> Callable[[Path, Path], None]:
        def make(out: Path, source: Path) -> None:
            if first is not None:
                first(out.with_name(out.name + " before"), source)
                source = out.with_name(out.name + " before")
            StaticModel.from_pretrained(source, quantize_to=to).save_pretrained(out)

        return make

    def plain(**kwargs: Any) -> Callable[[Path, Path], None]:
        def make(out: Path, source: Path) -> None:
            _save_model(out, *tiny(source), **kwargs)

        return make

    def weighted(clusters: int | None, weighted: bool) -> Callable[[Path, Path], None]:
        def make(out: Path, source: Path) -> None:
            tokenizer, vectors = tiny(source)
            size = len(vectors)
            mapping = None if clusters is None else (np.arange(size) * 7) % clusters
            weights = np.linspace(0.25, 2.0, size) if weighted else None
            kept = vectors if clusters is None else vectors[:clusters]
            _save_model(out, tokenizer, kept, weights=weights, token_mapping=mapping)

        return make

    def retokenized(kind: str) -> Callable[[Path, Path], None]:
        def make(out: Path, source: Path) -> None:
            tokenizer, vectors = tiny(source)
            vocab = tokenizer.get_vocab()
            model: Any
            if kind == "unigram":
                pieces = sorted(vocab, key=vocab.__getitem__)
                model = models.Unigram([(p, -1.0 - len(p)) for p in pieces], unk_id=1)
            elif kind == "bpe":  # no merges: letters and digits only, the rest dropped
                model = models.BPE(vocab, [], unk_token=None)
            else:
                model = models.WordLevel(vocab, unk_token="[UNK]")
            other = Tokenizer(model)
            other.normalizer = normalizers.Lowercase()
            other.pre_tokenizer = pre_tokenizers.Whitespace()
            _save_model(out, other, vectors)

        return make

    def padded(out: Path, source: Path) -> None:
        shutil.copytree(source, out)
        tokenizer = Tokenizer.from_file(str(out / "tokenizer.json"))
        # Pad with a token whose vector is not zero, so padding would show in the mean.
        tokenizer.enable_padding(pad_id=5, pad_token=tokenizer.id_to_token(5))
        tokenizer.enable_truncation(8)
        tokenizer.save(str(out / "tokenizer.json"))

    def copied(out: Path, source: Path) -> None:
        shutil.copytree(source, out)

    return {
        "float32": copied,
        "float16": quantized("float16"),
        "int8": quantized("int8"),
        "max_length 16": plain(max_length=16),
        "max_length None": plain(max_length=None),
        "sentence-transformers layout": plain(layout="sentence-transformers"),
        "0_StaticEmbedding layout": plain(layout="nested"),
        "weights": weighted(None, True),
        "mapping": weighted(40, False),
        "weights and mapping": weighted(40, True),
        "float16 with weights and mapping": quantized("float16", weighted(40, True)),
        "unigram tokenizer": retokenized("unigram"),
        "word-level tokenizer": retokenized("wordlevel"),
        "bpe tokenizer without an unknown token": retokenized("bpe"),
        "padding and truncation in tokenizer.json": padded,
    }


@pytest.fixture(scope="module")
def variants(tiny_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    root = tmp_path_factory.mktemp("variants")
    for name, make in _variants().items():
        make(root / name, tiny_dir)
    yield root


@pytest.mark.parametrize("variant", list(_variants()))
def test_fast_path_encodes_as_model2vec_does(
    variants: Path, variant: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    _assert_fast_matches_model2vec(variants / variant, monkeypatch)


@pytest.mark.skipif(not DISTILLED.is_dir(), reason="the distilled benchmark model is not built")
def test_fast_path_encodes_the_distilled_model_as_model2vec_does(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    _assert_fast_matches_model2vec(DISTILLED, monkeypatch)


@pytest.mark.parametrize("variant", [None, *_variants()])
def test_encoding_does_not_depend_on_the_batch(
    tiny_dir: Path, variants: Path, variant: str | None
) -> None:
    # Large batches pool from a float32 copy of the matrix, single texts the matrix itself.
    model = load(str(tiny_dir if variant is None else variants / variant))
    assert model is not None
    texts = [TEXTS[i % len(TEXTS)] for i in range(600)]  # more than one batch of 256
    together = model.encode(texts)
    np.testing.assert_array_equal(together, np.vstack([model.encode([t]) for t in texts]))


@pytest.fixture(scope="module")
def both_tiny(tiny_dir: Path) -> tuple[Any, Any]:
    from model2vec import StaticModel

    return load(str(tiny_dir)), StaticModel.from_pretrained(tiny_dir)


@given(text=st.text(max_size=4000))
def test_fast_path_matches_model2vec_on_any_text(both_tiny: tuple[Any, Any], text: str) -> None:
    fast, reference = both_tiny
    raw = reference.encode([text], normalize=False).astype(np.float32)
    norm = np.linalg.norm(raw)
    expected = raw / norm if norm > 0 else raw
    np.testing.assert_allclose(fast.encode([text]), expected, rtol=0, atol=1e-5)


@pytest.mark.parametrize("oddity", ["an extra tensor", "another pooling"])
def test_a_folder_the_fast_reader_does_not_know_goes_to_model2vec(
    tiny_dir: Path, tmp_path: Path, model2vec_calls: list[object], oddity: str
) -> None:
    from safetensors.numpy import load_file, save_file

    folder = tmp_path / "odd"
    shutil.copytree(tiny_dir, folder)
    if oddity == "an extra tensor":
        tensors = load_file(folder / "model.safetensors")
        save_file({**tensors, "extra": np.zeros(3, np.float32)}, folder / "model.safetensors")
    else:
        config = json.loads((folder / "config.json").read_text())
        (folder / "config.json").write_text(json.dumps({**config, "pooling": "cls"}))
    model = load(str(folder))
    assert model is not None and model2vec_calls == [folder]
    assert model.info == ModelInfo("odd", 32, str(folder), fingerprint(folder))
    np.testing.assert_allclose(model.encode(TEXTS), _reference(folder, TEXTS), atol=1e-5)
    assert model.encode([]).shape == (0, 32)
    with pytest.raises(TypeError):
        model.encode("one string is not a list of texts")


# --- locate: where a spec resolves, from the file system alone ---------------------------------


def _snapshot(cache: Path, hub_id: str, revision: str, source: Path | None, age: float) -> Path:
    """A snapshot laid out as huggingface_hub lays it out, ``age`` seconds old."""
    folder = cache / f"models--{hub_id.replace('/', '--')}" / "snapshots" / revision
    if source is None:
        folder.mkdir(parents=True)
        (folder / "README.md").write_text("a download that stopped early")
    else:
        shutil.copytree(source, folder)
    stamp = time.time() - age
    os.utime(folder, (stamp, stamp))
    return folder


@pytest.mark.parametrize("spec", ["none", " None ", ""])
def test_locate_none_is_no_model(spec: str, tmp_path: Path) -> None:
    assert locate(spec, tmp_path) is None


def test_locate_a_directory(tiny_dir: Path, tmp_path: Path) -> None:
    assert locate(str(tiny_dir)) == tiny_dir
    (tmp_path / "empty").mkdir()
    assert locate(str(tmp_path / "empty")) is None
    assert locate(str(tmp_path / "missing")) is None
    assert locate(str(tmp_path / "missing/dir"), tmp_path) is None


def test_locate_prefers_the_revision_refs_main_names(tiny_dir: Path, tmp_path: Path) -> None:
    named = _snapshot(tmp_path, "acme/tiny", "aaa111", tiny_dir, age=100)
    _snapshot(tmp_path, "acme/tiny", "bbb222", tiny_dir, age=10)
    refs = tmp_path / "models--acme--tiny" / "refs"
    refs.mkdir()
    (refs / "main").write_text("aaa111\n")
    assert locate("acme/tiny", tmp_path) == named


@pytest.mark.parametrize("ref", [None, "ccc333", "../../escape", ""])
def test_locate_falls_back_to_the_newest_snapshot_with_a_model(
    tiny_dir: Path, tmp_path: Path, ref: str | None
) -> None:
    _snapshot(tmp_path, "acme/tiny", "aaa111", tiny_dir, age=100)
    newer = _snapshot(tmp_path, "acme/tiny", "bbb222", tiny_dir, age=50)
    _snapshot(tmp_path, "acme/tiny", "ccc333", None, age=1)  # newest, but holds no model
    if ref is not None:
        (tmp_path / "models--acme--tiny" / "refs").mkdir()
        (tmp_path / "models--acme--tiny" / "refs" / "main").write_text(ref)
    assert locate("acme/tiny", tmp_path) == newer
    assert locate("acme/other", tmp_path) is None
    _snapshot(tmp_path, "acme/broken", "aaa111", None, age=0)
    assert locate("acme/broken", tmp_path) is None


def test_locate_looks_in_the_default_cache_under_home(
    tiny_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    folder = _snapshot(tmp_path / ".cache/huggingface/hub", "acme/tiny", "abc", tiny_dir, age=0)
    assert locate("acme/tiny") == folder


def test_locate_is_cheap(tiny_dir: Path, tmp_path: Path) -> None:
    _snapshot(tmp_path, "acme/tiny", "abc", tiny_dir, age=0)
    code = (
        "import sys, time; from pathlib import Path; from gitmem.index.modelfiles import locate\n"
        "took = []\n"
        "for _ in range(20):\n"
        "    start = time.perf_counter()\n"
        f"    assert locate('acme/tiny', Path({str(tmp_path)!r})) is not None\n"
        f"    assert locate({str(tiny_dir)!r}) is not None\n"
        "    took.append(time.perf_counter() - start)\n"
        "heavy = ('numpy', 'tokenizers', 'model2vec', 'huggingface_hub')\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in heavy), min(took))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    imported, took = done.stdout.rsplit(" ", 1)
    assert imported == "[]"
    assert float(took) < 0.005


# --- fingerprint: tells a rebuilt model from the old one of the same name ----------------------


def test_fingerprint_is_stable_and_follows_the_contents(tiny_dir: Path, tmp_path: Path) -> None:
    stamp = fingerprint(tiny_dir)
    assert re.fullmatch(r"[0-9a-f]{16}", stamp)
    assert fingerprint(tiny_dir) == stamp
    assert build_tiny_model(tmp_path / "same").fingerprint == stamp  # built the same: same stamp
    # A different seed writes a file of the same size and header, with other numbers in it.
    assert build_tiny_model(tmp_path / "seed1", seed=1).fingerprint != stamp
    edited = tmp_path / "edited"
    shutil.copytree(tiny_dir, edited)
    config = json.loads((edited / "config.json").read_text())
    (edited / "config.json").write_text(json.dumps({**config, "max_length": 64}))
    assert fingerprint(edited) != stamp


def test_fingerprint_samples_a_large_matrix(tmp_path: Path) -> None:
    first = build_tiny_model(tmp_path / "wide0", dim=128)
    assert (tmp_path / "wide0" / "model.safetensors").stat().st_size > 1 << 20
    assert build_tiny_model(tmp_path / "wide1", dim=128, seed=1).fingerprint != first.fingerprint
    assert fingerprint(tmp_path / "wide0") == first.fingerprint


def test_fingerprint_of_a_folder_without_a_model(tmp_path: Path) -> None:
    with pytest.raises(ModelUnavailable, match=re.escape(str(tmp_path))):
        fingerprint(tmp_path)


def test_fingerprint_of_an_unreadable_model(
    tiny_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def refuse(self: Path, *args: object, **kwargs: object) -> None:
        raise PermissionError(f"test: {self} is unreadable")

    monkeypatch.setattr(Path, "open", refuse)
    with pytest.raises(ModelUnavailable, match=r"cannot read the embedding model in .*unreadable"):
        fingerprint(tiny_dir)


# --- downloading: only online, and only when the cache has nothing -----------------------------


def test_hub_model_is_downloaded_once_when_online(
    tiny_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import huggingface_hub

    calls: list[tuple[str, object]] = []

    def fake_download(repo_id: str, *, cache_dir: Path, **kwargs: object) -> str:
        calls.append((repo_id, cache_dir))
        return str(_snapshot(cache_dir, repo_id, "abc", tiny_dir, age=0))

    monkeypatch.setattr(huggingface_hub, "snapshot_download", fake_download)
    model = load("acme/tiny", offline=False, cache_dir=tmp_path)
    assert model is not None and model.info.name == "acme/tiny"
    again = load("acme/tiny", offline=False, cache_dir=tmp_path)
    assert again is not None and again.info == model.info
    assert calls == [("acme/tiny", tmp_path)]


def test_download_without_the_model_files_is_model_unavailable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import huggingface_hub

    def download_nothing(repo_id: str, *, cache_dir: Path, **kwargs: object) -> str:
        return str(_snapshot(cache_dir, repo_id, "abc", None, age=0))

    monkeypatch.setattr(huggingface_hub, "snapshot_download", download_nothing)
    with pytest.raises(ModelUnavailable, match="holds no embedding model"):
        load("acme/tiny", offline=False, cache_dir=tmp_path)


def test_failed_download_is_model_unavailable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import huggingface_hub

    def fail(repo_id: str, **kwargs: object) -> str:
        raise OSError("connection refused")

    monkeypatch.setattr(huggingface_hub, "snapshot_download", fail)
    with pytest.raises(ModelUnavailable, match=r"'acme/tiny': download failed \(connection"):
        load("acme/tiny", offline=False, cache_dir=tmp_path)


def _break_matrix(folder: Path, how: str) -> None:
    data = (folder / "model.safetensors").read_bytes()
    length = int.from_bytes(data[:8], "little")
    if how == "truncated matrix":
        (folder / "model.safetensors").write_bytes(data[:-100])
    elif how == "header not an object":
        header = json.dumps(["embeddings"]).encode()
        (folder / "model.safetensors").write_bytes(len(header).to_bytes(8, "little") + header)
    else:  # a header longer than the file
        (folder / "model.safetensors").write_bytes((len(data) + 1).to_bytes(8, "little") + data[8:])
    assert length > 0


@pytest.mark.parametrize(
    "kind",
    [
        "missing",
        "empty",
        "garbage",
        "bad tokenizer",
        "truncated matrix",
        "header not an object",
        "header too long",
    ],
)
def test_bad_directory_is_model_unavailable(tiny_dir: Path, tmp_path: Path, kind: str) -> None:
    path = tmp_path / "model"
    if kind == "empty":
        path.mkdir()
    elif kind == "garbage":
        path.mkdir()
        for name in ("config.json", "model.safetensors", "tokenizer.json"):
            (path / name).write_text("not a model")
    elif kind != "missing":
        shutil.copytree(tiny_dir, path)
        if kind == "bad tokenizer":
            (path / "tokenizer.json").write_text('{"model": "not a tokenizer"}')
        else:
            _break_matrix(path, kind)
    with pytest.raises(ModelUnavailable, match=re.escape(str(path))):
        load(str(path))


def test_safetensors_metadata_is_no_obstacle(
    tiny_dir: Path, tmp_path: Path, model2vec_calls: list[object]
) -> None:
    from safetensors.numpy import load_file, save_file

    shutil.copytree(tiny_dir, tmp_path / "meta")
    tensors = load_file(tmp_path / "meta" / "model.safetensors")
    save_file(tensors, tmp_path / "meta" / "model.safetensors", metadata={"format": "np"})
    model, reference = load(str(tmp_path / "meta")), load(str(tiny_dir))
    assert model is not None and reference is not None and model2vec_calls == []
    np.testing.assert_array_equal(model.encode(TEXTS), reference.encode(TEXTS))


def test_importing_the_module_imports_nothing_heavy() -> None:
    code = "import sys, gitmem.index.embedding; "
    code += "print(sorted(m for m in sys.modules if m.split('.')[0] "
    code += "in ('model2vec', 'tokenizers', 'huggingface_hub', 'torch', 'numpy')))"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"


def test_chunks_short_text_comes_back_whole() -> None:
    text = "  keep\n\n my   layout  "
    assert chunks(text) == [text]
    assert chunks("") == [""]
    exact = " ".join(f"w{i}" for i in range(200))
    assert chunks(exact) == [exact]


def test_chunks_long_text_windows_overlap() -> None:
    words = [f"w{i}" for i in range(450)]
    parts = chunks("\n".join(words), max_words=200, overlap=40)
    assert [p.split() for p in parts] == [words[0:200], words[160:360], words[320:450]]
    assert parts[0].startswith("w0\nw1\n")  # slices of the original, layout kept


def test_chunks_rejects_nonsense_arguments() -> None:
    for max_words, overlap in ((0, 0), (10, 10), (10, -1)):
        with pytest.raises(ValueError):
            chunks("a b c", max_words=max_words, overlap=overlap)


@given(
    n=st.integers(min_value=0, max_value=300),
    max_words=st.integers(min_value=1, max_value=50),
    data=st.data(),
)
def test_chunks_cover_every_word_in_order(n: int, max_words: int, data: st.DataObject) -> None:
    overlap = data.draw(st.integers(min_value=0, max_value=max_words - 1))
    words = [f"w{i}" for i in range(n)]
    parts = [p.split() for p in chunks(" ".join(words), max_words=max_words, overlap=overlap)]
    assert all(len(p) <= max_words for p in parts)
    assert parts[0][:1] == words[:1] and parts[-1][-1:] == words[-1:]
    for before, after in itertools.pairwise(parts):
        assert before[len(before) - overlap :] == after[:overlap]
    assert sorted({w for p in parts for w in p}, key=lambda w: int(w[1:])) == words


def test_distill_without_the_extra_names_the_install(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "model2vec.distill", None)
    monkeypatch.setitem(sys.modules, "transformers", None)
    (tmp_path / "config.json").write_text("{}")
    with pytest.raises(ModelUnavailable) as raised:
        modelbuild.distill(tmp_path, tmp_path / "out")
    said = str(raised.value)
    assert "the distill extra is not installed (model2vec.distill is missing)" in said
    assert said.count("pip install") == 2 and "pip install 'gitmem[distill]'" in said


@pytest.mark.parametrize("where", ["nowhere", "a-file", "empty-dir"])
def test_distill_says_a_wrong_source_before_anything_else(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, where: str
) -> None:
    monkeypatch.setitem(sys.modules, "transformers", None)  # as without the extra
    source = tmp_path / where
    if where == "a-file":
        source.write_text("x")
    elif where == "empty-dir":
        source.mkdir()
    with pytest.raises(ModelUnavailable, match=rf"cannot distil {source}: no config\.json there"):
        modelbuild.distill(source, tmp_path / "out")


def test_distill_refuses_a_non_empty_out_before_distilling(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "transformers", None)
    (tmp_path / "config.json").write_text("{}")
    out = tmp_path / "out"
    out.mkdir()
    (out / "keep.txt").write_text("mine")
    with pytest.raises(GitmemError, match="already exists and is not empty"):
        modelbuild.distill(tmp_path, out)
    assert (out / "keep.txt").read_text() == "mine"


@pytest.mark.parametrize(
    ("options", "named"),
    [
        ({"dims": 0}, "dims 0"),
        ({"dtype": "float8"}, "dtype 'float8'"),
        ({"clusters": 1}, "clusters 1"),
    ],
)
def test_distill_refuses_bad_options_before_anything_else(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, options: dict[str, Any], named: str
) -> None:
    monkeypatch.setitem(sys.modules, "transformers", None)  # as without the extra
    with pytest.raises(GitmemError) as raised:
        modelbuild.distill(tmp_path / "nowhere", tmp_path / "out", **options)
    said = str(raised.value)
    assert named in said and "dtype one of float32, float16, int8" in said
    assert not (tmp_path / "out").exists()


_HAS_DISTILL = all(importlib.util.find_spec(m) for m in ("torch", "transformers", "skeletoken"))


@pytest.mark.slow
@pytest.mark.skipif(not _HAS_DISTILL, reason="needs the gitmem[distill] extra")
def test_distill_a_tiny_transformer_offline(
    tiny_dir: Path, tmp_path: Path, no_network: list[str]
) -> None:
    from tokenizers import Tokenizer
    from transformers import (  # type: ignore[import-not-found,unused-ignore]
        BertConfig,
        BertModel,
        PreTrainedTokenizerFast,
    )

    source = tmp_path / "bert"
    tokenizer = Tokenizer.from_file(str(tiny_dir / "tokenizer.json"))
    fast = PreTrainedTokenizerFast(tokenizer_object=tokenizer, unk_token="[UNK]", pad_token="[PAD]")
    fast.save_pretrained(source)
    config = BertConfig(
        vocab_size=tokenizer.get_vocab_size(),
        hidden_size=32,
        num_hidden_layers=1,
        num_attention_heads=2,
        intermediate_size=64,
    )
    BertModel(config).save_pretrained(source)
    with pytest.raises(ModelUnavailable, match=r"config\.json"):
        modelbuild.distill(tmp_path, tmp_path / "nowhere")
    info = modelbuild.distill(source, tmp_path / "distilled", dims=16)
    assert info.dim == 16
    config = json.loads((Path(info.path) / "config.json").read_text())
    assert config["tokenizer_name"] == "bert"  # the source folder's name, not its path
    model = load(info.path)
    assert model is not None
    assert model.encode(["fix the bug"]).shape == (1, 16)
    # Stored as int8, and with the vocabulary quantised: gitmem's own reader encodes both as
    # model2vec does.
    from model2vec import StaticModel

    for name, options in (("int8", {"dtype": "int8"}), ("clusters", {"clusters": 20})):
        info = modelbuild.distill(source, tmp_path / name, dims=16, **options)
        reference = StaticModel.from_pretrained(info.path)
        if name == "int8":
            assert reference.embedding.dtype == np.int8
        else:
            assert reference.embedding.shape == (20, 16)
            assert reference.token_mapping is not None
        fast = load(info.path)
        assert fast is not None and type(fast).__name__ == "_FastEmbedder"
        texts = ["fix the bug", "the cache was stale after deploy"]
        raw = reference.encode(texts, normalize=False).astype(np.float32)
        expected = raw / np.linalg.norm(raw, axis=1, keepdims=True)
        np.testing.assert_allclose(fast.encode(texts), expected, rtol=0, atol=1e-5)
    assert no_network == []


@given(text=st.text(alphabet=st.characters(max_codepoint=127), max_size=300))
def test_word_cache_gives_the_tokenizers_own_ids_for_ascii(
    both_tiny: tuple[Any, Any], text: str
) -> None:
    from gitmem.index.tokenizer import WordCache

    tokenizer = both_tiny[0]._tokenizer
    for max_length in (None, 7):
        cache = WordCache.for_tokenizer(tokenizer, max_length)
        assert cache is not None  # the tiny model's tokenizer is BERT-style
        expected = tokenizer.encode(text + " aaaa" * 3, add_special_tokens=False).ids
        if max_length is not None:
            expected = expected[:max_length]
        assert cache.ids(text + " aaaa" * 3) in (None, expected)


def test_word_cache_leaves_other_text_to_the_tokenizer(both_tiny: tuple[Any, Any]) -> None:
    from gitmem.index.tokenizer import WordCache

    cache = WordCache.for_tokenizer(both_tiny[0]._tokenizer, None)
    assert cache is not None
    assert cache.ids("café au lait") is None  # accents: the normaliser's business
    with_added = WordCache(both_tiny[0]._tokenizer.model, ("[UNK]",), None)
    assert with_added.ids("see [UNK] here") is None  # added tokens are matched before splitting
    assert cache.ids("fix the flaky test") is not None


def test_chunks_count_words_across_every_unicode_space() -> None:
    """The short-text shortcut counts words with str.split; windows are cut at \\S+ runs.
    The two agree on every whitespace character (a record of 200 words split by an
    ideographic space or U+001F is still one chunk, of 201 it is two)."""
    spaces = [chr(c) for c in range(0x110000) if re.fullmatch(r"\s", chr(c))]
    assert spaces == [chr(c) for c in range(0x110000) if chr(c).isspace()]
    for space in spaces:
        assert chunks(space.join(["w"] * 200)) == [space.join(["w"] * 200)]
        assert len(chunks(space.join(["w"] * 201))) == 2


@pytest.mark.parametrize("variant", list(_variants()))
def test_query_vectors_of_every_layout(variants: Path, variant: str) -> None:
    """encode_query is encode's vector within 1e-6 for every layout, and where
    queryvec.query_encoder reads the folder (no weights, no mapping, float32 or float16) it
    gives the same bits without numpy (tests/test_queryvec.py tests it further)."""
    folder = variants / variant
    model, encoder = load(str(folder)), queryvec.query_encoder(folder)
    assert model is not None
    other = (
        "int8",
        "weights",
        "mapping",
        "weights and mapping",
        "float16 with weights and mapping",
    )
    assert (encoder is None) == (variant in other)
    for text in TEXTS:
        vector = model.encode_query(text)
        np.testing.assert_allclose(vector, model.encode([text])[0], rtol=0, atol=1e-6)
        assert encoder is None or encoder.encode_query(text) == vector
