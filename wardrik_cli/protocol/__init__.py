"""The protocol layer: what an event is, independent of any file.

Event types and their data (``catalogue``), the CloudEvents envelope (``envelope``), names
of logs and deployments and the globs over them (``names``), cursors (``cursor``) and times
(``times``). It imports nothing of wardrik but ``errors``.
"""
