"""One exception type for mistakes a user can fix; the CLI and the app show its message as one line."""


class SuaError(Exception):
    """A problem with the user's input or files, with a message that says what to do."""
