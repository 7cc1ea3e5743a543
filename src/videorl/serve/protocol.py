"""uvicorn's h11 protocol with a deadline on request headers (slow clients, slowloris).

uvicorn times out idle keep-alive connections only after a response; a client that connects
and sends its headers byte by byte, or nothing at all, would hold a connection slot forever.
Here every connection must deliver a request's headers within `seconds` of connecting (or
of the previous response), else it is closed. The body has its own deadline
(`serve.app.read_body`).
"""

from __future__ import annotations

import asyncio
from typing import Any

from uvicorn.protocols.http.h11_impl import H11Protocol


def header_deadline_protocol(seconds: float) -> type[H11Protocol]:
    """An `H11Protocol` subclass closing connections whose headers miss the deadline."""

    class HeaderDeadline(H11Protocol):
        _deadline: asyncio.TimerHandle | None = None
        _waiting_after: Any = None  # the cycle that was current when the deadline was armed

        def _arm(self) -> None:
            self._disarm()
            self._waiting_after = self.cycle
            self._deadline = self.loop.call_later(seconds, self._expired)

        def _disarm(self) -> None:
            if self._deadline is not None:
                self._deadline.cancel()
                self._deadline = None

        def _expired(self) -> None:
            if self.cycle is self._waiting_after and not self.transport.is_closing():
                self.transport.close()

        def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
            super().connection_made(transport)
            self._arm()

        def handle_events(self) -> None:
            super().handle_events()
            if self.cycle is not self._waiting_after:  # a request's headers arrived
                self._disarm()

        def on_response_complete(self) -> None:
            super().on_response_complete()
            if not self.transport.is_closing():
                self._arm()

        def connection_lost(self, exc: Exception | None) -> None:
            self._disarm()
            super().connection_lost(exc)

    return HeaderDeadline
