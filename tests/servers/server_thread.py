"""What the test servers share: a ``socketserver`` served from a daemon thread, with
``start`` / ``stop`` and use as a context manager (stdlib only)."""

from __future__ import annotations

import socketserver
import threading
from typing import Any


class ServerThread:
    """Subclasses build their server in :meth:`_make_server` and may override
    :meth:`_stopping` (called before shutdown, e.g. to wake handlers that are sleeping)."""

    _httpd: socketserver.BaseServer | None = None
    _thread: threading.Thread | None = None

    def _make_server(self) -> socketserver.BaseServer:
        raise NotImplementedError

    def _stopping(self) -> None:
        pass

    def start(self) -> Any:
        if self._httpd is None:
            self._httpd = self._make_server()
            self._thread = threading.Thread(
                target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05},
                name=f"{type(self).__name__}-{self.server_port}", daemon=True)
            self._thread.start()
        return self

    def stop(self) -> None:
        self._stopping()
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
            self._httpd = None
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None

    def __enter__(self) -> Any:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def server_port(self) -> int:
        assert self._httpd is not None, "server not started"
        return self._httpd.server_address[1]
