"""Reading a `HOST:PORT` listen address, the one way every server here does it."""

from __future__ import annotations


def parse_listen(listen: str) -> tuple[str, int]:
    """`"host:port"`, `"[::1]:port"` or `":port"` (all interfaces) → (host, port).

    Raises ValueError naming what was wrong, so config errors can say it.
    """
    host, sep, port_text = listen.strip().rpartition(":")
    if not sep or not port_text.isdigit():
        raise ValueError(f"listen address {listen!r} must look like host:port, e.g. 127.0.0.1:8080")
    port = int(port_text)
    if port > 65535:
        raise ValueError(f"listen port {port} is out of range 0-65535")
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    return host or "0.0.0.0", port
