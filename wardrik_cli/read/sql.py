"""SQL over a root's agent logs with DuckDB (the ``sql`` extra): read only, a snapshot, streamed.

Contract kept here:
- The ledgers are never written. DuckDB runs in memory (``:memory:``), with no temp
  directory (nothing spills to disk), extensions neither installed nor loaded, and, once the
  views exist, external access off and the configuration locked: a query can read the
  snapshot's log files and nothing else on the machine (no ``read_csv('/etc/passwd')``, no
  ``getenv``, no ``COPY``). Only one ``SELECT`` statement is run (``WITH``, ``FROM x``,
  ``VALUES``, ``DESCRIBE``, ``SHOW`` and ``SUMMARIZE`` parse as SELECT); anything else
  (``CREATE``, ``INSERT``, ``COPY``, ``ATTACH``, ``INSTALL``, ``LOAD``, ``SET``, ``PRAGMA``,
  ``CALL``, ``EXPLAIN``, several statements) is ``SqlRefused`` before anything is read.
- The files: every agent log under the root (``Root.iter_log_ids``: never ``.wardrik/``,
  never a dot-entry, never through a symbolic link), each opened here with ``O_NOFOLLOW``
  and handed to DuckDB as ``/proc/self/fd/N`` where there is one (so the file read is the
  very file checked here, even if its path is swapped for a link meanwhile), else as its
  path. No glob is ever given to DuckDB.
- A snapshot: a log is read through the last complete line it held when the query began
  (``seq <= `` that line's sequence). A torn tail (bytes after the last newline, or a line
  being written while DuckDB reads) is skipped, never reported, never fails the query.
- A complete line that is not an event (not JSON, not an object, no 12-digit ``sequence``,
  no ``type`` or ``time``) is corruption, as for every reader: ``CorruptLedger`` naming file,
  line and byte offset; with ``skip_corrupt`` each such line is reported to ``on_corrupt``
  (same file:line: offset) and left out. Blank lines are not seen by DuckDB's reader and
  are not reported here (``wardrik check`` does).
- Views (times are TIMESTAMPTZ in UTC; ``type`` is the short name, without ``wardrik.``;
  ``run_id`` is the trace id of the event's ``traceparent``, which for a run's events is
  its ``data.run.id``):
  ``events(log, seq, time, type, subject, run_id, data JSON)``;
  ``runs(log, run_id, started, ended, status, turns, tool_calls)``: one row per
  ``run.started``; a run holds the log's events up to the next ``run.started`` (as ``fold``
  folds); status completed, failed (its first ``run.completed``/``run.failed``), abandoned
  (a new run began first; ended is then that run's start) or running; turns counts
  ``message.completed`` and tool_calls ``tool_call.completed``/``failed``, as the state view;
  ``tool_calls(log, run_id, call_id, name, started, ended, seconds, status, error)``: a
  ``tool_call.started`` paired with the ``completed``/``failed`` of its ``tool.call.id`` in
  the same run (the k-th start with the k-th end of that id); status completed, failed,
  unfinished (its run ended without it) or running; error is ``data.error.message`` (else
  ``data.error``) of a failure, whole;
  ``model_calls(log, run_id, message_id, model, started, ended, seconds, input_tokens,
  output_tokens)``: ``message.started`` paired with ``message.completed`` the same way;
  model from either event's ``data.model``, tokens from ``data.usage`` (NULL when absent).
- Pruning (``scope``, for remote roots, whose logs are fetched before the query runs): what
  rows the query can read, from its parsed form (DuckDB's ``json_serialize_sql``; nothing
  runs). Only a query whose every table reference is the one view in its ``FROM`` (no join,
  subquery, CTE or set operation) is pruned, and only by its ``WHERE``: conjuncts (and ORs of
  them) ``log = 'ID'`` / ``log IN ('ID', ...)`` name the only logs it reads (every view's rows
  come from their own log's events alone), and on ``events``, ``time >= T``, ``time > T`` or
  ``time BETWEEN T AND ...`` with a constant T give the first UTC day it reads (a segment never
  crosses a day, so no event of an earlier day's segment can pass). Anything else reads every
  log whole: a scope is a superset of what the query needs, never less. ``Query(logs=...)``
  then reads only those logs' files.
"""
from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from wardrik_cli.errors import BadInput, CorruptLedger, Failure
from wardrik_cli.extras import need
from wardrik_cli.protocol.names import is_log_id
from wardrik_cli.store.layout import Root
from wardrik_cli.store.log import Log, LogView

