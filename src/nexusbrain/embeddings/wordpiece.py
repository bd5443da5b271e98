"""BERT's uncased WordPiece for ASCII text, in Python: the ids a tokenizer.json of that kind
(BertNormalizer, BertPreTokenizer, WordPiece) gives, without the tokenizers library.

A fresh process that embeds one query (the command line without a server) would otherwise
import the library and build its tokenizer from the file: ~16 ms of a search. Reading the
vocabulary takes ~3. For ASCII the three steps are small: control characters are dropped, the
text lower-cased, cut into runs of letters and digits and single punctuation marks, and each
run split into the longest vocabulary entries from its start ("##" marking a continuation), or
[UNK] when one cannot be. Text that is not ASCII, or that holds an added token such as
"[UNK]", is left to the library (`ids` answers None). tests/test_wordpiece.py checks that both
give the same ids for any ASCII text.

`TokenIds` is what an embedder uses: while the library is not loaded, a few texts (a query, the
reference texts of embeddings/reference.py) are cut here, at ~0.2 µs a character; a larger batch
(an ingest), or text this does not take, loads the library.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import orjson

if TYPE_CHECKING:
    from tokenizers import Tokenizer

# What BertNormalizer's clean_text drops from ASCII: control characters but tab, LF and CR
# (which, as whitespace, only separate words)
_CONTROL = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")
# A word: a run of letters and digits, or one punctuation mark (every other printable ASCII
# character, which BertPreTokenizer isolates)
_WORD = re.compile(r"[a-z0-9]+|[!-/:-@\[-`{-~]")


class AsciiWordPiece:
    def __init__(
        self,
        vocab: Mapping[str, int],
        *,
        unknown: str,
        prefix: str,
        max_chars: int,
        added: Iterable[str] = (),
    ) -> None:
        self.vocab = vocab
        self.unknown = vocab[unknown]
        self.prefix = prefix
        self.max_chars = max_chars  # a longer word is [UNK] whole
        self.added = tuple(added)
        self.longest = max(map(len, vocab), default=0)

    @classmethod
    def of(cls, spec: Mapping[str, Any]) -> AsciiWordPiece | None:
        """The tokenizer of a tokenizer.json's contents, if it is BERT's uncased kind."""
        model, normal = spec.get("model") or {}, spec.get("normalizer") or {}
        split = spec.get("pre_tokenizer") or {}
        kinds = (model.get("type"), normal.get("type"), split.get("type"))
        if kinds != ("WordPiece", "BertNormalizer", "BertPreTokenizer"):
            return None
        if not (normal.get("clean_text") and normal.get("lowercase")):
            return None
        return cls(
            model["vocab"],
            unknown=model["unk_token"],
            prefix=model["continuing_subword_prefix"],
            max_chars=model["max_input_chars_per_word"],
            added=[token["content"] for token in spec.get("added_tokens") or ()],
        )

    def ids(self, text: str) -> list[int] | None:
        """The token ids of `text` (no special tokens), or None if it is not ASCII or holds
        an added token."""
        if not text.isascii() or any(token in text for token in self.added):
            return None
        out: list[int] = []
        for word in _WORD.findall(_CONTROL.sub("", text).lower()):
            out += self._pieces(word)
        return out

    def _pieces(self, word: str) -> list[int]:
        if len(word) > self.max_chars:
            return [self.unknown]
        out: list[int] = []
        start = 0
        while start < len(word):
            lead = self.prefix if start else ""
            for end in range(min(len(word), start + self.longest), start, -1):
                found = self.vocab.get(lead + word[start:end])
                if found is not None:
                    out.append(found)
                    start = end
                    break
            else:
                return [self.unknown]
        return out


# Characters cut in Python while the library is not loaded: ~4 ms, against ~20 to load it
FEW_CHARS = 20_000


class TokenIds:
    """The ids of texts, without special tokens, padding or truncation, as a tokenizer.json
    gives them; the library is loaded only for a batch or a text AsciiWordPiece does not take."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._library: Tokenizer | None = None
        self._ascii: AsciiWordPiece | None = None
        self._spec_read = False

    def __call__(self, texts: Sequence[str]) -> list[list[int]]:
        if self._library is None and sum(map(len, texts)) <= FEW_CHARS:
            found = self._in_python(texts)
            if found is not None:
                return found
        encodings = self._loaded().encode_batch_fast(list(texts), add_special_tokens=False)
        return [e.ids for e in encodings]

    def _in_python(self, texts: Sequence[str]) -> list[list[int]] | None:
        if not self._spec_read:
            self._ascii = AsciiWordPiece.of(orjson.loads(self.path.read_bytes()))
            self._spec_read = True
        if self._ascii is None:
            return None
        out = []
        for text in texts:
            ids = self._ascii.ids(text)
            if ids is None:
                return None
            out.append(ids)
        return out

    def _loaded(self) -> Tokenizer:
        if self._library is None:
            from tokenizers import Tokenizer

            self._library = Tokenizer.from_file(str(self.path))
            self._library.no_padding()
            self._library.no_truncation()
        return self._library
