"""One answer typed at a terminal while the live tree goes on drawing.

A line read the ordinary way (the terminal echoing what is typed, ``readline`` returning at
Enter) cannot share the screen with ``rich.live``. Each redraw moves the cursor and garbles the
echo. So the console used to stop the tree while it asked. Instead, the terminal is put
in cbreak mode: keys arrive one by one, not echoed; Ctrl-C still interrupts. The keys are read
in a worker thread. What was typed so far is drawn by the console as part of the live display,
under the tree, which keeps updating.

:class:`LineBuffer` is the editing itself, pure: printable characters are appended,
Backspace removes the last one, Enter ends the line, Ctrl-D on an empty line ends input.
:class:`TerminalKeys` is the terminal side (POSIX ``termios``), restored on the way out
however the prompt ends.
"""

from __future__ import annotations

import codecs
import enum
import os
import termios
import tty
from types import TracebackType
from typing import Any, Final

import attrs
import trio

__all__: list[str] = []

_ENTER: Final = frozenset("\r\n")
_BACKSPACE: Final = frozenset("\x7f\x08")
_END_OF_INPUT: Final = "\x04"  # Ctrl-D


class Typed(enum.Enum):
    """Where a line is after some keys."""

    EDITING = "editing"
    DONE = "done"  # Enter: the line is the answer
    ENDED = "ended"  # Ctrl-D on an empty line: no more input


@attrs.define
class LineBuffer:
    """The line being typed."""

    text: str = ""

    def feed(self, keys: str) -> Typed:
        """Apply ``keys``; stops at the first key that ends the line (the rest is dropped:
        one answer per question)."""
        for key in keys:
            if key in _ENTER:
                return Typed.DONE
            if key == _END_OF_INPUT and not self.text:
                return Typed.ENDED
            if key in _BACKSPACE:
                self.text = self.text[:-1]
            elif key.isprintable():
                self.text += key
        return Typed.EDITING


class TerminalKeys:
    """The keys of the terminal ``fd``, unechoed, as they are pressed (a context manager)."""

    def __init__(self, fd: int) -> None:
        self._fd = fd
        self._saved: list[Any] | None = None
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")

    def __enter__(self) -> TerminalKeys:
        self._saved = termios.tcgetattr(self._fd)
        tty.setcbreak(self._fd)  # no echo, no line buffering; signals still work
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        if self._saved is not None:
            termios.tcsetattr(self._fd, termios.TCSADRAIN, self._saved)

    async def read(self) -> str:
        """The next keys pressed (Ctrl-D when the terminal is gone)."""
        data = await trio.to_thread.run_sync(os.read, self._fd, 64, abandon_on_cancel=True)
        if not data:
            return _END_OF_INPUT
        return self._decoder.decode(data)
