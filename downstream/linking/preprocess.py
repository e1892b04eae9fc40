"""The standard preprocessing of entity linking, written once: BioSyn's (Sung et al., ACL 2020;
``dmis-lab/BioSyn`` ``preprocess/query_preprocess.py``, ``dictionary_preprocess.py``,
``src/biosyn/preprocesser.py``), which the published BioSyn and SapBERT figures on NCBI-disease and BC5CDR
use. In BioSyn's order, for each gold mention:

1. **abbreviations resolved within the abstract**: a short form defined in the abstract as
   ``long form (SF)`` is replaced by its long form, token by token (also either side of a ``/``; a trailing
   comma kept), repeated until nothing changes (BioSyn's ``apply_abbr_dict``). BioSyn finds the definitions
   with the Ab3P binary (Sohn et al., BMC Bioinformatics 2008); here with Schwartz & Hearst's algorithm
   (PSB 2003, "A simple algorithm for identifying abbreviation definitions in biomedical text"), which
   scispaCy's abbreviation detector also implements, in both its orders (``long form (SF)`` and
   ``SF (long form)``), and with two cases it misses: a part both forms share (``... type II (HIT type
   II)``, ``90/hypertension (90/HTN)``). :func:`find_abbreviations`.
2. **composite mentions split** (BioSyn's ``composite_resolve``): BC5CDR's composites come split in their
   7th column; otherwise a mention with several ids is split by BioSyn's patterns (``X of A and B``,
   ``A, B and C D``, ``A/B C``, or one token per id) when the split gives as many parts as ids; where OMIM
   and MeSH ids are mixed, the OMIM ones are dropped first. :func:`split_composite`.
3. **lower-casing, typo correction, punctuation removal** (BioSyn's ``TextPreprocess.run``): lower case;
   NCBI-disease only, BioSyn's 36 ``typo||correction`` pairs (``preprocess/resources/ncbi-spell-check.txt``)
   applied token by token; every run of white space and ASCII punctuation (``string.punctuation``)
   becomes one space. :func:`normalize`. Dictionary names get the same, without typos.
4. **mentions without a concept in the dictionary dropped** (BioSyn's ``--remove_cuiless``): a CUI-less
   mention (``-1``) or one with an id the dictionary lacks.

The dictionaries are BioSyn's: the vocabulary's names normalised, one entry per distinct name with the ids
of every concept that has it; the development dictionary adds the training mentions, the test dictionary
the training and development mentions (``preprocess/README.md``). :mod:`downstream.linking.dictionary`.
"""

from __future__ import annotations

import re
import string
from dataclasses import dataclass
from pathlib import Path

from bioelectra.textio import read_text
from downstream.errors import DataFormatError
from downstream.linking.corpus import Document, Mention

_PUNCTUATION_OR_SPACE = re.compile(r"[\s" + re.escape(string.punctuation) + r"]+")

#: What a query is, as a number: a trained linker's trials made with another version are trained again (its
#: fingerprint, :meth:`downstream.linking.task.LinkingTask.fingerprint_extras`). 2: abbreviations in Schwartz &
#: Hearst's other order and with a shared part (:func:`find_abbreviations`).
PREPROCESSING_VERSION = 2

#: BioSyn's ``apply_abbr_dict`` repeats until nothing changes; a long form that contains its own short form
#: would never stop, so the repeats are bounded.
MAX_ABBREVIATION_ROUNDS = 10


def read_typos(path: str | Path) -> dict[str, str]:
    """BioSyn's typo list (``ncbi-spell-check.txt``): ``typo||correction`` per line.

    Raises:
        DataFormatError: a line without ``||`` (file and line named).
    """
    typos = {}
    for lineno, line in enumerate(read_text(path, error=DataFormatError).split("\n"), start=1):
        if not line.strip():
            continue
        if "||" not in line:
            raise DataFormatError(f"{path}:{lineno}: expected 'typo||correction', got {line[:80]!r}")
        typo, correction = line.strip().split("||", 1)
        typos[typo] = correction
    return typos


