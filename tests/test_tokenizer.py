"""The tokenizer stand-in gives the real tokenizer's ids, builds it only when it must, and
hands it the settings made before."""

from __future__ import annotations

import string
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tinymodel import build_tiny_model
from tokenizers import Tokenizer

from gitmem.index import embedding
from gitmem.index.modelfiles import ModelUnavailable
from gitmem.index.tokenizer import LazyTokenizer

WORDS = ["retry", "webhook", "deliveries", "un", "##able", "postgres", "[UNK]", "[CLS]", "ß"]
ASCII = string.ascii_letters + string.digits + string.punctuation + " \t\n\r\x00\x07\x7f"


@pytest.fixture(scope="module")
def tokenizer_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("model") / "tiny"
    build_tiny_model(out)
    return out / "tokenizer.json"


def pair(path: Path, truncation: int | None) -> tuple[LazyTokenizer, Any, list[str]]:
    built: list[str] = []

    def build() -> Tokenizer:
        built.append("built")
        return Tokenizer.from_file(str(path))

    lazy = LazyTokenizer.read(path, build)
    assert lazy is not None
    real = Tokenizer.from_file(str(path))
    for tokenizer in (lazy, real):
        tokenizer.no_padding()
        if truncation is None:
            tokenizer.no_truncation()
        else:
            tokenizer.enable_truncation(truncation)
    return lazy, real, built


def ids(tokenizer: Any, texts: list[str]) -> list[list[int]]:
    return [e.ids for e in tokenizer.encode_batch_fast(texts, add_special_tokens=False)]


texts = st.lists(
    st.one_of(
        st.text(alphabet=ASCII, max_size=300),
        st.lists(st.sampled_from(WORDS), max_size=20).map(" ".join),
        st.text(alphabet="ab", min_size=90, max_size=130),  # around the 100-character limit
    ),
    min_size=1,
    max_size=4,
)


@settings(max_examples=300, deadline=None)
@given(batch=texts, truncation=st.sampled_from([None, 3, 512]))
def test_same_ids_as_the_real_tokenizer(
    tokenizer_file: Path, batch: list[str], truncation: int | None
) -> None:
    lazy, real, _ = pair(tokenizer_file, truncation)
    assert ids(lazy, batch) == ids(real, batch)


def test_builds_the_real_one_only_when_a_text_needs_it(tokenizer_file: Path) -> None:
    lazy, real, built = pair(tokenizer_file, 2)
    assert ids(lazy, ["retry the webhook deliveries"]) == ids(
        real, ["retry the webhook deliveries"]
    )
    assert lazy.get_vocab_size() == real.get_vocab_size()
    assert lazy.get_vocab_size(False) == real.get_vocab_size(False)
    for token in ("[UNK]", "[CLS]", "retry", "##s", "no such token"):
        assert lazy.token_to_id(token) == real.token_to_id(token)
    assert lazy.model.unk_token == real.model.unk_token and built == []
    # Non-ASCII text, an added token: the real one, with the truncation set before it existed.
    for text in ("straße café", "see [UNK] here"):
        assert ids(lazy, [text]) == ids(real, [text])
    assert built == ["built"] and len(ids(lazy, ["a b c d e"])[0]) == 2
    assert lazy.get_vocab() == real.get_vocab()  # any other call: the real one's


def test_padding_special_tokens_and_unset_truncation_go_to_the_real_one(
    tokenizer_file: Path,
) -> None:
    for setup in ("padding", "special tokens", "truncation unset"):
        built: list[str] = []
        lazy = LazyTokenizer.read(
            tokenizer_file,
            lambda b=built: b.append("built") or Tokenizer.from_file(str(tokenizer_file)),
        )
        assert lazy is not None
        if setup != "padding":
            lazy.no_padding()
        if setup != "truncation unset":
            lazy.no_truncation()
        lazy.encode_batch_fast(["retry"], add_special_tokens=setup == "special tokens")
        assert built == ["built"], setup


def test_other_pipelines_are_not_stood_in_for(tokenizer_file: Path, tmp_path: Path) -> None:
    import json

    config = json.loads(tokenizer_file.read_text())
    for change in ({"normalizer": None}, {"pre_tokenizer": {"type": "Whitespace"}}):
        other = tmp_path / "tokenizer.json"
        other.write_text(json.dumps({**config, **change}))
        assert LazyTokenizer.read(other, lambda: None) is None
    assert LazyTokenizer.read(tmp_path / "missing.json", lambda: None) is None


def test_a_recall_model_loads_without_the_tokenizers_library(tokenizer_file: Path) -> None:
    import subprocess
    import sys

    code = (
        "import sys; from gitmem.index import embedding\n"
        f"model = embedding.load({str(tokenizer_file.parent)!r})\n"
        "model.encode(['retry the webhook deliveries'])\n"
        "print('tokenizers' in sys.modules)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "False"


@pytest.mark.parametrize(
    "change",
    [
        {"continuing_subword_prefix": ""},
        {"max_input_chars_per_word": 0},
        {"max_input_chars_per_word": 5},
        {"added": "[MASK]"},
        {"added": "Webhook"},
    ],
)
def test_same_ids_for_other_wordpiece_settings(
    tokenizer_file: Path, tmp_path: Path, change: dict[str, Any]
) -> None:
    """The stand-in takes the model's settings as they are ("" is a prefix, 0 a limit), and an
    added token marked "normalized" is matched, as the real one matches it, after lower-casing:
    "[mask]" and "WEBHOOK" are split off too (the index build's word cache alike)."""
    import json

    from gitmem.index.tokenizer import WordCache

    config = json.loads(tokenizer_file.read_text())
    if "added" in change:
        token = {"content": change["added"], "single_word": False, "lstrip": False}
        token.update(rstrip=False, normalized=True, special=False, id=len(config["model"]["vocab"]))
        config["added_tokens"] = [*(config.get("added_tokens") or []), token]
    else:
        config["model"].update(change)
    path = tmp_path / "tokenizer.json"
    path.write_text(json.dumps(config))
    lazy, real, _ = pair(path, None)
    words = WordCache.for_tokenizer(real, None)
    assert words is not None
    for text in ("retry webhook deliveries", "unable [mask] retry", "retry WEBHOOK", "retrying"):
        assert ids(lazy, [text]) == ids(real, [text]), text
        assert words.ids(text) in (None, ids(real, [text])[0]), text


def test_a_tokenizer_file_only_the_real_one_rejects_is_reported_as_a_model_problem(
    tokenizer_file: Path, tmp_path: Path
) -> None:
    """The stand-in reads less of tokenizer.json than the real tokenizer: damage elsewhere in
    it surfaces when a text first needs the real one, as the same refusal loading gave."""
    import json
    import shutil

    folder = tmp_path / "damaged"
    shutil.copytree(tokenizer_file.parent, folder)
    config = json.loads((folder / "tokenizer.json").read_text())
    (folder / "tokenizer.json").write_text(
        json.dumps({**config, "post_processor": {"type": "Nonsense"}})
    )
    model = embedding.load(str(folder))
    assert model is not None
    model.encode(["retry the webhook"])  # plain ASCII: the stand-in's
    with pytest.raises(ModelUnavailable, match=r"cannot read tokenizer\.json"):
        model.encode(["café au lait"])
