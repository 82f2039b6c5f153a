"""``stats`` and ``export otlp``: what agents cost and where the time went (issue 15).

Thin shells over the library (``folding.stats``, ``folding.otlp``); commands register
themselves on ``app`` when this module is imported.
"""
from __future__ import annotations

import os
from enum import Enum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from wardrik_cli.cli.app import app
from wardrik_cli.cli.context import current
from wardrik_cli.cli.inputs import build_filters, load_cursor, on_corrupt, patterns_or_all, refuse_root_file
from wardrik_cli.cli.options import Patterns, Run, SkipCorrupt, Since, Until
from wardrik_cli.errors import WardrikError

if TYPE_CHECKING:
    from wardrik_cli.folding.stats import Prices


class By(str, Enum):  # noqa: UP042 - as output.Format: a StrEnum's members format differently
    agent = "agent"
    run = "run"
    model = "model"
    tool = "tool"
    type = "type"


class StatsFormat(str, Enum):  # noqa: UP042
    pretty = "pretty"
    jsonl = "jsonl"
    json = "json"
    csv = "csv"


ByOpt = Annotated[By, typer.Option(
    "--by", metavar="KEY", case_sensitive=False,
    help="Group by agent (runs per log), run, model (model calls), tool (tool calls) or type (event counts).")]
StatsFormatOpt = Annotated[StatsFormat | None, typer.Option(
    "--format", "-o", "-F", metavar="FORMAT", case_sensitive=False,
    help="pretty (Rich, default on a terminal), json (default otherwise), jsonl (a group a line) or csv.")]
PricesOpt = Annotated[Path | None, typer.Option(
    "--prices", metavar="FILE", show_default=False,
    help="Price model calls from this TOML file's \\[prices] tables (a root's config.toml will do) "
         "instead of the root's: for a remote root (s3://, file://), which has no config.")]


@app.command(rich_help_panel="Review")
def stats(
    patterns: Patterns = None,
    by: ByOpt = By.agent,
    since: Since = None,
    until: Until = None,
    skip_corrupt: SkipCorrupt = False,
    prices_file: PricesOpt = None,
    fmt: StatsFormatOpt = None,
) -> None:
    """Count calls, failures, durations, tokens and cost per agent, run, model, tool or type.

    Per group: calls, failures, error rate, unended (started, no end in the window),
    p50/p95/max duration in seconds, input/output tokens and cost in US dollars. A tool
    call is a tool_call.started .. tool_call.completed/failed pair matched by tool.call.id
    in one log; a model call a message.started (its data.model) .. message.completed
    matched by message.id (one still open when its run fails is a failure); --by run and
    --by agent count runs, run.started .. run.completed/failed (failures: run.failed);
    --by type counts events. A call counts when its end is in the window (no duration if
    its start is not). Tokens are the message.completed data.usage sums. Cost is a call's
    data.cost_usd, else its usage times the model's price in .wardrik/config.toml
    (\\[prices."anthropic:claude-haiku-4-5"] input_per_mtok, output_per_mtok, optional
    cache_read_per_mtok, cache_creation_per_mtok), else unknown: a group's cost is blank
    unless every model call in it has one (never a guess). Percentiles are nearest-rank,
    exact up to 4,096 calls a group, then within 0.5%. Without --since/--until, each log's
    counts are kept in .wardrik/checkpoints/ (on a writable root; discarded when the log no
    longer matches them), so the next stats reads only what was appended since. --prices
    FILE takes the prices from another file (a remote root has no config.toml).

    Examples:

      wardrik stats 'acme/*' --by model

      wardrik stats --by tool --since yesterday -o csv > tools.csv

      wardrik stats --by run --since 2h -o json | jq '.groups[] | select(.failures > 0)'
    """
    from wardrik_cli.folding.stats import load_prices
    from wardrik_cli.folding.stats import stats as count_stats
    from wardrik_cli.read.reader import resolve_logs

    inv = current()
    filters = build_filters(since=since, until=until)
    logs = resolve_logs(inv.root, patterns_or_all(patterns))
    prices = load_prices(inv.root) if prices_file is None else _prices_from(prices_file)
    result = count_stats(logs, by.value, deployment=inv.deployment(), since=filters.since, until=filters.until,
                         prices=prices, on_corrupt=on_corrupt(skip_corrupt), warn=inv.warn)
    for log, n in sorted(result.dropped.items()):
        inv.warn(f"{log}: {n} event{'s' if n != 1 else ''} in this window were dropped by retention "
                 "(wardrik compact); stats count the events kept")
    for r in result.overflowed:
        # null (json), blank (csv, pretty) in every format, and here the reason: not "unpriced"
        name = r[by.value] if r[by.value] is not None else "(none)"
        where = f" in {r['log']}" if by == By.run else ""
        inv.warn(f"{by.value} {name}{where}: cost_usd is left blank (null): its calls' costs add up past the "
                 "largest number there is (about 1.8e308 US dollars), so there is no sum to show; "
                 "look for a wrong data.cost_usd or price")
    shown = fmt.value if fmt is not None else ("pretty" if inv.isatty() else "json")
    if shown == "pretty":
        from wardrik_cli.cli.render.costs import print_stats

        print_stats(result)
        inv.flush_out()
    elif shown == "csv":
        inv.stdout.write(_csv(result.by, result.rows, terminal=inv.isatty()))
        inv.flush_out()
    else:
        from wardrik_cli.cli.output import Format, emit

        emit(Format(shown), pretty=lambda: None, jsonl=result.rows, json=result.to_json())


