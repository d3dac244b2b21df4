"""One vocabulary: every string the program shows, in zh and en, against assets/i18n/glossary.json.

The strings live in these places: the catalogs (assets/i18n/{zh,en}.json), the narration
(assets/tour/*.json), the lessons, the glossary's own definitions, string literals in the Python code (scene
labels, bridge and tube words, HUD lines, CLI text, error messages, bench method notes), and what the program
composes from them: the printed handout and the quiz's questions, built here in both languages. Python strings
are read with `ast` so f-strings are checked whole (their fields become "{}") and docstrings, which
are for developers, are left out; so are glyph sets handed to the text atlas (`.ensure(...)`).

The exhibit's words (the user's exhibit text, ../shared/docs/EXHIBIT.zh.txt) are one list,
assets/i18n/exhibit_terms.json: each is the glossary's word for its concept, and the variants it replaces are
forbidden in every string, beside the glossary's own forbidden variants.
"""
from __future__ import annotations

import ast
import json
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
GLOSSARY = json.loads((ROOT / "assets" / "i18n" / "glossary.json").read_text(encoding="utf-8"))
EXHIBIT_TERMS = json.loads((ROOT / "assets" / "i18n" / "exhibit_terms.json").read_text(encoding="utf-8"))["terms"]
EXHIBIT = Path("/work/shared/docs/EXHIBIT.zh.txt")     # beside the repository on the project's machines
CODE_DIRS = ("app", "scenes", "models", "corpus")
CJK = re.compile(r"[\u3400-\u9fff]")


def rules(lang: str) -> list[tuple[str, re.Pattern]]:
    flags = re.IGNORECASE if lang == "en" else 0
    own = [(term, re.compile(rx, flags)) for term, entry in GLOSSARY["terms"].items()
           for rx in entry["forbidden"][lang]]
    return own + [(f"exhibit:{e['concept']}", re.compile(rx, flags)) for e in EXHIBIT_TERMS
                  for rx in e["replaces"][lang]]


RULES = {"zh": rules("zh"), "en": rules("en")}


def violations(text: str, lang: str) -> list[str]:
    text = re.sub(r"\{[^{}]*\}", "{}", text)          # {fields} are names, not words the class reads
    return [f"{term}: {rx.pattern!r} matches {m.group(0)!r}" for term, rx in RULES[lang]
            for m in [rx.search(text)] if m]


# ---- where the strings live ----------------------------------------------------------------------
def catalog_strings():
    for lang in ("zh", "en"):
        data = json.loads((ROOT / "assets" / "i18n" / f"{lang}.json").read_text(encoding="utf-8"))
        for key, text in data.items():
            yield f"i18n/{lang}.json:{key}", lang, text


def narration_strings():
    for path in sorted((ROOT / "assets" / "tour").glob("*.json")):
        data = json.loads(path.read_text(encoding="utf-8"))
        for lang in ("zh", "en"):
            yield f"{path.name}:title", lang, data["title"][lang]
            for k, page in enumerate(data["pages"]):
                yield f"{path.name}:page {k + 1}", lang, page[lang]
                action = page.get("action") or {}
                if action.get(lang):
                    yield f"{path.name}:page {k + 1} action", lang, action[lang]


def lesson_strings():
    """The shipped lessons' titles and teacher's notes (what the help overlay and the printed plan show)."""
    for path in sorted((ROOT / "assets" / "lessons").glob("*.json")):
        data = json.loads(path.read_text(encoding="utf-8"))
        title = data.get("title", {})
        for lang, text in (title.items() if isinstance(title, dict) else [("en", title)]):
            yield f"lessons/{path.name}:title", lang, text
        for ch in data["chapters"]:
            for page, note in ch.get("notes", {}).items():
                for lang, text in (note.items() if isinstance(note, dict) else [("en", note)]):
                    yield f"lessons/{path.name}:{ch['chapter']} page {page}", lang, text


def glossary_strings():
    for term, entry in GLOSSARY["terms"].items():
        for lang in ("zh", "en"):
            yield f"glossary:{term}", lang, entry["definition"][lang]


def _docstring_nodes(tree) -> set[int]:
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) \
                    and isinstance(first.value.value, str):
                out.add(id(first.value))
    return out


def _is_prose(text: str) -> bool:
    """Words a person reads (a space or a non-ASCII character), not an identifier, key, path or format."""
    return bool(re.search(r"\s", text.strip())) or any(ord(ch) > 127 for ch in text)


