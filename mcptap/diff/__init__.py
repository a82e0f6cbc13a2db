"""Semantic diff of two captures (pure, level 3).

``captures.diff_captures(a, b, …) -> report.DiffReport``; ``side`` streams one
capture into per-exchange summaries, ``align`` aligns the two exchange
sequences, ``surface`` compares what the servers offer, ``render`` prints a
report. Per-exchange verdicts come from :mod:`mcptap.compare`.
"""
