"""``ship`` and ``pull``: ledgers to and from object storage, exactly once (issue 14).

Thin shells over ``remote.ship`` and ``remote.pull``; commands register themselves on ``app``
when this module is imported. ``ship`` exits 1 when any log was refused (the others are
still shipped), after one ``error:`` line per log; a store that cannot be reached is one
``error:`` line and exit 1, or, under ``--follow``, a warning and a retry with backoff.
``--follow`` ends with exit 0 on Ctrl-C or SIGTERM, after the segment being written.
"""
from __future__ import annotations

import signal
import threading
import time
from pathlib import Path
from types import FrameType
from typing import Annotated, Any

import typer

from wardrik_cli.cli.app import app
from wardrik_cli.cli.context import Invocation, current
from wardrik_cli.cli.options import FormatOpt
from wardrik_cli.cli.output import Format, choose, write_json
from wardrik_cli.errors import BadInput, ExitCode

Target = Annotated[str, typer.Argument(metavar="TARGET", help="s3://BUCKET/PREFIX or file:///PATH.",
                                       show_default=False)]
Patterns = Annotated[list[str] | None, typer.Argument(
    metavar="[PATTERN...]", help="Agent logs to ship (default: every agent log and the audit log).",
    show_default=False)]


def _size(n: int) -> str:
    for unit in ("B", "KB", "MB", "GB"):
        if n < 1000 or unit == "GB":
            return f"{n:,} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1000  # type: ignore[assignment]
    return str(n)


class _Stop:
    """SIGINT/SIGTERM under --follow: asked to stop while shipping, the segment being written
    is finished first (the store never sees half of anything, but the cache is saved); while
    waiting for the next pass, at once (KeyboardInterrupt, which ends a follow with exit 0)."""

    def __init__(self, out_fd: int | None = None) -> None:
        self.requested = False
        self.busy = True
        self.out_fd = out_fd  # stdout: its reader gone (``| head``), a follow ends as on a stop

    def handler(self, signum: int, frame: FrameType | None) -> None:
        self.requested = True
        if not self.busy:
            raise KeyboardInterrupt

    def sleep(self, seconds: float) -> None:
        self.busy = False
        try:
            if self.requested:
                raise KeyboardInterrupt
            if self.out_fd is None:
                time.sleep(seconds)
                return
            import select

            p = select.poll()
            p.register(self.out_fd, 0)  # POLLERR/POLLHUP are always reported: the reader went away
            if p.poll(int(seconds * 1000)):
                raise KeyboardInterrupt  # noticed while idle, as tail -f does
        finally:
            self.busy = True


def _install(inv: Invocation, stop: _Stop) -> None:
    if threading.current_thread() is not threading.main_thread():
        return
    old = {s: signal.signal(s, stop.handler) for s in (signal.SIGINT, signal.SIGTERM)}

    def restore() -> None:
        for s, h in old.items():
            signal.signal(s, h)

    inv.cleanups.append(restore)


