"""Sentence splitting of raw biomedical text (``bioelectra predict``): rule-based, offsets into the text.

The rules keep what NER needs: no sentence ends inside a number or after the abbreviations biomedical
abstracts are full of (``e.g.``, ``et al.``, ``Fig.``), and a line break always ends one (titles, headings).
"""

from __future__ import annotations

import re

#: Words ending in a period after which a sentence does NOT end (compared lower-cased, leading brackets and
#: quotes dropped): Latin and citation abbreviations common in biomedical text.
ABBREVIATIONS = frozenset({
    "e.g.", "i.e.", "et al.", "al.", "fig.", "figs.", "vs.", "approx.", "ca.", "cf.", "no.", "nos.", "dr.",
    "prof.", "ref.", "refs.", "eq.", "eqs.", "resp.", "sp.", "spp.", "vol.", "incl.", "viz.", "var.", "ed.",
    "eds.", "tab.", "suppl.", "min.", "max.", "st.", "mr.", "mrs.", "ms.", "jr.", "sr.",
})  # fmt: skip

# A candidate end: sentence punctuation, any closing brackets or quotes, then whitespace.
_SENTENCE_END = re.compile(r"[.!?]+[)\]}\"'\u2019\u201d]*(?=\s)")
_LINE_BREAK = re.compile(r"\r\n|\r|\n")


def split_sentences(text: str) -> list[tuple[int, int]]:
    """Sentence spans of ``text``: ``[(start, end), ...]`` character offsets (end exclusive), in order,
    without leading or trailing whitespace; whitespace-only stretches belong to none.

    Rules: a line break always ends a sentence (titles, headings, list items; unwrap hard-wrapped text
    first). Within a line, a sentence ends after ``.``, ``!`` or ``?`` (and any closing brackets or quotes)
    followed by whitespace and a character that is not a lower-case letter, except after a word in
    :data:`ABBREVIATIONS` (``e.g.``, ``et al.``, ``Fig.``, ``vs.``, ``approx.`` ...). A period inside a
    number (``2.5``) or a word (``p.m``) is never followed by whitespace, so it never ends one.
    """
    spans: list[tuple[int, int]] = []
    line_start = 0
    for line_end in [m.start() for m in _LINE_BREAK.finditer(text)] + [len(text)]:
        start = line_start
        for match in _SENTENCE_END.finditer(text, line_start, line_end):
            end = match.end()
            following = text[end:line_end].lstrip()
            if not following or following[0].islower():
                continue
            if text[match.start()] == "." and _is_abbreviation(text, line_start, match.start() + 1):
                continue
            _add_span(text, start, end, spans)
            start = end
        _add_span(text, start, line_end, spans)
        line_start = line_end + (2 if text.startswith("\r\n", line_end) else 1)
    return spans


def _is_abbreviation(text: str, line_start: int, period_end: int) -> bool:
    """Whether the word ending at ``period_end`` (its final ``.``) is in :data:`ABBREVIATIONS`."""
    word_start = period_end - 1
    while word_start > line_start and not text[word_start - 1].isspace():
        word_start -= 1
    word = text[word_start:period_end].lstrip("([{\"'\u2018\u201c").lower()
    if word in ABBREVIATIONS:
        return True
    before = text[line_start:word_start].rstrip().rsplit(None, 1)  # "et al.": two words
    return bool(before) and f"{before[-1].lower()} {word}" in ABBREVIATIONS


def _add_span(text: str, start: int, end: int, spans: list[tuple[int, int]]) -> None:
    piece = text[start:end]
    stripped = piece.strip()
    if stripped:
        first = start + (len(piece) - len(piece.lstrip()))
        spans.append((first, first + len(stripped)))
