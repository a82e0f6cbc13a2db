"""The Streamable HTTP (and legacy HTTP+SSE) reverse-proxy core: pure, sans-IO, h11.

``proxy.HttpRelay`` takes bytes read from client and upstream sockets and returns
commands and facts (``events``); ``conn`` is the per-connection h11 state machine,
``rewrite`` and ``endpoint`` what changes on the way, ``observe`` turns the facts
into capture records (``observe_state``, ``sessions``, ``credentials`` behind it).
"""
