"""Pre-training data: corpus readers, WordPiece vocabulary, ELECTRA packing, Arrow output, CLI, memory."""

from __future__ import annotations

import gzip
import json
import random
import shutil
import subprocess
import sys
import tarfile
import textwrap
from collections import Counter
from pathlib import Path

import pytest
from typer.testing import CliRunner

from bioelectra.build_worker import _ASCII_PRETOKEN, WordPieceEncoder
from bioelectra.cli.common import app
from bioelectra.corpus import (
    CorpusError,
    CorpusStats,
    iter_documents,
    read_jsonl,
    read_pubmed_xml,
    reader_for,
)
from bioelectra.data import (
    BuildDataSettings,
    build_pretraining_data,
    load_build_info,
    load_examples,
)
from bioelectra.packing import MIN_RANDOM_LENGTH, PackStats, draw_target_length, pack_document, split_segments
from bioelectra.presets import bio_electra_vocab_file
from bioelectra.vocab import SPECIAL_TOKENS, make_tokenizer

FIXTURES = Path(__file__).resolve().parent / "fixtures"
REPO_ROOT = Path(__file__).resolve().parent.parent

# a tiny vocabulary where each document of the synthetic corpus uses its own words
NUM_DOCS = 12
WORDS_PER_DOC = 6


def _doc_words(d: int) -> list[str]:
    return [f"d{d}w{j}" for j in range(WORDS_PER_DOC)]


