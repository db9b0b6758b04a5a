"""Ctrl-C during a replay: a flag the hand-over loops check, so the count of handed records stays exact.

A KeyboardInterrupt could land between ``produce()`` and the count; the first Ctrl-C only sets
``StopFlag.stopped``, a second one raises at once (a hard stop). The handler is installed in the
main thread only; elsewhere a KeyboardInterrupt still ends the run, on the hard-stop path.
"""

from __future__ import annotations

import signal
import threading


class StopFlag:
    """Set by the first Ctrl-C (while installed) or from the start (``stopped=True``: the run was
    interrupted before its first record)."""

    def __init__(self, stopped: bool = False) -> None:
        self.stopped = stopped
        self._previous = None

    def _on_sigint(self, signum, frame) -> None:
        if self.stopped:
            raise KeyboardInterrupt
        self.stopped = True

    def install(self) -> None:
        """Take over SIGINT (main thread only); ``restore`` gives it back."""
        if threading.current_thread() is threading.main_thread():
            self._previous = signal.signal(signal.SIGINT, self._on_sigint)

    def restore(self) -> None:
        if self._previous is not None:
            signal.signal(signal.SIGINT, self._previous)
            self._previous = None
