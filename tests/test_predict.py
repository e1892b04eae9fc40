"""``bioelectra predict`` (downstream.predict.predictor, downstream.predict.formats): a tiny NER model trained in a fixture
until it tags two diseases, a tiny RE model, every input and output format, windows, sentence splitting,
errors, and agreement with ``transformers.pipeline``."""

from __future__ import annotations

import gzip
import json
import logging
from pathlib import Path

import pytest
from typer.testing import CliRunner

from bioelectra.cli import app
from downstream.errors import DataFormatError, DownstreamError
from downstream.ner.data import PIPELINE_AGGREGATION
from downstream.predict.files import predict_files
from downstream.predict.formats import Document, read_documents
from downstream.predict.predictor import load_predictor
from downstream.predict.results import decode_entities
from downstream.predict.sentences import split_sentences
from downstream.predict.writers import safe_file_stem

MINI = Path(__file__).resolve().parent.parent / "bioelectra" / "assets" / "models" / "bioelectra-mini"
LABELS = ["O", "B-Disease", "I-Disease"]
SENTENCE = "The patient was diagnosed with Duchenne muscular dystrophy and later developed breast cancer."
# Hand-counted: "The patient was diagnosed with " is 31 characters; " and later developed " 21.
EXPECTED = [(31, 58, "Duchenne muscular dystrophy"), (79, 92, "breast cancer")]

TRAIN = [
    ("The patient was diagnosed with Duchenne muscular dystrophy and later developed breast cancer .",
     "O O O O O B I I O O O B I O"),
    ("Duchenne muscular dystrophy is a genetic disorder .", "B I I O O O O O"),
    ("Mutations in BRCA1 increase the risk of breast cancer .", "O O O O O O O B I O"),
    ("The patient was treated with steroids and later developed no symptoms .", "O O O O O O O O O O O O"),
    ("Growth was approx . 3 . 5 fold , e . g . in cells .", "O O O O O O O O O O O O O O O O"),
]  # fmt: skip


def _tiny_config(num_labels: int, labels: list[str], vocab_size: int):
    from transformers import ElectraConfig

    return ElectraConfig(
        vocab_size=vocab_size, embedding_size=32, hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
        intermediate_size=64, max_position_embeddings=128, num_labels=num_labels,
        id2label=dict(enumerate(labels)), label2id={label: i for i, label in enumerate(labels)},
        hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0,
    )  # fmt: skip


@pytest.fixture(scope="module", autouse=True)
def _one_thread():
    """One torch thread for these tiny models: on the 2 shared cores, two OpenMP threads competing with other
    processes made the fixture's 80 steps take 20-60 s instead of 0.5 s."""
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


@pytest.fixture(scope="module")
def ner_model(tmp_path_factory) -> Path:
    """A tiny NER model (hidden 32, 2 layers) trained with a seeded plain torch loop until it tags the two
    diseases of :data:`SENTENCE`; saved with its tokenizer."""
    import torch
    from transformers import AutoTokenizer, ElectraForTokenClassification

    torch.manual_seed(0)
    tokenizer = AutoTokenizer.from_pretrained(MINI)
    model = ElectraForTokenClassification(_tiny_config(3, LABELS, len(tokenizer)))
    words = [text.split() for text, _ in TRAIN]
    tags = [["O" if t == "O" else f"{t}-Disease" for t in line.split()] for _, line in TRAIN]
    batch = tokenizer(words, is_split_into_words=True, padding=True, return_tensors="pt")
    labels = torch.full(batch["input_ids"].shape, -100)
    for i in range(len(words)):
        previous = None
        for position, word_id in enumerate(batch.word_ids(i)):
            if word_id is not None and word_id != previous:
                labels[i, position] = LABELS.index(tags[i][word_id])
            previous = word_id
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-3)
    model.train()
    for _ in range(80):
        loss = model(**batch, labels=labels).loss
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
    assert loss.item() < 0.05, f"the tiny model did not learn its sentences (loss {loss.item():.3f})"
    folder = tmp_path_factory.mktemp("ner") / "model"
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder


