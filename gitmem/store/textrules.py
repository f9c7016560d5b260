"""The character rules of a record's text, and what a write refuses in a body.

Which characters no value may hold (controls but tab, LF and CR; unpaired surrogates; in a
one-line value, the bidirectional controls) and the message that says where the first one is
(`bad_character`, which gitmem.store.record's `format_problems` applies to every value); the
body's own limits (`body_problems`: empty, too large, a second frontmatter), which a write
checks against the store's config.
"""

from __future__ import annotations

import re
import unicodedata

__all__ = ["bad_character", "body_problems", "strip_bidi"]

# Compiled on first use, as the emitter's patterns (gitmem.store.recordfile).
_BAD_CHAR = r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f\ud800-\udfff\ufffe\uffff]"
# The bidirectional embeddings, overrides and isolates (not the marks LRM, RLM, ALM): in a
# one-line value they make `gitmem list` show text in another order than it is stored
# ("Trojan Source", CVE-2021-42574). A body may hold them: right-to-left prose uses them, and
# `read` shows a body as the whole it is.
_BIDI_CHAR = r"[\u202a-\u202e\u2066-\u2069]"


def strip_bidi(text: str) -> str:
    """`text` without bidirectional embeddings, overrides and isolates: for a one-line value
    taken from a body (the abstract gitmem derives), where they are refused."""
    return re.sub(_BIDI_CHAR, "", text)


def bad_character(value: str, *, lines: bool, bidi: bool) -> str | None:
    """What is wrong with the first forbidden character of `value`, where it is, and the fix."""
    found = re.search(_BAD_CHAR, value)
    if bidi:
        other = re.search(_BIDI_CHAR, value)
        if other is not None and (found is None or other.start() < found.start()):
            found = other
    if found is None:
        return None
    char, at = found.group(), found.start()
    if lines:
        line = value.count("\n", 0, at) + 1
        where = f"line {line}, column {at - (value.rfind(chr(10), 0, at) + 1) + 1}"
    else:
        where = f"character {at + 1}"
    code = f"U+{ord(char):04X}"
    if "\ud800" <= char <= "\udfff":
        return f"an unpaired surrogate ({code}) at {where}; it is not text — remove it"
    if re.match(_BIDI_CHAR, char):
        name = unicodedata.name(char, "bidirectional control")
        return (
            f"the bidirectional control {code} ({name}) at {where} would show the text in "
            "another order than it is stored; remove it"
        )
    return (
        f"a control character ({code}) at {where}; remove it "
        "(tab, LF and CR are the only ones allowed)"
    )


def body_problems(body: str, max_bytes: int) -> list[str]:
    """What a write refuses in a body: empty, too large, or shaped like a second frontmatter."""
    problems: list[str] = []
    if not body.strip():
        problems.append("body: empty; give the memory some text (or --body-file FILE)")
    size = len(body.encode("utf-8", "surrogatepass"))
    if size > max_bytes:
        problems.append(
            f"body: {size} bytes, over the store's limit of {max_bytes} "
            "(limits.max_body_bytes in config.toml); split it or link a file"
        )
    first = body.lstrip("\ufeff \t\r\n").split("\n", 1)[0].rstrip("\r \t")
    if first == "---":
        problems.append(
            "body: starts with a '---' line, which would read as frontmatter; "
            "put text before it or use '***' for a rule"
        )
    return problems
