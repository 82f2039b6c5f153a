"""``sql``: DuckDB over a root's ledgers, read only (issue 14).

A thin shell over ``read.sql.Query``; the command registers itself on ``app`` when this
module is imported. Formats: ``jsonl`` (the default in a pipe: one object a row), ``json``
(one array), ``csv`` (a header, then rows; RFC 4180: CRLF, quotes doubled) and ``pretty`` (a
text table on a terminal, every cell through the terminal sanitiser). Rows are written as
DuckDB makes them, a batch at a time, in every format: nothing holds the whole result.
In ``jsonl``/``json``, a time is RFC 3339 UTC with microseconds and ``Z`` (as stored), a
JSON column (``data``) is nested as JSON, a decimal is a JSON number; in ``csv``, NULL is an
empty field and a nested value is its JSON text.

On a remote root (``--root s3://...|file://...``) the command syncs the mirror itself
instead of through ``Invocation.root``: first the query is checked and its scope found
(``read.sql.scope``: the logs and days its WHERE can touch), then only those are fetched
(``remote.mirror.Need``) and only those logs are read.
"""
from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Iterator
from decimal import Decimal
from enum import Enum
from typing import Annotated, Any

import orjson
import typer

from wardrik_cli.cli.app import app
from wardrik_cli.cli.context import current
from wardrik_cli.cli.inputs import on_corrupt
from wardrik_cli.cli.options import SkipCorrupt
from wardrik_cli.cli.output import Batch

PRETTY_SAMPLE = 200  # rows measured for the pretty table's column widths
PRETTY_CELL = 60  # the widest a pretty cell grows; longer text is cut with …


class SqlFormat(str, Enum):  # noqa: UP042 - as cli.output.Format
    pretty = "pretty"
    jsonl = "jsonl"
    json = "json"
    csv = "csv"


@app.command(rich_help_panel="Review")
def sql(
    query: Annotated[str, typer.Argument(
        metavar="QUERY", show_default=False,
        help="One SELECT over the views events, runs, tool_calls and model_calls.")],
    skip_corrupt: SkipCorrupt = False,
    fmt: Annotated[SqlFormat | None, typer.Option(
        "--format", "-o", "-F", metavar="FORMAT", case_sensitive=False,
        help="pretty (default on a terminal), jsonl (one object a row), json (an array) or csv.")] = None,
) -> None:
    """Query every agent log of the root with SQL (DuckDB, the 'sql' extra), read only.

    Views: events (log, seq, time, type, subject, run_id, data), runs (log, run_id, started,
    ended, status, turns, tool_calls), tool_calls (log, run_id, call_id, name, started, ended,
    seconds, status, error) and model_calls (log, run_id, message_id, model, started, ended,
    seconds, input_tokens, output_tokens). type is the short name (tool_call.failed, no
    'wardrik.'); run_id is the event's trace id, a run's data.run.id; times are UTC. A run
    holds its log's events up to the next run.started, as fold folds them. Each log is read
    through its last complete line when the query starts (a torn tail is skipped); a corrupt
    line stops the query, naming it, unless --skip-corrupt. Only one SELECT runs, in memory:
    nothing is written, and no other file can be read.

    Examples:

      wardrik sql "select type, count(*) from events group by 1 order by 2 desc"

      wardrik sql "select name, status, seconds from tool_calls where status <> 'completed'"

      wardrik sql "select log, model, sum(output_tokens) from model_calls group by all" -o csv
    """
    from wardrik_cli.read.sql import Query

    inv = current()
    try:
        query.encode("utf-8")
    except UnicodeEncodeError:  # bytes that were not UTF-8 on the command line
        from wardrik_cli.errors import BadInput

        raise BadInput("the query is not valid UTF-8 text") from None
    shown = SqlFormat(fmt) if fmt is not None else SqlFormat.pretty if inv.isatty() else SqlFormat.jsonl
    url = inv.remote_root_url
    root, logs = (inv.root, None) if url is None else _remote(inv, url, query)
    with Query(root, query, on_corrupt=on_corrupt(skip_corrupt), logs=logs) as q:
        if shown == SqlFormat.pretty:
            _pretty(q.columns, q.batches())
        elif shown == SqlFormat.csv:
            _csv(q.columns, q.batches(), terminal=inv.isatty())
        else:
            _json(q.columns, q.types, q.batches(), array=shown == SqlFormat.json)
    inv.flush_out()


def _remote(inv: Any, url: str, query: str) -> tuple[Any, frozenset[str] | None]:
    """(the mirror's root, synced for what ``query`` can read; the logs it reads)."""
    from wardrik_cli.read.sql import scope
    from wardrik_cli.remote.mirror import Need, open_mirror

    sc = scope(query)  # refuses anything but one SELECT before the store is asked for anything
    mirror = open_mirror(url, inv.env, inv.deployment_given(), warn=inv.warn)
    need = Need(["*"] if sc.logs is None else sorted(sc.logs) or None, since_day=sc.since_day)
    root = mirror.sync(need)
    inv.remote_mirror = mirror
    return root, sc.logs


# ---------------------------------------------------------------------------
# values
# ---------------------------------------------------------------------------
def _time(v: dt.datetime) -> str:
    if v.tzinfo is not None:
        v = v.astimezone(dt.UTC)
        return v.strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    return v.isoformat()


def _default(v: Any) -> Any:
    """What orjson cannot write itself: an exact decimal, an interval, bytes, anything else."""
    if isinstance(v, Decimal):
        return orjson.Fragment(str(v)) if v.is_finite() else None
    if isinstance(v, dt.timedelta):
        return v.total_seconds()
    if isinstance(v, (bytes, bytearray, memoryview)):
        return bytes(v).hex()
    return str(v)