def python_strings_of(source: str, where: str):
    tree = ast.parse(source)
    skip = _docstring_nodes(tree)
    for node in ast.walk(tree):
        # Glyph sets preloaded into the text atlas are characters, not words.
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "ensure":
            for sub in ast.walk(node):
                skip.add(id(sub))
    for node in ast.walk(tree):
        if id(node) in skip:
            continue
        if isinstance(node, ast.JoinedStr):
            parts = []
            for v in node.values:
                skip.add(id(v))
                parts.append(v.value if isinstance(v, ast.Constant) else "{}")
            text = "".join(parts)
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            text = node.value
        else:
            continue
        if _is_prose(text):
            yield f"{where}:{node.lineno}", text


def code_strings():
    for folder in CODE_DIRS:
        for path in sorted((ROOT / folder).rglob("*.py")):
            rel = path.relative_to(ROOT).as_posix()
            for where, text in python_strings_of(path.read_text(encoding="utf-8"), rel):
                # A code string may be either language (ec.say pairs, CLI words): zh rules only ever match
                # Chinese text, en rules Latin text, so both are applied.
                yield where, "zh", text
                yield where, "en", text


def composed_strings():
    """What the program composes for a class to read: the printed handout and every quiz question (prompt,
    options, why), in both languages, from the default lab's run."""
    from app.lesson import handout, quiz
    from app.controller import Controller
    from app.settings import AppSettings
    ctl = Controller(AppSettings(language="en", mode="lab"), persist=False, scripted=True).start()
    snap = quiz.snapshot(ctl)
    for lang in ("zh", "en"):
        for k, (_, text) in enumerate(handout.blocks(snap, lang)):
            yield f"handout [{k}]", lang, text
        for q in quiz.build(snap, lang):
            for k, text in enumerate((q.prompt, *q.options, q.why)):
                yield f"quiz {q.id} [{k}]", lang, text


def all_strings():
    yield from catalog_strings()
    yield from narration_strings()
    yield from lesson_strings()
    yield from glossary_strings()
    yield from code_strings()
    yield from composed_strings()


# ---- the tests -------------------------------------------------------------------------------------
def test_glossary_is_well_formed():
    terms = GLOSSARY["terms"]
    assert len(terms) >= 30
    for term, entry in terms.items():
        assert entry["zh"] and entry["en"], term
        assert entry["definition"]["zh"] and entry["definition"]["en"], term
        for lang in ("zh", "en"):
            for rx in entry["forbidden"][lang]:
                re.compile(rx)
    # The exhibit's own words are the glossary's (assets/i18n/exhibit_terms.json: one list).
    for e in EXHIBIT_TERMS:
        entry = terms[e["concept"]]
        assert e["zh"] in entry["zh"] and entry["en"] == e["en"], (e["concept"], entry["zh"], entry["en"])
    # No chosen word is itself a forbidden variant of any concept.
    for term, entry in terms.items():
        for lang in ("zh", "en"):
            assert not violations(entry[lang], lang), (term, violations(entry[lang], lang))


def test_the_exhibit_terms_are_the_exhibits_own():
    """Each exhibit word is quoted from the exhibit, and the quote is the exhibit's own sentence (where the exhibit
    is beside the repository); a word the product took from nowhere would fail here."""
    assert len(EXHIBIT_TERMS) >= 20 and len({e["concept"] for e in EXHIBIT_TERMS}) == len(EXHIBIT_TERMS)
    exhibit = EXHIBIT.read_text(encoding="utf-8") if EXHIBIT.exists() else None
    for e in EXHIBIT_TERMS:
        assert e["zh"] in e["quote"], e["concept"]
        if exhibit is not None:
            assert e["quote"] in exhibit, e["concept"]
        for lang in ("zh", "en"):
            for rx in e["replaces"][lang]:
                assert not re.search(rx, e["zh"] if lang == "zh" else e["en"]), (e["concept"], rx)


def test_the_exhibit_rules_catch_the_words_the_screen_used():
    """The words the screen said where the exhibit has its own (issue 34) are caught, the exhibit's are not."""
    for text in ("草稿模型猜了", "亮 5 条通道", "64 个序列", "奖励词元", "KV 柜", "验证表桥", "算术磨坊", "铅笔车",
                 "批量 64", "替换词元", "Lookahead 解码", "满刻度 1", "草稿低估的字"):
        assert violations(text, "zh"), text
    for text in ("小模型猜了", "亮 5 条路", "一批 64 段", "多送的词元", "柜子", "桥上的表", "小磨坊", "铅笔小车",
                 "换上的词元", "前瞻解码", "满格是 1", "草稿网络", "不通过"):
        assert not violations(text, "zh"), text


