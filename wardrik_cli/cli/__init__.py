"""The command line: a thin Typer shell over the library (``wardrik_cli``'s other layers).

Nothing below ``cli`` imports it. ``app`` holds the Typer app, the global options and the
one place errors become an ``error:`` line and an exit code; each command group lives in
its own module; ``render`` is the only place Rich is used.
"""