@pytest.fixture(scope="module")
def re_model(tmp_path_factory) -> Path:
    """A tiny randomly initialised RE model (labels false, CPR:3) whose tokenizer has two placeholders."""
    import torch
    from transformers import AutoTokenizer, ElectraForSequenceClassification

    from downstream.relation.data import add_placeholder_tokens

    torch.manual_seed(1)
    tokenizer = AutoTokenizer.from_pretrained(MINI)
    add_placeholder_tokens(tokenizer, ["@CHEMICAL$", "@GENE$"])
    model = ElectraForSequenceClassification(_tiny_config(2, ["false", "CPR:3"], len(tokenizer)))
    folder = tmp_path_factory.mktemp("re") / "model"
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder


@pytest.fixture(scope="module")
def re_model_electra_head(tmp_path_factory) -> Path:
    """A tiny RE model with finetune's default head (``--re-head electra``: ElectraForRelationClassification)."""
    import torch
    from transformers import AutoTokenizer

    from downstream.classification import ElectraForRelationClassification
    from downstream.relation.data import add_placeholder_tokens

    torch.manual_seed(2)
    tokenizer = AutoTokenizer.from_pretrained(MINI)
    add_placeholder_tokens(tokenizer, ["@CHEMICAL$", "@GENE$"])
    model = ElectraForRelationClassification(_tiny_config(2, ["false", "CPR:3"], len(tokenizer)))
    torch.nn.init.normal_(model.classifier.weight, std=1.0)  # a head far from uniform: a random one would show
    folder = tmp_path_factory.mktemp("re-electra") / "model"
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder


def _flat(output: str) -> str:
    """CLI output with rich's line wrapping undone."""
    return " ".join(output.split())


def _spans(entities) -> list[tuple[int, int, str]]:
    return [(e.start, e.end, e.text) for e in entities]


# --- agreement with transformers.pipeline ---------------------------------------------------------------------


def test_pipeline_and_predict_agree(ner_model):
    from transformers import pipeline

    tagger = pipeline("token-classification", model=str(ner_model), aggregation_strategy=PIPELINE_AGGREGATION, device="cpu")
    found = tagger(SENTENCE)
    assert [(e["entity_group"], e["start"], e["end"]) for e in found] == [("Disease", s, e) for s, e, _ in EXPECTED]
    [result] = load_predictor(ner_model, device="cpu").predict_entities([Document("d", SENTENCE)])
    assert _spans(result.entities) == EXPECTED
    assert [e.type for e in result.entities] == ["Disease", "Disease"]
    for entity, piped in zip(result.entities, found, strict=True):
        assert 0.5 < entity.score <= 1.0
        assert entity.text == SENTENCE[entity.start : entity.end]
        assert entity.score == pytest.approx(float(piped["score"]), abs=1e-4)  # both: mean over the words


# --- sentences, words, decoding -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Cells were treated, e.g. with drug X. Then they died.", ["Cells were treated, e.g. with drug X.", "Then they died."]),
        ("As Smith et al. Reported, it grew. Fig. 2 shows i.e. The same.", ["As Smith et al. Reported, it grew.", "Fig. 2 shows i.e. The same."]),
        ("The dose was 2.5 mg. Levels rose by approx. 3.5 fold vs. Controls.", ["The dose was 2.5 mg.", "Levels rose by approx. 3.5 fold vs. Controls."]),
        ("Is it? Yes (it is.) Done!", ["Is it?", "Yes (it is.)", "Done!"]),
        ("Title without period\n  Abstract starts here. lower case stays.  ", ["Title without period", "Abstract starts here. lower case stays."]),
        ("   ", []),
    ],
)
def test_split_sentences(text, expected):
    spans = split_sentences(text)
    assert [text[s:e] for s, e in spans] == expected


def test_decode_entities_as_conlleval():
    tags = ["B-Disease", "I-Disease", "O", "I-Disease", "I-Disease", "B-Gene", "I-Disease", "B", "I", "I-Gene"]
    assert decode_entities(tags) == [("Disease", 0, 2), ("Disease", 3, 5), ("Gene", 5, 6), ("Disease", 6, 7),
                                     ("entity", 7, 9), ("Gene", 9, 10)]  # fmt: skip
    assert decode_entities(["O", "O"]) == []


