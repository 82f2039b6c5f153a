"""Appending a stream of JSONL items as they arrive (``wardrik append LOG --stream``).

Contract kept here:
- Input is read with unbuffered reads (``os.read`` of a file descriptor, else ``read1``): an
  item is appended as soon as its line and its newline have arrived, even while the writer
  keeps the stream open. Only whole lines count; lines are numbered from 1, empty ones
  included, and an empty (or all-blank) line is skipped silently.
- Each line is one item, ``{"type", "data"?, "subject"?, "traceparent"?}``, validated exactly
  as ``append`` validates (``store.append.make_item``). A line that is refused (not UTF-8, a
  NUL byte, not JSON, not an object, an unknown key or type, missing or bad data, longer than
  ``MAX_LINE_BYTES``) is reported once through ``on_refused(line number, why)``; nothing is
  written for it and the stream goes on. An over-long line is skipped as it streams past,
  never held whole in memory.
- The end of the input ends the last line, newline or not (as ``append --batch -`` reads
  it): a complete item there is appended. One cut off in the middle is no JSON, so it is
  refused, and the reason says the input ended in it.
- A kept item is written through ``store.append.append`` (the log's lock, torn-tail cut,
  verified note, fsync unless ``sync=False``), then the log's followers are rung and the
  stored lines are handed to ``on_event``: reported means durable. Kept items that arrived
  in the same read are written together (one lock, one write, one fsync), in input order;
  nothing ever waits for more input to fill a group, so a lone line is written at once.
- A live item is published to the log's followers (never stored) and handed to ``on_event``
  as delivered, in input order: the kept items before it are durable and reported first.
- A failure to write (disk full, a corrupt log, a lock timeout) stops the stream: the whole
  events written before it are reported through ``on_event``, then the error is raised.
  An interruption (KeyboardInterrupt) while waiting for input leaves nothing half done:
  everything reported was durable, and nothing is pending while a read waits.
"""
from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, BinaryIO

import orjson

from wardrik_cli.errors import BadEvent, BadInput, WriteFailed
from wardrik_cli.follow import live
from wardrik_cli.protocol.catalogue import KEPT, LIVE
from wardrik_cli.protocol.json_input import item_fields, parse_json
from wardrik_cli.protocol.names import validate_log_id
from wardrik_cli.store.append import AppendItem, Warn, append, live_event, make_item
from wardrik_cli.store.layout import Root
from wardrik_cli.store.log import Log

MAX_LINE_BYTES = 1 << 20  # one item a line; a bigger event goes through `append --batch` or `--data @FILE`
READ_BYTES = 1 << 16
# orjson reads an integer past 64 bits as a float, silently changing it: lines holding such a
# digit run (rare) are parsed again by the standard library, exactly, to refuse them.

OnEvent = Callable[[Sequence[bytes]], None]
OnRefused = Callable[[int, str], None]


@dataclass
class StreamResult:
    """What a stream did: input lines read, events stored and published, lines refused."""

    lines: int = 0
    stored: int = 0
    published: int = 0
    refused: int = 0


