"""One SQLite export, opened read-only (`DbFile`), and the db files of one span (`DbSource`):
how `sqlite_export` reads a table's columns, whatever the producer's schema version.

The file is opened read-only (`file:...?mode=ro`, never `immutable`: a db still being
written must not be read as if it were finished) with a short busy timeout; a table's
columns come from `PRAGMA table_info` and are matched against `db_columns`. A query fetches
BATCH_ROWS rows at a time into typed Arrow columns (ints exact, never float). What cannot
be used is a `DbError` whose message is the reason shown to users.
"""
from __future__ import annotations

import os
import re
import sqlite3
import urllib.parse

import pandas as pd
import pyarrow as pa

from . import db_columns as D

BATCH_ROWS = 65536
BUSY_TIMEOUT_S = 0.2
_PA_TYPES = {"ns": pa.int64(), "int": pa.int64(), "real": pa.float64(), "bytes": pa.float64(),
             "kb": pa.float64(), "str": pa.string(), "text": pa.string()}


class DbError(Exception):
    """A db file that cannot be used; the message is the reason shown to users."""


class DbFile:
    """An open, read-only export: its tables' columns and batched, typed queries."""

    def __init__(self, path: str):
        self.path = path
        uri = "file:" + urllib.parse.quote(os.path.abspath(path)) + "?mode=ro"
        try:
            self.con = sqlite3.connect(uri, uri=True, timeout=BUSY_TIMEOUT_S,
                                       check_same_thread=False)
        except sqlite3.Error as exc:
            raise DbError(f"cannot open SQLite file: {exc}") from None
        try:
            self.con.execute(f"PRAGMA busy_timeout = {int(BUSY_TIMEOUT_S * 1000)}")
            names = [r[0] for r in self.fetch_all(
                "SELECT name FROM sqlite_master WHERE type = 'table'")]
        except (sqlite3.Error, UnicodeDecodeError) as exc:
            self.close()
            raise DbError(_reason(exc)) from None
        if not names:
            self.close()
            raise DbError("SQLite file has no tables (the export is not finished)")
        self.tables = {n: None for n in names}

    def close(self) -> None:
        try:
            self.con.close()
        except sqlite3.Error:
            pass

    def fetch_all(self, sql: str, params: tuple = ()) -> list:
        """All rows of `sql`, text that is not UTF-8 included (`_replacing_text`)."""
        return self._bad_text_tolerated(lambda: self.con.execute(sql, params).fetchall())

    def _bad_text_tolerated(self, read):
        """`read()`; once more with each bad byte of TEXT as U+FFFD when sqlite3 could not
        decode a value (damage), after which the connection keeps that text factory. A
        message of SQLite's own that is not UTF-8 is a DbError."""
        try:
            try:
                return read()
            except sqlite3.OperationalError as exc:
                if not _not_utf8(exc):
                    raise
                self.con.text_factory = _replacing_text
                return read()
        except UnicodeDecodeError as exc:
            raise DbError(_reason(exc)) from None

    def columns(self, table: str) -> dict[str, str] | None:
        """lower-case column name -> declared name, None without the table."""
        if table not in self.tables:
            return None
        if self.tables[table] is None:
            rows = self.fetch_all(f'PRAGMA table_info("{table}")')
            self.tables[table] = {r[1].lower(): r[1] for r in rows}
        return self.tables[table]

    def usable(self, table: str, spec: D.DbTable) -> dict[str, str] | None:
        """{canonical: column} when `table` exists with every required column, else None
        (a table that exists but lacks required columns raises DbError naming them)."""
        present = self.columns(table)
        if present is None:
            return None
        missing = D.missing_required(present, spec)
        if missing:
            raise DbError(f"table {table} lacks column(s) {', '.join(missing)} "
                          "(unknown schema version)")
        return D.resolve(present, spec)

    def project(self, table: str, spec: D.DbTable, alias: str, found: dict[str, str],
                joins: list[str], names: list[str] | None = None) -> list[tuple[str, str, str]]:
        """(SQL expression, output name, kind) of the columns found (or `names`), adding the
        STRING_IDS joins the `str` columns need to `joins`."""
        out = []
        has_strings = self.columns("STRING_IDS") is not None
        for canon, col in found.items():
            if names is not None and canon not in names:
                continue
            kind = spec[canon].kind
            ref = f'{alias}."{col}"'
            if kind == "ns":
                expr = f"CAST({ref} AS INTEGER)"
            elif kind == "int":
                expr = (f"CASE WHEN {ref} IN {D.INVALID_INT} OR {ref} >= {float(D.INVALID_FROM)}"
                        f" THEN NULL ELSE CAST({ref} AS INTEGER) END")
            elif kind == "str":
                if has_strings:
                    s = f"s_{alias}_{canon}"
                    joins.append(f"LEFT JOIN STRING_IDS {s} ON {s}.id = {ref}")
                    expr = (f"CASE WHEN typeof({ref}) = 'integer' THEN {s}.value "
                            f"ELSE CAST({ref} AS TEXT) END")
                else:
                    expr = f"CAST({ref} AS TEXT)"
            elif kind == "bytes":
                expr = f"{ref} / 1048576.0"
            elif kind == "kb":
                expr = f"{ref} / 1024.0"
            elif kind == "text":
                expr = f"CAST({ref} AS TEXT)"
            else:
                expr = ref
            out.append((expr, canon, kind))
        return out

    def query(self, sql: str, kinds: dict[str, str], params: tuple = ()) -> pd.DataFrame:
        """Run `sql`, fetching BATCH_ROWS rows at a time into typed Arrow columns (ints stay
        exact: nullable Int64 where NULLs occur, never float)."""
        try:
            names, types, batches = self._bad_text_tolerated(
                lambda: self._batches(sql, kinds, params))
        except sqlite3.Error as exc:
            raise DbError(_reason(exc)) from None
        if not batches:
            table = pa.table([pa.array([], type=t) for t in types], names=names)
        else:
            table = pa.concat_tables(batches)
        return table.to_pandas(types_mapper=lambda t: pd.Int64Dtype()
                               if pa.types.is_integer(t) else None)

    def _batches(self, sql: str, kinds: dict[str, str], params: tuple):
        cur = self.con.execute(sql, params)
        names = [d[0] for d in cur.description]
        types = [_PA_TYPES.get(kinds.get(n, "real"), pa.float64()) for n in names]
        batches = []
        while True:
            rows = cur.fetchmany(BATCH_ROWS)
            if not rows:
                break
            cols = list(zip(*rows))
            batches.append(pa.table([_array(c, t) for c, t in zip(cols, types)], names=names))
            del rows, cols
        return names, types, batches

    def select(self, table: str, spec: D.DbTable, where: str = "", params: tuple = (),
               names: list[str] | None = None) -> pd.DataFrame | None:
        """The canonical columns of one table (None without it)."""
        found = self.usable(table, spec)
        if found is None:
            return None
        joins: list[str] = []
        proj = self.project(table, spec, "t", found, joins, names)
        sql = (f"SELECT {select_list(proj)} FROM \"{table}\" t "
               f"{' '.join(joins)} {where}")
        return self.query(sql, {n: k for _, n, k in proj}, params)

    def meta(self) -> dict[str, str]:
        if self.usable("META_DATA", D.META_DATA) is None:
            return {}
        df = self.select("META_DATA", D.META_DATA)
        return dict(zip(df["name"].astype(str), df["value"].astype(str)))


