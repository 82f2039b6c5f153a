"""Make the README's pictures (docs/*.svg) from the real commands on a copy of sample_ledgers/.

    python docs/make_pictures.py            # rewrites docs/*.svg

Each picture is the real `wardrik` run as a subprocess with `--color always` at a fixed
width (100 columns), its output read back by Rich (Text.from_ansi) and saved with
Console.export_svg. The tail -f picture runs a real follower while events (and live
message.delta text) are appended from outside, then stops it with SIGTERM. Nothing in
sample_ledgers/ is changed: everything runs on a copy in a temp dir.
"""
from __future__ import annotations

import io
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
WIDTH = 100
WARDRIK = shutil.which("wardrik", path=os.path.dirname(sys.executable)) or "wardrik"


def env() -> dict:
    e = {k: v for k, v in os.environ.items() if k not in ("NO_COLOR", "WARDRIK_ROOT", "WARDRIK_DEPLOYMENT")}
    e.update(COLUMNS=str(WIDTH), LINES="40", TERM="xterm-256color", TZ="UTC")
    return e


def run(root: Path, *args: str) -> str:
    p = subprocess.run([WARDRIK, "--root", str(root), "--color", "always", *args], capture_output=True,
                       env=env(), timeout=60)
    return p.stdout.decode()


def save(name: str, title: str, command: str, ansi: str) -> None:
    from rich.console import Console
    from rich.text import Text

    c = Console(record=True, width=WIDTH, file=io.StringIO(), force_terminal=True, color_system="truecolor")
    c.print(Text("$ " + command, style="bold"))
    c.print(Text.from_ansi(ansi.rstrip("\n")), soft_wrap=True)
    (HERE / f"{name}.svg").write_text(c.export_svg(title=title))
    print(f"docs/{name}.svg  ({command})")


def tail_follow(root: Path) -> str:
    """A real `tail -f` while an agent works: kept events and streamed text appended from outside."""
    f = subprocess.Popen([WARDRIK, "--root", str(root), "--color", "always", "tail", "-f", "acme/triage", "-n", "3", "-F", "pretty"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env())
    time.sleep(1.0)  # let it read back and start following (a picture, not a test)

    def add(typ: str, data: str) -> None:
        subprocess.run([WARDRIK, "--root", str(root), "append", "acme/triage", typ, "--data", data],
                       capture_output=True, env=env(), check=True)
        time.sleep(0.15)

    add("message.received", '{"message": {"id": "msg_9"}, "from": "pagerduty", "text": "p99 is up again"}')
    add("run.started", '{"run": {"message_ids": ["msg_9"]}, "task": "Why is checkout p99 up again?"}')
    add("message.started", '{"message": {"id": "m9"}, "model": "anthropic:claude-haiku-4-5"}')
    for chunk in ["Checking ", "the latency ", "metrics and ", "the last deploys ", "before anything else."]:
        add("message.delta", '{"message": {"id": "m9"}, "delta": "%s"}' % chunk)
    add("message.completed", '{"message": {"id": "m9"}, "text": "Checking the latency metrics.", "stop_reason": "tool_use"}')
    add("tool_call.started", '{"tool": {"name": "query_metrics", "call": {"id": "t9"}, "args": {"service": "checkout"}}}')
    add("tool_call.failed", '{"tool": {"name": "query_metrics", "call": {"id": "t9"}}, "error": {"message": "timeout after 30 s"}}')
    time.sleep(0.5)
    f.send_signal(signal.SIGTERM)
    out, _ = f.communicate(timeout=20)
    return out.decode()


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "sample_ledgers"
        shutil.copytree(REPO / "sample_ledgers", root, ignore=shutil.ignore_patterns("build.py", "__pycache__"))
        save("page", "wardrik page", "wardrik page 'acme/*' --limit 16", run(root, "page", "acme/*", "--limit", "16",
                                                                               "-F", "pretty"))
        save("fold-state", "wardrik fold", "wardrik fold acme/triage", run(root, "fold", "acme/triage", "-F", "pretty"))
        save("fold-timeline", "wardrik fold --view timeline", "wardrik fold acme/triage --view timeline",
             run(root, "fold", "acme/triage", "--view", "timeline", "-F", "pretty"))
        save("activity", "wardrik activity", "wardrik activity 'acme/*'", run(root, "activity", "acme/*", "-F", "pretty"))
        save("check", "wardrik check", "wardrik check", run(root, "check", "-F", "pretty"))
        save("compact", "wardrik compact", "wardrik compact --retention 30d --dry-run",
             run(root, "compact", "--retention", "30d", "--dry-run", "-F", "pretty"))
        save("help", "wardrik --help", "wardrik --help", run(root, "--help"))
        save("tail-follow", "wardrik tail -f", "wardrik tail -f acme/triage -n 3", tail_follow(root))


if __name__ == "__main__":
    main()
