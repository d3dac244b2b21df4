"""Test environment: headless SDL and GL, private config/cache/matplotlib folders, no network."""
import os
import tempfile

_tmp = tempfile.mkdtemp(prefix="spectable-tests-")
os.environ.setdefault("SDL_VIDEODRIVER", "offscreen")
os.environ.setdefault("SDL_AUDIODRIVER", "dummy")
os.environ.setdefault("MPLCONFIGDIR", os.path.join(_tmp, "mpl"))
os.environ.setdefault("XDG_CONFIG_HOME", os.path.join(_tmp, "config"))
os.environ.setdefault("XDG_CACHE_HOME", os.path.join(_tmp, "cache"))
os.environ.setdefault("PYGAME_HIDE_SUPPORT_PROMPT", "1")
