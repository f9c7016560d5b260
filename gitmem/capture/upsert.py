"""Upsert by key: a type's schema may name key fields (docs/schemas.md, "Keys"); a captured
record whose key matches a current record's supersedes it instead of adding a second one."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from gitmem.store.reader import Reader
from gitmem.store.record import Record

__all__ = ["Keys"]


def _norm(value: object) -> str:
    return " ".join(str(value).casefold().split())


class Keys:
    """The current records of each keyed type, by key; read once per type per run."""

    def __init__(self, store: Reader) -> None:
        self._store = store
        self._by_type: dict[str, dict[tuple[str, ...], Record]] = {}

    def key_of(self, type_: str, fields: Mapping[str, str | Sequence[str]]) -> tuple[str, ...]:
        """The normalised key of a record of `type_` with `fields`; () when it has none."""
        schema = self._store.schemas.get(type_)
        if schema is None or not schema.key:
            return ()
        values = tuple(_norm(fields.get(name, "")) for name in schema.key)
        return values if all(values) else ()

    def current(self, type_: str, key: tuple[str, ...]) -> Record | None:
        if not key:
            return None
        if type_ not in self._by_type:
            found: dict[tuple[str, ...], Record] = {}
            prefix = f"records/{type_}/"
            for ident, path in self._store.catalog().items():
                if path.startswith(prefix):
                    record = self._store.get(ident)
                    mine = self.key_of(type_, record.extra)
                    if mine and record.status != "superseded":
                        found[mine] = record
            self._by_type[type_] = found
        return self._by_type[type_].get(key)

    def taken(self, type_: str, key: tuple[str, ...], record: Record) -> None:
        """A record of this run now holds the key."""
        if key and type_ in self._by_type:
            self._by_type[type_][key] = record
