"""``append`` (Write panel): a thin shell over ``store.append`` and the live channel.

Printed means durable: the stored lines are printed only after ``store.append`` returned
(fsynced unless ``--no-sync``); on a failed write, the whole events already written are
printed before the error. ``append`` prints JSON Lines even on a terminal unless
``--format pretty``: it is mostly run by programs.
"""
from __future__ import annotations

import io
from array import array
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Annotated, Any, cast, overload

import orjson
import typer

from wardrik_cli.cli.app import app
from wardrik_cli.cli.context import current
from wardrik_cli.cli.inputs import read_arg_bytes
from wardrik_cli.protocol.json_input import parse_json
from wardrik_cli.cli.options import Data, FormatOpt
from wardrik_cli.cli.output import Format
from wardrik_cli.errors import BadEvent, BadInput, ExitCode, Failure, WriteFailed

if TYPE_CHECKING:
    from wardrik_cli.protocol.catalogue import EventType
    from wardrik_cli.store.append import AppendItem


@app.command(rich_help_panel="Write")
def append(
    log: Annotated[str, typer.Argument(help="Log id, e.g. acme/triage.", show_default=False)],
    type_: Annotated[str | None, typer.Argument(
        metavar="TYPE", help="Event type, with or without 'wardrik.' (see `wardrik types`).",
        show_default=False)] = None,
    data: Data = None,
    batch: Annotated[str | None, typer.Option(
        "--batch", metavar="FILE|-",
        help='JSONL of {"type", "data", "subject"?, "traceparent"?}: '
             'all or nothing, one lock, one write, one fsync.')] = None,
    subject: Annotated[str | None, typer.Option(
        "--subject", metavar="TEXT", help="CloudEvents subject (default: agents/LOG).")] = None,
    trace: Annotated[str | None, typer.Option(
        "--trace", metavar="TRACEPARENT", help="W3C traceparent to use instead of the run's.")] = None,
    stream: Annotated[bool, typer.Option(
        "--stream", help='Read JSONL items (as --batch) from stdin and append each as it arrives, '
                         'printing it once durable; a bad line is refused alone (exit 1 at the end).')] = False,
    no_sync: Annotated[bool, typer.Option(
        "--no-sync", help="Skip the fsync (faster; a crash may lose what was printed).")] = False,
    fmt: FormatOpt = None,
) -> None:
    """Append events to a log and print each one as stored (printed means durable).

    Sequences are assigned under a lock that holds across processes. A torn tail left by a
    crashed writer is cut first (its bytes kept beside the log). Live types
    (message.delta, ...) go to the log's followers and are never stored. With --stream, each
    line read from stdin is appended as soon as it arrives.

    Examples:

      wardrik append acme/triage run.started --data '{"task": "Why is checkout slow?"}'

      wardrik append acme/triage --batch events.jsonl

      my-agent | wardrik append acme/triage --stream
    """
    from wardrik_cli.follow import live
    from wardrik_cli.protocol.names import validate_log_id
    from wardrik_cli.store.append import append as do_append
    from wardrik_cli.store.append import live_event, make_item
    from wardrik_cli.store.log import Log

    inv = current()
    validate_log_id(log)
    if stream:
        if type_ is not None or data is not None or batch is not None or subject is not None or trace is not None:
            raise BadInput("--stream takes its types, data, subjects and traceparents from stdin; "
                           "give no TYPE, --data, --batch, --subject or --trace")
        append_stdin(log, fmt, sync=not no_sync)
        return
    items: Sequence[AppendItem]
    if batch is not None:
        if type_ is not None or data is not None or subject is not None or trace is not None:
            raise BadInput("--batch takes its types, data, subjects and traceparents from the file; "
                           "give no TYPE, --data, --subject or --trace")
        items = batch_items(read_arg_bytes(batch if batch == "-" or batch.startswith("@") else "@" + batch, "--batch"))
    else:
        if type_ is None:
            raise BadInput("missing TYPE (or --batch FILE); see `wardrik types`")
        payload = parse_json(read_arg_bytes(data, "--data"), "--data") if data is not None else {}
        items = [make_item(type_, payload, subject, trace)]
    root = inv.root
    lg = Log.agent(root, log)
    deployment = inv.deployment()
    if batch is None and items[0].etype.kind == "live":
        raw = live_event(lg, items[0], deployment=deployment).rstrip(b"\n")
        if not root.path.exists():  # append makes the root, whatever it appends (CONTRACT: Root and layout)
            try:
                root.path.mkdir(parents=True, exist_ok=True)
            except OSError as e:
                raise Failure(f"cannot make the root {root.path}: {e.strerror}") from None
            root.state_dir(root.tool_dir / "locks" / "made")
        live.publish(root, log, raw)
        print_appended([raw], fmt, log, live=True)
        return
    try:
        # A batch is a sequence that decodes each item when it is used (``BatchItems``); the
        # store only iterates it, so it is handed over as the list its signature names.
        lines_out = do_append(root, lg, cast("list[AppendItem]", items), deployment=deployment, sync=not no_sync,
                              warn=inv.warn, lock_timeout=inv.settings.lock_timeout)
    except WriteFailed as e:
        if e.events:
            print_appended(e.events, fmt, log)
        raise
    del items  # the batch's bytes: no longer needed while the stored lines are printed
    print_appended(lines_out, fmt, log)
    live.notify_kept(root, log, lines_out)


