"""The rules of the secret guard (gitmem.store.guard): what a credential looks like.

Two kinds of rule: vendor tokens with a fixed shape (``ghp_``, ``AKIA``, PEM blocks ...), which
are trusted on shape alone, and ``password = ...`` style assignments, whose value must also
look random (length, Shannon entropy, character classes) and must not look like a placeholder,
a variable, a path or a digest. Every rule is a regex that starts with a literal, compiled on
import and run once over the text; the slower checks run only on its matches.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass

__all__ = ["RULES", "Classify", "Rule"]


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
# Whole values that are common non-secrets: shell variables, UUIDs, digests, versions, dates,
# paths and e-mail addresses. Matched from the start of the lower-cased value.
_NON_SECRET_SHAPE = re.compile(
    r"\$|%\w+%$|[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$"
    r"|(?:sha\d+|md5)[:-]|v?\d+\.\d+\.\d+|\d{4}-\d{2}-\d{2}"
    r"|(?:~|\.{1,2})?/(?:[\w.-]{1,24}/)*[\w.-]{0,24}$|[a-z]:\\|[\w.+-]+@[\w-]+\.[\w.]+$"
)
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
_SNAKE = re.compile(r"[a-z][a-z0-9]*(?:_[a-z0-9]+)+|[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+")
# Key names whose value describes a secret without being one (token_url, password_file,
# max_tokens, secret_name, page_token ...). Applied to the snake_case form of the key.
_DESCRIBES = re.compile(
    r"(?:^|_)(?:ids?|names?|type|kind|url|uri|path|file|dir|endpoint|env|var|field|header|hash"
    r"|sha\d*|digest|checksum|fingerprint|policy|ttl|expiry|expires|expiration|length|len|size"
    r"|count|limit|max|min|version|format|regex|pattern|prompt|label|description|desc|hint|help"
    r"|page|next|cursor|at|date|time|timeout|source|provider|manager|store|backend|mode"
    r"|enabled|required|usage|budget|rotation|strength|reset|template|schema|scopes?|audience"
    r"|issuer|location|region|public|tokens|tokenizers?)(?:_|$)"
)


_SAMPLE = 512  # characters of a value enough to judge it, and the size of the table below
_C_LOG_C = tuple(c * math.log2(c) if c else 0.0 for c in range(_SAMPLE + 1))


def _entropy(value: str) -> float:
    """Shannon entropy in bits per character, of at most the first _SAMPLE characters."""
    value = value[:_SAMPLE]
    n = len(value)
    return math.log2(n) - sum(map(_C_LOG_C.__getitem__, Counter(value).values())) / n


def _classes(value: str) -> int:
    """How many of lower case, upper case, digits and other characters the value mixes."""
    has_lower, has_upper = value != value.upper(), value != value.lower()
    return has_lower + has_upper + bool(_DIGIT.search(value)) + (not value.isalnum())


def _placeholder(value: str) -> bool:
    return _PLACEHOLDER.search(value.lower()) is not None


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


def _only_stand_in(value: str) -> bool:
    """Whether `value` is stand-in words and little else: they are most of it, and what is
    left is digits and symbols (password123, p@ssw0rd2024, secret!) or at most three
    characters. A password that merely contains one ("cUFa1se!XydGix" reads as "cufalse",
    "qA7true9", "830173572948" as "...test...") is a password."""
    if not _mostly_stand_in(value):  # digits read as a word by chance: "7357" as "test"
        return False
    covered = _stand_in_mask(value)
    rest = [char for char, stand_in in zip(value, covered, strict=True) if not stand_in]
    return len(rest) <= 3 or not any(char.isalpha() for char in rest)


def _random_enough(value: str, *, password: bool = False) -> bool:
    """Whether an assignment's value looks like a real secret rather than a name or stand-in."""
    if not (8 if password else 12) <= len(value) <= 400 or _SPACE.search(value):
        return False
    low = value.lower()
    if _placeholder(value) or _NON_SECRET_SHAPE.match(low):
        return False
    if any(mark in low for mark in _REFERENCE_MARKS):
        return False
    has_digit = _DIGIT.search(value) is not None
    if _SNAKE.fullmatch(value) or (
        "." in value and all(_NAME.fullmatch(part) for part in value.split("."))
    ):
        return False  # a snake_case, CONSTANT_CASE or dotted name (settings.API_KEY): a variable
    if not has_digit and _IDENTIFIER.fullmatch(value):
        # camelCase names are mostly lower case; random letters are about half upper case.
        upper = sum(c.isupper() for c in value)
        if not 0.35 * len(value) < upper < len(value):
            return False
    if _mostly_stand_in(value):
        return False
    classes, entropy = _classes(value), _entropy(value)
    if password:
        return entropy >= 2.5 and (classes >= 3 or (classes >= 2 and len(value) >= 10))
    return entropy >= 3.0 and classes >= 2 and (has_digit or classes >= 3 or value.isalpha())


Classify = Callable[[re.Match[str], str], str | None]


