"""The filter language of ``mcptap show`` (pure, level 1; docs/filters.md):
``operators`` (``compile_filter``, the operator table), ``jsonpath`` (the ``~j``
operator), ``parse`` (grammar)."""