@app.command(rich_help_panel="Fleet")
def ship(
    target: Target,
    patterns: Patterns = None,
    follow: Annotated[bool, typer.Option(
        "--follow", "-f", help="Keep shipping as the logs grow, a pass every --interval; ends on Ctrl-C or "
                               "SIGTERM (exit 0). An unreachable store is retried with backoff.")] = False,
    interval: Annotated[str | None, typer.Option(
        "--interval", metavar="DURATION", help="Time between passes under --follow: 10s, 1m, 5m (default 60s).",
        show_default=False)] = None,
    quiet: Annotated[bool, typer.Option(
        "--quiet", "-q",
        help="Print nothing unless a log is refused (exit 1) or input is bad (exit 2): for cron.")] = False,
    forget: Annotated[bool, typer.Option(
        "--forget", help="Remove TARGET's registration (and this root's record of its positions): local "
                         "compact no longer keeps events for it. Ships nothing.")] = False,
    fmt: FormatOpt = None,
) -> None:
    """Ship logs to object storage, exactly once: each log's complete lines, byte for byte, as segments.

    A segment is a run of one log's lines of one UTC day, at most 64 MB, stored at
    PREFIX/v1/deployment=D/kind=agents|audit/log=ID/day=YYYY-MM-DD/SSSSSSSSSSSS.jsonl (ID with
    / written as ~, SSSSSSSSSSSS its first sequence) with a conditional create, so several
    shippers at once, or one killed at any instant, never store an event twice or leave a gap.
    Torn tails and live events are never shipped. For s3:// the endpoint and credentials come
    from AWS_ENDPOINT_URL, AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY and AWS_REGION; file:// is
    a folder on a shared mount. Two roots shipping one log id: refused, exit 1, naming both.

    A target shipped to is registered under .wardrik/ship/, like a replication slot: local
    compact keeps every event it has not stored (compact --max-ship-lag lets old ones go,
    and the next ship records that gap in the store). --forget TARGET ends that.

    Examples:

      wardrik --root /var/lib/wardrik ship s3://ledgers/fleet --follow --interval 30s

      */5 * * * *  /path/to/.venv/bin/wardrik --root /var/lib/wardrik ship file:///mnt/ledgers -q

      wardrik ship --forget s3://ledgers/old-bucket
    """
    from wardrik_cli.protocol.times import parse_duration
    from wardrik_cli.remote.ship import Shipper, ShipResult, ship_forever, sources
    from wardrik_cli.remote.stores import open_store

    inv = current()
    if interval is not None and not follow:
        raise BadInput("--interval goes with --follow (a pass every DURATION); without it ship makes one pass")
    every = parse_duration(interval or "60s").total_seconds()
    if every <= 0:
        raise BadInput("--interval must be more than no time (e.g. 10s, 1m)")
    if forget:
        _forget(inv, target, patterns, follow, quiet)
        return
    from wardrik_cli.protocol.names import MAX_GLOBS, PatternSet

    if patterns and PatternSet.too_many(patterns):  # refused before anything is shipped (see ``store.ship_slots``)
        raise BadInput(f"a ship target covers at most {MAX_GLOBS} patterns with '*' or '?': name a folder, or "
                       "fewer globs")
    store = open_store(target, inv.env)
    root = inv.root
    root.require_made("ship")
    stop = _Stop(inv.stdout_fd())
    if follow:
        inv.following = True
        _install(inv, stop)
    shipper = Shipper(root, store, inv.deployment(), warn=inv.warn, stop=lambda: stop.requested,
                      patterns=patterns or None)
    shown = choose(fmt, Format.json)
    refused: set[str] = set()

    def report(result: ShipResult) -> None:
        doc = result.to_json()
        if not quiet and (doc["segments"] or not follow):
            if shown == Format.pretty:
                failed = len(result.failed)
                if doc["segments"]:
                    inv.note(f"shipped {doc['segments']} segment(s), {doc['events']:,} event(s), "
                             f"{_size(doc['bytes'])} of {sum(1 for r in result.logs if r.segments)} log(s) to "
                             f"{store.url}" + (f"; {failed} log(s) not shipped (below)" if failed else ""))
                elif failed:
                    inv.note(f"nothing shipped to {store.url}: {failed} log(s) refused (below)")
                else:
                    inv.note(f"nothing new to ship to {store.url}")
            elif shown == Format.jsonl:
                for row in doc["logs"]:
                    write_json(row, indent=False)
            else:
                write_json(doc, indent=False)
            inv.flush_out()
        for r in result.failed:
            if not follow or r.log not in refused:  # under --follow, each refusal is said once
                inv.message(f"error: {r.error}")
                refused.add(r.log)

    if follow:
        def unreachable(e: Exception, wait: float) -> None:
            inv.warn(f"{e}; trying again in {wait:g}s")

        ship_forever(shipper, lambda: sources(root, patterns), interval=every, on_pass=report,
                     on_unreachable=unreachable, sleep=stop.sleep)
        return
    result = shipper.ship(sources(root, patterns))
    report(result)
    if result.failed:
        raise typer.Exit(ExitCode.FAILURE)


