"""End to end at the document level: each abstract's concept ids against the gold set (BioCreative V CDR's
DNER measure), from PubTator files."""

from __future__ import annotations

import pytest
from conftest import FIXTURES

from downstream.errors import DataFormatError
from downstream.linking.documents import dner_scores, score_files

GOLD = FIXTURES / "linking-tiny" / "bc5cdr" / "CDR_TestSet.PubTator.txt"


def test_dner_scores_by_hand():
    gold = {"1": {"D1", "D2"}, "2": {"D3"}, "3": {"D4"}}
    predicted = {"1": {"D1", "D9"}, "2": {"D3"}}  # document 3 found nothing
    scores = dner_scores(predicted, gold)
    assert (scores["tp"], scores["fp"], scores["fn"]) == (2, 1, 2)
    assert scores["precision"] == pytest.approx(2 / 3) and scores["recall"] == pytest.approx(2 / 4)
    assert scores["f1"] == pytest.approx(2 * (2 / 3) * 0.5 / (2 / 3 + 0.5))
    with pytest.raises(DataFormatError, match="1 predicted documents are not in the gold file"):
        dner_scores({"7": {"D1"}}, gold)


def _predicted(tmp_path, sixth: dict[str, str]):
    """A predict-style PubTator file of the gold abstract: its disease mentions with the given ids (``-``: not linked)."""
    title, abstract = "Cisplatin and kidney failure.", "Lithium carbonate and cisplatin; tremor and renal failure."
    text = f"{title} {abstract}"
    lines = [f"601|t|{title}", f"601|a|{abstract}"]
    for mention, cid in sixth.items():
        start = text.index(mention)
        lines.append(f"601\t{start}\t{start + len(mention)}\t{mention}\tDisease\t{cid}")
    path = tmp_path / "predicted.pubtator"
    path.write_text("\n".join(lines) + "\n\n")
    return path


def test_score_files_counts_concepts_not_mentions(tmp_path):
    # gold diseases: kidney failure and renal failure (both D051437), tremor (D014202)
    path = _predicted(tmp_path, {"kidney failure": "D051437", "tremor": "-", "renal failure": "D007674"})
    scores = score_files(GOLD, path, entity_type="disease", dataset="bc5cdr-disease")
    assert (scores["tp"], scores["fp"], scores["fn"]) == (1, 1, 1)  # tremor not linked: missed, adds nothing
    assert scores["published"]["DNorm (CDR_Data_README.txt)"]["f1"] == 0.81


def test_mismatched_files_and_bad_lines_are_named(tmp_path):
    bad = tmp_path / "bad.pubtator"
    bad.write_text("601|t|T\n601|a|A\n601\t0\t1\tT\tDisease\tnot-an-id\n")
    with pytest.raises(DataFormatError, match=r"bad\.pubtator:3: concept id 'not-an-id'"):
        score_files(GOLD, bad)
    other = tmp_path / "other.pubtator"
    other.write_text("777|t|T\n777|a|A\n")
    with pytest.raises(DataFormatError, match="1 predicted documents are not in the gold file"):
        score_files(GOLD, other)
