"""The program: CLI entry, window + GL context, UI panels, modes, settings, exports."""
import os as _os

# pygame prints a greeting on import; --json output must stay one object on stdout.
_os.environ.setdefault("PYGAME_HIDE_SUPPORT_PROMPT", "1")
