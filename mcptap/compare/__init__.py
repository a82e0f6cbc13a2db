"""Comparison shared by ``replay``, ``serve`` and ``diff`` (pure, level 3): ``mask``
(volatile fields, ``--ignore`` paths), ``paths`` (JSON-path differences),
``verdict`` (one exchange's MATCH / CHANGED / ERROR-CHANGED / MISSING / NEW),
``match`` (recorded requests by method and normalised params, FIFO among
equals: replay's answers to server requests, serve's answers to clients)."""
