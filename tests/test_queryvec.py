"""A query's vector without numpy (queryvec.query_encoder) and with it (Embedder.encode_query):
the same bits, and the same vector as `encode` within 1e-6."""

from __future__ import annotations

import json
import math
import shutil
import subprocess
import sys
from array import array
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tinymodel import build_tiny_model

from gitmem.index import embedding, queryvec
from gitmem.index.embedding import load
from gitmem.index.modelfiles import fingerprint
from gitmem.index.queryvec import QueryEncoder, query_encoder

DISTILLED = Path(__file__).resolve().parents[1] / "benchmarks/.models/minilm-distilled-256"

TEXTS = [
    "fix the flaky login test",
    "Fix The FLAKY login-test, again!",
    "",
    "   ",
    "café crème brûlée naïve résumé",
    "数据库迁移失败 日本語のテキスト",
    "deploy 🙂🚀 the release",
    "🙂 ∮∯ ⊕ 🚀",  # only unknown words
    "[UNK] and [CLS] as text",
    "\x00 nul and \x7f del\ttab\nnewline",
    "the " * 2000,  # longer than max_length × the median token length
    "mixed CASE and Ünïcödé " * 200 + "tail words at the very end",
]


@pytest.fixture(scope="module")
def models(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The tiny model as built (float32), quantised by model2vec to float16 and to int8, and
    with max_length 8 (so short texts are truncated too)."""
    from model2vec import StaticModel

    root = tmp_path_factory.mktemp("queryvec")
    build_tiny_model(root / "float32")
    for dtype in ("float16", "int8"):
        quantised = StaticModel.from_pretrained(root / "float32", quantize_to=dtype)
        quantised.save_pretrained(root / dtype)
    shutil.copytree(root / "float32", root / "short")
    config = json.loads((root / "short" / "config.json").read_text())
    (root / "short" / "config.json").write_text(json.dumps({**config, "max_length": 8}))
    return {p.name: p for p in root.iterdir()}


def _both(folder: Path) -> tuple[QueryEncoder, embedding.Embedder]:
    encoder, model = query_encoder(folder), load(str(folder))
    assert encoder is not None and model is not None
    return encoder, model


def _assert_same(encoder: QueryEncoder, model: embedding.Embedder, text: str) -> None:
    """The encoder's two arithmetics (the standard library's, and numpy's where a process has
    it) and the embedder's give the same bits, and `encode`'s vector within 1e-6."""
    vector = encoder.encode_query(text)
    assert isinstance(vector, array) and vector.typecode == "f"
    assert vector == model.encode_query(text)  # bit for bit
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(queryvec, "_numpy_loaded", lambda: False)
        without = encoder.encode_query(text)
    assert without.tobytes() == vector.tobytes()
    np.testing.assert_allclose(np.array(vector), model.encode([text])[0], rtol=0, atol=1e-6)


@pytest.mark.parametrize("name", ["float32", "float16", "short"])
def test_both_paths_give_the_same_bits(models: dict[str, Path], name: str) -> None:
    encoder, model = _both(models[name])
    for text in TEXTS:
        _assert_same(encoder, model, text)


@pytest.mark.skipif(not DISTILLED.is_dir(), reason="the distilled benchmark model is not built")
def test_both_paths_give_the_same_bits_for_the_distilled_model() -> None:
    encoder, model = _both(DISTILLED)
    for text in TEXTS:
        _assert_same(encoder, model, text)


@pytest.fixture(scope="module")
def tiny_pair(models: dict[str, Path]) -> tuple[QueryEncoder, embedding.Embedder]:
    return _both(models["float16"])


@settings(max_examples=60, deadline=None)
@given(text=st.text(max_size=600))
def test_both_paths_agree_on_any_text(
    tiny_pair: tuple[QueryEncoder, embedding.Embedder], text: str
) -> None:
    _assert_same(*tiny_pair, text)


def test_vectors_are_unit_or_zero(models: dict[str, Path]) -> None:
    encoder = query_encoder(models["float32"])
    assert encoder is not None
    assert math.isclose(
        math.fsum(x * x for x in encoder.encode_query("fix the bug")), 1, abs_tol=1e-6
    )
    for text in ("", "   ", "🙂 ∮∯ ⊕ 🚀"):
        assert encoder.encode_query(text) == array("f", bytes(4 * encoder.dim))


def test_the_encoder_names_the_model_as_load_does(models: dict[str, Path]) -> None:
    encoder, model = _both(models["float32"])
    assert encoder.info == model.info
    assert encoder.info.fingerprint == fingerprint(models["float32"])
    assert (encoder.dim, encoder.folder) == (32, models["float32"].absolute())


def test_unit_mean_is_the_float32_mean_scaled() -> None:
    rows = [[1.0, 2.0, 2.0], [0.1, 0.2, 0.3]]
    mean = np.array(rows, np.float32).mean(axis=0, dtype=np.float32)
    expected = mean / np.sqrt(np.sum(mean.astype(np.float64) ** 2))
    got = queryvec.unit_mean(rows, 3)
    np.testing.assert_allclose(np.array(got), expected, rtol=0, atol=1e-7)
    assert queryvec.unit_mean([], 3) == array("f", [0, 0, 0])
    assert queryvec.unit_mean([[0.0, 0.0]], 2) == array("f", [0, 0])


@settings(max_examples=200, deadline=None)
@given(
    half=st.booleans(),
    rows=st.integers(0, 12).flatmap(
        lambda n: st.lists(
            st.lists(
                st.floats(-1000, 1000, allow_subnormal=True, width=32)
                | st.sampled_from([0.0, -0.0, 1e-45, 6e-8, 65504.0, -65504.0]),
                min_size=5,
                max_size=5,
            ),
            min_size=n,
            max_size=n,
        )
    ),
)
def test_the_numpy_arithmetic_is_the_standard_librarys(half: bool, rows: list[list[float]]) -> None:
    """Bit for bit, on rows from either matrix type, subnormals, zeros and extremes."""
    matrix = np.array(rows, dtype=np.float16 if half else np.float32).reshape(len(rows), 5)
    expected = queryvec.unit_mean((row.tolist() for row in matrix), 5, half=half)
    assert embedding.unit_mean_numpy(matrix, half=half).tobytes() == expected.tobytes()


def test_other_layouts_fall_back_to_encode(models: dict[str, Path]) -> None:
    model = load(str(models["int8"]))
    assert model is not None and query_encoder(models["int8"]) is None
    vector = model.encode_query("fix the bug")
    assert vector == array("f", model.encode(["fix the bug"])[0].tolist())


def _damage(folder: Path, how: str) -> None:
    matrix = folder / "model.safetensors"
    data = matrix.read_bytes()
    if how == "truncated matrix":
        matrix.write_bytes(data[:-100])
    elif how == "empty matrix":
        matrix.write_bytes(b"")
    elif how == "header too long":
        matrix.write_bytes((len(data) + 1).to_bytes(8, "little") + data[8:])
    elif how == "extra tensor":
        from safetensors.numpy import load_file, save_file

        save_file({**load_file(matrix), "weights": np.ones(3, np.float32)}, matrix)
    elif how == "bad tokenizer":
        (folder / "tokenizer.json").write_text('{"model": "not a tokenizer"}')
    elif how == "garbage config":
        (folder / "config.json").write_text("not json")
    elif how == "another pooling":
        (folder / "config.json").write_text(json.dumps({"pooling": "cls"}))
    elif how == "no model":
        matrix.unlink()


@pytest.mark.parametrize(
    "how",
    [
        "truncated matrix",
        "empty matrix",
        "header too long",
        "extra tensor",
        "bad tokenizer",
        "garbage config",
        "another pooling",
        "no model",
    ],
)
def test_a_folder_it_cannot_read_exactly_gives_none(
    models: dict[str, Path], tmp_path: Path, how: str
) -> None:
    folder = tmp_path / "model"
    shutil.copytree(models["float32"], folder)
    _damage(folder, how)
    assert query_encoder(folder) is None
    assert query_encoder(tmp_path / "missing") is None


def test_a_query_imports_no_numpy(models: dict[str, Path]) -> None:
    code = (
        "import sys; from pathlib import Path; from gitmem.index.queryvec import query_encoder\n"
        f"v = query_encoder(Path({str(models['float16'])!r})).encode_query('x fix the bug')\n"
        "heavy = ('numpy', 'tokenizers', 'model2vec', 'safetensors')\n"
        "print(len(v), sorted(m for m in sys.modules if m.split('.')[0] in heavy))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "32 []"
