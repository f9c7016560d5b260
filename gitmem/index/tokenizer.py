"""A stand-in for a model's `tokenizers.Tokenizer`: the token ids of plain ASCII text found with
the standard library, the real tokenizer built only for anything else.

Tokenizing is most of the cost of embedding with a static model, and building the tokenizer of a
30k-word WordPiece vocabulary costs ~35 ms with the GIL held (importing `tokenizers` ~12 ms more):
a tenth of a `gitmem recall` process, to tokenize a query of a few words. For the pipeline
static models ship with (BertNormalizer lowercasing, BertPreTokenizer, WordPiece) and plain
ASCII text, the normaliser and pre-tokeniser are simple: drop control characters, lower-case,
split into runs of letters and digits and single punctuation marks (`WordCache`, which also
remembers each distinct word's ids: an index build sees the same words again and again), and
`WordPiece.tokenize` is the tokenizers library's greedy longest-match-first. `LazyTokenizer`
reads tokenizer.json with the standard library and answers ASCII texts that way; anything else
(other text, an added token, special tokens, padding, a call it does not know, another
tokenizer) builds the real tokenizer, gives it the settings made so far and hands the call
over; so does every call once it exists. The ids are always the tokenizer's own:
tests/test_tokenizer.py compares the two on random text.
"""

from __future__ import annotations

import json
import re
import unicodedata
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, NamedTuple

__all__ = ["WIDE", "LazyTokenizer", "Tokens", "WordCache", "WordPiece", "load"]

# Control characters BertNormalizer's clean_text removes (tab, newline and return are spaces).
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")
# BertPreTokenizer on lower-cased ASCII: runs of letters and digits, each punctuation mark alone.
_WORDS = re.compile(r"[a-z0-9]+|[!-/:-@\[-`{-~]")
_MAX_WORDS = 500_000  # remembered words; the cache starts again beyond this
_SPACES = str.maketrans("\t\n\r", "   ")  # what clean_text makes of them
WIDE = 64  # batches at least this large are tokenized through a word cache


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
        """The WordPiece model: the real one once built (an index build's `WordCache` uses
        it), the stand-in until then."""
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
        """A `WordCache` over the stand-in model; None for a pipeline it does not reproduce."""
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


def load(path: Path, build: Callable[[Path], Any]) -> Any:
    """The tokenizer in ``path``: the stand-in where it reproduces the file's pipeline (it
    calls ``build(path)`` for the real one on first need), else ``build(path)``."""
    lazy = LazyTokenizer.read(path, lambda: build(path))
    return lazy if lazy is not None else build(path)


class Tokens:
    """A text's token ids as model2vec finds them, for the full embedder and `QueryEncoder`
    alike: no padding, truncation at max_length tokens after cutting the text to max_length ×
    the median token length characters, and the unknown token dropped."""

    def __init__(self, tokenizer: Any, max_length: int | None) -> None:
        self._tokenizer = tokenizer
        self._max_length = max_length
        # Whatever tokenizer.json says, model2vec never pads and truncates at its max_length.
        tokenizer.no_padding()
        if max_length is None:
            tokenizer.no_truncation()
        else:
            tokenizer.enable_truncation(max_length)
        self._unk = _unk_id(tokenizer)
        self._words: WordCache | bool | None = False  # made on the first large batch
        self._median: int | None = None  # the median token length, found on first need

    def ids(self, texts: Sequence[str]) -> list[list[int]]:
        if self._max_length is not None and any(len(t) > self._max_length for t in texts):
            # model2vec first cuts a text to max_length × the median token length characters.
            # The median is at least 1 (the model readers ask for 3 tokens or more, and only one
            # can be empty), so a text of max_length characters or fewer is never cut.
            if self._median is None:
                lengths = sorted(len(token) for token in self._tokenizer.get_vocab())
                self._median = (lengths[(len(lengths) - 1) // 2] + lengths[len(lengths) // 2]) // 2
            texts = [text[: self._max_length * self._median] for text in texts]
        words = self._word_cache() if len(texts) >= WIDE else None
        found = [None if words is None else words.ids(t) for t in texts]
        rest = [i for i, ids in enumerate(found) if ids is None]
        if rest:
            encodings = self._tokenizer.encode_batch_fast(
                [texts[i] for i in rest], add_special_tokens=False
            )
            for i, encoding in zip(rest, encodings, strict=True):
                found[i] = encoding.ids
        return [[i for i in ids or () if i != self._unk] for ids in found]

    def _word_cache(self) -> WordCache | None:
        """Index builds tokenize through a per-word cache (`WordCache`); a query or a small
        batch goes to the tokenizer directly."""
        if self._words is False:
            self._words = WordCache.for_tokenizer(self._tokenizer, self._max_length)
        return self._words if isinstance(self._words, WordCache) else None


def _unk_id(tokenizer: Any) -> int | None:
    """The unknown token's id, which model2vec drops from every text (as its loader finds it)."""
    model = tokenizer.model
    if hasattr(model, "unk_token"):  # WordPiece, BPE, WordLevel
        return None if model.unk_token is None else tokenizer.token_to_id(model.unk_token)
    unk = json.loads(tokenizer.to_str())["model"].get("unk_id")  # Unigram keeps only the id
    return unk if isinstance(unk, int) else None
