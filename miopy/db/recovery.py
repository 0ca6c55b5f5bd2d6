"""Salvage: the whole records a damaged user DB still holds (the rows SQLite still reads, then the rows on the
file's readable leaf pages, miopy.sqlite_pages), each checked as the readers check it, and writing them into
the new file that replaces the damaged one (Store moves a corrupt file aside: store.py)."""
from __future__ import annotations

import logging
import math
import sqlite3
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from .. import sqlite_pages
from .rows import _Malformed, _parsed_params, _parsed_time
from .schema import Statement, _connect, _connect_readonly, _create_schema, _transaction

logger = logging.getLogger(__name__)

# Each table's columns in order, its primary key's positions, and the Python types of a whole row's values.
_TEXT, _TIME, _INT, _ERROR = (str,), (int, float, type(None)), (int,), (str, type(None))
SHAPES = {
    "perf": ((0, 1, 2), (_TEXT, _TEXT, _TEXT, _TEXT, _TIME, _TEXT, _TEXT)),
    "find": ((0, 1, 2), (_TEXT, _TEXT, _INT, _TEXT, _TEXT, _TIME, _INT, _TEXT, _TEXT, _TEXT)),
    "tuning": ((0, 1, 2, 3), (_TEXT, _TEXT, _TEXT, _TEXT, _TIME, _ERROR, _TEXT, _TEXT)),
}


@dataclass
class Salvage:
    """The whole records read from a damaged user DB, by table, and how many rows of it were lost."""

    rows: dict[str, list[tuple]]
    lost: int
    unreadable_pages: int

    def summary(self, kept: int) -> str:
        rankings = len({row[:2] for row in self.rows["find"]})
        return (f"kept the {kept} rows it could read and check ({len(self.rows['perf'])} perf records, "
                f"{rankings} find rankings of {len(self.rows['find'])} rows, {len(self.rows['tuning'])} tuning "
                f"points), lost at least {self.lost} rows"
                + (f" ({self.unreadable_pages} pages could not be read)" if self.unreadable_pages else ""))


def salvage(path: Path) -> Salvage:
    """Every whole record of a damaged user DB file: rows SQLite still reads (the WAL's included), then rows
    on the file's readable leaf pages (miopy.sqlite_pages), each checked as the readers check it; a find
    ranking only whole. Lost counts the rows the file's indexes name that were not kept."""
    by_key: dict[str, dict[tuple, tuple]] = {table: {} for table in SHAPES}
    seen_rowids: dict[str, set[int]] = {table: set() for table in SHAPES}
    try:
        scan = sqlite_pages.scan(path.read_bytes())
    except (OSError, sqlite_pages.PageError):
        scan = sqlite_pages.Scan()
    pages = ((_table_of(values), rowid, values) for rowid, values in scan.rows)
    for table, rowid, row in [*_rows_sqlite_reads(path), *pages]:   # SQLite's first: it sees the WAL
        if table is not None:
            by_key[table].setdefault(_key(table, row), row)
            seen_rowids[table].add(rowid)
    rows = {table: [row for row in found.values() if _whole(table, row)] for table, found in by_key.items()}
    ranks = _known_ranks(scan.index_keys, by_key["find"].values())
    rows["find"] = _whole_rankings(rows["find"], ranks)
    kept = {table: {_key(table, row) for row in table_rows} for table, table_rows in rows.items()}
    lost = sum(_key(table, values) not in kept[table] for table, found in by_key.items() for values in found.values())
    lost += _unseen_indexed_rows(scan.index_keys, seen_rowids)
    return Salvage(rows, lost, scan.unreadable)


def _rows_sqlite_reads(path: Path) -> list[tuple[str | None, int, tuple]]:
    """(table, rowid, row) of every row SQLite yields before it meets damage, table by table."""
    out: list[tuple[str | None, int, tuple]] = []
    try:
        conn = _connect_readonly(path)
    except sqlite3.Error:
        return out
    try:
        for table in SHAPES:
            try:
                for rowid, *row in conn.execute(f"SELECT rowid, * FROM {table}"):
                    out.append((table, rowid, tuple(row)))
            except sqlite3.Error as exc:
                logger.debug("salvage of %s: %s stops at %s", path, table, exc)
    finally:
        conn.close()
    return out


def _table_of(values: tuple) -> str | None:
    """The table whose row shape (column count and value types) values has, if any."""
    for table, (_, kinds) in SHAPES.items():
        if len(values) == len(kinds) and all(type(v) in k for v, k in zip(values, kinds)):
            return table
    return None


def _key(table: str, row: tuple) -> tuple:
    return tuple(row[i] for i in SHAPES[table][0])


def _whole(table: str, row: tuple) -> bool:
    """Whether row is a record miopy's readers would accept (types, params JSON, times)."""
    if _table_of(row) != table:
        return False
    params = {"perf": 3, "find": 7, "tuning": 3}[table]
    try:
        _parsed_params(row[params])
        _parsed_time(row[params + 1] if table != "find" else row[5], math.nan)
    except _Malformed:
        return False
    return table != "find" or (row[2] >= 0 and row[6] >= 0)


def _known_ranks(index_keys: list[tuple], rows: Iterable[tuple]) -> dict[tuple, set]:
    """(device, problem) -> every rank the file shows a find row of (rows read, and the find index's keys)."""
    known: dict[tuple, set] = {}
    for key in [*index_keys, *rows]:
        if len(key) in (4, 10) and type(key[2]) is int and type(key[0]) is str:
            known.setdefault(key[:2], set()).add(key[2])
    return known


def _whole_rankings(rows: list[tuple], known_ranks: dict[tuple, set]) -> list[tuple]:
    """The rows of the find rankings that are whole: ranks 0..n-1 all kept, and no other rank of the same
    problem named anywhere in the file (a ranking whose tail was on a lost page is dropped)."""
    rankings: dict[tuple, list[tuple]] = {}
    for row in rows:
        rankings.setdefault(row[:2], []).append(row)
    return [row for key, ranking in rankings.items()
            if sorted(r[2] for r in ranking) == list(range(len(ranking))) == sorted(known_ranks.get(key, ()))
            for row in ranking]


def _unseen_indexed_rows(index_keys: list[tuple], seen_rowids: dict[str, set[int]]) -> int:
    """Rows a primary-key index names (its key's last value is the rowid) whose table page was not read:
    perf keys (device, problem, solver, rowid), find (device, problem, rank, rowid), tuning 4 + rowid."""
    unseen: set[tuple[str, int]] = set()
    for key in index_keys:
        if not key or type(key[-1]) is not int:
            continue
        table = ("tuning" if len(key) == 5 else "find" if len(key) == 4 and type(key[2]) is int
                 else "perf" if len(key) == 4 else None)
        if table is not None and key[-1] not in seen_rowids[table]:
            unseen.add((table, key[-1]))
    return len(unseen)


def _restore(path: Path, saved: Salvage) -> str:
    """Write saved's records into the new DB at path (kept alongside anything written meanwhile); the
    warning's account of what was kept and lost."""
    statements: list[Statement] = [
        (f"INSERT OR IGNORE INTO {table} VALUES ({', '.join('?' * len(row))})", row)
        for table, rows in saved.rows.items() for row in rows]
    kept = len(statements)
    if statements:
        try:
            conn = _connect(str(path))
            try:
                _create_schema(conn)
                _transaction(conn, statements)
            finally:
                conn.close()
        except sqlite3.Error as exc:
            return f"could not keep the {kept} records it could read ({exc})"
    return saved.summary(kept)
