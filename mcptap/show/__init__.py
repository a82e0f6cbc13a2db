"""``mcptap show`` output (level 3): ``render`` (text timeline, JSON lines,
Mermaid sequence diagram), ``summary`` (the per-capture summary and latency
statistics). Functions return strings or yield lines; they never print."""