def _dumps(v: Any) -> bytes:
    """JSON of a value DuckDB gave: orjson's, or, for what it refuses (a MAP whose keys are not
    strings, an integer past 64 bits such as a HUGEINT sum), the same value made writable: keys
    as their text, a big integer written whole."""
    try:
        return orjson.dumps(v, default=_default)
    except TypeError:
        return orjson.dumps(_writable(v), default=_default)


def _writable(v: Any) -> Any:
    if isinstance(v, bool):
        return v
    if isinstance(v, int):
        return orjson.Fragment(str(v)) if not -(1 << 63) <= v < (1 << 64) else v
    if isinstance(v, dict):
        return {k if isinstance(k, str) else _text(k): _writable(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [_writable(x) for x in v]
    return v


def _converters(types: list[str]) -> list[Callable[[Any], Any] | None]:
    """Per column, what a value becomes before orjson writes it (None: as it is)."""
    def json_text(v: Any) -> Any:
        return orjson.Fragment(v) if isinstance(v, str) else v

    def when(v: Any) -> Any:
        return _time(v) if isinstance(v, dt.datetime) else v

    return [json_text if t == "JSON" else when if t.startswith("TIMESTAMP") else None for t in types]


def _json(columns: list[str], types: list[str], batches: Iterator[list[tuple[Any, ...]]], *, array: bool) -> None:
    conv = _converters(types)
    keys = list(enumerate(columns))
    dumps = orjson.dumps
    first = True
    with Batch() as out:
        if array:
            out.write(b"[")
        for rows in batches:
            for row in rows:
                obj = {name: (row[i] if conv[i] is None or row[i] is None else conv[i](row[i]))  # type: ignore[misc]
                       for i, name in keys}
                try:
                    line = dumps(obj, default=_default)
                except TypeError:  # what orjson refuses, made writable (``_dumps``)
                    line = dumps(_writable(obj), default=_default)
                if array:
                    out.write(b"\n  " + line if first else b",\n  " + line)
                else:
                    out.line(line)
                first = False
        if array:
            out.write(b"]\n" if first else b"\n]\n")


def _text(v: Any) -> str:
    """A value as one CSV field or table cell (NULL: empty)."""
    if v is None:
        return ""
    if isinstance(v, str):
        return v
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, dt.datetime):
        return _time(v)
    if isinstance(v, (dict, list, tuple)):
        return _dumps(v).decode()
    if isinstance(v, (bytes, bytearray, memoryview)):
        return bytes(v).hex()
    return str(v)


def _csv(columns: list[str], batches: Iterator[list[tuple[Any, ...]]], *, terminal: bool = False) -> None:
    """CSV as DuckDB gives the rows. On a terminal (``terminal``) every cell and column name
    passes ``cli.safe_text.safe``, as the pretty table's do (data could hold an escape that
    retitles or clears the screen); to a pipe or a file the cells are exact."""
    import csv
    import io

    from wardrik_cli.cli.safe_text import safe

    cell: Callable[[Any], str] = (lambda v: safe(_text(v))) if terminal else _text
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\r\n")  # RFC 4180: CRLF, a quote doubled inside quotes
    w.writerow([safe(c) for c in columns] if terminal else columns)
    with Batch() as out:
        for rows in batches:
            w.writerows([cell(v) for v in row] for row in rows)
            out.write(buf.getvalue().encode("utf-8"))
            buf.seek(0)
            buf.truncate()
        out.write(buf.getvalue().encode("utf-8"))


def _pretty(columns: list[str], batches: Iterator[list[tuple[Any, ...]]]) -> None:
    """A plain aligned table, streamed: column widths from the first ``PRETTY_SAMPLE`` rows,
    longer cells cut. Printed by the render console, whose every string passes the sanitiser
    (a cell cannot move the cursor or retitle the terminal); cells are sanitised first too,
    so widths count what is shown."""
    from wardrik_cli.cli.render.console import console
    from wardrik_cli.cli.safe_text import safe

    c = console()
    pending: list[list[str]] = []
    numeric = [True] * len(columns)
    it = iter(batches)
    count = 0

    def cells(row: tuple[Any, ...]) -> list[str]:
        for i, v in enumerate(row):
            if v is not None and not isinstance(v, (int, float, Decimal)):
                numeric[i] = False
        return [safe(_text(v), keep_newlines=False) for v in row]

    for rows in it:
        pending.extend(cells(r) for r in rows)
        if len(pending) >= PRETTY_SAMPLE:
            break
    widths = [min(max([len(h)] + [len(r[i]) for r in pending]), max(PRETTY_CELL, len(h)))
              for i, h in enumerate(columns)]

    def line(values: list[str], header: bool = False) -> str:
        out = []
        for i, v in enumerate(values):
            if len(v) > widths[i]:
                v = v[:widths[i] - 1] + "…"
            out.append(v.rjust(widths[i]) if numeric[i] and not header else v.ljust(widths[i]))
        return "  ".join(out).rstrip()

    def show(text: str, style: str | None = None) -> None:
        c.print(text, markup=False, highlight=False, style=style, soft_wrap=True)

    show(line([safe(h, keep_newlines=False) for h in columns], header=True), "bold")
    show("  ".join("─" * w for w in widths))
    for r in pending:
        show(line(r))
    count = len(pending)
    for rows in it:
        for row in rows:
            show(line(cells(row)))
        count += len(rows)
    show(f"({count} row{'' if count == 1 else 's'})", "dim")
