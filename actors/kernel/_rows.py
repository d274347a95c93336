"""Rows of an actor's own tables as maps: some columns hold JSON, kept as compact text.

A table's writer names its JSON columns once (`RowCodec`); values are encoded on the way in
and decoded on the way out, and "replace these rows whole" is one statement per row.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class RowCodec:
    json_columns: frozenset[str]

    def values(self, columns: tuple[str, ...], row: dict[str, Any]) -> tuple[Any, ...]:
        """The row's values in `columns` order, its JSON columns encoded (null stays null)."""
        return tuple(
            json.dumps(row.get(c), separators=(",", ":"))
            if c in self.json_columns and row.get(c) is not None
            else row.get(c)
            for c in columns
        )

    def rows(
        self, columns: tuple[str, ...], cursor: Iterable[tuple[Any, ...]]
    ) -> list[dict[str, Any]]:
        """Rows as maps, their JSON columns decoded."""
        out = []
        for values in cursor:
            row = dict(zip(columns, values, strict=True))
            for column in self.json_columns & row.keys():
                if row[column] is not None:
                    row[column] = json.loads(row[column])
            out.append(row)
        return out

    def replace(
        self,
        db: sqlite3.Connection,
        table: str,
        columns: tuple[str, ...],
        rows: Iterable[dict[str, Any]],
    ) -> None:
        """Write each row whole, over any row with the same key."""
        statement = (
            f"INSERT OR REPLACE INTO {table} ({', '.join(columns)})"
            f" VALUES ({', '.join('?' * len(columns))})"
        )
        for row in rows:
            db.execute(statement, self.values(columns, row))