def normalize(text: str, *, typos: dict[str, str] | None = None) -> str:
    """BioSyn's ``TextPreprocess.run``: lower case, typos corrected token by token, each run of white space
    and punctuation one space, stripped. ``"Ataxia-Telangiectasia (AT)"`` -> ``"ataxia telangiectasia at"``."""
    text = text.lower()
    if typos:
        text = " ".join(typos.get(token, token) for token in text.split())
    return " ".join(_PUNCTUATION_OR_SPACE.split(text)).strip()


def _valid_short_form(short: str) -> bool:
    """Schwartz & Hearst's short-form test: 2-10 characters, at most two words, a letter, an alphanumeric first
    character."""
    return (
        2 <= len(short) <= 10 and len(short.split()) <= 2 and any(c.isalpha() for c in short) and short[0].isalnum()
    )


def _best_long_form(short: str, candidate: str) -> str | None:
    """Schwartz & Hearst's ``findBestLongForm``: match the short form's characters right to left in the
    candidate, its first character at the start of a word; the long form starts at that word."""
    s, i = len(short) - 1, len(candidate) - 1
    while s >= 0:
        c = short[s].lower()
        if not c.isalnum():
            s -= 1
            continue
        while i >= 0 and (candidate[i].lower() != c or (s == 0 and i > 0 and candidate[i - 1].isalnum())):
            i -= 1
        if i < 0:
            return None
        i -= 1
        s -= 1
    start = candidate.rfind(" ", 0, i + 1) + 1
    return candidate[start:]


def _long_form(short: str, candidate_words: list[str]) -> str | None:
    """Schwartz & Hearst's ``extractAbbrPair``: the long form of ``short`` in the words before it (or, for a
    short form outside the parentheses, the words inside them), or None where their checks fail: a valid short
    form, a long form longer than it, not containing it as a word, of at most ``min(len(SF) + 5, 2 * len(SF))``
    words."""
    if not _valid_short_form(short):
        return None
    limit = min(len(short) + 5, 2 * len(short))
    long = _best_long_form(short, " ".join(candidate_words[-limit:]))
    if not long or len(long) <= len(short) or f"{short} " in f"{long} " or len(long.split()) > limit:
        return None
    return long


def _shared_prefix(short: str, long: str) -> int:
    """The length of the leading text without letters that ``short`` and ``long`` share, up to and with its
    last non-alphanumeric character (``"90/HTN"``, ``"90/hypertension"`` -> 3); 0 when they share none. A
    shared letter belongs to the abbreviation (``X-ALD``, ``X-linked adrenoleukodystrophy``)."""
    common = 0
    while common < min(len(short), len(long)) and short[common] == long[common] and not short[common].isalpha():
        common += 1
    while common and short[common - 1].isalnum():
        common -= 1
    return common


