"""The read layer: reading across logs from a cursor.

The merge behind ``page``, ``head`` and ``tail``'s read-back (``reader``), and cursor files
(``cursor_file``). It imports ``protocol`` and ``store``, nothing above them.
"""