def test_long_document_windows_cover_every_word(ner_model):
    predictor = load_predictor(ner_model, device="cpu", max_seq_length=8, batch_size=3)
    rows: list[int] = []
    forward = predictor._forward
    predictor._forward = lambda batch: (rows.extend(len(r) for r in batch), forward(batch))[1]
    text = ("The unusually-long patient record, written in 2019, mentions Duchenne muscular dystrophy "
            "and hyperphosphatemia repeatedly without any full stop whatsoever") * 2  # fmt: skip
    [result] = predictor.predict_entities([text])
    [sentence] = result.sentences
    assert len(rows) > 3 and max(rows) <= 8  # several windows, none longer than 8 sub-tokens
    covered = "".join(text[w.start : w.end] for w in sentence.words)
    assert covered == "".join(text.split())  # every non-space character in exactly one word, in order
    assert all(w.tag in LABELS and 0.0 < w.score <= 1.0 for w in sentence.words)
    # the same words as the tokenizer's pre-tokenizer finds
    pre = predictor.tokenizer.backend_tokenizer.pre_tokenizer.pre_tokenize_str(text)
    assert [(w.start, w.end) for w in sentence.words] == [span for _, span in pre]


def test_batches_hold_at_most_batch_size_windows_and_batch_size_x_128_sub_tokens(ner_model):
    predictor = load_predictor(ner_model, device="cpu", batch_size=4)  # at most 4 x 128 = 512 sub-tokens a batch
    widths = [10, 10, 10, 10, 10, 10, 130, 200, 300, 500]
    batches = predictor._batches(range(len(widths)), widths)
    assert batches == [[0, 1, 2, 3], [4, 5, 6], [7], [8], [9]]
    assert all(len(b) <= 4 and (len(b) == 1 or len(b) * max(widths[i] for i in b) <= 512) for b in batches)
    assert predictor._batches([], []) == []


def test_windows_hold_each_words_sub_tokens_and_cut_a_word_longer_than_a_window(ner_model):
    """The model inputs, rebuilt word by word from :meth:`EntityTagger.sentence_words`: ``[CLS]``, each word's
    sub-tokens (a word longer than the window: its first ``max_seq_length - 2``, alone), ``[SEP]``; every word's
    first sub-token position points at its first sub-token."""
    from downstream.ner.data import window_spans

    predictor = load_predictor(ner_model, device="cpu", max_seq_length=8, batch_size=3)
    text = "Xqzvhbkwpfjgtdmlrnc in Duchenne muscular dystrophy, then zzqxjwkvbpfm."
    spans = [(0, len(text))]
    words = predictor.sentence_words(text, spans)
    windows = predictor._windows([predictor._words([text], [0])])
    budget, tok = 6, predictor.tokenizer
    lengths = [len(w[2]) for w in words[0]]
    assert max(lengths) > budget  # the made-up words are longer than a window
    expected = []
    for first, end in window_spans(lengths, budget):
        ids, positions = [tok.cls_token_id], []
        for _, _, pieces in words[0][first:end]:
            positions.append(len(ids))
            ids.extend(pieces[:budget])
        expected.append((first, [*ids, tok.sep_token_id], positions))
    assert [(w.word_start, w.input_ids, w.first_positions) for w in windows] == expected
    assert all(len(w.input_ids) <= 8 for w in windows) and len(windows) > 2
    assert "".join(text[s:e] for s, e, _ in words[0]) == "".join(text.split())


@pytest.mark.parametrize(("entity_type", "expected"), [("Disease", "Disease"), (None, "entity")])
def test_bare_labels_take_config_entity_type(ner_model, tmp_path, entity_type, expected):
    import shutil

    bare = tmp_path / "bare"
    shutil.copytree(ner_model, bare)
    config = json.loads((bare / "config.json").read_text(encoding="utf-8"))
    config["id2label"] = {"0": "O", "1": "B", "2": "I"}  # same weights, the labels of BioBERT's untyped files
    config["label2id"] = {"O": 0, "B": 1, "I": 2}
    if entity_type is not None:
        config["entity_type"] = entity_type
    (bare / "config.json").write_text(json.dumps(config), encoding="utf-8")
    [result] = load_predictor(bare, device="cpu").predict_entities([SENTENCE])
    assert [(e.start, e.end, e.text, e.type) for e in result.entities] == [(s, e, t, expected) for s, e, t in EXPECTED]
    assert {w.tag for s in result.sentences for w in s.words} == {"O", "B", "I"}


