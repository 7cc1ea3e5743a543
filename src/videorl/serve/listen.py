"""The server's listening socket, apart from the app so that `videorl serve` can claim its
port (a busy one is a one-line error) before FastAPI, torch and the model load."""

from __future__ import annotations

import errno
import socket

from videorl.errors import ConfigError


def bind(host: str, port: int) -> socket.socket:
    """A listening socket (port 0: any free port); a port in use, a privileged port or an
    address not on this machine is a one-line `ConfigError` naming the flag and the fix."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError as err:
        sock.close()
        reason = (
            "is in use" if err.errno == errno.EADDRINUSE else f"cannot be bound ({err.strerror})"
        )
        raise ConfigError(
            f"--port {port} on --host {host} {reason}; pass another --port (0: any free port) "
            "or stop what holds it"
        ) from None
    sock.listen(128)
    return sock