def append_stream(root: Root, log_id: str, source: int | BinaryIO, *, on_event: OnEvent | None = None,
                  on_refused: OnRefused | None = None, deployment: str | None = None, sync: bool = True,
                  warn: Warn | None = None, lock_timeout: float | None = None,
                  max_line: int = MAX_LINE_BYTES) -> StreamResult:
    """Append the JSONL items read from ``source`` (a file descriptor or a binary stream) to
    ``log_id`` as they arrive, until the end of the input; see the module's contract.

    ``on_event`` gets each batch of stored lines once durable, and each live event as
    delivered (complete lines, newline included); ``on_refused`` gets each refused line's
    number and the reason. Raises what ``store.append.append`` raises when a write fails."""
    validate_log_id(log_id)
    lg = Log.agent(root, log_id)
    dep = root.deployment(deployment)
    read = _reader(source)
    report: OnEvent = on_event or (lambda lines: None)
    refuse: OnRefused = on_refused or (lambda n, why: None)
    extra: dict[str, Any] = {"warn": warn} if warn is not None else {}
    result = StreamResult()
    group: list[AppendItem] = []

    def write_group() -> None:
        if not group:
            return
        items = list(group)
        group.clear()
        try:
            stored = append(root, lg, items, deployment=dep, sync=sync, lock_timeout=lock_timeout, **extra)
        except WriteFailed as e:
            if e.events:  # whole events that made it stay in the log: say so before the error
                result.stored += len(e.events)
                live.notify_kept(root, log_id, e.events)
                report(e.events)
            raise
        result.stored += len(stored)
        live.notify_kept(root, log_id, stored)  # before printing: a blocked stdout must not delay followers
        report(stored)

    def refused(n: int, why: str) -> None:
        write_group()  # keep the report in input order
        result.refused += 1
        refuse(n, why)

    for chunk in _input_lines(read, max_line):
        for n, line, problem, at_end in chunk:
            result.lines = n
            if problem is None and not line.strip():
                continue
            try:
                if problem is not None:
                    raise BadInput(problem)
                item = parse_item(line)
            except BadInput as e:
                refused(n, f"{e} (the input ended in the middle of it)" if at_end and _cut(line) else str(e))
                continue
            if item.etype.kind != LIVE:
                group.append(item)
                continue
            write_group()  # what came before it is durable before it is delivered
            raw = live_event(lg, item, deployment=dep)
            try:
                live.publish(root, log_id, raw)
            except BadEvent as e:  # too big to deliver whole: refused before anything is sent
                refused(n, str(e))
                continue
            result.published += 1
            report([raw])
        write_group()  # nothing waits for more input
    return result


def parse_item(line: bytes) -> AppendItem:
    """One input line as an item (``BadInput`` says why not): a JSON object with ``type``
    and optionally ``data``, ``subject`` and ``traceparent``, of a kept or live type."""
    nul = line.find(b"\x00")
    if nul >= 0:
        raise BadInput(f"a NUL byte at offset {nul}")
    return make_item(*item_fields(parse_json(line)), kinds=(KEPT, LIVE))


def _cut(line: bytes) -> bool:
    """Is ``line`` (the last, with no newline) no JSON at all: cut off by the end of the input?"""
    try:
        orjson.loads(line)
    except orjson.JSONDecodeError:
        return True
    return False


def _reader(source: int | BinaryIO) -> Callable[[int], bytes]:
    """At most n bytes, as soon as any are there; b"" at the end of the input."""
    if isinstance(source, int):
        return lambda n: os.read(source, n)
    read1 = getattr(source, "read1", None)
    return read1 if callable(read1) else source.read


def _too_long(size: int, max_line: int) -> str:
    return f"too long: {size} bytes (a line holds at most {max_line}; append a bigger event with --data @FILE)"


# (line number, the line, why it is refused or None, whether the end of the input ended it)
Entry = tuple[int, bytes, str | None, bool]


def _input_lines(read: Callable[[int], bytes], max_line: int) -> Iterator[list[Entry]]:
    """The whole lines of each read, numbered; a line is never held past ``max_line`` bytes."""
    n = 0
    partial = b""
    skipping = -1  # bytes of an over-long line seen so far, while it streams past; else -1
    while True:
        chunk = read(READ_BYTES)
        out: list[Entry] = []
        if not chunk:
            if skipping >= 0:
                out.append((n + 1, b"", _too_long(skipping, max_line), True))
            elif partial.strip():
                out.append((n + 1, partial, None, True))  # (never over max_line: see below)
            if out:
                yield out
            return
        start = 0
        if skipping >= 0:
            j = chunk.find(b"\n")
            if j < 0:
                skipping += len(chunk)
                continue
            n += 1
            out.append((n, b"", _too_long(skipping + j, max_line), False))
            skipping, start = -1, j + 1
        i = chunk.rfind(b"\n", start)
        if i < 0:
            partial += chunk[start:]
        else:
            block = partial + chunk[start:i] if partial else chunk[start:i]
            partial = chunk[i + 1:]
            for line in block.split(b"\n"):
                n += 1
                out.append((n, line, _too_long(len(line), max_line) if len(line) > max_line else None, False))
        if len(partial) > max_line:
            skipping, partial = len(partial), b""
        if out:
            yield out
