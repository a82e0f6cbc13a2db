"""Comparison shared by ``replay`` and ``diff`` (pure, level 3): ``mask``
(volatile fields, ``--ignore`` paths), ``paths`` (JSON-path differences),
``verdict`` (one exchange's MATCH / CHANGED / ERROR-CHANGED / MISSING / NEW)."""