@pytest.fixture(scope="module")
def tiny_vocab(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("vocab") / "vocab.txt"
    words = [w for d in range(NUM_DOCS) for w in _doc_words(d)]
    path.write_text("\n".join([*SPECIAL_TOKENS, ".", *words]) + "\n")
    return path


def _write_tiny_corpus(root: Path, *, seed: int = 0, sentences_per_doc: tuple[int, int] = (3, 40)) -> Path:
    """NUM_DOCS documents over two files, blank lines between documents; doc d only uses d's words."""
    rng = random.Random(seed)
    root.mkdir(parents=True, exist_ok=True)
    files = [[], []]
    for d in range(NUM_DOCS):
        lines = []
        for _ in range(rng.randint(*sentences_per_doc)):
            n = rng.randint(1, 30) if rng.random() > 0.05 else rng.randint(150, 300)  # some overlong lines
            lines.append(" ".join(rng.choice(_doc_words(d)) for _ in range(n)) + " .")
        files[d % 2].append("\n".join(lines))
    for i, docs in enumerate(files):
        (root / f"part{i}.txt").write_text("\n\n".join(docs) + "\n")
    return root


def _settings(corpus: Path, vocab: Path, out: Path, **kw) -> BuildDataSettings:
    base = dict(corpus_dir=corpus, vocab_file=vocab, output_dir=out, max_seq_length=32, do_lower_case=False)
    base.update(kw)
    return BuildDataSettings(**base)


# --------------------------------------------------------------------------------------------------
# readers
# --------------------------------------------------------------------------------------------------


def test_reader_for_picks_by_extension():
    assert reader_for("a/b.txt") == "text"
    assert reader_for("corpus/0001234") == "text"  # OHSUMED: one file per document, no extension
    assert reader_for("x.txt.gz") == "text"
    assert reader_for("pubmed24n0001.xml.gz") == "pubmed_xml"
    assert reader_for("a.XML") == "pubmed_xml"
    assert reader_for("a.jsonl") == "jsonl"
    assert reader_for("a.csv") is None
    assert reader_for("ohsumed.tar.gz") is None


def test_text_reader_blank_lines_separate_documents(tmp_path):
    f = tmp_path / "c.txt"
    f.write_text("Sentence one.\n  Sentence two.  \n\n\nDoc two only line.\n\nDoc three\n")
    assert list(iter_documents(f)) == [
        ["Sentence one.", "Sentence two."],
        ["Doc two only line."],
        ["Doc three"],
    ]
    assert list(iter_documents(f, blanks_separate_docs=False)) == [
        ["Sentence one.", "Sentence two.", "Doc two only line.", "Doc three"]
    ]


def test_text_reader_file_end_ends_document_and_unknown_files_are_counted(tmp_path):
    (tmp_path / "a.txt").write_text("a1\na2")  # no trailing newline, no blank line
    (tmp_path / "b.txt").write_text("b1\n")
    (tmp_path / "notes.csv").write_text("x,y\n")
    (tmp_path / ".hidden.txt").write_text("never read\n")
    stats = CorpusStats()
    assert list(iter_documents(tmp_path, stats=stats)) == [["a1", "a2"], ["b1"]]
    assert (stats.files, stats.skipped_files, stats.documents, stats.lines) == (2, 1, 2, 3)
    assert stats.skipped_examples[0].endswith("notes.csv")
    with pytest.raises(CorpusError, match=r"notes\.csv: no reader"):
        list(iter_documents(tmp_path, on_unknown="error"))


@pytest.mark.parametrize("whole_file", [True, False], ids=["read-whole", "streamed"])
def test_text_reader_names_file_and_line_of_bad_utf8(tmp_path, monkeypatch, whole_file):
    import bioelectra.corpus as corpus

    monkeypatch.setattr(corpus, "WHOLE_FILE_BYTES", 1 << 20 if whole_file else 0)
    f = tmp_path / "bad.txt"
    f.write_bytes(b"fine\nalso fine\n\xff\xfe broken\n")
    with pytest.raises(CorpusError, match=r"bad\.txt:3: expected UTF-8"):
        list(iter_documents(f))


def test_text_reader_reads_small_files_whole_and_large_ones_streamed_alike(tmp_path, monkeypatch):
    """Both read paths give the same documents, with LF, CRLF and CR line ends and odd whitespace."""
    import bioelectra.corpus as corpus

    f = tmp_path / "mixed.txt"
    f.write_bytes("T\u00eftle one\r\n sent \u2028 two\r\n\r\nDoc2 a\rDoc2 b\r\rDoc3\x0bx\n\n\n\nlast".encode())
    whole = list(corpus.read_text_file(f))
    monkeypatch.setattr(corpus, "WHOLE_FILE_BYTES", 0)
    streamed = list(corpus.read_text_file(f))
    assert whole == streamed == [["T\u00eftle one", "sent \u2028 two"], ["Doc2 a", "Doc2 b"], ["Doc3\x0bx"], ["last"]]


def test_pubmed_xml_reader_title_and_labelled_abstract_sections(tmp_path):
    stats = CorpusStats()
    docs = list(read_pubmed_xml(FIXTURES / "pubmed_sample.xml", stats=stats))
    assert docs == [
        [
            "Interleukin-6 signalling in Mus musculus hepatocytes.",
            "IL-6 activates STAT3 in liver cells.",
            "Mice received 10 mg/kg of drug X for 14 days.",
            "STAT3 phosphorylation rose by 40% (P<0.01).",
            "IL-6 drives hepatic STAT3.",
        ],
        ["A title-only record without an abstract."],
        [
            "Unstructured abstract about BRCA1 mutations.",
            "BRCA1 mutations raise the risk of breast cancer. Screening is advised.",
        ],
    ]
    assert stats.empty_records == 1  # the article with an empty title and no abstract
    gz = tmp_path / "pubmed24n0001.xml.gz"
    gz.write_bytes(gzip.compress((FIXTURES / "pubmed_sample.xml").read_bytes()))
    assert list(iter_documents(tmp_path)) == docs


def test_pubmed_xml_reader_rejects_other_xml_with_file_and_line(tmp_path):
    f = tmp_path / "article.xml"
    f.write_text("<article><front/></article>")
    with pytest.raises(
        CorpusError, match=r"article\.xml:1: expected PubMed XML with root <PubmedArticleSet>"
    ):
        list(read_pubmed_xml(f))
    f.write_text("<PubmedArticleSet>\n<PubmedArticle>\n</PubmedArtcle>")
    with pytest.raises(CorpusError, match=r"article\.xml:3: expected well-formed PubMed XML"):
        list(read_pubmed_xml(f))


def test_jsonl_reader_string_list_and_errors(tmp_path):
    f = tmp_path / "c.jsonl"
    rows = [
        {"text": "Line one.\nLine two.\n\n"},
        {"text": ["A.", " B. "]},
        {"text": ""},
        {"body": "x", "text": "Only."},
    ]
    f.write_text("\n".join(json.dumps(r) for r in rows) + "\n\n")
    stats = CorpusStats()
    assert list(read_jsonl(f, stats=stats)) == [["Line one.", "Line two."], ["A.", "B."], ["Only."]]
    assert stats.empty_records == 1
    with pytest.raises(CorpusError, match=r"c\.jsonl:1: expected an object with field 'body'"):
        list(read_jsonl(f, text_field="body"))
    f.write_text('{"text": "ok"}\n{"text": 3}\n')
    with pytest.raises(CorpusError, match=r"c\.jsonl:2: field 'text' must be a string or a list of strings"):
        list(read_jsonl(f))
    f.write_text('{"text": "ok"}\nnot json\n')
    with pytest.raises(CorpusError, match=r"c\.jsonl:2: expected one JSON object per line"):
        list(read_jsonl(f))


# --------------------------------------------------------------------------------------------------
# tokenization: the word-cache encoder gives the fast tokenizer's ids
# --------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("do_lower_case", [False, True])
@pytest.mark.parametrize("cache_size", [200_000, 7])
def test_wordpiece_encoder_matches_fast_tokenizer(do_lower_case, cache_size, monkeypatch):
    import bioelectra.build_worker

    monkeypatch.setattr(bioelectra.build_worker, "WORD_CACHE_SIZE", cache_size)  # 7: caches cleared all the time
    tokenizer = make_tokenizer(bio_electra_vocab_file(), do_lower_case=do_lower_case)
    rng = random.Random(0)
    ascii_alphabet = "abcXYZ019 -/().,;:%'\"[]{}<>=+*&^$#@!?~`|\\_"
    other = "éÉüßµβΔ–—′″±×°中文\u00a0\u2009\u200b\u2028\x0c\x85\x1e\t\x00\x7f\ufffd\u0301"
    lines = ["".join(rng.choice(ascii_alphabet) for _ in range(rng.randint(1, 80))) for _ in range(200)]
    mixed = ascii_alphabet + "".join(c for c in other if c not in "\u2028\x0c\x85\x1e")
    lines += [
        "".join(rng.choice(ascii_alphabet + other) for _ in range(rng.randint(1, 80))) for _ in range(200)
    ]
    lines += ["".join(rng.choice(mixed) for _ in range(rng.randint(1, 80))) for _ in range(300)]
    lines += [
        "IL-6 (interleukin-6) activates STAT3; P<0.01.",
        "x" * 150,  # longer than max_input_chars_per_word: [UNK]
        "Tab\tseparated and\u00a0no-break space",
        "Café naïve résumé µg/mL β-catenin 3′-UTR, 37 °C ± 2",
        "CJK 中文 text",
        "",
        "   ",
    ]
    encoder = WordPieceEncoder(tokenizer.backend_tokenizer.to_str(), do_lower_case=do_lower_case)
    expected = [tokenizer.backend_tokenizer.encode(line, add_special_tokens=False).ids for line in lines]
    assert encoder.encode(lines) == expected
    assert encoder.encode(lines) == expected  # second pass: from the caches
    if cache_size == 7:  # bounded by the cap plus one batch's distinct words
        batch_words = {w for line in lines if line.isascii() for w in _ASCII_PRETOKEN.findall(line.lower())}
        assert len(encoder.word_cache) <= cache_size + len(batch_words)


# --------------------------------------------------------------------------------------------------
# packing rules
# --------------------------------------------------------------------------------------------------


def test_target_length_rate_and_range():
    rng = random.Random(1)
    draws = [draw_target_length(rng, 128) for _ in range(40_000)]
    short = [d for d in draws if d != 128]
    assert 0.045 < len(short) / len(draws) < 0.055  # p = 0.05 (+ 1/124 of those equal 128)
    assert min(short) >= MIN_RANDOM_LENGTH and max(short) <= 128


def test_single_segment_rate_and_first_segment_target():
    rng = random.Random(2)
    sentences = [[7] * 10 for _ in range(12)]  # 120 tokens
    single = 0
    n = 20_000
    for _ in range(n):
        first, second, overflow = split_segments(sentences, target_length=128, max_seq_length=128, rng=rng)
        assert len(first) + len(second) + 3 <= 128 or (not second and len(first) + 2 <= 128)
        assert sum(map(len, [first, second, *overflow])) == 120
        if not second:
            single += 1
        else:
            assert len(first) in (60, 70)  # (128 - 3) // 2 = 62: 6 sentences, or 7 with p=0.5
    assert 0.09 < single / n < 0.11


def test_pack_document_lengths_and_no_token_lost_with_carry():
    rng = random.Random(3)
    data_rng = random.Random(4)
    for _ in range(300):
        doc = [
            [data_rng.randint(10, 99) for _ in range(data_rng.choice([1, 5, 20, 60, 400]))] for _ in range(8)
        ]
        stats = PackStats()
        examples = list(pack_document(doc, max_seq_length=32, rng=rng, stats=stats))
        assert all(len(a) + len(b) + (3 if b else 2) <= 32 for a, b in examples)
        assert all(a for a, _ in examples)
        assert Counter(t for a, b in examples for t in a + b) == Counter(t for s in doc for t in s)
        assert stats.tokens_lost == 0 and stats.tokens == stats.tokens_in_examples


def test_pack_document_drop_mode_counts_lost_tokens_like_the_original():
    rng = random.Random(5)
    doc = [[1] * 100, [2] * 10]  # first sentence alone reaches the target and overflows
    stats = PackStats()
    examples = list(pack_document(doc, max_seq_length=32, rng=rng, carry_overflow=False, stats=stats))
    kept = sum(len(a) + len(b) for a, b in examples)
    assert stats.tokens == 110 and stats.tokens_in_examples == kept and stats.tokens_lost == 110 - kept > 0
    assert examples[0][0] == [1] * 30 and examples[0][1] == []  # cut to max_seq_length - 2, B gets nothing


def test_pack_document_carry_splits_a_long_sentence_into_consecutive_examples():
    doc = [list(range(100, 200))]
    examples = list(pack_document(doc, max_seq_length=16, rng=random.Random(0)))
    assert [t for a, b in examples for t in a + b] == list(range(100, 200))  # one sentence: order kept


# --------------------------------------------------------------------------------------------------
# the build: Arrow output, documents, splits, determinism, atomicity
# --------------------------------------------------------------------------------------------------


def test_build_output_layout_and_examples_never_cross_documents(tmp_path, tiny_vocab):
    corpus = _write_tiny_corpus(tmp_path / "corpus")
    out = tmp_path / "out"
    info = build_pretraining_data(
        _settings(corpus, tiny_vocab, out, eval_fraction=0.2, examples_per_shard=7, chunk_chars=100)
    )
    data = load_examples(out)
    assert set(data) == {"train", "validation"}
    # format 2: uint16 ids and one segment-A length per example (token_type_ids rebuilt by the collator)
    assert data["train"].features["input_ids"].feature.dtype == "uint16"
    assert data["train"].features["segment_a_length"].dtype == "int16"
    assert info["format_version"] == 2 and info["input_ids_dtype"] == "uint16"
    assert info == load_build_info(out)
    assert info["counts"]["shards"]["train"] > 1
    vocab = tiny_vocab.read_text().split("\n")
    owner = {i: int(tok[1 : tok.index("w")]) for i, tok in enumerate(vocab) if tok.startswith("d")}
    cls_id, sep_id = vocab.index("[CLS]"), vocab.index("[SEP]")
    docs_per_split = {}
    total_content = 0
    for split in ("train", "validation"):
        docs_seen = set()
        for row in data[split]:
            ids, types = row["input_ids"], segment_ids(row)
            assert 3 <= len(ids) <= 32 and len(types) == len(ids)
            assert ids[0] == cls_id and ids[-1] == sep_id
            seps = [i for i, t in enumerate(ids) if t == sep_id]
            assert len(seps) in (1, 2)
            assert types == [0] * (seps[0] + 1) + [1] * (len(ids) - seps[0] - 1)
            doc_ids = {owner[t] for t in ids if t in owner}
            assert len(doc_ids) <= 1, "an example mixes documents"
            docs_seen |= doc_ids
            total_content += len(ids) - len(seps) - 1
        docs_per_split[split] = docs_seen
    assert not docs_per_split["train"] & docs_per_split["validation"]  # validation = held-out DOCUMENTS
    assert len(docs_per_split["validation"]) >= 1
    counts = info["counts"]
    assert counts["documents"] == NUM_DOCS and counts["tokens_lost"] == 0
    assert total_content == counts["tokens"] == counts["tokens_in_examples"]
    assert counts["examples"]["train"] == len(data["train"])
    tokenizer = make_tokenizer(out / "tokenizer" / "vocab.txt", do_lower_case=False)
    assert len(tokenizer) == len(SPECIAL_TOKENS) + 1 + NUM_DOCS * WORDS_PER_DOC


def segment_ids(row) -> list[int]:
    """The token_type_ids of a format-2 row, as the collator rebuilds them."""
    n, a = len(row["input_ids"]), row["segment_a_length"]
    return [0] * a + [1] * (n - a)


def test_build_is_deterministic_under_a_seed(tmp_path, tiny_vocab):
    corpus = _write_tiny_corpus(tmp_path / "corpus")

    def rows(name, **kw):
        out = tmp_path / name
        build_pretraining_data(_settings(corpus, tiny_vocab, out, **kw))
        d = load_examples(out)
        return {s: (d[s]["input_ids"], d[s]["segment_a_length"]) for s in d}

    a = rows("a", seed=7)
    assert rows("b", seed=7) == a
    assert rows("c", seed=8) != a
    assert rows("d", seed=7, chunk_chars=50) == a  # chunking does not change the result


@pytest.mark.slow
def test_build_with_two_processes_gives_the_same_examples(tmp_path, tiny_vocab):
    corpus = _write_tiny_corpus(tmp_path / "corpus")
    one, two = tmp_path / "one", tmp_path / "two"
    build_pretraining_data(_settings(corpus, tiny_vocab, one, chunk_chars=200))
    build_pretraining_data(_settings(corpus, tiny_vocab, two, chunk_chars=200, num_processes=2))
    a, b = load_examples(one), load_examples(two)
    for split in a:
        assert a[split]["input_ids"] == b[split]["input_ids"]


def test_validation_split_has_at_least_one_document_and_none_for_a_single_document(tmp_path, tiny_vocab):
    corpus = _write_tiny_corpus(tmp_path / "corpus")
    info = build_pretraining_data(_settings(corpus, tiny_vocab, tmp_path / "o1", eval_fraction=1e-9))
    assert info["counts"]["validation_documents"] == 1 and info["counts"]["examples"]["validation"] >= 1
    single = tmp_path / "single.txt"
    single.write_text("d0w1 d0w2 .\nd0w3 .\n")
    info = build_pretraining_data(_settings(single, tiny_vocab, tmp_path / "o2"))
    assert info["counts"]["validation_documents"] == 0
    assert load_examples(tmp_path / "o2")["validation"].num_rows == 0


def test_build_drop_overflow_counts_lost_tokens(tmp_path, tiny_vocab):
    corpus = _write_tiny_corpus(tmp_path / "corpus")
    info = build_pretraining_data(_settings(corpus, tiny_vocab, tmp_path / "o", carry_overflow=False))
    c = info["counts"]
    assert c["tokens_lost"] > 0 and c["tokens_in_examples"] + c["tokens_lost"] == c["tokens"]


def test_build_is_atomic_and_refuses_to_overwrite(tmp_path, tiny_vocab):
    corpus = _write_tiny_corpus(tmp_path / "corpus")
    (corpus / "zz.jsonl").write_text('{"text": "d0w1 ."}\n{"oops": 1}\n')  # fails after the text files
    out = tmp_path / "out"
    with pytest.raises(CorpusError, match=r"zz\.jsonl:2"):
        build_pretraining_data(_settings(corpus, tiny_vocab, out))
    assert not out.exists() and [p.name for p in tmp_path.iterdir()] == ["corpus"]  # no temp dir left
    (corpus / "zz.jsonl").unlink()
    build_pretraining_data(_settings(corpus, tiny_vocab, out))
    with pytest.raises(FileExistsError):
        build_pretraining_data(_settings(corpus, tiny_vocab, out))
    build_pretraining_data(_settings(corpus, tiny_vocab, out, overwrite=True, seed=3))
    assert load_build_info(out)["seed"] == 3


# --------------------------------------------------------------------------------------------------
# memory does not grow with the corpus
# --------------------------------------------------------------------------------------------------

_MEMORY_CHILD = textwrap.dedent(
    """
    import json, resource, sys
    from pathlib import Path
    from bioelectra.data import BuildDataSettings, build_pretraining_data
    from bioelectra.presets import bio_electra_vocab_file
    corpus, out = Path(sys.argv[1]), Path(sys.argv[2])
    info = build_pretraining_data(BuildDataSettings(corpus_dir=corpus, vocab_file=bio_electra_vocab_file(),
        output_dir=out, do_lower_case=False, chunk_chars=200_000))
    print(json.dumps({"peak_rss_kb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss,
                      "tokens": info["counts"]["tokens"]}))
    """
)


def _synthetic_corpus(root: Path, num_docs: int) -> Path:
    rng = random.Random(0)
    words = [
        f"{stem}{suffix}"
        for stem in ("cyto", "kin", "gene", "prote", "recep", "hepat", "neur", "card")
        for suffix in ("in", "ase", "ine", "itis", "oma", "osis", "ic", "al")
    ]
    root.mkdir(parents=True)
    for f in range(0, num_docs, 500):
        with open(root / f"part{f // 500:04d}.txt", "w") as fh:
            for _ in range(min(500, num_docs - f)):
                for _ in range(rng.randint(5, 15)):
                    fh.write(" ".join(rng.choice(words) for _ in range(rng.randint(8, 30))) + ".\n")
                fh.write("\n")
    return root


@pytest.mark.slow
def test_peak_memory_does_not_grow_with_the_corpus(tmp_path):
    peaks = {}
    for n in (2_000, 8_000):
        corpus = _synthetic_corpus(tmp_path / f"c{n}", n)
        proc = subprocess.run(
            [sys.executable, "-c", _MEMORY_CHILD, str(corpus), str(tmp_path / f"o{n}")],
            capture_output=True,
            text=True,
            cwd=REPO_ROOT,
            check=True,
        )
        peaks[n] = json.loads(proc.stdout.strip().splitlines()[-1])
    small, large = peaks[2_000], peaks[8_000]
    assert large["tokens"] > 3.5 * small["tokens"]
    growth_mb = (large["peak_rss_kb"] - small["peak_rss_kb"]) / 1024
    # holding the corpus or the examples would add well over 100 MB for ~4.5 M extra tokens
    assert growth_mb < 20, f"peak RSS grew {growth_mb:.1f} MB from {small} to {large}"


# --------------------------------------------------------------------------------------------------
# command line
# --------------------------------------------------------------------------------------------------


def test_cli_build_vocab_then_build_data(tmp_path):
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    shutil.copy(FIXTURES / "pubmed_sample.xml", corpus / "pubmed.xml")
    (corpus / "notes.jsonl").write_text(
        json.dumps({"text": "Cytokine receptors bind ligands.\nSTAT3 is a gene."}) + "\n"
    )
    (corpus / "plain.txt").write_text(
        "Hepatocytes express IL-6 receptors.\nMice were treated.\n\nAnother document.\n"
    )
    runner = CliRunner()
    vocab_dir = tmp_path / "vocab"
    result = runner.invoke(
        app,
        [
            "pretrain",
            "build-vocab",
            "--corpus-dir",
            str(corpus),
            "--output-dir",
            str(vocab_dir),
            "--vocab-size",
            "200",
            "--no-lower-case",
            "--min-frequency",
            "1",
        ],
    )
    assert result.exit_code == 0, result.output
    assert (vocab_dir / "vocab.txt").read_text().splitlines()[:5] == list(SPECIAL_TOKENS)
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(vocab_dir)
    assert tok.convert_tokens_to_ids(list(SPECIAL_TOKENS)) == [0, 1, 2, 3, 4]
    assert tok.tokenize("STAT3") == ["STAT", "##3"] or "STAT3" in tok.get_vocab()

    out = tmp_path / "data"
    result = runner.invoke(
        app,
        [
            "pretrain",
            "build-data",
            "--corpus-dir",
            str(corpus),
            "--vocab-file",
            str(vocab_dir / "vocab.txt"),
            "--output-dir",
            str(out),
            "--max-seq-length",
            "16",
            "--no-lower-case",
            "--eval-fraction",
            "0.3",
        ],
    )
    assert result.exit_code == 0, result.output
    summary = json.loads(result.stdout[result.stdout.index("{") : result.stdout.rindex("}") + 1])
    assert summary["documents"] == 6 and summary["tokens_lost"] == 0
    data = load_examples(out)
    assert sum(d.num_rows for d in data.values()) == sum(summary["examples"].values())
    assert max(len(r) for r in data["train"]["input_ids"]) <= 16
    assert AutoTokenizer.from_pretrained(out / "tokenizer").convert_tokens_to_ids("[MASK]") == 4

    result = runner.invoke(
        app, ["pretrain", "build-data", "--corpus-dir", str(corpus), "--output-dir", str(out)]
    )
    assert result.exit_code == 2 and "not empty" in result.output
    result = runner.invoke(
        app,
        [
            "pretrain",
            "build-data",
            "--corpus-dir",
            str(tmp_path / "missing"),
            "--output-dir",
            str(tmp_path / "x"),
        ],
    )
    assert result.exit_code == 2 and "not found" in result.output
    result = runner.invoke(app, ["pretrain", "build-vocab", "--output-dir", str(tmp_path / "v2")])
    assert result.exit_code == 2


def test_cli_build_vocab_from_existing_vocab_file(tmp_path):
    result = CliRunner().invoke(
        app,
        [
            "pretrain",
            "build-vocab",
            "--vocab-file",
            str(bio_electra_vocab_file()),
            "--output-dir",
            str(tmp_path / "v"),
            "--no-lower-case",
        ],
    )
    assert result.exit_code == 0, result.output
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(tmp_path / "v")
    assert len(tok) == 31620
    assert tok.tokenize("Interleukin") == ["Interleukin"]  # cased


# --------------------------------------------------------------------------------------------------
# real corpus (a small slice of ../shared/data)
# --------------------------------------------------------------------------------------------------


@pytest.mark.shared_data
def test_real_ohsumed_slice_builds_with_bio_electra_vocab(shared_data, tmp_path):
    archive = shared_data / "corpus" / "ohsumed-single-23" / "ohsumed_single_23.tar.gz"
    corpus = tmp_path / "ohsumed"
    corpus.mkdir()
    texts = []
    with tarfile.open(archive) as tar:
        for member in tar:
            if member.isfile() and "/training/C04/" in member.name:
                text = tar.extractfile(member).read().decode("utf-8")
                (corpus / Path(member.name).name).write_text(text)
                texts.append(text)
            if len(texts) == 150:
                break
    info = build_pretraining_data(
        BuildDataSettings(
            corpus_dir=corpus,
            vocab_file=bio_electra_vocab_file(),
            output_dir=tmp_path / "out",
            do_lower_case=False,
        )
    )
    tokenizer = make_tokenizer(bio_electra_vocab_file(), do_lower_case=False)
    expected_tokens = sum(len(tokenizer.tokenize(line.strip())) for t in texts for line in t.splitlines())
    c = info["counts"]
    assert c["documents"] == 150 and c["tokens"] == expected_tokens and c["tokens_lost"] == 0
    assert c["validation_documents"] >= 1
    data = load_examples(tmp_path / "out")
    assert max(len(r) for r in data["train"]["input_ids"]) == 128


@pytest.mark.shared_data
def test_real_vocab_file_writes_hf_tokenizer(shared_data, tmp_path):
    from bioelectra.vocab import save_tokenizer_files

    vocab = shared_data / "vocab" / "bio-electra-pmc2017" / "pmc_2017_abstracts_wp_vocab_sorted.txt"
    out = save_tokenizer_files(vocab, tmp_path / "tok", do_lower_case=False)
    assert (out / "tokenizer.json").is_file() and (out / "vocab.txt").read_text().splitlines()[:5] == list(
        SPECIAL_TOKENS
    )


def test_lower_casing_with_a_cased_vocabulary_warns(tmp_path, caplog):
    """Bio-ELECTRA's vocabulary is cased: lower-cased text never reaches its capitalised entries."""
    from bioelectra.data import cased_vocab_entries

    assert cased_vocab_entries(bio_electra_vocab_file()) > 6000  # of 31,620: a cased vocabulary
    vocab = tmp_path / "vocab.txt"
    vocab.write_text("\n".join([*SPECIAL_TOKENS, ".", "the", "BRCA1", "##A", "p53"]) + "\n")
    assert cased_vocab_entries(vocab) == 2  # [CLS] etc. do not count
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    (corpus / "a.txt").write_text("the BRCA1 p53 .\n")
    with caplog.at_level("WARNING", logger="bioelectra.data"):
        build_pretraining_data(_settings(corpus, vocab, tmp_path / "lower", do_lower_case=True))
    assert any("2 entries contain capital letters" in r.getMessage() and "--no-lower-case" in r.getMessage()
               for r in caplog.records)
    caplog.clear()
    with caplog.at_level("WARNING", logger="bioelectra.data"):
        build_pretraining_data(_settings(corpus, vocab, tmp_path / "cased", do_lower_case=False))
    assert not any("capital letters" in r.getMessage() for r in caplog.records)


def test_trained_vocabulary_is_written_in_a_canonical_order(tmp_path):
    """tokenizers' WordPiece trainer orders its "##" alphabet by hash, so its order (the token ids of
    build-data) changes between runs; vocab.txt is written as the special tokens, then the rest sorted."""
    from bioelectra.vocab import train_wordpiece_vocab

    corpus = tmp_path / "corpus"
    corpus.mkdir()
    shutil.copy(FIXTURES / "pubmed_sample.xml", corpus / "pubmed.xml")
    summary = train_wordpiece_vocab(corpus, tmp_path / "vocab", vocab_size=300, min_frequency=1)
    entries = Path(summary["vocab_file"]).read_text(encoding="utf-8").splitlines()
    assert entries[: len(SPECIAL_TOKENS)] == list(SPECIAL_TOKENS)
    assert entries[len(SPECIAL_TOKENS):] == sorted(entries[len(SPECIAL_TOKENS):])
    assert len(entries) == len(set(entries)) == summary["vocab_size"] > 100
    assert any(e.startswith("##") for e in entries) and any(len(e) > 3 and not e.startswith("#") for e in entries)
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(tmp_path / "vocab")
    assert tokenizer.convert_ids_to_tokens(list(range(len(entries)))) == entries


# --- format 2: 2 bytes per token ----------------------------------------------------------------


def test_format_2_batches_equal_format_1_batches_of_the_same_examples(tmp_path, tiny_vocab):
    """The collator rebuilds token_type_ids and the attention mask from segment_a_length: the batches of
    the new format equal those of the old (per-token segment ids) for the same examples and seed."""
    import torch

    from bioelectra.masking import ElectraMaskingCollator

    corpus = _write_tiny_corpus(tmp_path / "corpus")
    out = tmp_path / "out"
    info = build_pretraining_data(_settings(corpus, tiny_vocab, out))
    assert info["bytes_per_token"] < 2.6  # 32-token examples: 2 bytes per id + about 6 per example
    rows = list(load_examples(out)["train"])
    old = [{"input_ids": r["input_ids"], "token_type_ids": segment_ids(r)} for r in rows]
    assert any(0 < r["segment_a_length"] < len(r["input_ids"]) for r in rows)  # two-segment examples exist

    def batches(examples):
        collator = ElectraMaskingCollator(pad_token_id=0, cls_token_id=2, sep_token_id=3, mask_token_id=4,
                                          mask_prob=0.15, max_seq_length=32, generator=torch.Generator().manual_seed(0))  # fmt: skip
        return [collator(examples[i : i + 8]) for i in range(0, len(examples), 8)]

    for new_batch, old_batch in zip(batches(rows), batches(old), strict=True):
        assert new_batch.keys() == old_batch.keys()
        for key in new_batch:
            assert torch.equal(new_batch[key], old_batch[key]), key


def test_data_folders_of_format_1_still_load_and_say_so(tmp_path, caplog):
    """The test fixture writes format 1 (int32 ids, int8 token_type_ids), as earlier versions did."""
    import logging

    from pretrain_fixture import make_data_dir

    from bioelectra.pretraining import load_pretraining_data, make_collator, resolve_hparams

    data_dir = make_data_dir(tmp_path / "old")
    with caplog.at_level(logging.INFO):
        data = load_pretraining_data(data_dir)
    assert "build-data format 1" in caplog.text
    hp = resolve_hparams("small", {"max_seq_length": 32})
    batch = make_collator(data.tokenizer, hp)([data.train[i] for i in range(4)])
    assert batch["token_type_ids"].max() <= 1 and batch["input_ids"].shape[0] == 4


def test_a_vocabulary_over_65536_entries_keeps_int32_ids():
    from bioelectra.shards import id_dtype_for

    assert id_dtype_for(30522) == id_dtype_for(65536) == "uint16"
    assert id_dtype_for(65537) == "int32"


def test_a_corpus_read_as_one_document_and_no_validation_are_warned_about(tmp_path, tiny_vocab, caplog):
    """A file of one abstract per line without blank lines is one document: build-data says so, names the
    option, and warns that there is no validation split (pretrain train would compute no metrics)."""
    lines = tmp_path / "abstracts.txt"
    lines.write_text("d0w1 d0w2 .\nd1w1 d1w2 .\nd2w1 d2w3 .\n")
    with caplog.at_level("WARNING", logger="bioelectra.data"):
        info = build_pretraining_data(_settings(lines, tiny_vocab, tmp_path / "one"))
    assert info["counts"]["documents"] == 1
    one, none = info["warnings"]
    assert "the whole corpus is one document (3 sentences)" in one and "--blanks-separate-docs" in one
    assert "no validation examples (0 of 1 documents held out)" in none and "--eval-fraction (now 0.01)" in none
    assert one in caplog.text and none in caplog.text
    assert json.loads((tmp_path / "one" / "build_info.json").read_text())["warnings"] == info["warnings"]
    lines.write_text("d0w1 d0w2 .\n\nd1w1 d1w2 .\n\nd2w1 d2w3 .\n")  # blank lines: three documents
    info = build_pretraining_data(_settings(lines, tiny_vocab, tmp_path / "three", eval_fraction=0.3))
    assert info["counts"]["documents"] == 3 and info["warnings"] == []