def select_list(proj) -> str:
    """`expr AS "name", ...` (names quoted: `group` is an SQL keyword)."""
    return ", ".join(f'{e} AS "{n}"' for e, n, _ in proj)


def _array(values, typ: pa.DataType) -> pa.Array:
    try:
        return pa.array(values, type=typ)
    except (pa.ArrowInvalid, pa.ArrowTypeError, OverflowError):
        if pa.types.is_string(typ):
            return pa.array([None if v is None else str(v) for v in values], type=typ)
        if pa.types.is_integer(typ):  # text cells where an int belongs: NULL
            return pa.array([v if isinstance(v, int) and -2**63 <= v < 2**63 else None
                             for v in values], type=typ)
        return pa.array([v if isinstance(v, (int, float)) else None for v in values], type=typ)


def _replacing_text(data: bytes) -> str:
    """TEXT that is not UTF-8 (a damaged db) with U+FFFD for each bad byte, as the trace's
    invalid UTF-8 is read; a connection uses it only once such text was met (it is slower
    than sqlite3's own decoding)."""
    return data.decode("utf-8", "replace")


def _not_utf8(exc: sqlite3.OperationalError) -> bool:
    """sqlite3's error for a TEXT value that is not UTF-8."""
    return str(exc).startswith("Could not decode to UTF-8")