def test_offsets_point_into_original_text_with_accents_and_case(ner_model):
    text = "  Fig. 1: DUCHENNE muscular dystrophy (Ménière-like) was seen.\tThen breast cancer."
    [result] = load_predictor(ner_model, device="cpu").predict_entities([Document("x", text)])
    for sentence in result.sentences:
        for w in sentence.words:
            assert text[w.start : w.end].strip() == text[w.start : w.end] != ""
    assert "Ménière" in [text[w.start : w.end] for s in result.sentences for w in s.words]
    assert all(e.text == text[e.start : e.end] for e in result.entities)


# --- inputs ---------------------------------------------------------------------------------------------------


def test_read_text_jsonl_and_gzip(tmp_path):
    text = tmp_path / "notes.txt"
    text.write_text("first line\n\n  third line  \r\n", encoding="utf-8")
    assert list(read_documents([text])) == [Document(f"{text}:1", "first line"), Document(f"{text}:3", "  third line  ")]
    assert list(read_documents([text], document_per_file=True)) == [Document(str(text), "first line\n\n  third line  \r\n")]
    records = tmp_path / "docs.jsonl.gz"
    with gzip.open(records, "wt", encoding="utf-8") as f:
        f.write(json.dumps({"pmid": 7, "body": "Alpha."}) + "\n\n" + json.dumps({"body": "Beta."}) + "\n")
    assert list(read_documents([records], text_field="body", id_field="pmid")) == [
        Document("7", "Alpha."), Document(f"{records}:3", "Beta.")]  # fmt: skip


PUBMED = """<?xml version="1.0" encoding="UTF-8"?>
<PubmedArticleSet>
 <PubmedArticle><MedlineCitation><PMID Version="1">111</PMID><Article>
  <ArticleTitle>Duchenne muscular dystrophy in a boy</ArticleTitle>
  <Abstract><AbstractText Label="CASE">The patient was diagnosed with Duchenne muscular dystrophy and later developed breast cancer.</AbstractText></Abstract>
 </Article></MedlineCitation></PubmedArticle>
 <PubmedArticle><MedlineCitation><PMID Version="1">222</PMID><Article>
  <ArticleTitle>No <i>abstract</i> here.</ArticleTitle>
 </Article></MedlineCitation></PubmedArticle>
</PubmedArticleSet>
"""


def test_pubmed_xml_documents_and_entities(ner_model, tmp_path):
    path = tmp_path / "baseline.xml"
    path.write_text(PUBMED, encoding="utf-8")
    documents = list(read_documents([path]))
    assert [d.id for d in documents] == ["111", "222"]
    assert documents[0].text == "Duchenne muscular dystrophy in a boy\n" + SENTENCE
    assert documents[1].text == "No abstract here."
    out = tmp_path / "entities.jsonl"
    summary = predict_files(ner_model, [path], output=out, device="cpu")
    records = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    offset = len("Duchenne muscular dystrophy in a boy\n")
    abstract = [(r["start"], r["end"], r["text"]) for r in records if r["document"] == "111" and r["start"] >= offset]
    assert abstract == [(s + offset, e + offset, t) for s, e, t in EXPECTED]
    assert all(r["text"] == documents[0].text[r["start"] : r["end"]] for r in records if r["document"] == "111")
    assert summary.documents == 2 and summary.predictions == len(records)


