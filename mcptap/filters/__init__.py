"""The filter language of ``mcptap show`` (pure, level 1; docs/filters.md):
``operators`` (``compile_filter``, the operator table), ``parse`` (grammar)."""
