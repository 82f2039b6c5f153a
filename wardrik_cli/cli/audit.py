"""The ``audit`` group (Review panel): ``record``, ``page`` and ``tail`` over the deployment's audit log.

``audit page`` and ``audit tail`` are ``page`` and ``tail`` over the one audit log (named
``audit`` in cursors); ``audit record`` is the only writer of it (``store.audit``).
"""
from __future__ import annotations

from typing import Annotated

import typer

from wardrik_cli.cli.app import app
from wardrik_cli.cli.context import current
from wardrik_cli.cli.inputs import build_filters, load_cursor, on_corrupt, read_arg_bytes
from wardrik_cli.protocol.json_input import parse_json
from wardrik_cli.cli.options import (
    After, ExcludeTypes, FormatOpt, Grep, IgnoreCase, Lines, Limit, PageCursorFile, RemoteInterval, Run, Since,
    SkipCorrupt, TailCursorFile, Types, Until, Where,
)

AUDIT_HELP = """The deployment's audit log: who changed what, tamper-evident.

One log under ROOT/.wardrik/audit.jsonl, apart from the agents' logs; each event carries
its actor, who acted for them, and prevhash (the SHA-256 of the line before it), which
`wardrik check` verifies.

Examples:

  wardrik audit page --limit 20

  wardrik audit tail -f
"""
audit_app = typer.Typer(name="audit", help=AUDIT_HELP,
                        no_args_is_help=True, context_settings={"help_option_names": ["-h", "--help"]})
app.add_typer(audit_app, name="audit", rich_help_panel="Review")


@audit_app.command("record")
def audit_record(
    type_: Annotated[str, typer.Argument(
        metavar="TYPE", help="agent.created, agent.configured, agent.forgotten, trigger.created or trigger.deleted.",
        show_default=False)],
    subject: Annotated[str, typer.Argument(
        metavar="SUBJECT", help="What changed, e.g. agents/acme/triage.", show_default=False)],
    data: Annotated[str | None, typer.Option(
        "--data", "-d", metavar="JSON|@FILE|-", help="The change's data, a JSON object.")] = None,
    actor: Annotated[str | None, typer.Option(
        "--actor", metavar="PRINCIPAL", help="Who made the change (required).")] = None,
    assumed_by: Annotated[list[str] | None, typer.Option(
        "--assumed-by", metavar="PRINCIPAL", help="Who acted for the actor, first to last (repeat).")] = None,
    fmt: FormatOpt = None,
) -> None:
    """Record a change in the audit log, with its actor and who acted for them.

    A principal is letters, digits and . _ : @ / + - (at most 200). Each event carries
    prevhash, the SHA-256 of the line before it, so `wardrik check` finds an edited line.

    Examples:

      wardrik audit record agent.created agents/acme/ops \\
        --data '{"agent": {"id": "acme/ops"}}' --actor alice@acme.io

      wardrik audit record agent.forgotten agents/acme/old \\
        --actor user:alice@acme.io --assumed-by role:ops \\
        --data '{"agent": {"id": "acme/old"}}'
    """
    from wardrik_cli.cli.write import print_appended
    from wardrik_cli.store.audit import record_audit

    inv = current()
    payload = parse_json(read_arg_bytes(data, "--data"), "--data") if data is not None else {}
    line = record_audit(inv.root, type_, subject, payload, actor, assumed_by or [], inv.deployment_given(),
                        warn=inv.warn, env={}, lock_timeout=inv.settings.lock_timeout, made_root=True)
    print_appended([line.rstrip(b"\n")], fmt, "the audit log")


@audit_app.command("page")
def audit_page(
    limit: Limit = 100,
    all_: Annotated[bool, typer.Option("--all", help="No limit: read to the end (streaming).")] = False,
    after: After = None,
    cursor_file: PageCursorFile = None,
    types: Types = None,
    exclude: ExcludeTypes = None,
    grep: Grep = None,
    ignore_case: IgnoreCase = False,
    where: Where = None,
    since: Since = None,
    until: Until = None,
    run: Run = None,
    skip_corrupt: SkipCorrupt = False,
    fmt: FormatOpt = None,
) -> None:
    """Print audit events oldest first, and the cursor to read on (its key: audit).

    If retention dropped events before your position, an events.dropped comes first.

    Examples:

      wardrik audit page --since 7d

      wardrik audit page --limit 50 --format json | jq -r .next
    """
    from wardrik_cli.cli.review import run_page
    from wardrik_cli.store.log import Log

    filters = build_filters(types=types, exclude=exclude, grep=grep, ignore_case=ignore_case, where=where,
                            run=run, since=since, until=until)
    start = load_cursor(after, cursor_file)
    run_page(lambda root: [Log.audit(root.require())], start, limit=None if all_ else limit,
             cursor_file=cursor_file, filters=filters, skip_corrupt=skip_corrupt, fmt=fmt)


@audit_app.command("tail")
def audit_tail(
    n: Lines = 10,
    follow: Annotated[bool, typer.Option("-f", "--follow", help="Then print every event as it is recorded.")] = False,
    after: After = None,
    cursor_file: TailCursorFile = None,
    types: Types = None,
    exclude: ExcludeTypes = None,
    grep: Grep = None,
    ignore_case: IgnoreCase = False,
    where: Where = None,
    since: Since = None,
    run: Run = None,
    skip_corrupt: SkipCorrupt = False,
    fmt: FormatOpt = None,
    interval: RemoteInterval = None,  # used where a remote root is opened (cli.context), not here
) -> None:
    """Print the last audit events (or every one after a cursor); with -f, keep following.

    Ctrl-C, SIGTERM or a closed pipe end a follow cleanly (exit 0).

    Examples:

      wardrik audit tail -n 20

      wardrik audit tail -f --types agent.forgotten,trigger.deleted
    """
    from wardrik_cli.cli.tailing import run_tail
    from wardrik_cli.store.log import Log

    inv = current()
    root = inv.root
    filters = build_filters(types=types, exclude=exclude, grep=grep, ignore_case=ignore_case, where=where,
                            run=run, since=since)
    start = load_cursor(after, cursor_file)
    root.require()
    run_tail(root, lambda: [Log.audit(root)], after=start, n=n, follow=follow, filters=filters,
             deployment=inv.deployment(), on_corrupt=on_corrupt(skip_corrupt), fmt=fmt, cursor_file=cursor_file)
