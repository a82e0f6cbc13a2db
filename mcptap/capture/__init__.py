"""The capture file (JSONL, versioned; docs/capture-format.md): ``format``
(record encoding, header, migrations), ``writer`` (``CaptureWriter``), ``reader``
(``CaptureStream``, ``read_capture``; raises ``CaptureReadError`` only),
``follow`` (tail a capture being written)."""