def find_abbreviations(text: str) -> dict[str, str]:
    """The abbreviations an abstract defines, by Schwartz & Hearst's algorithm (PSB 2003, section 2, and its
    Java implementation's ``extractAbbrPairs``), per sentence and parenthesis:

    - ``long form (SF)``: the short form is the parenthesised text (before any ``;`` or ``,``), the long form
      the shortest run of the words just before it, at most ``min(len(SF) + 5, 2 * len(SF))`` words, that
      holds the short form's characters in order, its first at the start of a word;
    - ``SF (long form)``: where the parenthesised text has more than two words, the short form is the word
      just before the parenthesis and the long form is looked for inside it (``PTLD (post-transplantation
      lymphoproliferative disorder, ...)``).

    Two cases the algorithm misses are added, where a long form and its short form share a part that belongs
    to neither: words that end both (``heparin-induced thrombocytopenia type II (HIT type II)`` defines
    ``HIT``), and a leading part without letters that ends at a non-alphanumeric character
    (``90/hypertension (90/HTN)`` defines ``HTN`` as well as ``90/HTN``; ``X-ALD`` keeps its ``X-``,
    :func:`_shared_prefix`). The first definition of a short form wins.

    Returns:
        ``{short form: long form}``, e.g. ``{"AT": "ataxia-telangiectasia"}``.
    """
    found: dict[str, str] = {}

    def add(short: str, long: str) -> None:
        if short not in found:
            found[short] = long
        cut = _shared_prefix(short, long)
        if cut and _valid_short_form(short[cut:]) and short[cut:] not in found:
            found[short[cut:]] = long[cut:]

    for sentence in re.split(r"(?<=[.!?])\s+(?=[A-Z0-9])", text):
        for match in re.finditer(r"\(([^()]*)\)", sentence):
            inside = re.split(r"[;,]", match.group(1))[0].strip()
            before = sentence[: match.start()].split()
            inside_words = inside.split()
            shared = 0  # trailing words the parenthesised text shares with the text before it
            while (shared < min(len(inside_words) - 1, len(before))
                   and inside_words[-1 - shared].lower() == before[-1 - shared].lower()):  # fmt: skip
                shared += 1
            if shared:
                short = " ".join(inside_words[:-shared])
                if long := _long_form(short, before[:-shared]):
                    add(short, long)
                    continue
            if len(inside_words) <= 2:
                if long := _long_form(inside, before):
                    add(inside, long)
            elif before and (long := _long_form(before[-1], inside_words)):
                add(before[-1], long)
    return found


def resolve_abbreviations(mention: str, abbreviations: dict[str, str]) -> str:
    """BioSyn's ``apply_abbr_dict``: each white-space token (and each side of a ``/`` in it; a trailing comma
    kept) that is a short form becomes its long form, repeated until nothing changes (at most
    :data:`MAX_ABBREVIATION_ROUNDS` times)."""
    if not abbreviations:
        return mention
    previous = mention
    for _ in range(MAX_ABBREVIATION_ROUNDS):
        tokens = []
        for token in previous.split():
            if "/" in token:
                token = "/".join(abbreviations.get(t.strip(), t.strip()) for t in token.split("/"))
            if token.endswith(","):
                token = abbreviations.get(token.replace(",", ""), token.replace(",", "")) + ","
            else:
                token = abbreviations.get(token, token)
            tokens.append(token)
        resolved = " ".join(tokens)
        if resolved == previous:
            break
        previous = resolved
    return previous


_PREFIX_OF = re.compile(
    r"(?P<prefix>[a-zA-Z-]+) of (both )?(the )?(?P<suffix1>([a-zA-Z-]+ )+)(and|or) (the )?(?P<suffix2>([a-zA-Z-]+ ?)+)"
)
_NESTED_AND = re.compile(
    r"(?P<prefix_list>([a-zA-Z-]+,? )+)(and|or|and/or) (?P<prefix_last>[a-zA-Z-]+ and [a-zA-Z-]+) (?P<stem>.*)"
)
_TRIVIAL = re.compile(r"(?P<prefix_list>([a-zA-Z-]+,? )+)(and|or|and/or) (?P<prefix_last>(the )?[a-zA-Z-]+) (?P<stem>.*)")
_SLASH = re.compile(r"(?P<prefix>(.* )*)(?P<composite1>.*)/(?P<composite2>.*)?(?P<suffix>( .*)*)")


