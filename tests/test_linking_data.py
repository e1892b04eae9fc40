"""Entity linking: the corpus and vocabulary readers, BioSyn's preprocessing, the dictionary, accuracy@k and
the sparse linker, on hand-made fixtures (tests/fixtures/linking-tiny) and, when present, ../shared/data."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import FIXTURES, SHARED_DATA

from downstream.errors import DataFormatError
from downstream.linking.corpus import parse_concept_ids, read_corpus
from downstream.linking.dictionary import build_dictionary, linkable
from downstream.linking.metrics import accuracy_at_k, top_k
from downstream.linking.preprocess import (
    Query,
    document_queries,
    find_abbreviations,
    normalize,
    read_typos,
    resolve_abbreviations,
    split_composite,
)
from downstream.linking.sparse import SMALL_BATCH, SparseLinker
from downstream.linking.vocabulary import read_ctd_diseases, read_medic

TINY = FIXTURES / "linking-tiny"


def test_ncbi_reader_handles_the_quirks():
    docs = read_corpus(TINY / "ncbi-disease" / "NCBItrainset_corpus.txt")  # empty first line, PMID 102 twice
    assert [d.pmid for d in docs] == ["101", "102"]
    assert len(docs[1].mentions) == 3  # the first copy kept, as BioSyn does
    m = docs[0].mentions[1]
    assert (m.text, m.concept_ids, docs[0].text[m.start : m.end]) == ("AT", ("D001260",), "AT")
    test = read_corpus(TINY / "ncbi-disease" / "NCBItestset_corpus.txt")[0].mentions
    assert [m.concept_ids for m in test] == [("D001943",), ("208900",), ("D015179",), ("D001260", "208900")]
    assert test[3].id_separator == "|"


def test_bc5cdr_reader_types_composites_relations_and_cuiless():
    docs = read_corpus(TINY / "bc5cdr" / "CDR_TrainingSet.PubTator.txt", entity_type="disease")
    mentions = docs[0].mentions
    assert [m.entity_type for m in mentions] == ["Disease"] * 3  # the chemical and the CID line left out
    assert mentions[2].parts == ("hepatic injury", "renal injury")
    dev = read_corpus(TINY / "bc5cdr" / "CDR_DevelopmentSet.PubTator.txt", entity_type="Disease")
    assert dev[0].mentions[1].concept_ids == ()  # -1


@pytest.mark.parametrize(
    ("ids", "expected"),
    [("D001|OMIM:123", (("D001", "123"), "|")), ("D004829+D003294", (("D004829", "D003294"), "+")),
     (" MESH:C123 ", (("C123",), "")), ("OMIM:106210 ", (("106210",), "")), ("-1", ((), "")),
     ("D002544|-1", (("D002544", "-1"), "|"))],
)  # fmt: skip
def test_concept_ids_prefixes_spaces_and_separators(ids, expected):
    assert parse_concept_ids(ids, "f:1") == expected


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("1|t|T\n1|a|A\n1\t0\t1\tT\tDisease\tXYZ\n", r"f\.txt:3: concept id 'XYZ'.*expected a MeSH id"),
        ("1|t|T\n1|a|A\n1\t0\t1\tT\tDisease\n", r"f\.txt:3: expected .* 6 or 7 tab-separated columns"),
        ("1|t|T\n1|a|A\n1\t0\t1\tX\tDisease\tD1\n", r"f\.txt:3: mention 'X' does not match the text at 0-1: 'T'"),
        ("1|t|T\n1|a|A\n2\t0\t1\tT\tDisease\tD1\n", r"f\.txt:3: annotation of PMID '2' inside document 1"),
        ("1|t|T\n1|a|A\n1\t0\t9\tT\tDisease\tD1\n", r"f\.txt:3: offsets 0-9 outside"),
        ("hello\n", r"f\.txt:1: expected a title line"),
        ("\n\n", r"f\.txt: no documents"),
    ],
)
def test_bad_corpus_lines_name_file_line_and_expectation(tmp_path, content, message):
    path = tmp_path / "f.txt"
    path.write_text(content)
    with pytest.raises(DataFormatError, match=message):
        read_corpus(path)


def test_medic_and_ctd_readers(tmp_path):
    concepts = read_medic(TINY / "medic" / "medic_06Jul2012.txt")
    assert concepts[0].concept_ids == ("D001260", "208900") and concepts[0].names[:2] == ("Ataxia Telangiectasia", "Louis-Bar Syndrome")
    bad = tmp_path / "medic.txt"
    bad.write_text("D1||Name\nD2 Name\n")
    with pytest.raises(DataFormatError, match=r"medic\.txt:2: expected '<MeSH id>"):
        read_medic(bad)
    ctd = tmp_path / "CTD_diseases.tsv"
    ctd.write_text("# header\n" + "\t".join(["Tremor", "MESH:D014202", "OMIM:1|DO:DOID:9", "", "", "", "", "Tremors|Shaking", ""]) + "\n")
    assert [(c.concept_ids, c.names) for c in read_ctd_diseases(ctd)] == [(("D014202", "1"), ("Tremor", "Tremors", "Shaking"))]
    ctd.write_text("Tremor\tMESH:D014202\n")
    with pytest.raises(DataFormatError, match=r"CTD_diseases\.tsv:1: expected 9 tab-separated columns"):
        read_ctd_diseases(ctd)


def test_normalize_is_biosyns_text_preprocess():
    assert normalize("Ataxia-Telangiectasia (A-T),  type 1") == "ataxia telangiectasia a t type 1"
    assert normalize("Colon Tumours", typos={"tumours": "tumors"}) == "colon tumors"
    assert read_typos(TINY / "medic" / "ncbi-spell-check.txt") == {"tumour": "tumor", "tumours": "tumors"}


def test_abbreviations_schwartz_hearst_and_biosyn_replacement():
    text = "Ataxia telangiectasia (A-T) is rare. Heat shock protein (HSP, a chaperone) binds; see (p < 0.05)."
    found = find_abbreviations(text)
    assert found == {"A-T": "Ataxia telangiectasia", "HSP": "Heat shock protein"}
    assert resolve_abbreviations("A-T carriers", found) == "Ataxia telangiectasia carriers"
    assert resolve_abbreviations("A-T/HSP defects,", found) == "Ataxia telangiectasia/Heat shock protein defects,"
    assert resolve_abbreviations("HSP, deficiency", found) == "Heat shock protein, deficiency"
    # a long form holding its own short form stops after a bounded number of rounds
    assert resolve_abbreviations("X", {"X": "big X"}).endswith("X")


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # Schwartz & Hearst's other order: the long form inside the parentheses (cut at a comma), the short form
        # the word before them
        ("He had PTLD (post-transplantation lymphoproliferative disorder, Burkitt-type) then.",
         {"PTLD": "post-transplantation lymphoproliferative disorder"}),
        # three words inside that are no long form of the word before: nothing
        ("The patients (n = 17 of them) were seen.", {}),
        # trailing words shared by both forms belong to neither
        ("Heparin-induced thrombocytopenia type II (HIT type II) is rare.", {"HIT": "Heparin-induced thrombocytopenia"}),
        # a shared leading part without letters: both the whole short form and the rest are defined
        ("Rats had 90/hypertension (90/HTN) at first.", {"90/HTN": "90/hypertension", "HTN": "hypertension"}),
        # a shared leading letter is part of the abbreviation
        ("X-linked adrenoleukodystrophy (X-ALD) is rare.", {"X-ALD": "X-linked adrenoleukodystrophy"}),
        # the first definition wins, in either order
        ("Major depression (MD) and later MD (muscular dystrophy of Duchenne) were seen.", {"MD": "Major depression"}),
    ],
)  # fmt: skip
def test_abbreviations_other_definitions(text, expected):
    found = find_abbreviations(text)
    assert found == expected
    if "HTN" in found:
        assert resolve_abbreviations("HTN", found) == "hypertension"
    if "HIT" in found:
        assert resolve_abbreviations("HIT type II", found) == "Heparin-induced thrombocytopenia type II"


@pytest.mark.parametrize(
    ("mention", "ids", "parts"),
    [
        ("breast and ovarian cancer", ("D1", "D2"), ["breast cancer", "ovarian cancer"]),
        ("deficiency of both factor VII and factor X", ("D1", "D2"), ["deficiency of factor VII", "deficiency of factor X"]),
        ("colorectal/ovarian tumours", ("D1", "D2"), ["colorectal", "ovarian tumours"]),  # BioSyn's greedy pattern
        ("ataxia telangiectasia", ("D1", "D2"), ["ataxia", "telangiectasia"]),  # one token per id, as BioSyn
        ("A-T", ("D001260", "208900"), ["A-T"]),  # mixed MeSH / OMIM: OMIM dropped, one id left
        ("rare syndrome of unknown origin", ("D1", "D2"), ["rare syndrome of unknown origin"]),
    ],
)
def test_split_composite_follows_biosyns_patterns(mention, ids, parts):
    got, kept = split_composite(mention, ids)
    assert got == parts
    assert kept == (("D001260",) if ids[1] == "208900" else ids)


def test_queries_dictionary_and_dropped_cuiless():
    train = document_queries(read_corpus(TINY / "ncbi-disease" / "NCBItrainset_corpus.txt"))
    assert train[1].parts == ("ataxia telangiectasia",)  # AT resolved within its abstract, then normalised
    dev = document_queries(read_corpus(TINY / "ncbi-disease" / "NCBIdevelopset_corpus.txt"))
    assert dev[1].parts == ("breast cancer", "ovarian cancer") and dev[1].concept_ids == ("D001943", "D010051")
    concepts = read_medic(TINY / "medic" / "medic_06Jul2012.txt")
    dictionary = build_dictionary(concepts, train)
    assert "ataxia telangiectasia" in dictionary.names and dictionary.preferred["D001260"] == "Ataxia Telangiectasia"
    at = dictionary.names.index("at")
    assert dictionary.concept_ids[at] == ("D001260", "208900")
    cdr = document_queries(read_corpus(TINY / "bc5cdr" / "CDR_DevelopmentSet.PubTator.txt", entity_type="Disease"))
    kept, dropped = linkable(cdr, dictionary)
    assert dropped == 1 and [q.parts for q in kept] == [("tremor",)]  # the CUI-less (-1) mention dropped
    kept, dropped = linkable(cdr, build_dictionary(concepts[:-1]))  # a dictionary without Tremor
    assert (kept, dropped) == ([], 2)
    composite = Query("1", 0, 1, "a and b", ("a", "b"), ("D014202", "-1"), "Disease")  # a part without a concept
    assert linkable([composite], dictionary) == ([], 1) and linkable([composite], None) == ([], 1)


def test_accuracy_at_k_biosyn_rules():
    q = [
        Query("1", 0, 1, "a", ("a",), ("D1",), "Disease"),
        Query("1", 0, 1, "b", ("b",), ("D2", "D3"), "Disease"),  # several gold ids: any counts
        Query("1", 0, 1, "c and d", ("c", "d"), ("D4", "D5"), "Disease"),  # composite: every part must be right
    ]
    candidates = [
        [[("D1",), ("D9",)]],
        [[("D9",), ("D3", "D7")]],
        [[("D4",), ("D9",)], [("D9",), ("D8",)]],
    ]
    assert accuracy_at_k(q, candidates, ks=(1, 2)) == {"accuracy_at_1": pytest.approx(1 / 3), "accuracy_at_2": pytest.approx(2 / 3)}


def test_top_k_is_exact_and_ordered():
    scores = np.array([[0.1, 0.9, 0.5, 0.9], [0.3, 0.2, 0.1, 0.0]], dtype=np.float32)
    indices, values = top_k(scores, 3)
    assert indices.tolist() == [[1, 3, 2], [0, 1, 2]]
    assert values[0].tolist() == pytest.approx([0.9, 0.9, 0.5])
    best, value = top_k(scores, 1)  # the arg-max: the first of equal maxima
    assert best.tolist() == [[1], [0]] and value.tolist() == [[scores[0, 1]], [scores[1, 0]]]
    assert top_k(np.zeros((1, 5), dtype=np.float32), 1)[0].tolist() == [[0]]


def test_sparse_linker_finds_the_nearest_name():
    names = ["breast neoplasms", "breast cancer", "ovarian cancer", "tremor"]
    linker = SparseLinker(names)
    indices, scores = linker.search(["breast cancers", "tremors", "ovarian cancer"], 2)
    assert indices[:, 0].tolist() == [1, 3, 2]
    assert scores[2, 0] == pytest.approx(1.0) and (scores[:, 0] >= scores[:, 1]).all()
    # the two products (gathered: a few texts; dense: many texts whose n-grams have many names) give the same
    # bits, so a text's scores do not depend on what is scored with it
    many = ["breast cancers", "tremors", "ovarian cancer"] * (SMALL_BATCH // 3 + 1)
    assert linker._dense(linker.vectorizer.transform(many)) and not linker._dense(linker.vectorizer.transform(many[:3]))
    assert np.array_equal(linker.scores(many)[:3], linker.scores(many[:3]))
    assert np.array_equal(linker.search(many, 2)[1][:3], linker.search(many[:3], 2)[1])
    gathered = linker.gathered_scores(linker.vectorizer.transform(["breast cancers"]), 0)  # (num_names,)
    assert gathered.dtype == np.float32 and np.array_equal(gathered, linker.scores(many)[0])
    # a text that shares no n-gram with a name: every score 0, the first name
    assert linker.scores(["§"]).tolist() == [[0.0] * 4]
    assert [a.tolist() for a in linker.search(["§"], 1)] == [[[0]], [[0.0]]]


@pytest.mark.shared_data
def test_real_corpora_and_medic_read_with_the_documented_counts():
    root = SHARED_DATA / "linking"
    if not root.is_dir():
        pytest.skip(f"{root} absent (the real linking data is not in this clone)")
    ncbi = [read_corpus(root / "ncbi-disease" / f"NCBI{s}set_corpus.txt") for s in ("train", "develop", "test")]
    assert [len(d) for d in ncbi] == [592, 100, 100]  # 593 title lines in train: PMID 8528200 twice
    assert [sum(len(d.mentions) for d in split) for split in ncbi[1:]] == [787, 960]
    cdr = read_corpus(root / "bc5cdr" / "CDR_TestSet.PubTator.txt")
    assert len(cdr) == 500
    assert sum(m.entity_type == "Disease" for d in cdr for m in d.mentions) == 4424
    assert sum(m.entity_type == "Chemical" for d in cdr for m in d.mentions) == 5385
    medic = read_medic(root / "medic" / "medic_06Jul2012.txt")
    assert (len(medic), sum(len(c.names) for c in medic)) == (11915, 76237)
    ctd = read_ctd_diseases(root / "ctd-diseases-2017" / "CTD_diseases.tsv.gz")
    assert len(ctd) == 11865


def test_a_data_dir_that_is_a_file_is_named_as_such(tmp_path):
    from downstream.errors import DatasetUnavailableError
    from downstream.linking.spec import linking_spec, locate

    file = tmp_path / "NCBItrainset_corpus.txt"
    file.write_text("x\n")
    with pytest.raises(DatasetUnavailableError, match=r"NCBItrainset_corpus\.txt: a file, expected a folder laid out as"):
        locate(linking_spec("ncbi-disease"), file)