@dataclass(frozen=True)
class Rule:
    pattern: re.Pattern[str]
    classify: Classify
    # Matched against the text with ASCII folded to lower case: re's fast literal-prefix search
    # does not work under IGNORECASE, and case-blind keys (Password, BEARER) need it.
    folded: bool = False


def _secret(match: re.Match[str], text: str) -> str:
    """The secret as written (a folded rule matched lower-cased text, so slice the original)."""
    return text[match.start("s") : match.end("s")]


def _token(kind: str, min_entropy: float = 3.0) -> Classify:
    """A vendor token: trusted on shape, unless glued to a word or clearly a stand-in."""

    def classify(match: re.Match[str], text: str) -> str | None:
        start, secret = match.start("s"), _secret(match, text)
        if start and text[start - 1].isalnum():
            return None
        if _placeholder(secret) or _entropy(secret) < min_entropy:
            return None
        return kind

    return classify


def _private_key(match: re.Match[str], text: str) -> str | None:
    return None if "EXAMPLE" in _secret(match, text).upper() else "private-key"


def _random_value(kind: str, *, password: bool = False) -> Classify:
    def classify(match: re.Match[str], text: str) -> str | None:
        return kind if _random_enough(_secret(match, text), password=password) else None

    return classify


def _assigned(value: str, *, password: bool) -> str | None:
    if not _random_enough(value, password=password):
        return None
    return "password-assignment" if password else "secret-assignment"


def _flag(match: re.Match[str], text: str) -> str | None:
    return _assigned(_secret(match, text), password="pass" in match.group("flag"))


def _user_password(match: re.Match[str], text: str) -> str | None:
    """`user:password` in a URL or after `curl -u`."""
    if match.re is _URL_PASSWORD and not (match.start() and text[match.start() - 1].isalnum()):
        return None  # "://" without a scheme in front
    user, secret = match.group("user"), _secret(match, text)
    if len(secret) < 6 or secret == user or secret[0] in "$%{[" or _placeholder(secret):
        return None  # too short to matter, the dev default "guest:guest", or a template
    if _only_stand_in(secret):
        return None
    return "connection-string" if match.re is _URL_PASSWORD else "basic-auth"


_KEY_CHARS = re.compile(r"[\w.-]+")
_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")
# Key names that hold a secret, in snake_case; `pw` marks the ones that hold a password.
_SECRET_KEY = re.compile(
    r"(?P<pw>passw(?:or)?d|passphrase|(?:^|_)(?:pass|pwd)(?:_|$)|pwd$)|secret|token(?!i)"
    r"|(?:api|access|private|auth|signing|encryption|master|session|account|client|app"
    r"|consumer|shared|storage|service|license)_?key|credential"
)


def _assignment(match: re.Match[str], text: str) -> str | None:
    value = _secret(match, text)
    if len(value) < 8 or _SPACE.search(value):
        return None  # the common case in prose and code, so settled before the key is parsed
    before = text[max(0, match.start() - 40) : match.start()][::-1]
    head = _KEY_CHARS.match(before)
    key = (head.group()[::-1] if head else "") + text[match.start() : match.end("rest")]
    snake = _CAMEL.sub("_", key).lower().replace("-", "_").replace(".", "_")
    named = _SECRET_KEY.search(snake)
    if named is None or _DESCRIBES.search(snake):
        return None
    return _assigned(value, password=named.group("pw") is not None)


def _assign(keyword: str) -> Rule:
    """`<...keyword...> = value` in code, config, env files, JSON, YAML and URLs."""
    return _rule(
        rf"{keyword}(?P<rest>[\w.-]{{0,40}}+)[\"']?"
        r"(?::[ \t]*[a-z_][\w.\[\]|, ]{0,30}?[ \t]*(?==))?"  # a Python type annotation
        r"[ \t]*(?::=|=>|[:=])(?!=)[ \t]*(?:[bfru](?=[\"']))?(?P<q>[\"'])?"
        r"(?P<s>(?(q)[^\"'\n]{1,400}|[^\s\"'`,;()\[\]{}<>]{0,399}[^\s\"'`,;()\[\]{}<>.:!?]))"
        r"(?(q)(?P=q))",
        _assignment,
        folded=True,
    )


_URL_PASSWORD = re.compile(r"://(?P<user>[^\s:/@?#\"'`]*):(?P<s>[^\s/@?#\"'`]+)@\w")
_PEM = re.compile(
    r"(?P<s>-----BEGIN[ A-Z0-9]{0,20}PRIVATE KEY(?: BLOCK)?-----"
    r"(?:\\n|\s)+(?:[\w-]+:[^\n\\]*(?:\\n|\s)+)*"  # RFC 1421 headers: Proc-Type, DEK-Info
    r"[A-Za-z0-9+/=]{16}"  # some key material, so prose quoting the BEGIN line is not flagged
    r"(?:[A-Za-z0-9+/=\\\s]*+-----END[ A-Z0-9]{0,20}PRIVATE KEY(?: BLOCK)?-----"
    # A block cut short: take whole lines of key material, never the prose after it.
    r"|[A-Za-z0-9+/=]*+"
    r"(?:(?:\\n|[ \t]*\r?\n[ \t]*)[A-Za-z0-9+/=]++(?=\\n|\"|[ \t]*(?:\r?\n|$)))*+))"
)


