"""The tiny stand-in model the tests build themselves: no hub, no network, the same on every
machine. Test scaffolding, so it lives with the tests and not in the installed package."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
import tinyvocab
from model2vec import StaticModel
from tokenizers import Tokenizer, models, normalizers, pre_tokenizers

from gitmem.index.modelbuild import save
from gitmem.index.modelfiles import ModelInfo

__all__ = ["build_tiny_model"]


def build_tiny_model(
    out_dir: Path, *, dim: int = 32, vocab: Sequence[str] | None = None, seed: int = 0
) -> ModelInfo:
    """Write a small but real model2vec model to ``out_dir``, built offline and the same on
    every machine: a WordPiece tokenizer over a few thousand English and programming words
    (or ``vocab``) and the vectors of `tinyvocab` (beside this file). A stand-in for tests, with a
    weak but real semantic signal."""
    tokens = tinyvocab.tokens(vocab)
    vectors = np.array(tinyvocab.vectors(tokens, dim, seed), dtype=np.float32)
    tokenizer = Tokenizer(models.WordPiece({t: i for i, t in enumerate(tokens)}, unk_token="[UNK]"))
    tokenizer.normalizer = normalizers.BertNormalizer(lowercase=True, strip_accents=True)
    tokenizer.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    config = {
        "model_type": "model2vec",
        "architectures": ["StaticModel"],
        "hidden_dim": dim,
        "normalize": True,
        "gitmem_tiny_model": {"seed": seed, "tokens": len(tokens)},
    }
    model = StaticModel(vectors=vectors, tokenizer=tokenizer, config=config, normalize=True)
    return save(model, out_dir, name=out_dir.name)
