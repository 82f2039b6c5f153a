"""Ledgers in object storage: ``ship`` (a root's logs to a store, exactly once) and ``pull``
(a store's segments back into an evidence root on local disk).

Layers: this package uses ``store`` and ``protocol`` (never ``read``, ``folding`` or ``follow``)
and the optional ``s3`` extra (obstore), imported only when an ``s3://`` store is opened.
Modules: ``keys`` (the object-key layout), ``stores`` (the two kinds of store and their one
coordination primitive, a conditional create), ``ship`` and ``pull``.
"""
