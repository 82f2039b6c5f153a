"""Ledgers in object storage: ``ship`` (a root's logs to a store, exactly once) and ``pull``
(a store's segments back into an evidence root on local disk), remote retention, and reading a
remote root through a local mirror.

Layers: this package uses ``store`` and ``protocol`` (never ``read``, ``folding`` or ``follow``)
and the optional ``s3`` extra (obstore), imported only when an ``s3://`` store is opened.
Modules: ``keys`` (the object-key layout), ``stores`` (the two kinds of store and their one
coordination primitive, a conditional create; listing, ranged reads and deletes), ``ship`` and
``pull``, ``gaps`` (gap records and retention watermarks beside the segments), ``compact``
(retention in the store), ``mirror`` (a local mirror that remote roots are read through).
"""
