"""The secret guard: find credentials in a record before git makes them permanent.

A secret committed to git survives every later edit, so the store refuses a write that contains
one. The rules (gitmem.store.secretrules) run in precedence order over the text; here their
matches become findings that never overlap, with a preview safe to print, and a redaction.
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass

from gitmem.store.secretrules import RULES

__all__ = ["Finding", "describe", "redact", "scan"]


@dataclass(frozen=True)
class Finding:
    """One suspected secret: where it is and a masked preview that is safe to print.

    `line` and `column` are 1-based; `start`:`end` is the secret itself within the scanned text.
    """

    kind: str
    line: int
    column: int
    start: int
    end: int
    preview: str


_LABELS = {
    "private-key": "a private key block",
    "aws-access-key-id": "an AWS access key id",
    "aws-secret-access-key": "an AWS secret access key",
    "gcp-service-account": "a GCP service-account key",
    "gcp-api-key": "a Google API key",
    "github-token": "a GitHub token",
    "gitlab-token": "a GitLab token",
    "openai-api-key": "an OpenAI API key",
    "anthropic-api-key": "an Anthropic API key",
    "huggingface-token": "a Hugging Face token",
    "slack-token": "a Slack token",
    "slack-webhook": "a Slack webhook URL",
    "stripe-secret-key": "a Stripe live secret key",
    "stripe-webhook-secret": "a Stripe webhook signing secret",
    "sendgrid-api-key": "a SendGrid API key",
    "twilio-api-key": "a Twilio API key",
    "twilio-auth-token": "a Twilio auth token",
    "mailgun-api-key": "a Mailgun API key",
    "heroku-api-key": "a Heroku API key",
    "digitalocean-token": "a DigitalOcean token",
    "shopify-token": "a Shopify access token",
    "discord-token": "a Discord bot token",
    "discord-webhook": "a Discord webhook URL",
    "telegram-bot-token": "a Telegram bot token",
    "azure-client-secret": "an Azure AD client secret",
    "azure-sas-signature": "an Azure shared-access signature",
    "google-oauth-client-secret": "a Google OAuth client secret",
    "npm-token": "an npm token",
    "pypi-token": "a PyPI token",
    "jwt": "a JSON Web Token",
    "connection-string": "a password inside a connection string",
    "bearer-token": "a bearer token",
    "basic-auth": "HTTP basic-auth credentials",
    "password-assignment": "a hard-coded password",
    "prose-password": "a password written in a sentence",
    "secret-assignment": "a hard-coded secret",
}

_ASCII_LOWER = {c: c + 32 for c in range(ord("A"), ord("Z") + 1)}


def _spans(text: str) -> tuple[list[int], dict[int, tuple[int, str]]]:
    """Start offsets of the secrets, in order, and each one's end and kind.

    Rules run in precedence order and a match that overlaps a span already taken is skipped
    before its (comparatively slow) checks run.
    """
    folded = text.lower()
    if len(folded) != len(text):  # a few non-ASCII letters lower-case to two characters
        folded = text.translate(_ASCII_LOWER)
    starts: list[int] = []  # kept sorted; the spans never overlap
    spans: dict[int, tuple[int, str]] = {}
    for rule in RULES:
        for match in rule.pattern.finditer(folded if rule.folded else text):
            start, end = match.span("s")
            if rule.lead is not None:  # the part of the secret before the rule's literal
                head = rule.lead.search(text, max(0, start - 64), start)
                if head is None:
                    continue
                start = head.start()
            i = bisect.bisect_right(starts, start)
            if (i and spans[starts[i - 1]][0] > start) or (i < len(starts) and starts[i] < end):
                continue
            kind = rule.classify(match, text)
            if kind is None:
                continue
            # A truncated key block ends where its material does, not at trailing blanks.
            while end > start and text[end - 1].isspace():
                end -= 1
            starts.insert(i, start)
            spans[start] = (end, kind)
    return starts, spans


def _preview(secret: str, kind: str) -> str:
    if kind == "private-key":
        # The BEGIN line (a PuTTY file's first line) names the key type and holds no key material.
        if secret.startswith("PuTTY"):
            return secret.partition("\n")[0].rstrip()
        return secret.split("-----")[1].join(("-----", "-----"))
    keep = min(4, len(secret) // 5)
    return f"{secret[:keep]}…{secret[-keep:]}" if keep else "…"


def scan(text: str) -> list[Finding]:
    """Every suspected secret in ``text``, sorted by position and never overlapping."""
    starts, spans = _spans(text)
    findings = []
    line, line_start, pos = 1, 0, 0  # counted forward, so a record with many hits stays linear
    for start in starts:
        end, kind = spans[start]
        if newlines := text.count("\n", pos, start):
            line += newlines
            line_start = text.rfind("\n", pos, start) + 1
        pos = start
        preview = _preview(text[start:end], kind)
        findings.append(Finding(kind, line, start - line_start + 1, start, end, preview))
    return findings


def redact(text: str) -> tuple[str, list[Finding]]:
    """``text`` with each secret replaced by ``[REDACTED:<kind>]``, and the findings.

    The findings refer to positions in the original text. Redaction repeats until a fresh scan
    is clean, because removing one secret can expose a neighbour that was glued to it.
    """
    first = scan(text)
    findings = first
    for _ in range(8):
        if not findings:
            break
        for f in reversed(findings):
            text = f"{text[: f.start]}[REDACTED:{f.kind}]{text[f.end :]}"
        findings = scan(text)
    return text, first


def describe(finding: Finding, where: str = "", text: str | None = None) -> str:
    """One line for a person: where the secret is, what it looks like, and what to do.

    Given the record file's `text`, the place names its field too: `line 5 (abstract)`.
    """
    label = _LABELS.get(finding.kind, finding.kind)
    field = _field(text, finding.line) if text is not None else None
    place = f"line {finding.line}" + (f" ({field})" if field else "")
    return (
        f"{where}{place}: looks like {label} ({finding.preview}); "
        "remove it, or pass --redact / --allow-secret"
    )


def _field(text: str, line: int) -> str | None:
    """The frontmatter key (or "body") that line `line` of a record file belongs to."""
    lines = text.split("\n")
    if not lines or lines[0] != "---":
        return None
    key = None
    for number, content in enumerate(lines[1:line], start=2):
        if content == "---":
            return "body" if number < line else None
        head = content.split(":", 1)[0]
        if head and not content[0].isspace() and head.replace("_", "").isalnum():
            key = head
    return key
