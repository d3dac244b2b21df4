"""The one error type for bad user input; it lives at the root of the data flow so every layer can raise it.

The CLI turns it into one line on stderr and exit code 2, never a traceback.
"""


class InputError(ValueError):
    """Something the user gave us (a file, a prefix, a setting) cannot be used; the message says why."""
