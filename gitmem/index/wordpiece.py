"""The token ids a BERT-style tokenizer gives an ASCII text, found without running its whole
pipeline on every text.

Tokenizing is most of the cost of embedding with a static model, and most of that is the
tokenizer's normaliser and pre-tokeniser walking each text character by character. For the
tokenizers static models ship with (BertNormalizer lowercasing, BertPreTokenizer, WordPiece)
and plain ASCII text, both steps are simple: drop control characters, lower-case, split into
runs of letters and digits and single punctuation marks. Each distinct word then goes through
the tokenizer's own WordPiece model once, and its ids are remembered. Any other text (non-ASCII,
containing an added token such as "[UNK]") or any other tokenizer goes the usual way, so the ids
are always the tokenizer's own; tests compare the two on random text.
"""

from __future__ import annotations

import json
import re
import unicodedata
from typing import Any

__all__ = ["WordCache"]

# Control characters BertNormalizer's clean_text removes (tab, newline and return are spaces).
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")
# BertPreTokenizer on lower-cased ASCII: runs of letters and digits, each punctuation mark alone.
_WORDS = re.compile(r"[a-z0-9]+|[!-/:-@\[-`{-~]")
_MAX_WORDS = 500_000  # remembered words; the cache starts again beyond this
_SPACES = str.maketrans("\t\n\r", "   ")  # what clean_text makes of them


class WordCache:
    """Token ids per text, from a cache of ids per word."""

    def __init__(
        self,
        model: Any,
        added: tuple[str, ...],
        max_length: int | None,
        *,
        normalized: tuple[str, ...] = (),
    ) -> None:
        self._model = model  # the tokenizer's WordPiece model
        self._added = added
        # Added tokens marked "normalized" are looked for in the normalised text, as the
        # normaliser makes them: "[MASK]" then splits "[mask]" off too.
        self._normalized = tuple({_normal(token) for token in normalized})
        self._max_length = max_length
        self._words: dict[str, list[int]] = {}

    @classmethod
    def for_tokenizer(cls, tokenizer: Any, max_length: int | None) -> WordCache | None:
        """A cache for `tokenizer` if its pipeline is the one this module reproduces."""
        config = json.loads(tokenizer.to_str())
        normalizer = config.get("normalizer") or {}
        plain = (
            normalizer.get("type") == "BertNormalizer"
            and normalizer.get("clean_text") is True
            and normalizer.get("lowercase") is True
            and (config.get("pre_tokenizer") or {}).get("type") == "BertPreTokenizer"
            and (config.get("model") or {}).get("type") == "WordPiece"
        )
        if not plain:
            return None
        tokens = config.get("added_tokens") or ()
        added = tuple(str(token["content"]) for token in tokens)
        normalized = tuple(str(token["content"]) for token in tokens if token.get("normalized"))
        return cls(tokenizer.model, added, max_length, normalized=normalized)

    def ids(self, text: str) -> list[int] | None:
        """The ids the tokenizer gives `text` without special tokens, truncated as it truncates;
        None when this text must go through the tokenizer itself."""
        if not text.isascii() or any(token in text for token in self._added):
            return None
        cleaned = _CONTROL.sub("", text).lower()
        if self._normalized:
            spaced = cleaned.translate(_SPACES)
            if any(token in spaced for token in self._normalized):
                return None
        words = self._words
        if len(words) > _MAX_WORDS:
            words.clear()
        out: list[int] = []
        for word in _WORDS.findall(cleaned):
            found = words.get(word)
            if found is None:
                found = words[word] = [token.id for token in self._model.tokenize(word)]
            out.extend(found)
        return out if self._max_length is None else out[: self._max_length]


def _normal(token: str) -> str:
    """An added token as BertNormalizer makes it, as far as matching ASCII text goes: lower-cased
    and without accents (a token that stays non-ASCII can never match, which is harmless)."""
    decomposed = unicodedata.normalize("NFD", _CONTROL.sub("", token).translate(_SPACES))
    return "".join(c for c in decomposed if unicodedata.category(c) != "Mn").lower()
