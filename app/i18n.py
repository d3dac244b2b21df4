"""String catalogs (assets/i18n/zh.json, en.json): every word the UI shows, looked up by key.

A missing key falls back to the other language, then to the key itself, so a gap is visible but
never a crash. Values may hold {name} fields filled from live model numbers.
"""
from __future__ import annotations

import json
from functools import lru_cache

from app.paths import I18N_DIR

LANGUAGES = ("zh", "en")


@lru_cache(maxsize=None)
def catalog(lang: str) -> dict[str, str]:
    path = I18N_DIR / f"{lang}.json"
    with open(path, encoding="utf-8") as fh:
        return json.load(fh)


class Strings:
    """t('key', **fields) in the current language."""

    def __init__(self, lang: str = "zh"):
        self.lang = lang if lang in LANGUAGES else "zh"

    def other(self) -> str:
        return "en" if self.lang == "zh" else "zh"

    def __call__(self, key: str, **fields) -> str:
        text = catalog(self.lang).get(key)
        if text is None:
            text = catalog(self.other()).get(key, key)
        if fields:
            try:
                return text.format(**fields)
            except (KeyError, IndexError, ValueError):
                return text
        return text