def split_composite(mention: str, concept_ids: tuple[str, ...]) -> tuple[list[str], tuple[str, ...]]:
    """BioSyn's ``composite_resolve`` (``preprocess/query_preprocess.py``): the parts of a mention with several
    ids, and its ids (OMIM ids dropped where mixed with MeSH ones).

    The patterns, tried in order: ``X of [both] [the] A and|or B`` -> ``X of A``, ``X of B``;
    ``A, B and|or C and D stem`` and ``A, B and|or C stem`` -> ``A stem``, ``B stem`` ...;
    ``pre A/B suf`` -> ``pre A suf``, ``pre B suf`` (not with ``and/or``); else one part per token when there
    are as many tokens as ids. The caller keeps the split only when it has as many parts as ids.

    Returns:
        ``(parts, ids)``; ``([mention], ids)`` when there is one id or no pattern applies.
    """
    mention = mention.strip()
    omim = [i.isdigit() for i in concept_ids]
    ids = tuple(i for i, is_omim in zip(concept_ids, omim, strict=True) if not is_omim) if any(omim) and not all(omim) else concept_ids
    if len(ids) <= 1:
        return [mention], ids
    tokens = mention.split()
    if match := _PREFIX_OF.match(mention):
        prefix = match.group("prefix")
        return [f"{prefix} of {match.group('suffix1').strip()}", f"{prefix} of {match.group('suffix2').strip()}"], ids
    for pattern in (_NESTED_AND, _TRIVIAL):
        if match := pattern.match(mention):
            prefixes = [p for p in match.group("prefix_list").strip().split(",") if p] + [match.group("prefix_last")]
            return [f"{p.strip()} {match.group('stem')}" for p in prefixes], ids
    if (match := _SLASH.fullmatch(mention)) and "and/or" not in mention:
        prefix, suffix = match.group("prefix").strip(), match.group("suffix").strip()
        parts = [match.group("composite1").strip(), (match.group("composite2") or "").strip()]
        return [f"{prefix} {p} {suffix}".strip() for p in parts], ids
    if len(tokens) == len(ids):
        return tokens, ids
    return [mention], ids


@dataclass(frozen=True)
class Query:
    """A gold mention ready to link: its preprocessed part(s) and gold ids.

    Attributes:
        pmid, start, end, text: where the mention is and how it is written.
        parts: the normalised mention, or the normalised parts of a composite mention (each linked alone;
            the query is correct when every part is).
        concept_ids: the gold ids; a part's prediction is correct when it has any of them (BioSyn's
            ``check_label``).
        entity_type: the corpus' type of the mention.
    """

    pmid: str
    start: int
    end: int
    text: str
    parts: tuple[str, ...]
    concept_ids: tuple[str, ...]
    entity_type: str

    @property
    def name(self) -> str:
        """The query as one dictionary name (its parts joined): what a training mention adds to a dictionary."""
        return " ".join(self.parts)


def mention_query(mention: Mention, abbreviations: dict[str, str], *, typos: dict[str, str] | None = None) -> Query:
    """Steps 1-3 of the module docstring on one gold mention (a CUI-less mention keeps ``concept_ids == ()``)."""
    if mention.parts and len(mention.parts) == len(mention.concept_ids):  # BC5CDR's split composite
        parts, ids = [resolve_abbreviations(p, abbreviations) for p in mention.parts], mention.concept_ids
    else:
        resolved = resolve_abbreviations(mention.text, abbreviations)
        parts, ids = split_composite(resolved, mention.concept_ids)
        if not (len(ids) > 1 and len(parts) == len(ids)):
            parts = [resolved]
    normalized = tuple(n for n in (normalize(p, typos=typos) for p in parts) if n)
    return Query(
        pmid=mention.pmid, start=mention.start, end=mention.end, text=mention.text,
        parts=normalized or (normalize(mention.text),), concept_ids=ids, entity_type=mention.entity_type,
    )  # fmt: skip


def document_queries(documents: list[Document], *, typos: dict[str, str] | None = None) -> list[Query]:
    """The queries of every gold mention of ``documents`` (abbreviations found per abstract), CUI-less ones
    included (the dictionary decides which are kept: :func:`downstream.linking.dictionary.linkable`)."""
    queries = []
    for document in documents:
        abbreviations = find_abbreviations(document.text)
        queries.extend(mention_query(m, abbreviations, typos=typos) for m in document.mentions)
    return queries
