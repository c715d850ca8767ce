"""A loopback TCP proxy that can cut the line: a tracking server failing mid-export, for real."""

from __future__ import annotations

import contextlib
import socket
import threading
from collections.abc import Callable

_REQUEST_VERBS = (b"GET /", b"POST /", b"PUT /", b"PATCH /", b"DELETE /")


class FailingProxy:
    """Forwards 127.0.0.1:<port> to a server; when ``trigger`` bytes pass from the client,
    calls ``on_trigger`` (e.g. to stop the server) and refuses everything after.

    With ``hold=True`` the request that carries the trigger is held instead: never forwarded,
    never answered, its connection left open (a server that stopped answering mid-request),
    while other connections are still served; ``tripped`` tells a test the client is waiting.

    ``seen`` collects what clients sent, so a test can check headers (a token) went out.
    """

    def __init__(
        self,
        target_port: int,
        trigger: bytes | None = None,
        on_trigger: Callable[[], None] | None = None,
        hold: bool = False,
    ) -> None:
        self.target_port = target_port
        self.trigger = trigger
        self.on_trigger = on_trigger
        self.hold = hold
        self._held: list[socket.socket] = []
        self.tripped = threading.Event()
        self.seen = bytearray()
        self.requests = 0
        """HTTP requests seen from clients (request lines), for counting round trips."""
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port = self._listener.getsockname()[1]
        self._stopped = False
        threading.Thread(target=self._accept, daemon=True).start()

    @property
    def url(self) -> str:
        """``http://127.0.0.1:PORT``: point the SDK here instead of at the server."""
        return f"http://127.0.0.1:{self.port}"

    def _accept(self) -> None:
        while not self._stopped:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            if self.tripped.is_set() and not self.hold:
                client.close()
                continue
            try:
                upstream = socket.create_connection(("127.0.0.1", self.target_port), timeout=30)
            except OSError:
                client.close()
                continue
            threading.Thread(target=self._pipe, args=(client, upstream, True), daemon=True).start()
            threading.Thread(target=self._pipe, args=(upstream, client, False), daemon=True).start()

    def _pipe(self, source: socket.socket, destination: socket.socket, from_client: bool) -> None:
        with contextlib.suppress(OSError):
            while chunk := source.recv(65536):
                if from_client:
                    self.seen.extend(chunk)
                    self.requests += sum(chunk.count(verb) for verb in _REQUEST_VERBS)
                    if self.trigger and self.trigger in chunk and not self.tripped.is_set():
                        if self.on_trigger:
                            self.on_trigger()
                        if self.hold:
                            self._held.append(source)
                            self.tripped.set()
                            return
                        self.tripped.set()
                        break
                destination.sendall(chunk)
        for end in (source, destination):
            if any(end is held for held in self._held):
                continue  # a held client waits until close(), whatever the server does
            with contextlib.suppress(OSError):
                end.close()

    def close(self) -> None:
        """Stop the proxy and close its connections."""
        self._stopped = True
        self._listener.close()
        for end in self._held:
            with contextlib.suppress(OSError):
                end.close()
