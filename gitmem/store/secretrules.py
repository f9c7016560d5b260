"""The rules of the secret guard (gitmem.store.guard): what a credential looks like.

Two kinds of rule: vendor tokens with a fixed shape (``ghp_``, ``AKIA``, PEM blocks ...), which
are trusted on shape alone, and ``password = ...`` style assignments, whose value must also
look random (length, Shannon entropy, character classes) and must not look like a placeholder,
a variable, a path or a digest. Every rule is a regex that starts with a literal, compiled on
import and run once over the text; the slower checks run only on its matches.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from gitmem.store.secretvalues import (
    entropy,
    only_stand_in,
    placeholder,
    prose_password,
    random_enough,
    uuid,
)

__all__ = ["RULES", "Classify", "Rule"]


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


Classify = Callable[[re.Match[str], str], str | None]


@dataclass(frozen=True)
class Rule:
    pattern: re.Pattern[str]
    classify: Classify
    # Matched against the text with ASCII folded to lower case: re's fast literal-prefix search
    # does not work under IGNORECASE, and case-blind keys (Password, BEARER) need it.
    folded: bool = False
    # What must stand just before the match, as part of the secret (the bot id of a Telegram
    # token): rules that begin with a literal for speed find the rest of their secret here.
    lead: re.Pattern[str] | None = None


def _secret(match: re.Match[str], text: str) -> str:
    """The secret as written (a folded rule matched lower-cased text, so slice the original)."""
    return text[match.start("s") : match.end("s")]


def _token(kind: str, min_entropy: float = 3.0, *, lead: bool = False) -> Classify:
    """A vendor token: trusted on shape, unless glued to a word or clearly a stand-in.

    With `lead`, the rule's lead pattern has found the token's start and checked what is
    before it."""

    def classify(match: re.Match[str], text: str) -> str | None:
        start, secret = match.start("s"), _secret(match, text)
        if not lead and start and text[start - 1].isalnum():
            return None
        if placeholder(secret) or entropy(secret) < min_entropy:
            return None
        return kind

    return classify


def _private_key(match: re.Match[str], text: str) -> str | None:
    return None if "EXAMPLE" in _secret(match, text).upper() else "private-key"


def _random_value(kind: str, *, password: bool = False) -> Classify:
    def classify(match: re.Match[str], text: str) -> str | None:
        return kind if random_enough(_secret(match, text), password=password) else None

    return classify


def _assigned(value: str, *, password: bool) -> str | None:
    if not random_enough(value, password=password):
        return None
    return "password-assignment" if password else "secret-assignment"


def _flag(match: re.Match[str], text: str) -> str | None:
    """`--password X`, `--api-key X`, `<token>X</token>`: by the flag's name, as a key's."""
    value = _secret(match, text)
    password = _named(match.group("flag"), value)
    return None if password is None else _assigned(value, password=password)


def _user_password(match: re.Match[str], text: str) -> str | None:
    """`user:password` in a URL or after `curl -u`."""
    if match.re is _URL_PASSWORD and not (match.start() and text[match.start() - 1].isalnum()):
        return None  # "://" without a scheme in front
    user, secret = match.group("user"), _secret(match, text)
    if len(secret) < 6 or secret == user or secret[0] in "$%{[" or placeholder(secret):
        return None  # too short to matter, the dev default "guest:guest", or a template
    if only_stand_in(secret):
        return None
    if match.re is _URL_PASSWORD and _DOCS_HOST.match(text, match.end("s") + 1):
        return None  # a host reserved for documentation (RFC 2606): MongoDB's own example
    return "connection-string" if match.re is _URL_PASSWORD else "basic-auth"


# Hosts no real credential points at: example.com/.org/.net and the .example, .test and
# .invalid top-level domains, reserved for documentation and tests (RFC 2606, RFC 6761).
_DOCS_HOST = re.compile(
    r"(?:[\w-]+\.)*(?:example\.(?:com|org|net)|[\w-]+\.(?:example|test|invalid))(?![\w.-])",
    re.IGNORECASE,
)


def _connection_password(match: re.Match[str], text: str) -> str | None:
    """`;Password=...` in a connection string, where a value is never code: any password
    but a template, a placeholder or a stand-in (Password=changeme)."""
    secret = _secret(match, text)
    if secret[0] in "$%{[" or placeholder(secret) or only_stand_in(secret):
        return None
    return "connection-string"


_KEY_CHARS = re.compile(r"[\w.-]+")
_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")
# Key names that hold a secret, in snake_case; `pw` marks the ones that hold a password.
_SECRET_KEY = re.compile(
    r"(?P<pw>passw(?:or)?d|passphrase|(?:^|_)(?:pass|pwd)(?:_|$)|pwd$)|secret|token(?!i)"
    r"|(?:api|access|private|auth|signing|encryption|master|session|account|client|app"
    r"|consumer|shared|storage|service|license|admin|write|deploy|hmac|jwt|webhook|root"
    r"|ingest|bot|merchant|integration|management)_?key|credential"
)


# The names under which even a UUID is a secret (Heroku's API keys are UUIDs): a key, a
# password or a credential, but not any "token" (AWS's ClientToken, LockToken, ChangeToken
# and the like are UUIDs that only make a request idempotent).
_UUID_KEY = re.compile(
    r"passw|passphrase|secret|credential|(?:^|_)(?:api|auth|access|private|app|account|admin"
    r"|service|master|signing|encryption|license|bot)_?(?:key|token)(?:_|$)|key$"
)


def _named(key: str, value: str = "") -> bool | None:
    """Whether a key names a password (True), another secret (False) or neither (None), for
    `value` (a UUID needs a name that says so more clearly than most)."""
    snake = _CAMEL.sub("_", key).lower().replace("-", "_").replace(".", "_")
    named = _SECRET_KEY.search(snake)
    if named is None or _DESCRIBES.search(snake):
        return None
    if uuid(value) and _UUID_KEY.search(snake) is None:
        return None
    return named.group("pw") is not None


def _assignment(match: re.Match[str], text: str) -> str | None:
    value = _secret(match, text)
    if len(value) < 8 or " " in value or "\n" in value or "\t" in value:
        return None  # the common case in prose and code, so settled before the key is parsed
    before = text[max(0, match.start() - 40) : match.start()][::-1]
    head = _KEY_CHARS.match(before)
    key = (head.group()[::-1] if head else "") + text[match.start() : match.end("rest")]
    password = _named(key, value)
    return None if password is None else _assigned(value, password=password)


def _env_pair(match: re.Match[str], text: str) -> str | None:
    """`name: DB_PASSWORD` then `value: ...`: a Kubernetes, ECS or Actions environment entry."""
    value = _secret(match, text)
    password = _named(text[match.start("key") : match.end("key")], value)
    return None if password is None else _assigned(value, password=password)


def _prose(match: re.Match[str], text: str) -> str | None:
    """ "the staging admin password is ..." or "admin / ...": a password given in a sentence."""
    if match.start() and (text[match.start() - 1].isalnum() or text[match.start() - 1] in "_-"):
        return None  # part of a longer word: 1Password, db_password
    return "prose-password" if prose_password(_secret(match, text)) else None


_ACCOUNT = re.compile(r"(?<![\w-])(?:admin|root)[ \t]+$")


def _account(match: re.Match[str], text: str) -> str | None:
    """ "admin / <password>", the usual way to write an account down."""
    if _ACCOUNT.search(text, max(0, match.start() - 12), match.start()) is None:
        return None
    return "prose-password" if prose_password(_secret(match, text)) else None


def _sas(match: re.Match[str], text: str) -> str | None:
    """The signature of an Azure shared-access-signature URL: `?...&sig=<base64>`."""
    if match.start() == 0 or text[match.start() - 1] not in "?&":
        return None
    return _token("azure-sas-signature", 4.0)(match, text)


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


_PUTTY = re.compile(  # a PuTTY .ppk key file, from its first line to its private lines' end
    r"(?P<s>PuTTY-User-Key-File-\d+:[^\n]*(?:\r?\n[^\n]*){0,40}?\r?\nPrivate-Lines:[ \t]*\d+"
    r"(?:\r?\n[A-Za-z0-9+/=]+)+(?:\r?\nPrivate-(?:MAC|Hash):[ \t]*[0-9a-f]+)?)"
)
# "the staging admin password is ...", "password for the test account: ...", "passwd ...":
# the word, a few words naming whose it is, a verb or a colon, and a value with a digit in it
# (the lookahead lets the search move past words until one could be the password).
_PROSE_VALUE = (
    r"(?:now[ \t]+|still[ \t]+)?(?P<q>[\"'`]?)"
    r"(?P<s>(?=[^\s\"'`]{0,79}\d)[^\s\"'`]{5,79}[^\s\"'`.,;:)])(?P=q)(?![^\s.,;:)\"'`])"
)
_PROSE_PASSWORD = (
    r"pass(?:w(?:or)?d|phrase|code)s?(?![\w-])"
    r"(?:[ \t]+(?:for|of|on|in|to)[ \t][^\n.:=\"'`]{1,40}?)?"
    r"(?:(?:[ \t]+(?:is|was|are|becomes|has[ \t]+been))?"
    r"(?:[ \t]+(?:set|changed|reset|updated)[ \t]+to)?[ \t]+|[ \t]*[:=,][ \t]*)" + _PROSE_VALUE
)


def _rule(
    pattern: str, classify: Classify, *, folded: bool = False, lead: str | None = None
) -> Rule:
    return Rule(re.compile(pattern), classify, folded, re.compile(lead) if lead else None)


# Every pattern starts with a literal so that re can skip ahead with a fast substring search.
# Ordered by precedence: where two rules claim overlapping text, the earlier one wins, so a
# GitHub token in `token = "ghp_..."` is reported as a GitHub token, not as an assignment.
RULES = (
    Rule(_PEM, _private_key),
    Rule(_PUTTY, _private_key),
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
    _rule(
        r"(?P<s>gl(?:pat|ptt|rt|dt|soat|cbt|imt|ft|oas|agent|ffct)-[\w-]{20,})",
        _token("gitlab-token"),
    ),
    _rule(r"(?P<s>GR1348941[\w-]{20,})", _token("gitlab-token")),
    _rule(r"(?P<s>sk-ant-[a-z]+\d*-[\w-]{32,})", _token("anthropic-api-key")),
    _rule(
        r"(?P<s>sk-(?:(?:proj|svcacct|admin|None)-[\w-]{40,}|[A-Za-z0-9]{32,}))(?![\w-])",
        _token("openai-api-key"),
    ),
    _rule(r"(?P<s>hf_[A-Za-z]{34,})(?!\w)", _token("huggingface-token")),
    _rule(r"(?P<s>api_org_[A-Za-z]{34,})(?!\w)", _token("huggingface-token")),
    _rule(r"(?P<s>xox[abeoprs]-[A-Za-z0-9-]{20,})", _token("slack-token")),
    _rule(r"(?P<s>xapp-\d-[A-Za-z0-9-]{20,})", _token("slack-token")),
    _rule(
        r"(?P<s>hooks\.slack\.com/services/T\w+/B\w+/[A-Za-z0-9]{16,})",
        _token("slack-webhook"),
    ),
    *(
        _rule(rf"(?P<s>{p}_live_[A-Za-z0-9]{{20,}})(?!\w)", _token("stripe-secret-key"))
        for p in ("sk", "rk")
    ),
    _rule(r"(?P<s>whsec_[A-Za-z0-9+/]{24,})(?![\w+/])", _token("stripe-webhook-secret")),
    _rule(r"(?P<s>SG\.[\w-]{22}\.[\w-]{43})(?![\w-])", _token("sendgrid-api-key")),
    _rule(r"(?P<s>SK[0-9a-fA-F]{32})(?!\w)", _token("twilio-api-key")),
    _rule(
        r"AC[0-9a-f]{32}[\"']?[ \t]*[,:][ \t]*[\"']?(?P<s>[0-9a-f]{32})(?!\w)",
        _token("twilio-auth-token"),
    ),
    _rule(r"(?P<s>key-[0-9a-f]{32})(?!\w)", _token("mailgun-api-key")),
    _rule(r"(?P<s>HRKU-AA[\w-]{58})(?![\w-])", _token("heroku-api-key")),
    _rule(r"(?P<s>do[opr]_v1_[a-f0-9]{64})(?!\w)", _token("digitalocean-token")),
    _rule(r"(?P<s>shp(?:at|ca|pa|ss)_[a-fA-F0-9]{32})(?!\w)", _token("shopify-token")),
    _rule(
        r"(?P<s>discord(?:app)?\.com/api/webhooks/\d+/[\w-]{60,})",
        _token("discord-webhook"),
    ),
    _rule(  # <bot id>:AA<33 characters>
        r"(?P<s>:AA[\w-]{33})(?![\w-])",
        _token("telegram-bot-token", lead=True),
        lead=r"(?:(?<!\w)|(?<=bot))\d{5,16}$",
    ),
    _rule(  # a bot token: the base64 of the bot's id, a timestamp, an HMAC
        r"(?P<s>\.[\w-]{6}\.[\w-]{27,38})(?![\w-])",
        _token("discord-token", lead=True),
        lead=r"(?<![\w.-])[MNO][\w-]{23,25}$",
    ),
    _rule(  # an Azure AD (Entra) client secret: xxx8Q~...
        r"(?P<s>Q~[\w~.-]{31,34})(?![\w~.-])",
        _token("azure-client-secret", lead=True),
        lead=r"(?<![\w~.-])[\w~.]{3}\d$",
    ),
    _rule(r"sig=(?P<s>[\w%+/]{40,}(?:=|%3D){0,2})", _sas),
    _rule(r"(?P<s>GOCSPX-[\w-]{28})(?![\w-])", _token("google-oauth-client-secret")),
    _rule(r"(?P<s>npm_[A-Za-z0-9]{36})(?!\w)", _token("npm-token")),
    _rule(r"(?P<s>pypi-AgE[\w-]{50,})", _token("pypi-token")),
    _rule(r"(?P<s>eyJ[\w-]{10,}\.[\w-]{10,}\.[\w-]{16,})(?![\w-])", _token("jwt")),
    Rule(_URL_PASSWORD, _user_password),
    _rule(  # ODBC, ADO.NET and JDBC: Server=...;User Id=sa;Password=...;
        r";[ \t]*(?:password|pwd)[ \t]*=[ \t]*(?P<s>[^;\s\"']{6,400})",
        _connection_password,
        folded=True,
    ),
    _rule(r"-u(?:ser)?[ \t]+([\"']?)(?P<user>[^\s:\"']+):(?P<s>[^\s\"']+)\1", _user_password),
    _rule(r"bearer[ \t]+(?P<s>[\w.~+/-]{12,}=*)", _random_value("bearer-token"), folded=True),
    _rule(
        r"authorization[\"']?[ \t]*[:=][ \t]*[\"']?basic[ \t]+(?P<s>[a-z0-9+/]{12,}={0,2})",
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
    _rule(
        r"name[\"']?[ \t]*:[ \t]*[\"']?(?P<key>[\w.-]{1,80})[\"']?[ \t]*(?:,[ \t]*|\r?\n[ \t]*)"
        r"[\"']?value[\"']?[ \t]*:[ \t]*(?P<q>[\"'])?"
        r"(?P<s>(?(q)[^\"'\n]{1,400}|[^\s\"'`,;()\[\]{}<>]{1,400}))",
        _env_pair,
        folded=True,
    ),
    _rule(_PROSE_PASSWORD, _prose, folded=True),
    _rule(r"/[ \t]+" + _PROSE_VALUE, _account),
)
