"""The command lines the fast paths answer (`gitmem recall`, `gitmem record`), split the way
typer would split them, or not at all: strict on purpose, so that anything it might read
otherwise is left to the full CLI (gitmem.cli.quickrecall, gitmem.cli.quickrecord)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

__all__ = ["Split", "split"]


@dataclass(frozen=True)
class Split:
    values: dict[str, str]  # the last value of each option taken once
    repeated: dict[str, list[str]]  # every value of each option that may repeat
    flags: frozenset[str]
    positional: list[str]


def split(
    argv: Sequence[str],
    valued: Mapping[str, str],
    flags: Mapping[str, str],
    repeated: Sequence[str],
) -> Split | None:
    """`argv` as `--opt VALUE`, `--opt=VALUE`, `-o VALUE`, flags and positional arguments (all
    after `--`); options by the name `valued` and `flags` give them. None for an option it does
    not know (--help, a typo, `-oVALUE`), a flag given a value, a value that starts with a dash
    or is missing, or argv that is not valid UTF-8 (how that fails is the CLI's to say)."""
    values: dict[str, str] = {}
    many: dict[str, list[str]] = {name: [] for name in repeated}
    seen: set[str] = set()
    positional: list[str] = []
    rest = list(argv)
    while rest:
        arg = rest.pop(0)
        if arg == "--":
            positional.extend(rest)
            break
        if not arg.startswith("-") or arg == "-":
            positional.append(arg)
            continue
        name, equals, value = arg.partition("=") if arg.startswith("--") else (arg, "", "")
        if name in flags and not equals:
            seen.add(flags[name])
            continue
        if name not in valued:
            return None
        if not equals:
            if not rest or rest[0].startswith("-"):
                return None
            value = rest.pop(0)
        key = valued[name]
        if key in many:
            many[key].append(value)
        else:
            values[key] = value
    if not all(_encodable(a) for a in argv):
        return None
    return Split(values, many, frozenset(seen), positional)


def _encodable(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:  # lone surrogates: bytes in argv that were not UTF-8
        return False
    return True