def test_the_rules_catch_each_variant_the_issue_names():
    """The check can fail: each variant found in the program before the vocabulary was fixed is caught."""
    found = {"投机解码的试管": "zh", "大鼓转一圈": "zh", "小鼓转 4 次": "zh", "亮 5 条车道": "zh", "亮 5 条道": "zh",
             "每次运行写下 2 个": "zh", "本轮写下": "zh", "公式和实数不完全一样": "zh", "从内存读一遍": "zh",
             "bytes read per step": "en", "If a draft run costs c times a target run": "en",
             "If all γ guesses pass": "en", "草稿树的每个结点": "zh", "典型采样": "zh", "a draft tree": "en",
             "a token tree": "en", "prompt look-up": "en", "typical sampling": "en"}
    for text, lang in found.items():
        assert violations(text, lang), text
    for text, lang in {"推测解码": "zh", "大滚筒转一圈": "zh", "亮 5 条路": "zh", "每步写下 2 个": "zh",
                       "数出来的": "zh", "从显存读一遍": "zh", "Step-through mode (key 3)": "en",
                       "--steps must be between 1 and 10000": "en", "bytes read per pass": "en",
                       "猜测树的每个节点": "zh", "典型接受": "zh", "a guess tree's nodes": "en", "prompt lookup": "en",
                       "typical acceptance": "en"}.items():
        assert not violations(text, lang), text


def test_the_drafters_are_named_in_the_glossary_words():
    """Who drafts is named the same way in the lab's menu, the step-through, the plot and chapter 10 (which runs them
    all): the glossary's word for each drafter, the tree's nodes and typical acceptance, in both languages."""
    terms = GLOSSARY["terms"]
    for lang in ("zh", "en"):
        cat = json.loads((ROOT / "assets" / "i18n" / f"{lang}.json").read_text(encoding="utf-8"))
        word = {k: terms[k][lang].lower() for k in ("lookup", "heads", "guess_tree", "node", "typical_acceptance",
                                                    "drafter")}
        assert word["lookup"] in cat["lab.drafter_lookup"].lower()
        assert word["heads"] in cat["lab.drafter_heads"].lower() and word["heads"] in cat["drafter.heads"].lower()
        assert word["guess_tree"] in cat["step.tree_lanes"].lower()
        assert word["node"] in cat["lab.tree_nodes"].lower()
        assert word["typical_acceptance"] in cat["rule.typical"].lower()
        assert word["drafter"] in cat["plot.drafters_title"].lower()
        ch10 = json.loads((ROOT / "assets" / "tour" / "10-no-second-model.json").read_text(encoding="utf-8"))
        text = " ".join(page[lang] + " " + (page.get("action") or {}).get(lang, "") for page in ch10["pages"]).lower()
        for k in ("lookup", "heads", "guess_tree", "node", "typical_acceptance"):
            assert word[k] in text, (lang, k)


def test_python_strings_are_found_whole_and_docstrings_left_out():
    src = 'def f(n):\n    """大鼓 in a docstring"""\n    a = f"亮 {n} 条车道"\n    atlas.ensure("大鼓")\n    return "x"\n'
    got = [text for _, text in python_strings_of(src, "m.py")]
    assert got == ["亮 {} 条车道"]


def test_every_string_uses_the_glossary_words():
    seen = 0
    bad = []
    composed = 0
    for where, lang, text in all_strings():
        seen += 1
        composed += where.startswith(("handout", "quiz"))
        bad += [f"{where} [{lang}] {v}: {text[:90]!r}" for v in violations(text, lang)]
        if lang == "en" and CJK.search(text):         # a Chinese word in an English sentence ("draft (小模型)")
            bad += [f"{where} [en, its Chinese] {v}: {text[:90]!r}" for v in violations(text, "zh")]
    assert composed > 100                            # the handout and the quiz were read, in both languages
    assert seen > 800
    assert not bad, "\n".join(bad)


ZH_PUNCT = (re.compile(r"[\u3400-\u9fff][,;:!?](?!\d)"), re.compile(r"[,;!?] ?[\u3400-\u9fff]"))


@pytest.mark.parametrize("source", ["catalogs", "narration", "lessons"])
def test_chinese_uses_chinese_punctuation(source):
    """A Chinese sentence takes full-width ，；：！？ (ASCII ones read as a typo to a Chinese class)."""
    strings = {"catalogs": catalog_strings, "narration": narration_strings, "lessons": lesson_strings}[source]()
    bad = [f"{where}: {text[:80]!r}" for where, lang, text in strings
           if lang == "zh" and any(rx.search(text) for rx in ZH_PUNCT)]
    assert not bad, "\n".join(bad)
