"""A stand-in for a model's `tokenizers.Tokenizer` that builds the real one only when it must.

Building the tokenizer of a 30k-word WordPiece vocabulary costs ~35 ms with the GIL held, and
importing `tokenizers` ~12 ms more: a tenth of a `gitmem recall` process, to tokenize a query
of a few words. For the pipeline static models ship with (BertNormalizer, BertPreTokenizer,
WordPiece: the one gitmem.index.wordpiece reproduces for ASCII text), this reads tokenizer.json with
the standard library and tokenizes plain ASCII texts itself: gitmem.index.wordpiece normalises and
splits, and `WordPiece.tokenize` below is the tokenizers library's greedy longest-match-first.
Anything else (other text, an added token, special tokens, padding, a call it does not know)
builds the real tokenizer, gives it the settings made so far and hands the call over; so does
every call once it exists. tests/test_lazytokenizer.py compares the two on random text.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, NamedTuple

from gitmem.index.wordpiece import WordCache

__all__ = ["LazyTokenizer", "WordPiece"]


class Token(NamedTuple):
    id: int


class Encoding(NamedTuple):
    ids: list[int]


class WordPiece:
    """The tokenizers library's WordPiece model (`tokenize` of one pre-tokenized word)."""

    def __init__(self, vocab: dict[str, int], unk_token: str, prefix: str, max_chars: int) -> None:
        self.vocab = vocab
        self.unk_token = unk_token
        self.prefix = prefix
        self.max_chars = max_chars

    def tokenize(self, word: str) -> list[Token]:
        unknown = [Token(self.vocab[self.unk_token])]
        if len(word) > self.max_chars:
            return unknown
        found: list[Token] = []
        start = 0
        while start < len(word):
            end = len(word)
            while start < end:
                piece = word[start:end] if start == 0 else self.prefix + word[start:end]
                if piece in self.vocab:
                    found.append(Token(self.vocab[piece]))
                    break
                end -= 1
            else:
                return unknown  # no piece of the rest is in the vocabulary
            start = end
        return found


class LazyTokenizer:
    """Answers `no_padding`, `enable_truncation(n)`, `no_truncation`, `token_to_id`,
    `get_vocab_size` and `encode_batch_fast(texts, add_special_tokens=False)` for plain ASCII
    texts itself; everything else through the real tokenizer, built on first need."""

    def __init__(self, config: dict[str, Any], build: Callable[[], Any]) -> None:
        model = config["model"]
        self._vocab: dict[str, int] = model["vocab"]
        self._added = {str(t["content"]): int(t["id"]) for t in config.get("added_tokens") or ()}
        self._standin = WordPiece(
            self._vocab,
            model["unk_token"],
            model["continuing_subword_prefix"],  # "" is a prefix too: the real one's, as is
            model["max_input_chars_per_word"],
        )
        self._build = build
        self._real: Any = None
        self._settings: list[tuple[str, tuple[Any, ...], dict[str, Any]]] = []
        # Until told otherwise, tokenizer.json's padding and truncation hold: the real one's.
        self._padding = True
        self._truncation_set = False
        self._max_length: int | None = None
        self._words: dict[int | None, WordCache | None] = {}
        # What WordCache.for_tokenizer reads to tell whether it reproduces this pipeline.
        self._description = json.dumps({**config, "model": {"type": model["type"]}})

    @classmethod
    def read(cls, path: Path, build: Callable[[], Any]) -> LazyTokenizer | None:
        """The stand-in for the tokenizer in ``path``, or None when the file is not the plain
        WordPiece pipeline it knows (or not readable: the real tokenizer says why)."""
        try:
            config = json.loads(path.read_bytes())
        except (OSError, ValueError):
            return None
        if not isinstance(config, dict):
            return None
        model = config.get("model") or {}
        wordpiece = (
            model.get("type") == "WordPiece"
            and isinstance(model.get("vocab"), dict)
            and model.get("unk_token") in model["vocab"]
            and isinstance(model.get("continuing_subword_prefix"), str)
            and type(model.get("max_input_chars_per_word")) is int
            and all(isinstance(t, dict) for t in config.get("added_tokens") or ())
        )
        if not wordpiece:
            return None
        lazy = cls(config, build)
        return lazy if lazy._word_cache(None) is not None else None

    # --- what a query's encoding asks -------------------------------------------------------

    def no_padding(self) -> None:
        self._padding = False
        self._setting("no_padding")

    def no_truncation(self) -> None:
        self._truncation_set, self._max_length = True, None
        self._setting("no_truncation")

    def enable_truncation(self, max_length: int, **options: Any) -> None:
        # A stride, a strategy or a direction: the real one's to apply.
        self._truncation_set, self._max_length = not options, max_length
        self._setting("enable_truncation", max_length, **options)

    def token_to_id(self, token: str) -> int | None:
        if self._real is not None:
            return self._real.token_to_id(token)  # type: ignore[no-any-return]
        return self._added.get(token, self._vocab.get(token))

    def get_vocab_size(self, with_added_tokens: bool = True) -> int:
        if self._real is not None:
            return self._real.get_vocab_size(with_added_tokens)  # type: ignore[no-any-return]
        # Counted, not a union of the key sets: a set of 30k words costs a recall ~3 ms.
        extra = sum(t not in self._vocab for t in self._added) if with_added_tokens else 0
        return len(self._vocab) + extra

    @property
    def model(self) -> Any:
        """The WordPiece model: the real one once built (gitmem.index.wordpiece's cache of an index
        build uses it), the stand-in until then."""
        return self._standin if self._real is None else self._real.model

    def encode_batch_fast(self, texts: Sequence[str], add_special_tokens: bool = True) -> Any:
        ready = self._truncation_set and not self._padding
        words = self._word_cache(self._max_length) if ready and self._real is None else None
        if words is not None and not add_special_tokens:
            found = [words.ids(text) for text in texts]
            if all(ids is not None for ids in found):
                return [Encoding(ids) for ids in found if ids is not None]
        return self._tokenizer().encode_batch_fast(texts, add_special_tokens=add_special_tokens)

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):  # copy, pickle and the like: not the tokenizer's business
            raise AttributeError(name)
        return getattr(self._tokenizer(), name)

    # --- the real one -----------------------------------------------------------------------

    def _tokenizer(self) -> Any:
        if self._real is None:
            real = self._build()
            for name, args, options in self._settings:
                getattr(real, name)(*args, **options)
            self._real = real
        return self._real

    def _setting(self, name: str, *args: Any, **options: Any) -> None:
        self._settings.append((name, args, options))
        if self._real is not None:
            getattr(self._real, name)(*args, **options)

    def _word_cache(self, max_length: int | None) -> WordCache | None:
        """gitmem.index.wordpiece's cache over the stand-in model; None for a pipeline it does not
        reproduce."""
        if max_length not in self._words:
            described = _Described(self._description, self._standin)
            self._words[max_length] = WordCache.for_tokenizer(described, max_length)
        return self._words[max_length]


class _Described(NamedTuple):
    """A tokenizer as WordCache.for_tokenizer reads one: its JSON (without the vocabulary,
    which it does not look at) and its model."""

    text: str
    model: WordPiece

    def to_str(self) -> str:
        return self.text