VIEWS = ("events", "runs", "tool_calls", "model_calls")
FETCH_ROWS = 2048  # rows asked of DuckDB at a time: output is streamed, never the whole result
MAX_LINE = 1 << 24  # DuckDB's maximum_object_size (its default); its buffers grow with it, so not more
_MARK = "wardrik-corrupt:"  # starts the error() message the events view raises on a bad line
_PROC_FD = Path("/proc/self/fd")
_COLUMNS = ("{'type': 'VARCHAR', 'sequence': 'VARCHAR', 'time': 'VARCHAR', 'subject': 'VARCHAR', "
            "'traceparent': 'VARCHAR', 'data': 'JSON'}")
# A line is an event when its envelope has what every reader needs (``store.log.decode_event``).
_GOOD = ("r.sequence IS NOT NULL AND regexp_full_match(r.sequence, '[0-9]{12}') "
         "AND r.type IS NOT NULL AND r.time IS NOT NULL")


class SqlRefused(BadInput):
    """SQL that is not one read query, or that DuckDB refuses (parse, binding, a missing column)."""


class LogFile:
    """One log of the snapshot: its open file, what DuckDB reads it as, and its last sequence."""

    __slots__ = ("log", "view", "name", "last_seq", "live")

    def __init__(self, log: str, view: LogView, name: str, last_seq: int, live: bool):
        self.log, self.view, self.name, self.last_seq = log, view, name, last_seq
        self.live = live  # a torn tail when the snapshot was taken: one bad row there is that tail


def snapshot(root: Root, *, lenient: bool = False, logs: frozenset[str] | None = None) -> list[LogFile]:
    """Every agent log of ``root`` (only ``logs`` when given), opened read-only (no link
    followed), sorted by log id."""
    files: list[LogFile] = []
    proc = _PROC_FD.is_dir()
    try:
        for log_id in sorted(root.require().iter_log_ids()):
            if logs is not None and log_id not in logs:
                continue
            view = Log.agent(root, log_id).open()
            if view.fd is None:
                continue  # removed since it was listed
            files.append(LogFile(log_id, view, "", 0, view.torn_bytes > 0))
            view.ends_from_bytes = True  # the last line's sequence from its bytes, as readers do
            view.lenient = lenient
            last = view.last()
            files[-1].last_seq = int(last[1]["sequence"]) if last is not None else 0
            files[-1].name = f"{_PROC_FD}/{view.fd}" if proc else str(view.log.path)
    except BaseException:
        close(files)
        raise
    return files


def close(files: list[LogFile]) -> None:
    for f in files:
        f.view.close()