def append_stdin(log: str, fmt: Format | None, *, sync: bool) -> None:
    """``--stream``: ``follow.append_stream`` over stdin, each refused line one ``error:``.

    SIGTERM ends it as Ctrl-C does (no traceback), with exit 143 instead of 130: the library
    never holds an item back while it waits, so everything printed is durable either way."""
    import signal
    import threading

    from wardrik_cli.cli.entry import interrupt
    from wardrik_cli.follow.append_stream import append_stream

    if fmt == Format.json:
        raise BadInput("--stream prints each event as it is stored, one a line: use --format jsonl or pretty")
    inv = current()
    try:
        source: Any = inv.stdin.fileno()  # unbuffered reads: a line is appended as soon as it arrives
    except (OSError, ValueError, AttributeError, io.UnsupportedOperation):
        source = inv.stdin  # an in-memory stdin (in-process runs)
    terminated: list[int] = []

    def on_term(signum: int, frame: Any) -> None:
        terminated.append(signum)
        interrupt(signum, frame)

    unread: list[bool] = []  # the reader of our stdout went away

    def on_event(lines: Sequence[bytes]) -> None:
        # A writer goes on when no one reads what it prints: the items still come on stdin, and
        # are appended as they would be with stdout on /dev/null (before, the rest of stdin was
        # left unappended, exit 0).
        if unread:
            return
        try:
            print_appended([line.rstrip(b"\n") for line in lines], fmt, log)
        except BrokenPipeError:
            unread.append(True)
            inv.discard_out()

    main = threading.current_thread() is threading.main_thread()  # only there can a handler be set
    old_term = signal.signal(signal.SIGTERM, on_term) if main else None
    try:
        result = append_stream(
            inv.root, log, source, deployment=inv.deployment(), sync=sync, warn=inv.warn,
            lock_timeout=inv.settings.lock_timeout, on_event=on_event,
            on_refused=lambda n, why: inv.message(f"error: stdin line {n}: {why}"))
    except KeyboardInterrupt:
        if terminated:
            raise typer.Exit(128 + signal.SIGTERM) from None
        raise
    finally:
        if main:
            signal.signal(signal.SIGTERM, old_term)
    if result.refused:
        raise typer.Exit(ExitCode.FAILURE)


