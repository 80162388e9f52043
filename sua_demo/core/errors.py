"""One exception family for mistakes a user can fix; the CLI and the app catch exactly this and show its
message as one line, so that a real bug (any other exception) still shows as a bug, with its traceback."""


class SuaError(Exception):
    """A problem with the user's input or files, with a message that says what to do."""


class UnknownNameError(SuaError, KeyError):
    """A name (attack, method, denoiser, checkpoint, person) that is not one of the known ones."""

    def __str__(self) -> str:  # KeyError would quote the message
        return str(self.args[0]) if self.args else ""


class BadValueError(SuaError, ValueError):
    """A number or setting out of its allowed range."""


class MissingFileError(SuaError, FileNotFoundError):
    """A file or folder the command needs is not there."""
