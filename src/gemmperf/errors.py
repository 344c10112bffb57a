"""User-facing errors: one clear line, never a traceback."""


class UserError(Exception):
    """Bad input from the user (a file, a flag, a config value).

    The CLI prints ``str(err)`` on one line and exits with status 2.
    """


def where(path, line: int | None = None) -> str:
    """'file:line' prefix for messages about input files."""
    return f"{path}:{line}" if line is not None else str(path)