def _lit(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def _events_sql(files: list[LogFile], skip_corrupt: bool) -> str:
    if not files:
        return ("SELECT NULL::VARCHAR AS log, NULL::BIGINT AS seq, NULL::TIMESTAMPTZ AS time, NULL::VARCHAR AS type, "
                "NULL::VARCHAR AS subject, NULL::VARCHAR AS run_id, NULL::JSON AS data WHERE false")
    names = "[" + ", ".join(_lit(f.name) for f in files) + "]"
    table = ", ".join(f"({_lit(f.name)}, {_lit(f.log)}, {f.last_seq}, {str(f.live).lower()})" for f in files)
    # A bad row of a file with a torn tail may be that tail; the file was checked beforehand
    # (``_check_torn``). Elsewhere a bad row is a corrupt line: error() stops the query with
    # the file's name, and ``Query`` finds the line and its offset. Every column goes through
    # ``ok``, so no filter of the user's (pushed below the view's WHERE) drops a bad row unseen.
    bad = "false" if skip_corrupt else f"CASE WHEN f.live THEN false ELSE error({_lit(_MARK)} || r.filename) END"
    return f"""
SELECT CASE WHEN ok THEN log END AS log, CASE WHEN ok THEN CAST(sequence AS BIGINT) END AS seq,
       CASE WHEN ok THEN TRY_CAST(time AS TIMESTAMPTZ) END AS time,
       CASE WHEN ok THEN (CASE WHEN starts_with(type, 'wardrik.') THEN type[9:] ELSE type END) END AS type,
       CASE WHEN ok THEN subject END AS subject,
       CASE WHEN ok AND length(traceparent) = 55 THEN lower(substr(traceparent, 4, 32)) END AS run_id,
       CASE WHEN ok THEN data END AS data
FROM (
  SELECT r.*, f.log, f.last_seq, CASE WHEN {_GOOD} THEN true ELSE {bad} END AS ok
  FROM read_ndjson({names}, columns={_COLUMNS}, ignore_errors=true, filename=true,
                   maximum_object_size={MAX_LINE}) AS r
  JOIN (VALUES {table}) AS f(path, log, last_seq, live) ON f.path = r.filename
)
WHERE ok AND CAST(sequence AS BIGINT) <= last_seq"""


_RUNS = """
WITH e AS (
  SELECT log, seq, time, type, run_id,
         count(*) FILTER (WHERE type = 'run.started') OVER (PARTITION BY log ORDER BY seq ROWS UNBOUNDED PRECEDING)
           AS run_no
  FROM events
  WHERE type IN ('run.started', 'run.completed', 'run.failed', 'message.completed', 'tool_call.completed',
                 'tool_call.failed')
), r AS (
  SELECT log, run_no,
         arg_min(run_id, seq) FILTER (WHERE type = 'run.started') AS run_id,
         min(time) FILTER (WHERE type = 'run.started') AS started,
         arg_min(time, seq) FILTER (WHERE type IN ('run.completed', 'run.failed')) AS closed,
         arg_min(type, seq) FILTER (WHERE type IN ('run.completed', 'run.failed')) AS closer,
         count(*) FILTER (WHERE type = 'message.completed') AS turns,
         count(*) FILTER (WHERE type IN ('tool_call.completed', 'tool_call.failed')) AS tool_calls
  FROM e WHERE run_no > 0 GROUP BY log, run_no
)
SELECT log, run_id, started,
       CASE WHEN closer IS NOT NULL THEN closed ELSE lead(started) OVER w END AS ended,
       CASE WHEN closer = 'run.completed' THEN 'completed' WHEN closer = 'run.failed' THEN 'failed'
            WHEN lead(started) OVER w IS NOT NULL THEN 'abandoned' ELSE 'running' END AS status,
       turns, tool_calls
FROM r WINDOW w AS (PARTITION BY log ORDER BY run_no)"""


def _calls_sql(start: str, ends: tuple[str, ...], id_path: str, select: str) -> str:
    """A view pairing ``start`` events with their end events by (log, run, id, k-th)."""
    kinds = ", ".join(_lit(t) for t in (start, *ends))
    return f"""
WITH e0 AS (
  SELECT log, seq, time, type, run_id, data,
         count(*) FILTER (WHERE type = 'run.started') OVER (PARTITION BY log ORDER BY seq ROWS UNBOUNDED PRECEDING)
           AS run_no
  FROM events WHERE type IN ('run.started', 'run.completed', 'run.failed', {kinds})
), e AS (
  SELECT *, max(CASE WHEN type IN ('run.completed', 'run.failed') THEN seq END) OVER (PARTITION BY log, run_no)
              AS closed_at,
         max(run_no) OVER (PARTITION BY log) AS runs_in_log
  FROM e0
), c AS (
  SELECT *, data->>'{id_path}' AS ident,
         row_number() OVER (PARTITION BY log, run_no, data->>'{id_path}', type = {_lit(start)} ORDER BY seq) AS k,
         run_no > 0 AND (closed_at IS NOT NULL OR run_no < runs_in_log) AS over
  FROM e WHERE type IN ({kinds})
), s AS (SELECT * FROM c WHERE type = {_lit(start)}),
   x AS (SELECT * FROM c WHERE type <> {_lit(start)})
SELECT {select}
FROM s FULL JOIN x ON s.log = x.log AND s.run_no = x.run_no AND s.ident IS NOT DISTINCT FROM x.ident AND s.k = x.k"""


_TOOL_CALLS = _calls_sql("tool_call.started", ("tool_call.completed", "tool_call.failed"), "$.tool.call.id", """
  coalesce(s.log, x.log) AS log, coalesce(s.run_id, x.run_id) AS run_id, coalesce(s.ident, x.ident) AS call_id,
  coalesce(s.data->>'$.tool.name', x.data->>'$.tool.name') AS name,
  s.time AS started, x.time AS ended, date_diff('microsecond', s.time, x.time) / 1e6 AS seconds,
  CASE WHEN x.type = 'tool_call.completed' THEN 'completed' WHEN x.type = 'tool_call.failed' THEN 'failed'
       WHEN s.over THEN 'unfinished' ELSE 'running' END AS status,
  CASE WHEN x.type = 'tool_call.failed' THEN coalesce(x.data->>'$.error.message', x.data->>'$.error') END AS error""")

_MODEL_CALLS = _calls_sql("message.started", ("message.completed",), "$.message.id", """
  coalesce(s.log, x.log) AS log, coalesce(s.run_id, x.run_id) AS run_id, coalesce(s.ident, x.ident) AS message_id,
  coalesce(s.data->>'$.model', x.data->>'$.model') AS model,
  s.time AS started, x.time AS ended, date_diff('microsecond', s.time, x.time) / 1e6 AS seconds,
  TRY_CAST(x.data->>'$.usage.input_tokens' AS BIGINT) AS input_tokens,
  TRY_CAST(x.data->>'$.usage.output_tokens' AS BIGINT) AS output_tokens""")


def first_line(message: str) -> str:
    lines = [ln.strip() for ln in str(message).splitlines() if ln.strip()]
    return lines[0] if lines else "DuckDB gave no message"


def check_statement(duckdb: Any, con: Any, text: str) -> None:
    """One SELECT statement, else ``SqlRefused`` (parsed only: nothing runs)."""
    try:
        statements = con.extract_statements(text)
    except duckdb.Error as e:
        raise SqlRefused(first_line(str(e))) from None
    if len(statements) != 1:
        raise SqlRefused("give exactly one SELECT statement" if statements else "no SQL statement given")
    kind = statements[0].type
    if kind != duckdb.StatementType.SELECT:
        name = str(kind).rsplit(".", 1)[-1]
        raise SqlRefused(f"only a read query (SELECT ...) is run, not {name}: the ledgers are read only")


# ---------------------------------------------------------------------------
# pruning: what a query can read
# ---------------------------------------------------------------------------
@dataclass(frozen=True)
class Scope:
    """The rows a query can read: only the agent logs ``logs`` (None: any), and of the events
    only those of UTC days from ``since_day`` on (None: any)."""

    logs: frozenset[str] | None = None
    since_day: str | None = None


_LOWER = {"COMPARE_GREATERTHAN": True, "COMPARE_GREATERTHANOREQUALTO": True,
          "COMPARE_LESSTHAN": False, "COMPARE_LESSTHANOREQUALTO": False}  # is the column on the left a lower bound?


def scope(text: str) -> Scope:
    """What ``text`` can read (see the module's contract); ``SqlRefused`` when it is not one
    read query (before any log is fetched)."""
    import orjson

    duckdb = need("duckdb", "sql")
    con = duckdb.connect(":memory:", config={"autoinstall_known_extensions": False,
                                             "autoload_known_extensions": False})
    try:
        check_statement(duckdb, con, text)
        try:
            doc = orjson.loads(con.execute("SELECT json_serialize_sql($1)", [text]).fetchone()[0])
            node = doc["statements"][0]["node"]
        except (duckdb.Error, ValueError, KeyError, IndexError, TypeError):
            return Scope()
        if doc.get("error") or not _prunable(node):
            return Scope()
        table = node["from_table"]
        names = {str(table["table_name"]).lower(), str(table.get("alias") or table["table_name"]).lower()}
        con.execute("SET TimeZone = 'UTC'")  # as the query's: a time without an offset is UTC
        logs, day = _restrict(node.get("where_clause"), names, str(table["table_name"]).lower() == "events",
                              lambda t: _utc_day(duckdb, con, t))
        return Scope(logs, day)
    finally:
        con.close()


def _prunable(node: Any) -> bool:
    """A plain SELECT whose one table reference is a view of ours, with no subquery anywhere."""
    if not isinstance(node, dict) or node.get("type") != "SELECT_NODE" or node.get("cte_map", {}).get("map"):
        return False
    table = node.get("from_table")
    if not isinstance(table, dict) or table.get("type") != "BASE_TABLE" \
            or str(table.get("table_name")).lower() not in VIEWS \
            or table.get("schema_name") or table.get("catalog_name"):
        return False
    seen = [0]

    def walk(x: Any) -> bool:
        if isinstance(x, dict):
            if x.get("class") == "SUBQUERY" or x.get("type") in ("SUBQUERY", "SELECT_NODE") and x is not node:
                return False
            if x.get("type") == "BASE_TABLE":
                seen[0] += 1
            return all(walk(v) for v in x.values())
        if isinstance(x, list):
            return all(walk(v) for v in x)
        return True

    return walk(node) and seen[0] == 1


def _column(x: Any, names: set[str]) -> str | None:
    if not isinstance(x, dict) or x.get("class") != "COLUMN_REF":
        return None
    parts = [str(n).lower() for n in x.get("column_names") or []]  # identifiers are case-insensitive
    if len(parts) == 1 or (len(parts) == 2 and parts[0] in names):
        return parts[-1]
    return None


# The casts a time bound may come through, as the type the scope casts its text to (a
# TIMESTAMP or DATE drops a UTC offset the text holds: the day must be read as the query reads
# it, so through the same cast); any other cast: no bound taken.
_TIME_CASTS = {"": "TIMESTAMPTZ", "TIMESTAMPTZ": "TIMESTAMPTZ", "TIMESTAMP WITH TIME ZONE": "TIMESTAMPTZ",
               "TIMESTAMP": "TIMESTAMP", "DATETIME": "TIMESTAMP", "DATE": "DATE", "VARCHAR": "TIMESTAMPTZ",
               "TEXT": "TIMESTAMPTZ", "STRING": "TIMESTAMPTZ"}
_TEXT_CASTS = frozenset({"", "VARCHAR", "TEXT", "STRING"})


def _cast_of(x: Any) -> tuple[Any, str]:
    """(the constant under a cast, the cast's type name in capitals; "" when there is none)."""
    if isinstance(x, dict) and x.get("class") == "CAST":
        if x.get("try_cast"):
            return None, "?"
        te = x.get("type_expr") or x.get("cast_type") or {}
        name = te.get("type_name") or te.get("id") if isinstance(te, dict) else None
        return x.get("child"), str(name or "?").upper()
    return x, ""


def _time_text(x: Any) -> tuple[str, str] | None:
    """A time bound's constant and the type the scope must read it through (one of
    ``_TIME_CASTS``' values); None for anything else."""
    inner, cast = _cast_of(x)
    as_type = _TIME_CASTS.get(cast)
    v = _constant(inner) if as_type is not None else None
    return None if v is None or as_type is None else (v, as_type)


def _text(x: Any) -> str | None:
    """A string constant, also through a cast to a string type."""
    inner, cast = _cast_of(x)
    return _constant(inner) if cast in _TEXT_CASTS else None


def _constant(x: Any) -> str | None:
    if isinstance(x, dict) and x.get("class") == "CONSTANT":
        lit = x.get("value") or x.get("literal") or {}
        if isinstance(lit, dict) and isinstance(lit.get("text"), str) and lit.get("kind", "STRING") == "STRING":
            return str(lit["text"])
        if isinstance(lit, dict) and isinstance(lit.get("value"), str):
            return str(lit["value"])
    return None


def _ids(values: list[str]) -> frozenset[str]:
    return frozenset(v for v in values if is_log_id(v))  # anything else names no log: no rows


def _restrict(x: Any, names: set[str], events: bool,
              day: Callable[[tuple[str, str]], str | None]) -> tuple[frozenset[str] | None, str | None]:
    """(logs, first UTC day of time) that rows passing the condition ``x`` must have (None: any);
    ``day`` reads a constant as the query will."""
    if not isinstance(x, dict):
        return None, None
    kind, cls = x.get("type"), x.get("class")
    if cls == "CONJUNCTION" and kind in ("CONJUNCTION_AND", "CONJUNCTION_OR"):
        parts = [_restrict(c, names, events, day) for c in x.get("children") or []]
        if not parts:
            return None, None
        logs_of = [p[0] for p in parts]
        since_of = [p[1] for p in parts]
        if kind == "CONJUNCTION_AND":
            known = [s for s in logs_of if s is not None]
            logs = frozenset.intersection(*known) if known else None
            bounds = [b for b in since_of if b is not None]
            return logs, max(bounds) if bounds else None
        logs = frozenset.union(*logs_of) if all(s is not None for s in logs_of) else None  # type: ignore[arg-type]
        return logs, min(since_of) if all(b is not None for b in since_of) else None  # type: ignore[type-var]
    if cls == "COMPARISON" and kind == "COMPARE_EQUAL":
        for a, b in ((x.get("left"), x.get("right")), (x.get("right"), x.get("left"))):
            if _column(a, names) == "log" and (v := _text(b)) is not None:
                return _ids([v]), None
        return None, None
    if cls == "OPERATOR" and kind == "COMPARE_IN":
        kids = x.get("children") or []
        values = [_text(k) for k in kids[1:]]
        if kids and _column(kids[0], names) == "log" and values and all(v is not None for v in values):
            return _ids([v for v in values if v is not None]), None
        return None, None
    if not events:
        return None, None
    if cls == "COMPARISON" and kind in _LOWER:
        left, right = x.get("left"), x.get("right")
        if _column(left, names) == "time" and _LOWER[kind] and (b := _time_text(right)) is not None:
            return None, day(b)
        if _column(right, names) == "time" and not _LOWER[kind] and (b := _time_text(left)) is not None:
            return None, day(b)
        return None, None
    if cls == "BETWEEN" and _column(x.get("input"), names) == "time" \
            and (b := _time_text(x.get("lower"))) is not None:
        return None, day(b)
    return None, None


def _utc_day(duckdb: Any, con: Any, bound: tuple[str, str]) -> str | None:
    """The UTC day of the time DuckDB reads ``(text, type)`` as (as the query will: through
    that type first, one of ``_TIME_CASTS``' values only); None when it cannot."""
    text, cast = bound
    if cast not in _TIME_CASTS.values():
        return None
    try:
        got = con.execute(f"SELECT strftime(CAST(CAST($1 AS {cast}) AS TIMESTAMPTZ), '%Y-%m-%d')", [text]).fetchone()
    except duckdb.Error:
        return None
    return str(got[0]) if got and got[0] else None


class Query:
    """One query over a snapshot of ``root``: ``columns``, ``types`` and ``rows()`` (batches).

    ``on_corrupt`` set means skip corrupt lines and report each one to it; unset, a corrupt
    line stops the query with ``CorruptLedger``. ``logs``: read only these agent logs (a
    ``scope``'s: the rows of any other cannot pass the query's WHERE)."""

    def __init__(self, root: Root, text: str, *, on_corrupt: Callable[[CorruptLedger], None] | None = None,
                 logs: frozenset[str] | None = None):
        self.root, self.text, self.on_corrupt, self.logs = root, text, on_corrupt, logs
        self.duckdb = need("duckdb", "sql")
        self.files: list[LogFile] = []
        self.con: Any = None
        self.columns: list[str] = []
        self.types: list[str] = []
        self._result: Any = None

    # -- setting up ---------------------------------------------------------------------
    def __enter__(self) -> Query:
        try:
            self._start()
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        if self.con is not None:
            self.con.close()
            self.con = None
        close(self.files)
        self.files = []

    def _connect(self) -> Any:
        return self.duckdb.connect(":memory:", config={
            "temp_directory": "",  # nothing spills to disk: nothing is written anywhere
            "autoinstall_known_extensions": False, "autoload_known_extensions": False,
        })

    def _start(self) -> None:
        self.con = self._connect()
        check_statement(self.duckdb, self.con, self.text)  # refused before any file is opened
        self.files = snapshot(self.root, lenient=self.on_corrupt is not None, logs=self.logs)
        self._check_torn()
        con = self.con
        con.execute("SET TimeZone = 'UTC'")
        con.execute("SET allowed_paths = $p", {"p": [f.name for f in self.files]})
        con.execute(f"CREATE VIEW events AS {_events_sql(self.files, self.on_corrupt is not None)}")
        con.execute(f"CREATE VIEW runs AS {_RUNS}")
        con.execute(f"CREATE VIEW tool_calls AS {_TOOL_CALLS}")
        con.execute(f"CREATE VIEW model_calls AS {_MODEL_CALLS}")
        con.execute("SET enable_external_access = false")
        con.execute("SET lock_configuration = true")
        self._result = self._run(lambda: con.execute(self.text))
        desc = self._result.description or []
        self.columns = [d[0] for d in desc]
        self.types = [str(d[1]) for d in desc]

    def _check_torn(self) -> None:
        """Files the events view lets bad rows through silently: a torn tail's, or every file
        under ``skip_corrupt``. Count their bad rows with DuckDB; where there are more than the
        one torn tail, find the corrupt lines (report them, or stop at the first)."""
        check = [f for f in self.files if f.live or self.on_corrupt is not None]
        if not check:
            return
        names = "[" + ", ".join(_lit(f.name) for f in check) + "]"
        rows = self._run(lambda: self.con.execute(
            f"SELECT r.filename, count(*) FROM read_ndjson({names}, columns={_COLUMNS}, ignore_errors=true, "
            f"filename=true, maximum_object_size={MAX_LINE}) AS r WHERE NOT coalesce({_GOOD}, false) "
            "GROUP BY 1").fetchall())
        by_name = {f.name: f for f in check}
        for name, count in sorted(rows):
            f = by_name.get(name)
            if f is not None and count > (1 if f.live else 0):
                self._find_corrupt(f)

    def _find_corrupt(self, f: LogFile) -> bool:
        """Walk ``f``'s complete lines: report each corrupt one (``on_corrupt``), or raise the
        first. True when one was found."""
        found: list[CorruptLedger] = []
        for off, raw in f.view.iter_raw(0):
            if len(raw) >= MAX_LINE:  # an event DuckDB cannot read, not a corrupt line
                raise Failure(f"{f.view.log.path}: the line at byte {off} is {len(raw)} bytes, more than the "
                              f"{MAX_LINE >> 20} MiB a line may have for `wardrik sql`")
            f.view.decode_or_report(off, raw, found.append)
        for err in found:
            if self.on_corrupt is None:
                raise err
            self.on_corrupt(err)
        return bool(found)

    def _run(self, step: Callable[[], Any]) -> Any:
        """A DuckDB call, its errors made wardrik's: the query's own (parse, binding, types)
        are bad input; a corrupt line is ``CorruptLedger``; anything else is a failure."""
        duckdb = self.duckdb
        try:
            return step()
        except duckdb.InterruptException:
            raise KeyboardInterrupt from None
        except duckdb.Error as e:
            message = str(e)
            if _MARK in message:
                self._corrupt(message)
            text = first_line(message)
            if isinstance(e, (duckdb.ParserException, duckdb.BinderException, duckdb.CatalogException,
                              duckdb.ConversionException, duckdb.PermissionException,
                              duckdb.InvalidInputException, duckdb.NotImplementedException,
                              duckdb.SyntaxException, duckdb.OutOfRangeException, duckdb.TypeMismatchException)):
                raise SqlRefused(text) from None
            raise Failure(text) from None

    def _corrupt(self, message: str) -> None:
        name = message.split(_MARK, 1)[1].split("\n", 1)[0].strip()
        f = next((f for f in self.files if f.name == name), None)
        if f is not None and self._find_corrupt(f):
            return  # raised above (no on_corrupt is set when the view raises)
        # No corrupt complete line after all: a line was being written while DuckDB read it.
        raise Failure(f"log {f.log if f else name!r} was being appended to while it was read (a half-written "
                      "line); run the query again") from None

    # -- results ------------------------------------------------------------------------
    def batches(self) -> Iterator[list[tuple[Any, ...]]]:
        """The result's rows, ``FETCH_ROWS`` at a time, as DuckDB makes them."""
        while True:
            rows = self._run(lambda: self._result.fetchmany(FETCH_ROWS))
            if not rows:
                return
            yield rows


def run_sql(root: Root | str | os.PathLike[str], text: str) -> list[dict[str, Any]]:
    """Every row of ``text`` over ``root``, as dicts (a small convenience for Python callers)."""
    with Query(root if isinstance(root, Root) else Root(root), text) as q:
        return [dict(zip(q.columns, row, strict=True)) for batch in q.batches() for row in batch]
