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
os.environ.setdefault("SPECTABLE_THREADS", "1")      # every machine has one core; measuring threads is tested on its own
os.environ.setdefault("HYPOTHESIS_STORAGE_DIRECTORY", os.path.join(_tmp, "hypothesis"))   # not in the repository


# ---- scene fixtures: one seeded stage and one offscreen framebuffer per test module (size: the module's W, H)
import pytest  # noqa: E402


@pytest.fixture(scope="module")
def stage():
    from tests.scene_helpers import make_stage
    st = make_stage()
    yield st
    st.release()


@pytest.fixture(scope="module")
def shooter(request):
    from tests.scene_helpers import Shooter
    sh = Shooter(request.module.W, request.module.H)
    yield sh
    sh.release()


# ---- hypothesis: fuzz tests run derandomized (the same examples on every machine, no example database
# written into the repository), each with its own budget (tests/fuzz_helpers.budget); SPECTABLE_FUZZ=long
# searches 20 times longer, at random.
from hypothesis import HealthCheck, settings  # noqa: E402

settings.register_profile("ci", derandomize=True, database=None, deadline=None, print_blob=True,
                          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
settings.register_profile("long", parent=settings.get_profile("ci"), derandomize=False)
settings.load_profile("long" if os.environ.get("SPECTABLE_FUZZ") == "long" else "ci")