def _prices_from(path: Path) -> Prices:
    """The ``[prices."provider:name"]`` tables of a TOML file a user names (``--prices``);
    ``BadConfig`` (exit 2) names the file when it cannot be read, is not TOML or has none."""
    import tomllib

    from wardrik_cli.cli.inputs import read_arg_bytes
    from wardrik_cli.errors import BadConfig
    from wardrik_cli.folding.stats import parse_prices

    raw = read_arg_bytes("@" + str(path), "--prices")
    try:
        table = tomllib.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, tomllib.TOMLDecodeError, RecursionError) as e:
        raise BadConfig(f"--prices {str(path)!r}: not valid TOML: {e}") from None
    if "prices" not in table:
        raise BadConfig(f"--prices {str(path)!r} has no [prices] tables, e.g. "
                        '[prices."anthropic:claude-haiku-4-5"] input_per_mtok = 1.0, output_per_mtok = 5.0')
    return parse_prices(table["prices"], f"--prices {str(path)!r}")


def _csv(by: str, rows: list[dict[str, Any]], *, terminal: bool = False) -> bytes:
    """A header and a row a group; a null is an empty cell. On a terminal (``terminal``) every
    cell passes ``cli.safe_text.safe``, as pretty output does: a group's name comes from event
    data and could retitle or clear the screen; to a pipe or a file the cells are exact."""
    import csv
    import io

    from wardrik_cli.cli.safe_text import safe
    from wardrik_cli.folding.stats import COLUMNS

    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    names = (by, "log", *COLUMNS) if by == "run" else (by, *COLUMNS)
    w.writerow(names)
    for r in rows:
        cells = ["" if r[k] is None else r[k] for k in names]
        w.writerow([safe(c) if isinstance(c, str) else c for c in cells] if terminal else cells)
    return buf.getvalue().encode()


# ---------------------------------------------------------------------------------------
# export otlp
# ---------------------------------------------------------------------------------------
EXPORT_HELP = """Send runs elsewhere: as OpenTelemetry traces (Jaeger, Phoenix, Langfuse, any OTLP backend).

Examples:

  wardrik export otlp 'acme/*' -o spans.jsonl

  wardrik export otlp --endpoint http://localhost:4318
"""
export_app = typer.Typer(name="export", help=EXPORT_HELP, no_args_is_help=True,
                         context_settings={"help_option_names": ["-h", "--help"]})
