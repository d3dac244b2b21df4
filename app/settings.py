"""The settings a teacher expects to find again next time: language, palette, scale, lab parameters.

Written atomically (temp file in the same folder, then os.replace). A file that does not parse is
set aside as settings.json.corrupt-<n> with a message; the program then starts from defaults.
"""
from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass, fields
from pathlib import Path

from app.paths import config_dir
from corpus.atomic import write_text_atomic

MODES = ("tour", "lab", "step", "tubes", "exploded", "hardware")
TUBE_RULES = ("exact", "resample_from_p", "exact_match_only", "draft_only")
# Older settings files may name draft_only 'no_bonus' (a misnomer: it never let the target write at all).
LEGACY_TUBE_RULES = {"no_bonus": "draft_only"}
# The lab's values: the tour sets some of them per chapter but never keeps them (App snapshots and restores these).
LAB_FIELDS = ("prompt", "gamma", "c", "temperature", "top_k", "top_p", "seed", "tokens", "steps", "lanes", "context",
              "device", "model", "tube_rule", "skip_bonus")


@dataclass
class AppSettings:
    # classroom
    language: str = "zh"              # 'zh' | 'en'
    palette: str = "default"          # 'default' | 'projector'
    ui_scale: float = 1.0             # multiplies the font size chosen from the window height
    reduced_motion: bool = False
    fullscreen: bool = False
    window_w: int = 1280
    window_h: int = 720
    # where we were
    mode: str = "tour"
    chapter: int = 0
    # the lab (these drive the sampler, the analytics and the hardware model)
    prompt: str = "慢慢"
    gamma: int = 4
    c: float = 0.1                    # draft cost / target cost
    temperature: float = 1.0
    top_k: int = 0
    top_p: float = 1.0
    seed: int = 0
    tokens: str = "char"              # 'char' | 'word'
    steps: int = 12                   # target passes in the run shown on the table
    lanes: int = 1                    # batch lanes (sequences written at once)
    context: int = 4096               # context length for the KV-cache reads
    device: str = "h100-sxm"
    model: str = "llama-3.1-8b"
    tube_rule: str = "exact"
    skip_bonus: bool = False          # test tubes: drop the bonus token (still exact, fewer tokens per pass)

    def clamp(self) -> "AppSettings":
        """Bring every field back into its legal range (a hand-edited file may not be)."""
        self.language = self.language if self.language in ("zh", "en") else "zh"
        self.palette = self.palette if self.palette in ("default", "projector") else "default"
        self.ui_scale = min(2.5, max(0.6, float(self.ui_scale)))
        self.mode = self.mode if self.mode in MODES else "tour"
        self.chapter = min(11, max(0, int(self.chapter)))
        self.gamma = min(12, max(1, int(self.gamma)))
        self.c = min(1.0, max(0.0, float(self.c)))
        self.temperature = min(3.0, max(0.0, float(self.temperature)))
        self.top_k = max(0, int(self.top_k))
        self.top_p = min(1.0, max(0.01, float(self.top_p)))
        self.tokens = self.tokens if self.tokens in ("char", "word") else "char"
        self.steps = min(200, max(1, int(self.steps)))
        self.lanes = min(512, max(1, int(self.lanes)))
        self.context = min(131072, max(1, int(self.context)))
        self.tube_rule = LEGACY_TUBE_RULES.get(self.tube_rule, self.tube_rule)
        self.tube_rule = self.tube_rule if self.tube_rule in TUBE_RULES else "exact"
        self.skip_bonus = bool(self.skip_bonus)
        self.window_w = max(320, int(self.window_w))
        self.window_h = max(200, int(self.window_h))
        return self


def settings_path() -> Path:
    return config_dir() / "settings.json"


def load_settings(path: Path | None = None) -> tuple[AppSettings, str | None]:
    """Read the settings; returns (settings, message or None). Never raises on a bad file."""
    path = path or settings_path()
    if not path.exists():
        return AppSettings(), None
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
        if not isinstance(raw, dict):
            raise ValueError("not a JSON object")
        known = {f.name: f.type for f in fields(AppSettings)}
        s = AppSettings(**{k: v for k, v in raw.items() if k in known})
        return s.clamp(), None
    except (OSError, ValueError, TypeError) as exc:
        n = 1
        while path.with_name(f"{path.name}.corrupt-{n}").exists():
            n += 1
        aside = path.with_name(f"{path.name}.corrupt-{n}")
        try:
            os.replace(path, aside)
        except OSError:
            aside = path
        msg = f"settings file {path} could not be read ({type(exc).__name__}); set aside as {aside.name}, using defaults"
        return AppSettings(), msg


def save_settings(settings: AppSettings, path: Path | None = None) -> Path:
    """Atomic write: a crash mid-write leaves the old file, never half a file."""
    path = path or settings_path()
    write_text_atomic(path, json.dumps(asdict(settings), ensure_ascii=False, indent=1))
    return path
