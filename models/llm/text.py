"""Text <-> token ids for a Llama checkpoint, and each token as the tape draws it.

One class, TokenText, over a `tokenizers.Tokenizer` (tokenizer.json, or one built from a GGUF file's
metadata). Three kinds of vocabulary are told apart because they show and reject text differently:
  char   one token per character with an explicit <unk> (the shipped 《呐喊》 models): a character outside
         the vocabulary in a prompt is an InputError naming it; `strict=False` maps it to <unk> (evaluation).
  bytes  byte-level BPE (Llama 3, GPT-2, SmolLM2): every text encodes; a piece that is part of a UTF-8
         character is shown as its bytes, ‹e4 bd›.
  other  anything else tokenizers reads (SentencePiece-style ▁ pieces shown with a space); an <unk> in a
         prompt is an InputError.
"""
from __future__ import annotations

import json
from functools import cached_property

from corpus.errors import InputError
from corpus.validate import read_regular_file

NEWLINE_GLYPH = "↵"          # as the n-gram pair draws the newline token
UNK_GLYPH = "□"


def _bytes_to_unicode() -> dict[int, str]:
    """GPT-2's byte -> printable character table (the alphabet byte-level BPE pieces are written in)."""
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + list(range(ord("®"), ord("ÿ") + 1))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return dict(zip(bs, map(chr, cs)))


_BYTE_OF = {c: b for b, c in _bytes_to_unicode().items()}


class TokenText:
    """encode / decode / display for one vocabulary of `vocab_size` ids (the model's embedding rows)."""

    def __init__(self, tokenizer, vocab_size: int, *, start_id: int | None = None, source: str = "tokenizer.json"):
        self.tokenizer = tokenizer
        self.V = int(vocab_size)
        self.source = source
        spec = json.loads(tokenizer.to_str())
        model = spec.get("model") or {}
        self.unk_token = model.get("unk_token")
        self.unk_id = tokenizer.token_to_id(self.unk_token) if self.unk_token else None
        pre = spec.get("pre_tokenizer") or {}
        dec = json.dumps(spec.get("decoder"))
        if model.get("type") == "WordLevel" and pre.get("type") == "Split" and self.unk_id is not None:
            self.kind = "char"
        elif '"ByteLevel"' in dec:
            self.kind = "bytes"
        else:
            self.kind = "other"
        self._metaspace = "Metaspace" in dec or "\\u2581" in dec or "▁" in dec
        size = tokenizer.get_vocab_size(with_added_tokens=True)
        if size > self.V:
            # Ids past the embedding would index outside the model: a tokenizer for another model.
            raise InputError(f"{source} has {size} tokens but the model's vocabulary is {self.V}")
        if start_id is None and self.kind == "char":
            start_id = tokenizer.token_to_id("\n")      # the text between stories and paragraphs
        self.start_id = start_id

    # --- text -> ids ------------------------------------------------------------------------------
    def encode(self, text: str, strict: bool = True) -> list[int]:
        """Token ids of a text. '↵' stands for a newline in a character vocabulary (as the n-gram pair reads it).
        strict: characters the vocabulary cannot write are an InputError naming them; else they become <unk>."""
        if self.kind == "char" and NEWLINE_GLYPH not in self._char_index:
            text = text.replace(NEWLINE_GLYPH, "\n")
        if not text:
            return []
        enc = self.tokenizer.encode(text, add_special_tokens=False)
        ids = list(enc.ids)
        if self.unk_id is not None and strict:
            unknown = sorted({text[a:b] for i, (a, b) in zip(ids, enc.offsets)
                              if i == self.unk_id and text[a:b] != self.unk_token})
            if unknown:
                raise InputError(f"not in the vocabulary of this model ({self.V} tokens): "
                                 + " ".join(repr(c) for c in unknown))
        return ids

    @cached_property
    def _char_index(self) -> dict[str, int]:
        return self.tokenizer.get_vocab() if self.kind == "char" else {}

    def known(self, ch: str) -> bool:
        """A character vocabulary holds this character (always True for byte-level vocabularies)."""
        if self.kind == "char":
            return ch in self._char_index and ch != self.unk_token
        return True

    # --- ids -> text ------------------------------------------------------------------------------
    def decode(self, ids) -> str:
        return self.tokenizer.decode([int(i) for i in ids], skip_special_tokens=False)

    def piece(self, token_id: int) -> str:
        """The raw text of one token (a newline is '\\n'); '' for an id the tokenizer lacks."""
        i = int(token_id)
        tok = self.tokenizer.id_to_token(i)
        if tok is None:
            return ""
        if self.kind == "char":
            return tok
        if self.kind == "bytes" and tok not in self._added and all(c in _BYTE_OF for c in tok):
            raw = bytes(_BYTE_OF[c] for c in tok)
            try:
                return raw.decode("utf-8")
            except UnicodeDecodeError:
                return "‹" + " ".join(f"{b:02x}" for b in raw) + "›"   # part of a character: show its bytes
        if self._metaspace and tok not in self._added:
            if tok.startswith("<0x") and tok.endswith(">") and len(tok) == 6:
                b = int(tok[3:5], 16)
                return chr(b) if b < 0x80 else f"‹{b:02x}›"
            return tok.replace("▁", " ")
        return self.tokenizer.decode([i], skip_special_tokens=False)

    @cached_property
    def _added(self) -> set[str]:
        return {t.content for t in self.tokenizer.get_added_tokens_decoder().values()}

    def display(self, token_id: int) -> str:
        """One token as the tape and the panels draw it: a newline is '↵', <unk> is '□', a tab '→' (glyphs the
        shipped font has)."""
        i = int(token_id)
        if self.unk_id is not None and i == self.unk_id:
            return UNK_GLYPH
        s = self.piece(i)
        if s == "":
            return f"‹{i}›"
        return s.replace("\n", NEWLINE_GLYPH).replace("\t", "→").replace("\r", "")

    @cached_property
    def vocab(self) -> list[str]:
        """The raw piece of every id (what the n-gram pair's .vocab is: used for JSON token lists)."""
        return [self.piece(i) for i in range(self.V)]


MAX_TOKENIZER_BYTES = 64 << 20     # Llama 3's tokenizer.json is 9 MB


def from_tokenizer_file(path, vocab_size: int, start_id: int | None = None) -> TokenText:
    from tokenizers import Tokenizer  # lazy: tokenizers only when a tokenizer file is read
    try:
        raw = read_regular_file(path, "tokenizer file", MAX_TOKENIZER_BYTES)
    except FileNotFoundError as exc:
        raise InputError(f"cannot read {path}: {exc.strerror or exc}") from None
    try:
        # From its text, not its name: tokenizers cannot open a folder whose name is not UTF-8.
        tok = Tokenizer.from_str(raw.decode("utf-8"))
    except UnicodeDecodeError as exc:
        raise InputError(f"{path} is not UTF-8 text (bad byte at offset {exc.start})") from None
    except Exception as exc:  # noqa: BLE001 - the tokenizers library raises its own exception types
        raise InputError(f"cannot read {path}: {str(exc).splitlines()[0][:200]}") from None
    return TokenText(tok, vocab_size, start_id=start_id, source=str(path))
