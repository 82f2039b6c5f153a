"""The follow layer: events as they are written.

The follower behind ``tail -f`` (``follower``), its wake-ups (``wakeup``), the live channel
(``live``) and the at-least-once ``Listener`` (``listener``). It imports every library layer
below it and never ``cli``.
"""