def _rule(pattern: str, classify: Classify, *, folded: bool = False) -> Rule:
    return Rule(re.compile(pattern), classify, folded)


# Every pattern starts with a literal so that re can skip ahead with a fast substring search.
# Ordered by precedence: where two rules claim overlapping text, the earlier one wins, so a
# GitHub token in `token = "ghp_..."` is reported as a GitHub token, not as an assignment.
RULES = (
    Rule(_PEM, _private_key),
    *(
        _rule(rf"(?P<s>{p}[A-Z0-9]{{16}})(?![A-Za-z0-9])", _token("aws-access-key-id", 2.5))
        for p in ("AKIA", "ASIA")
    ),
    _rule(
        r"secret_?(?:access_?)?key[\"']?(?:[ \t]*[:=>]+[ \t]*|[ \t]+)[\"']?"
        r"(?P<s>[a-z0-9/+]{40})(?![\w/+=])",
        _token("aws-secret-access-key"),
        folded=True,
    ),
    _rule(r"\"private_key_id\"\s*:\s*\"(?P<s>[0-9a-f]{40})\"", _token("gcp-service-account")),
    _rule(r"(?P<s>AIza[\w-]{35})(?![\w-])", _token("gcp-api-key")),
    _rule(r"(?P<s>gh[pousr]_[A-Za-z0-9]{36,251})(?!\w)", _token("github-token")),
    _rule(r"(?P<s>github_pat_\w{50,})", _token("github-token")),
    _rule(r"(?P<s>glpat-[\w-]{20,})", _token("gitlab-token")),
    _rule(r"(?P<s>sk-ant-[a-z]+\d*-[\w-]{32,})", _token("anthropic-api-key")),
    _rule(
        r"(?P<s>sk-(?:(?:proj|svcacct|admin|None)-[\w-]{40,}|[A-Za-z0-9]{32,}))(?![\w-])",
        _token("openai-api-key"),
    ),
    _rule(r"(?P<s>hf_[A-Za-z]{34,})(?!\w)", _token("huggingface-token")),
    _rule(r"(?P<s>xox[abeoprs]-[A-Za-z0-9-]{20,})", _token("slack-token")),
    _rule(
        r"(?P<s>hooks\.slack\.com/services/T\w+/B\w+/[A-Za-z0-9]{16,})",
        _token("slack-webhook"),
    ),
    *(
        _rule(rf"(?P<s>{p}_live_[A-Za-z0-9]{{20,}})(?!\w)", _token("stripe-secret-key"))
        for p in ("sk", "rk")
    ),
    _rule(r"(?P<s>SG\.[\w-]{22}\.[\w-]{43})(?![\w-])", _token("sendgrid-api-key")),
    _rule(r"(?P<s>GOCSPX-[\w-]{28})(?![\w-])", _token("google-oauth-client-secret")),
    _rule(r"(?P<s>npm_[A-Za-z0-9]{36})(?!\w)", _token("npm-token")),
    _rule(r"(?P<s>pypi-AgE[\w-]{50,})", _token("pypi-token")),
    _rule(r"(?P<s>eyJ[\w-]{10,}\.[\w-]{10,}\.[\w-]{16,})(?![\w-])", _token("jwt")),
    Rule(_URL_PASSWORD, _user_password),
    _rule(r"-u(?:ser)?[ \t]+([\"']?)(?P<user>[^\s:\"']+):(?P<s>[^\s\"']+)\1", _user_password),
    _rule(r"bearer[ \t]+(?P<s>[\w.~+/-]{12,}=*)", _random_value("bearer-token"), folded=True),
    _rule(
        r"authorization:[ \t]*basic[ \t]+(?P<s>[a-z0-9+/]{12,}={0,2})",
        _random_value("basic-auth"),
        folded=True,
    ),
    _rule(  # .netrc
        r"machine[ \t]+\S+\s+login[ \t]+\S+\s+password[ \t]+(?P<s>\S+)",
        _random_value("password-assignment", password=True),
        folded=True,
    ),
    _rule(  # command-line flags: --password X, --api-key X
        r"--(?P<flag>[a-z-]{0,30}?(?:password|passwd|token|secret|api-key|apikey))[ \t]+"
        r"([\"']?)(?P<s>[^\s\"'`]+)\2",
        _flag,
        folded=True,
    ),
    _rule(  # XML elements: <password>X</password>
        r"<(?P<flag>[\w.-]{0,30}?(?:password|passwd|secret|token|api[_-]?key)[\w.-]{0,30})>"
        r"(?P<s>[^<\s]{1,400})</(?P=flag)>",
        _flag,
        folded=True,
    ),
    *(_assign(k) for k in ("pass", "pwd", "secret", "token", "key", "credential")),
)
