"""Settings, key scripts, string catalogs and tour narration: the small parts of the program."""
from __future__ import annotations

import json
import re

import pytest

from app.i18n import Strings, catalog
from app.settings import AppSettings, load_settings, save_settings
from app.tour import CHAPTERS, TourState, narration


def test_settings_round_trip_atomically(tmp_path):
    path = tmp_path / "cfg" / "settings.json"
    s = AppSettings(language="en", gamma=7, palette="projector", ui_scale=1.4)
    save_settings(s, path)
    loaded, msg = load_settings(path)
    assert msg is None and loaded == s
    assert [p.name for p in path.parent.iterdir()] == ["settings.json"]   # no temp files left behind


def test_out_of_range_settings_are_clamped(tmp_path):
    path = tmp_path / "settings.json"
    path.write_text(json.dumps({"gamma": 99, "ui_scale": 9, "mode": "nonsense", "unknown_key": 1}))
    s, msg = load_settings(path)
    assert msg is None and s.gamma == 12 and s.ui_scale == 2.5 and s.mode == "tour"


def test_catalogs_have_the_same_keys_and_fields():
    zh, en = catalog("zh"), catalog("en")
    assert zh.keys() == en.keys()
    field = re.compile(r"\{(\w+)\}")
    for k in zh:
        assert set(field.findall(zh[k])) == set(field.findall(en[k])), k


def test_every_key_the_code_uses_is_in_the_catalogs():
    from pathlib import Path
    used = set()
    for path in (Path(__file__).resolve().parent.parent / "app").rglob("*.py"):
        used |= set(re.findall(r"""\bt\(\s*["']([a-z_]+(?:\.[a-z_]+)+)["']""", path.read_text(encoding="utf-8")))
    assert len(used) > 50
    missing = sorted(k for k in used if k not in catalog("zh"))
    assert not missing


def test_strings_fall_back_and_fill_fields():
    t = Strings("en")
    assert t("msg.exported", path="x.png").endswith("x.png")
    assert t("no.such.key") == "no.such.key"


def test_twelve_chapters_with_narration_in_both_languages():
    assert len(CHAPTERS) == 12
    for ch in CHAPTERS:
        data = narration(ch.slug)
        assert data["title"]["zh"] and data["title"]["en"]
        assert data["pages"]
        for page in data["pages"]:
            assert page["zh"].strip() and page["en"].strip()
            fields_zh = set(re.findall(r"\{(\w+)\}", page["zh"]))
            assert fields_zh == set(re.findall(r"\{(\w+)\}", page["en"])), ch.slug


def test_narration_fields_are_live_facts():
    """Every {field} in narration is a number the facts module computes (no typed-in model numbers)."""
    import inspect

    import app.facts as facts_mod
    src = inspect.getsource(facts_mod)
    for ch in CHAPTERS:
        for page in narration(ch.slug)["pages"]:
            for text in (page["zh"], (page.get("action") or {}).get("zh", "")):
                for name in re.findall(r"\{(\w+)\}", text):
                    assert f'"{name}"' in src, (ch.slug, name)


def test_narration_is_drawable_with_the_shipped_font():
    from scenes.fonts import missing_characters
    text = json.dumps([narration(c.slug) for c in CHAPTERS], ensure_ascii=False)
    text += json.dumps(catalog("zh"), ensure_ascii=False) + json.dumps(catalog("en"), ensure_ascii=False)
    assert not missing_characters(text)


def test_tour_state_walks_text_then_action():
    st = TourState(0)
    seen = []
    while True:
        r = st.next()
        seen.append(r)
        if r == "end":
            break
    assert seen.count("chapter") == 11
    assert seen.count("act") == sum(1 for c in CHAPTERS for p in narration(c.slug)["pages"] if p.get("action"))
    while st.prev() != "start":
        pass
    assert (st.chapter, st.page, st.acted) == (0, 0, False)


def test_key_script_parsing(tmp_path):
    from app.keys import parse_script
    from corpus.errors import InputError
    p = tmp_path / "k.txt"
    p.write_text("# comment\nPageDown\nwait 3\n?\nspace  # next\n.\n")
    assert parse_script(p) == ["page down", 3, "?", "space", "."]
    p.write_text("flibber\n")
    with pytest.raises(InputError):
        parse_script(p)


def test_clicker_keys_are_bound_only_to_next_and_previous():
    from app.keys import ACTIONS
    owners = {name: a for a, names in ACTIONS.items() for name in names}
    assert owners["page down"] == "next" and owners["page up"] == "prev"
    assert sum("page down" in n or "page up" in n for n in ACTIONS.values()) == 2