def test_read_tsv_as_the_re_reader_reads_it(tmp_path):
    from downstream.relation.data import read_re_file

    blurb = tmp_path / "test.tsv"
    blurb.write_text("index\tsentence\tlabel\n10064839.T1.T2\t @CHEMICAL$ inhibits @GENE$ .\tCPR:4\r\n"
                     "10064839.T1.T3\t@GENE$ binds @CHEMICAL$ .\tfalse\n", encoding="utf-8")  # fmt: skip
    biobert = tmp_path / "train.tsv"
    biobert.write_text("@GENE$ is linked to @DISEASE$ .\t1\n@GENE$ and @DISEASE$ .\t0\n", encoding="utf-8")
    for path in (blurb, biobert):
        documents = list(read_documents([path]))  # .tsv -> tsv by the name
        assert [d.text for d in documents] == [e.sentence for e in read_re_file(path).examples]
    assert [d.id for d in read_documents([blurb])] == ["10064839.T1.T2", "10064839.T1.T3"]
    assert [d.id for d in read_documents([biobert])] == [f"{biobert}:1", f"{biobert}:2"]
    unlabelled = tmp_path / "new.tsv"
    unlabelled.write_text("p1\t@CHEMICAL$ inhibits @GENE$ .\n\np2\tBC6ENTC binds BC6ENTG .\n", encoding="utf-8")
    assert list(read_documents([unlabelled])) == [Document("p1", "@CHEMICAL$ inhibits @GENE$ ."), Document("p2", "BC6ENTC binds BC6ENTG .")]
    unlabelled.write_text("p1\t@CHEMICAL$ inhibits @GENE$ .\np2\tx\tfalse\n", encoding="utf-8")
    with pytest.raises(DataFormatError, match=r"new\.tsv:2: expected 2 tab-separated columns .* got 3"):
        list(read_documents([unlabelled]))


# --- outputs through the CLI ----------------------------------------------------------------------------------


def test_cli_jsonl_from_stdin(ner_model):
    result = CliRunner().invoke(app, ["predict", "--model", str(ner_model), "--device", "cpu"], input=SENTENCE + "\n")
    assert result.exit_code == 0, result.output
    records = [json.loads(line) for line in result.stdout.splitlines() if line.startswith("{")]
    assert [(r["document"], r["start"], r["end"], r["text"], r["type"]) for r in records] == [
        ("stdin:1", s, e, t, "Disease") for s, e, t in EXPECTED]  # fmt: skip
    assert set(records[0]) == {"document", "start", "end", "text", "type", "score"}


def test_cli_conll_output(ner_model, tmp_path):
    source = tmp_path / "in.jsonl"
    source.write_text(json.dumps({"id": "doc-1", "text": "Fig. 2 shows breast cancer. " + SENTENCE}) + "\n", encoding="utf-8")
    out = tmp_path / "out.conll"
    result = CliRunner().invoke(app, ["predict", "--model", str(ner_model), str(source), "--format", "conll", "--output", str(out), "--device", "cpu"])
    assert result.exit_code == 0, result.output
    blocks = out.read_text(encoding="utf-8").split("\n\n")
    assert blocks[0] == "-DOCSTART- doc-1"
    first = [line.split("\t")[0] for line in blocks[1].splitlines()]
    assert first == ["Fig", ".", "2", "shows", "breast", "cancer", "."]  # "Fig." does not end the sentence
    second = dict(line.split("\t") for line in blocks[2].splitlines())
    assert (second["Duchenne"], second["muscular"], second["dystrophy"], second["The"]) == ("B-Disease", "I-Disease", "I-Disease", "O")
    assert blocks[3] == "" and len(blocks) == 4  # file ends with the last sentence's blank line
    from downstream.ner.data import read_ner_file

    assert read_ner_file(out).num_documents == 1  # the layout the NER reader reads


def test_cli_brat_output(ner_model, tmp_path):
    source = tmp_path / "case.txt"
    source.write_text(SENTENCE + "\n", encoding="utf-8")
    out = tmp_path / "brat"
    result = CliRunner().invoke(app, ["predict", "--model", str(ner_model), str(source), "--document-per-file", "--format", "brat", "--output", str(out), "--device", "cpu"])
    assert result.exit_code == 0, result.output
    stem = safe_file_stem(str(source))
    assert (out / f"{stem}.txt").read_text(encoding="utf-8") == SENTENCE + "\n"
    assert (out / f"{stem}.ann").read_text(encoding="utf-8") == (
        "T1\tDisease 31 58\tDuchenne muscular dystrophy\nT2\tDisease 79 92\tbreast cancer\n")
    assert sorted(p.name for p in out.iterdir()) == [f"{stem}.ann", f"{stem}.txt"]  # no temporary files left


def test_brat_needs_output_dir(ner_model):
    result = CliRunner().invoke(app, ["predict", "--model", str(ner_model), "--format", "brat"], input=SENTENCE)
    assert result.exit_code == 2
    assert "give --output DIR" in _flat(result.output)


def test_safe_file_stem():
    assert safe_file_stem("data/a.txt:3") == "data_a.txt_3"
    assert safe_file_stem(".hidden") == "_.hidden"
    assert safe_file_stem("///") == "document"