def print_appended(raws: Sequence[bytes], fmt: Format | None, log: str, *, live: bool = False) -> None:
    """Stored lines (with or without their newline) as ``append`` and ``audit record`` print
    them (jsonl unless told), a line at a time: a batch of a million events is not copied
    whole to be printed.

    They are durable before they are printed, so when printing fails (a full disk, an I/O
    error; not a reader gone, which is no error) the error says they were stored, and which:
    a script that retries on failure would otherwise append them twice."""
    from wardrik_cli.cli.output import Batch

    try:
        if fmt == Format.pretty:
            from wardrik_cli.cli.render.events import print_appended as pretty

            pretty(orjson.loads(r) for r in raws)
        elif fmt == Format.json:
            with Batch() as out:
                for i, r in enumerate(raws):
                    out.write((b"[" if i == 0 else b",") + r.rstrip(b"\n"))
                out.write(b"]\n" if raws else b"[]\n")
        else:
            with Batch() as out:
                for r in raws:
                    out.write(r if r.endswith(b"\n") else r + b"\n")
        current().flush_out()
    except BrokenPipeError:
        raise
    except OSError as e:
        raise Failure(_stored_unprinted(raws, log, live, e)) from None


def _stored_unprinted(raws: Sequence[bytes], log: str, live: bool, e: OSError) -> str:
    why = e.strerror or str(e)
    if live:
        return f"{log}: the live event was delivered but could not be printed: {why}"
    seqs = [int(orjson.loads(r)["sequence"]) for r in (raws[0], raws[-1])]
    which = f"event {seqs[0]} was" if len(raws) == 1 else f"events {seqs[0]}..{seqs[1]} were"
    return (f"{log}: {which} stored (durable) but could not be printed: {why}; "
            f"do not append {'it' if len(raws) == 1 else 'them'} again")


class BatchItems(Sequence["AppendItem"]):
    """The items of a validated ``--batch``, each decoded again from its line when it is used.

    The batch stays what it was read as (its bytes, once) plus where each item's line starts
    and ends: a parsed item costs ten to twenty times its line in Python objects, and a batch
    may be 1 GiB. The store walks the items while it builds the lines it writes, so only
    the item in hand is ever decoded. Every line was validated (``batch_items``) before this
    is made, and decoding the same bytes again gives the same value."""

    def __init__(self, raw: bytes, starts: array[int], ends: array[int], etypes: list[EventType]) -> None:
        self.raw, self.starts, self.ends, self.etypes = raw, starts, ends, etypes

    def __len__(self) -> int:
        return len(self.starts)

    @overload
    def __getitem__(self, i: int) -> AppendItem: ...
    @overload
    def __getitem__(self, i: slice) -> Sequence[AppendItem]: ...
    def __getitem__(self, i: int | slice) -> AppendItem | Sequence[AppendItem]:
        if isinstance(i, slice):
            return [self._item(j) for j in range(len(self))[i]]
        return self._item(range(len(self))[i])

    def __iter__(self) -> Iterator[AppendItem]:
        return (self._item(j) for j in range(len(self)))

    def _item(self, j: int) -> AppendItem:
        from wardrik_cli.store.append import AppendItem

        # Its shape and values were checked (item_fields, make_item): only read back here.
        obj = orjson.loads(memoryview(self.raw)[self.starts[j]:self.ends[j]])
        return AppendItem(self.etypes[j], obj.get("data", {}), obj.get("subject"), obj.get("traceparent"))


def batch_items(raw: bytes) -> BatchItems:
    """A ``--batch`` file as validated items (``BatchItems``); one bad line refuses the whole batch."""
    from wardrik_cli.protocol.catalogue import KEPT
    from wardrik_cli.protocol.json_input import item_fields
    from wardrik_cli.store.append import make_item

    starts, ends = array("q"), array("q")
    etypes: list[EventType] = []  # a reference each: the catalogue's own objects
    # Line by line from the bytes, each line validated whole (make_item, as for one event) and
    # then let go: only where it is stays (BatchItems), never a decoded copy of the batch.
    n, pos, size = 0, 0, len(raw)
    while pos < size:
        end = raw.find(b"\n", pos)
        if end < 0:
            end = size
        n += 1
        line = raw[pos:end]
        if line.strip():
            obj = parse_json(line, f"--batch line {n}")
            try:
                etypes.append(make_item(*item_fields(obj), kinds=(KEPT,)).etype)
            except BadEvent as e:
                raise BadEvent(f"--batch line {n}: {e} (nothing was written)") from None
            starts.append(pos)
            ends.append(end)
        pos = end + 1
    if not starts:
        raise BadInput("--batch holds no events")
    return BatchItems(raw, starts, ends, etypes)
