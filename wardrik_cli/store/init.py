"""Making a root (``wardrik init``): the folder, its ``.wardrik/`` and ``config.toml``.

Contract kept here:
- A root is a directory with a ``.wardrik/`` directory in it (not a link). ``init`` makes
  both (parents too) and writes ``config.toml`` with the settings given, atomically (a new
  root's file also shows, as comments, the settings it may hold).
- On a folder that is already a root, only the settings given change; the others (and any
  key this version does not know) are kept as they were. Nothing given: nothing changes.
- Values are validated before anything is created: a bad one writes nothing.
- The file is edited as text (comments and layout stay), and the edit is proven before it is
  written: the old file must parse as TOML, and the new one must parse to the old settings
  with exactly the given ones set. A file whose shape the edit cannot handle (the key inside a
  multi-line string or array, say) is refused (exit 2, naming it), never half rewritten.
- ``config.toml`` is read only if it is a regular file (no link followed, no FIFO waited on)
  of at most ``MAX_CONFIG`` bytes.
"""
from __future__ import annotations

from pathlib import Path

from wardrik_cli.errors import BadConfig, Failure
from wardrik_cli.protocol.names import validate_deployment
from wardrik_cli.store.fsutil import write_atomic
from wardrik_cli.store.layout import Root
from wardrik_cli.store.retention import parse_retention, parse_size


def init_root(root: Root, *, deployment: str | None = None, retention: str | None = None,
              max_bytes: str | None = None) -> tuple[bool, list[str]]:
    """(made, keys changed): ``made`` is False when the folder already was a root."""
    if deployment is not None:
        validate_deployment(deployment)
    if retention is not None:
        parse_retention(retention)
    if max_bytes is not None:
        max_bytes = max_bytes.strip()
        parse_size(max_bytes)
    tool = root.tool_dir
    made = not tool.is_dir()
    if tool.is_symlink():
        raise Failure(f"{tool} is a symbolic link; a root's .wardrik/ must be a directory")
    try:
        tool.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise Failure(f"cannot make {tool}: {e.strerror}") from None
    wanted = {k: v for k, v in (("deployment", deployment), ("retention", retention), ("max_bytes", max_bytes))
              if v is not None}
    path = root.config_path
    if made and not path.exists():
        try:  # the settings there are to be set, shown as comments: the file says where they go
            write_atomic(path, TEMPLATE.encode())
        except OSError as e:
            raise Failure(f"cannot write {path}: {e.strerror}") from None
    if not wanted:
        return made, []
    lines = _read_lines(path)
    before = _parse(path, "\n".join(lines))
    changed = []
    for key, value in wanted.items():
        line = f'{key} = "{value}"'  # every value is validated: no quote or backslash in it
        # top-level keys come before the first [table]
        top = next((i for i, ln in enumerate(lines) if ln.lstrip().startswith("[")), len(lines))
        for i, old in enumerate(lines[:top]):
            if old.split("=", 1)[0].strip() == key:
                if old.strip() != line:
                    lines[i] = line
                    changed.append(key)
                break
        else:
            lines.insert(top, line)
            changed.append(key)
    if changed:
        try:
            after: dict[str, object] | None = _parse(path, "\n".join(lines) + "\n")
        except BadConfig:
            after = None
        if after != {**before, **wanted}:
            raise BadConfig(f"{path}: cannot set {', '.join(changed)} in it without changing what else it says "
                            "(a key inside a multi-line string or array?); edit it by hand")
        try:
            write_atomic(path, ("\n".join(lines) + "\n").encode())
        except OSError as e:
            raise Failure(f"cannot write {path}: {e.strerror}") from None
    root.config()  # the file as written must read back (a hand-made one may not: say so now)
    return made, changed


MAX_CONFIG = 1 << 20  # a config.toml past this is not one a person wrote
TEMPLATE = """\
# wardrik root settings; a setting given on the command line wins. `wardrik init` sets these.
# deployment = "local"  # the name in event sources (wardrik://DEPLOYMENT/...)
# retention = "30d"     # what `compact` keeps: 30s, 90m, 12h, 7d, 4w
# max_bytes = "2G"      # `compact`'s size bound per agent log: 500M, 2G
"""


def _read_lines(path: Path) -> list[str]:
    from wardrik_cli.errors import NotRegular
    from wardrik_cli.store.fsutil import read_capped

    try:
        data = read_capped(path, MAX_CONFIG, what="config file")
    except FileNotFoundError:
        return []
    except NotRegular as e:  # a link, a FIFO, a device, or over the cap: refused, never waited on
        raise BadConfig(str(e)) from None
    except OSError as e:
        raise Failure(f"cannot read {path}: {e.strerror}") from None
    try:
        return data.decode("utf-8").splitlines()
    except UnicodeDecodeError:
        raise BadConfig(f"{path}: not UTF-8") from None


def _parse(path: Path, text: str) -> dict[str, object]:
    import tomllib

    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise BadConfig(f"{path}: not valid TOML ({e})") from None
    except RecursionError:
        raise BadConfig(f"{path}: nested too deep") from None