# --- relation extraction --------------------------------------------------------------------------------------


def test_re_classify_matches_training_encoding(re_model, caplog):
    import torch
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    sentences = ["@CHEMICAL$ inhibits @GENE$ .", "aspirin inhibits COX-2 ."]
    predictor = load_predictor(re_model, device="cpu")
    assert predictor.placeholders() == ["@GENE$", "@CHEMICAL$"]  # downstream.relation.data.PLACEHOLDERS order
    with caplog.at_level(logging.WARNING, logger="downstream.relation.predict"):
        results = list(predictor.classify([Document("s1", sentences[0]), Document("s2", sentences[1])]))
    assert "1 sentence(s) contain none" in caplog.text and "s2" in caplog.text
    tokenizer = AutoTokenizer.from_pretrained(re_model)
    model = AutoModelForSequenceClassification.from_pretrained(re_model).eval()
    assert tokenizer(sentences[0])["input_ids"].count(tokenizer.convert_tokens_to_ids("@GENE$")) == 1
    for sentence, result in zip(sentences, results, strict=True):
        with torch.no_grad():
            expected = torch.softmax(model(**tokenizer(sentence, return_tensors="pt")).logits[0], -1).tolist()
        assert list(result.probabilities) == ["false", "CPR:3"]
        assert list(result.probabilities.values()) == pytest.approx(expected, abs=1e-5)
        assert result.label == ["false", "CPR:3"][expected.index(max(expected))]
        assert result.sentence == sentence


def test_cli_re_jsonl(re_model, tmp_path):
    source = tmp_path / "pairs.txt"
    source.write_text("@CHEMICAL$ inhibits @GENE$ .\n@GENE$ is not bound by @CHEMICAL$ .\n", encoding="utf-8")
    result = CliRunner().invoke(app, ["predict", "--model", str(re_model), str(source), "--device", "cpu"])
    assert result.exit_code == 0, result.output
    records = [json.loads(line) for line in result.stdout.splitlines() if line.startswith("{")]
    assert [r["document"] for r in records] == [f"{source}:1", f"{source}:2"]
    assert records[1]["sentence"] == "@GENE$ is not bound by @CHEMICAL$ ."
    for r in records:
        assert set(r) == {"document", "sentence", "label", "probabilities"}
        assert sum(r["probabilities"].values()) == pytest.approx(1.0, abs=1e-5)
        assert r["label"] == max(r["probabilities"], key=r["probabilities"].get)


def test_cli_re_tsv_ids_and_tab_warning(re_model, tmp_path, caplog):
    with caplog.at_level(logging.WARNING, logger="downstream.relation.predict"):  # before the CLI resets logging
        [wrong] = load_predictor(re_model, device="cpu").classify([Document("t", "7\t@CHEMICAL$ inhibits @GENE$ .")])
    assert "contain a tab" in caplog.text and "--input-format tsv" in caplog.text
    assert wrong.sentence.startswith("7\t")
    source = tmp_path / "test.tsv"
    source.write_text("index\tsentence\tlabel\nA.T1.T2\t@CHEMICAL$ inhibits @GENE$ .\tCPR:3\n", encoding="utf-8")
    result = CliRunner().invoke(app, ["predict", "--model", str(re_model), str(source), "--device", "cpu"])
    assert result.exit_code == 0, result.output
    [record] = [json.loads(line) for line in result.stdout.splitlines() if line.startswith("{")]
    assert (record["document"], record["sentence"]) == ("A.T1.T2", "@CHEMICAL$ inhibits @GENE$ .")
    assert "contain a tab" not in _flat(result.output)