def _reason(exc: Exception) -> str:
    if isinstance(exc, UnicodeDecodeError):  # (sqlite3 could not decode SQLite's own message)
        return "damaged SQLite file: its schema is malformed (SQLite's message is not UTF-8)"
    text = str(exc)
    if "locked" in text or "busy" in text:
        return f"database is locked (still being written?): {text}; retried when it changes"
    if "not a database" in text or "malformed" in text:
        return f"not a usable SQLite database (truncated or still being written?): {text}"
    return f"SQLite error: {text}"


def find_db_files(folder: str, producer: str) -> tuple[str | None, str | None]:
    """(main db, analysis db) of a producer in `folder`; the newest main db if several."""
    pattern, analysis = D.DB_FILES[producer]
    try:
        names = sorted(os.listdir(folder))
    except OSError:
        return None, None
    mains = [n for n in names if re.match(pattern, n)]
    main = os.path.join(folder, mains[-1]) if mains else None
    side = os.path.join(folder, analysis) if analysis in names else None
    return main, side


class DbSource:
    """The db files of one span, opened on first use; errors recorded once per file."""

    def __init__(self, ctx, main: str | None, side: str | None, device_id: int | None = None):
        self.ctx = ctx
        self.paths = {"main": main, "side": side}
        self.files: dict[str, DbFile | None] = {}
        self.device_id = device_id
        # Said before the reason when the db is the span's only output.
        self.prefix = ""

    def get(self, which: str) -> DbFile | None:
        if which not in self.files:
            path = self.paths[which]
            db = None
            if path is not None and self.ctx.readable(path):
                try:
                    db = DbFile(path)
                except DbError as exc:
                    self.error(path, self.prefix + str(exc))
            self.files[which] = db
        return self.files[which]

    def error(self, path: str, message: str) -> None:
        """One error per file and reason (the view and timeline steps open the same db)."""
        rel = self.ctx.span.rel(path)
        if not any(e.path == rel and e.message == message for e in self.ctx.profile.errors):
            self.ctx.error(path, message)

    def close(self) -> None:
        for db in self.files.values():
            if db is not None:
                db.close()

    def guarded(self, which: str, fn, *args):
        """Run one table's read; a DbError is this file's error and the others still run."""
        db = self.get(which)
        if db is None:
            return None
        self.ctx.current = db.path
        try:
            return fn(db, *args)
        except DbError as exc:
            self.error(db.path, str(exc))
            return None
        except sqlite3.DatabaseError as exc:  # damaged pages found only while reading rows
            self.error(db.path, f"damaged SQLite file ({which}): {exc}")
            return None
        except (ValueError, TypeError, OverflowError) as exc:
            # A damaged or half-written row: NULL or text where the schema has a number.
            self.error(db.path, f"{_what(fn)}: values this reader cannot use (a NULL or text "
                                f"where a number must be; damaged or half-written file?): {exc}")
            return None


def _what(fn) -> str:
    return fn.__name__.lstrip("_").replace("_", " ")