app.add_typer(export_app, name="export", rich_help_panel="Review")


@export_app.command("otlp")
def export_otlp(
    patterns: Patterns = None,
    run: Run = None,
    since: Annotated[str | None, typer.Option(
        "--since", metavar="TIME",
        help="Spans that end at or after TIME (RFC 3339, 2026-10-22, 10:00, today, or a duration ago: 2h).")] = None,
    output: Annotated[str | None, typer.Option(
        "--output", "-o", metavar="FILE",
        help="Append OTLP JSON lines (the OpenTelemetry file exporter's format) to FILE; - for stdout.")] = None,
    endpoint: Annotated[str | None, typer.Option(
        "--endpoint", metavar="URL",
        help="Send OTLP/HTTP to URL (/v1/traces added when it has no path); default: "
             "$OTEL_EXPORTER_OTLP_TRACES_ENDPOINT, else $OTEL_EXPORTER_OTLP_ENDPOINT.")] = None,
    cursor_file: Annotated[Path | None, typer.Option(
        "--cursor-file", metavar="FILE",
        help="Export only what is new since the cursor in FILE; save the next one there once the export succeeded.")]
        = None,
    content: Annotated[bool, typer.Option(
        "--content", help="Include message text, the task and answer, tool arguments and results (off by default).")]
        = False,
    skip_corrupt: SkipCorrupt = False,
) -> None:
    """Export runs as OpenTelemetry traces (GenAI semantic conventions), to a file or an OTLP/HTTP endpoint.

    A run is an invoke_agent span (its trace id is the run id), a model call a chat
    {model} span (gen_ai.provider.name, gen_ai.request.model, gen_ai.usage.*, finish
    reasons), a tool call an execute_tool {name} span (error.type and status ERROR when
    it failed), a wait on a person a wait_for_input span; calls are children of their
    run. A span is exported once its end is in the log. Span ids are derived from the
    log, the run and the call's id, so exporting again replaces spans, never duplicates
    them. Prompts, answers and tool input/output only with --content.

    -o FILE appends one ExportTraceServiceRequest (OTLP JSON) a line. --endpoint (or
    OTEL_EXPORTER_OTLP_ENDPOINT / _TRACES_ENDPOINT) POSTs OTLP/HTTP protobuf (http/json
    under OTEL_EXPORTER_OTLP_PROTOCOL=http/json), with OTEL_EXPORTER_OTLP_HEADERS,
    _TIMEOUT (ms) and _COMPRESSION=gzip honoured. With --cursor-file, each run exports
    what ended since the last successful one (at least once: after a failure the cursor
    stays, and the same spans go again with the same ids).

    Examples:

      wardrik export otlp 'acme/*' -o spans.jsonl

      wardrik export otlp --endpoint http://localhost:4318 --since 1h

      */5 * * * * wardrik --root /srv/ledgers export otlp --cursor-file /var/lib/wardrik/otlp.cursor
    """
    from wardrik_cli.errors import BadInput
    from wardrik_cli.folding import otlp
    from wardrik_cli.read.cursor_file import write_file
    from wardrik_cli.read.reader import resolve_logs

    inv = current()
    if output is not None and endpoint is not None:
        raise BadInput("-o FILE and --endpoint URL were both given: export to one or the other")
    filters = build_filters(run=run, since=since)  # checks --run and --since before anything is read
    # A file this export writes must not be one of the root's own: `-o ROOT/acme/b.jsonl` would
    # append spans to a log, a cursor file there would replace it.
    if output is not None and output != "-":
        refuse_root_file(output, "-o/--output")
    if output is not None and output != "-" and cursor_file is not None and _same_file(output, cursor_file):
        raise BadInput(f"-o {output} and --cursor-file {cursor_file} are one file: the cursor would replace "
                       "the spans; give the cursor a file of its own")
    cursor = load_cursor(None, cursor_file)  # a file of the root, or in no folder: refused before anything
    sink: Any
    if output is not None:
        protocol, dest = "http/json", ("stdout" if output == "-" else output)
    else:
        found = otlp.traces_url(endpoint, inv.env)
        if found is None:
            raise BadInput("say where the spans go: -o FILE (- for stdout), --endpoint URL, "
                           "or OTEL_EXPORTER_OTLP_ENDPOINT in the environment")
        dest = found[0]
        settings = otlp.http_settings(inv.env)
        protocol = settings["protocol"]
        if protocol == "http/protobuf":
            from wardrik_cli.extras import need

            need("opentelemetry.proto.collector.trace.v1.trace_service_pb2", "otlp")  # before anything is read
        sink = otlp.HttpSink(dest, **settings)
    logs = resolve_logs(inv.root, patterns_or_all(patterns))
    made: str | None = None  # the -o file, when this export made it: removed again if it fails having written none
    if output is not None:
        if output == "-":
            sink = otlp.FileSink(inv.stdout, "stdout", fsync=False)
        else:
            made = None if os.path.lexists(output) else output
            try:
                stream = open(output, "ab")  # noqa: SIM115 - closed below, after the cursor's fate is known
            except OSError as e:
                raise otlp.ExportFailed(f"cannot open {output} for the spans: {e.strerror}") from None
            inv.cleanups.append(stream.close)
            sink = otlp.FileSink(stream, output)
    deployment = inv.deployment()
    version = _version()
    encode = otlp.request_proto if protocol == "http/protobuf" else otlp.request_json
    sent = 0
    namespaces: dict[str, str] = {}  # each log's deployment, as its events name it

    def send(batch: Any) -> None:
        nonlocal sent
        n = sum(len(v) for v in batch.values())
        sink.send(encode(batch, deployment, version, namespaces), n)
        sent += n

    try:
        try:
            res = otlp.export(logs, cursor, send, deployment=deployment, run=run, since=filters.since,
                              content=content, on_corrupt=on_corrupt(skip_corrupt), warn=inv.warn,
                              namespaces=namespaces)
            sink.close()
        except WardrikError:
            if made is not None and sent == 0:
                _remove_if_empty(made)  # a refused export writes nothing: not even an empty file
            raise
    except otlp.ExportFailed as e:
        after = f"; {sent:,} span{'s' if sent != 1 else ''} went before the failure" if sent else ""
        kept = "; the cursor file was not advanced (the next export sends them again, with the same ids)" \
            if cursor_file is not None else ""
        raise otlp.ExportFailed(f"{e}{after}{kept}") from None
    if cursor_file is not None:
        write_file(cursor_file, res.next)
    if inv.verbose or _tty(inv.stderr):
        inv.note(f"exported {res.spans:,} span{'s' if res.spans != 1 else ''} ({res.runs:,} "
                 f"run{'s' if res.runs != 1 else ''}) from {res.logs:,} log{'s' if res.logs != 1 else ''} to {dest}")


def _remove_if_empty(path: str) -> None:
    try:
        if os.stat(path, follow_symlinks=False).st_size == 0:
            os.unlink(path)
    except OSError:
        pass


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("wardrik")
    except PackageNotFoundError:
        return "0"


def _tty(stream: Any) -> bool:
    try:
        return bool(stream.isatty())
    except (ValueError, OSError, AttributeError):
        return False


def _same_file(a: str | Path, b: str | Path) -> bool:
    """Do two paths name one file (the same path, a link to it, or one hard-linked)?"""
    import os

    try:
        return os.path.samefile(a, b)
    except OSError:  # one does not exist yet: the same path once links are resolved
        return os.path.realpath(a) == os.path.realpath(b)