def test_re_electra_head_loads_its_own_weights(re_model_electra_head, tmp_path):
    import shutil

    import torch
    from transformers import AutoTokenizer

    from downstream.classification import ElectraForRelationClassification

    sentence = "@CHEMICAL$ strongly inhibits the kinase @GENE$ ."
    predictor = load_predictor(re_model_electra_head, device="cpu")
    assert type(predictor.model).__name__ == "ElectraForRelationClassification"
    [result] = predictor.classify([sentence])
    tokenizer = AutoTokenizer.from_pretrained(re_model_electra_head)
    model = ElectraForRelationClassification.from_pretrained(re_model_electra_head).eval()
    with torch.no_grad():
        expected = torch.softmax(model(**tokenizer(sentence, return_tensors="pt")).logits[0], -1).tolist()
    assert list(result.probabilities.values()) == pytest.approx(expected, abs=1e-5)
    # The same weights under another architecture name: the Auto class's head is not in the folder.
    renamed = tmp_path / "renamed"
    shutil.copytree(re_model_electra_head, renamed)
    config = json.loads((renamed / "config.json").read_text(encoding="utf-8"))
    config["architectures"] = ["ElectraForSequenceClassification"]
    (renamed / "config.json").write_text(json.dumps(config), encoding="utf-8")
    with pytest.raises(DownstreamError, match=r"found no saved weights for \['classifier\.dense\.bias'"):
        load_predictor(renamed, device="cpu")


@pytest.mark.parametrize("fmt", ["conll", "brat"])
def test_re_model_refuses_entity_formats(re_model, tmp_path, fmt):
    result = CliRunner().invoke(app, ["predict", "--model", str(re_model), "--format", fmt, "-o", str(tmp_path / "x")], input="@GENE$ .\n")
    assert result.exit_code == 2
    assert "relation classification model" in _flat(result.output)


# --- errors ---------------------------------------------------------------------------------------------------


def test_empty_file(ner_model, tmp_path):
    empty = tmp_path / "empty.txt"
    empty.write_text("\n  \n", encoding="utf-8")
    result = CliRunner().invoke(app, ["predict", "--model", str(ner_model), str(empty)])
    assert result.exit_code == 2
    assert "empty.txt: empty input" in _flat(result.output)


def test_invalid_utf8_names_file_and_line(tmp_path):
    bad = tmp_path / "bad.txt"
    bad.write_bytes(b"fine line\nbroken \xff line\n")
    with pytest.raises(DataFormatError, match=r"bad\.txt:2: expected UTF-8"):
        list(read_documents([bad]))


def test_jsonl_without_field_and_not_object(tmp_path):
    path = tmp_path / "docs.jsonl"
    path.write_text('{"text": "ok"}\n{"abstract": "x"}\n', encoding="utf-8")
    with pytest.raises(DataFormatError, match=r"docs\.jsonl:2: no field 'text'"):
        list(read_documents([path]))
    path.write_text('["text"]\n', encoding="utf-8")
    with pytest.raises(DataFormatError, match=r"docs\.jsonl:1: expected a JSON object"):
        list(read_documents([path]))


def test_xml_that_does_not_parse(tmp_path):
    path = tmp_path / "broken.xml"
    path.write_text("<PubmedArticleSet><PubmedArticle>", encoding="utf-8")
    with pytest.raises(DataFormatError, match=r"broken\.xml:1: expected well-formed PubMed XML"):
        list(read_documents([path]))


def test_model_dir_errors(tmp_path):
    runner = CliRunner()
    missing = runner.invoke(app, ["predict", "--model", str(tmp_path / "nope")], input="x\n")
    assert missing.exit_code == 2 and "no such folder" in _flat(missing.output)
    empty = tmp_path / "folder"
    empty.mkdir()
    with pytest.raises(DownstreamError, match="no config.json"):
        load_predictor(empty)
    discriminator = runner.invoke(app, ["predict", "--model", str(MINI)], input="x\n")  # ElectraForPreTraining
    assert discriminator.exit_code == 2
    assert "not a NER or RE model (architectures ['ElectraForPreTraining'])" in _flat(discriminator.output)
    assert str(MINI) in _flat(discriminator.output) and "token classification (NER)" in _flat(discriminator.output)
    qa = tmp_path / "qa"
    qa.mkdir()
    (qa / "config.json").write_text(json.dumps({"model_type": "electra", "architectures": ["ElectraForQuestionAnswering"]}), encoding="utf-8")
    with pytest.raises(DownstreamError, match=r"qa: not a NER or RE model \(architectures \['ElectraForQuestionAnswering'\]\)"):
        load_predictor(qa)
    (qa / "config.json").write_text("[1, 2]", encoding="utf-8")
    with pytest.raises(DownstreamError, match="config.json is not a JSON object"):
        load_predictor(qa)
