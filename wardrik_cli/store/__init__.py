"""The store layer: logs on disk and the only code that writes them.

A root and its layout (``layout``), lines and torn tails (``lines``), one log as readers see
it (``log``), the lock (``locking``), appends (``append``), the audit log (``audit``),
verification (``check``), retention (``retention``) and file-system steps (``fsutil``).
It imports ``protocol`` and nothing above it.
"""
