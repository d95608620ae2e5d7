"""What the faces that listen on a port (`pipeline mcp --http`, `pipeline serve`) check before they do."""
from __future__ import annotations

import socket

from pipeline.core.errors import ConfigError


def check_port(host: str, port: int) -> None:
    """A ConfigError now, rather than a listening line followed by uvicorn's bind error."""
    try:
        family, kind, proto, _, address = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0]
    except OSError as exc:
        raise ConfigError(f"cannot listen on {host}: {exc.strerror or exc}") from None
    with socket.socket(family, kind, proto) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as uvicorn binds
        try:
            probe.bind(address)
        except OSError as exc:
            raise ConfigError(f"cannot listen on {host}:{port}: {exc.strerror or exc} (choose another --port)") from None