def _forget(inv: Invocation, target: str, patterns: list[str] | None, follow: bool, quiet: bool) -> None:
    """``ship --forget TARGET``: the registration and the position record go; nothing is shipped."""
    from urllib.parse import urlsplit

    from wardrik_cli.store import ship_slots

    if patterns or follow:
        raise BadInput("--forget takes a TARGET only (no patterns, no --follow)")
    scheme = urlsplit(target).scheme if isinstance(target, str) else ""
    if scheme not in ("s3", "file"):
        raise BadInput(f"{target!r} is not a target: use s3://BUCKET/PREFIX or file:///PATH")
    root = inv.root
    root.require_made("ship --forget")
    known = ship_slots.registered_targets(root)
    removed = ship_slots.forget(root, target)
    if not removed:
        inv.warn(f"{target} is not registered on {root.path}; nothing to forget"
                 + (f" (registered: {', '.join(known)})" if known else ""))
    elif not quiet:
        inv.note(f"forgot {ship_slots.normal_url(target)}: compact no longer keeps events for it")


@app.command(rich_help_panel="Fleet")
def pull(
    source: Annotated[str, typer.Argument(metavar="SOURCE", help="s3://BUCKET/PREFIX or file:///PATH.",
                                          show_default=False)],
    patterns: Annotated[list[str] | None, typer.Argument(
        metavar="[PATTERN...]", help="Agent logs to pull (default: every log, and the audit log).",
        show_default=False)] = None,
    into: Annotated[str, typer.Option(
        "--into", metavar="DIR", help="A new or empty folder: the evidence root to make.", show_default=False)] = "",
    since: Annotated[str | None, typer.Option(
        "--since", metavar="TIME",
        help="Only segments that reach TIME or later: RFC 3339, 2026-10-22, yesterday, or a duration ago "
             "(2d).")] = None,
    fmt: FormatOpt = None,
) -> None:
    """Pull shipped logs into an evidence root on local disk: byte-identical lines, every segment checked.

    Each log's file is the concatenation of its segments in sequence order. A segment whose
    bytes do not match its sha256 (or its key and metadata) is reported, exit 1, and never
    written: its log holds the segments before it. The global --deployment picks one
    deployment when several shipped under the prefix. Read the result with --root DIR.

    Examples:

      wardrik pull s3://ledgers/fleet 'acme/*' --since 2d --into /tmp/incident-42

      wardrik --root /tmp/incident-42 page 'acme/*' -t tool_call.failed
    """
    from wardrik_cli.protocol.names import validate_deployment
    from wardrik_cli.protocol.times import parse_time_arg
    from wardrik_cli.remote.pull import pull as do_pull
    from wardrik_cli.remote.stores import open_store

    inv = current()
    if not into:
        raise BadInput("pull needs --into DIR (a new or empty folder)")
    t = parse_time_arg(since, tz=inv.time_zone()) if since is not None else None
    dep = validate_deployment(inv.deployment_arg) if inv.deployment_arg else None
    store = open_store(source, inv.env)
    result = do_pull(store, Path(into), patterns=patterns, since=t, deployment=dep, warn=inv.warn)
    doc: dict[str, Any] = result.to_json()
    shown = choose(fmt, Format.json)
    if shown == Format.pretty:
        inv.note(f"pulled {len(result.logs) - len(result.failed)} log(s), {doc['segments']} segment(s), "
                 f"{doc['events']:,} event(s), {_size(doc['bytes'])} into {into}")
    elif shown == Format.jsonl:
        for row in doc["logs"]:
            write_json(row, indent=False)
    else:
        write_json(doc, indent=False)
    for r in result.failed:
        inv.message(f"error: {r.error}")
    if result.failed:
        raise typer.Exit(ExitCode.FAILURE)
