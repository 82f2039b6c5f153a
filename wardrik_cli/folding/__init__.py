"""The folding layer: a log folded into a view.

The fold (``engine``), the built-in views and the view protocol (``views``), checkpoints
(``checkpoint``) and what each agent is doing (``activity``). It imports ``protocol``,
``store`` and ``read``; never ``follow`` or ``cli``.
"""
