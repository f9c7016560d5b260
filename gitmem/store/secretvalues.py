"""What a secret *value* looks like, for the rules of the secret guard (gitmem.store.secretrules).

A rule finds a place where a secret may stand (``password = ...``, ``Bearer ...``, a URL's
password); these checks decide whether what stands there is one: long and random enough (length,
Shannon entropy, character classes), and not a placeholder, a stand-in word, a reference to a
secret held elsewhere, a variable name, a path, a date or a digest.
"""

from __future__ import annotations

import math
import re
from collections import Counter

__all__ = [
    "entropy",
    "non_secret_shape",
    "only_stand_in",
    "placeholder",
    "prose_password",
    "random_enough",
    "uuid",
]


# Marks that real credentials never contain but documentation and templates do. A run of one
# repeated character ("ghp_XXXX...") is left to the entropy threshold.
_PLACEHOLDER_MARKS = (
    "example", "sample", "dummy", "fake", "placeholder", "redacted", "changeme", "your",
    "xxxx", r"\*\*\*", r"\.\.\.", "<", ">", r"\$\{", r"\{\{",
)  # fmt: skip
_PLACEHOLDER = re.compile("|".join(_PLACEHOLDER_MARKS))
# Substrings that make an assignment's value a reference to a secret rather than the secret.
_REFERENCE_MARKS = (
    "$(", "%(", "{", "}", "os.environ", "getenv", "process.env", "env[", "vault:", "://",
)  # fmt: skip
# Whole values that are common non-secrets: shell variables, digests, versions, dates, paths
# and e-mail addresses. Matched from the start of the lower-cased value. A UUID is not among
# them: many services issue UUIDs as API keys (Heroku's), so under a secret's name it counts.
_NON_SECRET_SHAPE = re.compile(
    r"\$|%\w+%$|(?:sha\d+|md5)[:-]|v?\d+\.\d+\.\d+|\d{4}-\d{2}-\d{2}"
    r"|(?:~|\.{1,2})?/(?:[\w.-]{1,24}/)*[\w.-]{0,24}$|[a-z]:\\|[\w.+-]+@[\w-]+\.[\w.]+$"
)
_UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
# Words that make an assignment's value a stand-in; compared after undoing "l33t" spelling.
_STAND_IN = re.compile(
    r"password|passwd|secret|token|test|admin|letmein|qwerty|12345|abcdef|hunter|foobar"
    r"|todo|fixme|replace|insert|enter|here|default|none|null|true|false"
)
_LEET = str.maketrans("013457@$!", "oleastasi")
_DIGIT = re.compile(r"\d")
_SPACE = re.compile(r"\s")
_IDENTIFIER = re.compile(r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*")
_NAME = re.compile(r"[a-z_][a-z0-9_]*|[A-Z_][A-Z0-9_]*|[A-Z]?[a-z]+(?:[A-Z][a-z]+)*")
_TRAILING_DIGITS = re.compile(r"[a-z]\d{2,}$")  # orchard_falcon42: a person's password
_SNAKE = re.compile(r"[a-z][a-z0-9]*(?:_[a-z0-9]+)+|[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+")
# Characters that mark code or markup rather than a password written in a sentence.
_CODE = re.compile(r"[()\[\]{}<>\\|]|^[a-z_]+=|^\$[\w{(]|%\(|%[sd]$")


_SAMPLE = 512  # characters of a value enough to judge it, and the size of the table below
_C_LOG_C = tuple(c * math.log2(c) if c else 0.0 for c in range(_SAMPLE + 1))


def entropy(value: str) -> float:
    """Shannon entropy in bits per character, of at most the first _SAMPLE characters."""
    value = value[:_SAMPLE]
    n = len(value)
    return math.log2(n) - sum(map(_C_LOG_C.__getitem__, Counter(value).values())) / n


def _classes(value: str) -> int:
    """How many of lower case, upper case, digits and other characters the value mixes."""
    has_lower, has_upper = value != value.upper(), value != value.lower()
    return has_lower + has_upper + bool(_DIGIT.search(value)) + (not value.isalnum())


def placeholder(value: str) -> bool:
    return _PLACEHOLDER.search(value.lower()) is not None


def non_secret_shape(value: str) -> bool:
    """A shell variable, a digest, a version, a date, a path or an e-mail address."""
    return _NON_SECRET_SHAPE.match(value.lower()) is not None


def _stand_in_mask(value: str) -> list[bool]:
    """Which characters of `value` belong to a stand-in word, read as written (12345) or
    with digits and symbols read as letters (p@ssw0rd)."""
    low = value.lower()
    covered = [False] * len(value)
    for form in (low, low.translate(_LEET)):  # translate keeps every character's place
        for match in _STAND_IN.finditer(form):
            covered[match.start() : match.end()] = [True] * (match.end() - match.start())
    return covered


def _mostly_stand_in(value: str) -> bool:
    """Whether stand-in words (p@ssw0rd2024, changeme_test) are most of `value`: inside a
    long random value the same letters turn up by chance ("gT35t" reads as "gtest")."""
    stand_in = sum(_stand_in_mask(value))
    return stand_in > 0 and stand_in * 5 >= len(value) * 2


def only_stand_in(value: str) -> bool:
    """Whether `value` is stand-in words and little else: they are most of it, and what is
    left is digits and symbols (password123, p@ssw0rd2024, secret!) or at most three
    characters. A password that merely contains one ("cUFa1se!XydGix" reads as "cufalse",
    "qA7true9", "830173572948" as "...test...") is a password."""
    if not _mostly_stand_in(value):  # digits read as a word by chance: "7357" as "test"
        return False
    covered = _stand_in_mask(value)
    rest = [char for char, stand_in in zip(value, covered, strict=True) if not stand_in]
    return len(rest) <= 3 or not any(char.isalpha() for char in rest)


def uuid(value: str) -> bool:
    return _UUID.fullmatch(value.lower()) is not None


def random_enough(value: str, *, password: bool = False) -> bool:
    """Whether an assignment's value looks like a real secret rather than a name or stand-in.

    A password may be a person's choice (maple2024!, orchard_falcon42): letters and digits
    are enough for it, where another secret must look machine-made.
    """
    if not (8 if password else 12) <= len(value) <= 400 or _SPACE.search(value):
        return False
    low = value.lower()
    if placeholder(value) or _NON_SECRET_SHAPE.match(low):
        return False
    if any(mark in low for mark in _REFERENCE_MARKS):
        return False
    has_digit = _DIGIT.search(value) is not None
    if "." in value and all(_NAME.fullmatch(part) for part in value.split(".")):
        return False  # a dotted name (settings.API_KEY, base64.b64decode): code
    if _SNAKE.fullmatch(value) and not (password and _TRAILING_DIGITS.search(value)):
        return False  # a snake_case or CONSTANT_CASE name (user_password): a variable
    if not has_digit and _IDENTIFIER.fullmatch(value):
        # camelCase names are mostly lower case; random letters are about half upper case.
        upper = sum(c.isupper() for c in value)
        if not 0.35 * len(value) < upper < len(value):
            return False
    if _mostly_stand_in(value):
        return False
    classes, bits = _classes(value), entropy(value)
    if password:
        return bits >= 2.5 and classes >= 2
    return bits >= 3.0 and classes >= 2 and (has_digit or classes >= 3 or value.isalpha())


def prose_password(value: str) -> bool:
    """Whether a word that follows "password is" in a sentence is the password itself: it
    mixes letters with digits (the sentence's own words do not), is not code, a date, a
    version, a path, a placeholder or a stand-in (password123)."""
    if not 6 <= len(value) <= 80 or _CODE.search(value) or not _DIGIT.search(value):
        return False
    if not any(char.isalpha() for char in value) or placeholder(value):
        return False
    if _NON_SECRET_SHAPE.match(value.lower()) or only_stand_in(value):
        return False
    return entropy(value) >= 2.0  # pepper3445 is 2.45 bits a character; aaaa1111 is 1.0
