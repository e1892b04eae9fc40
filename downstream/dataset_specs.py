"""The registered benchmarks: :class:`DatasetSpec` and the tables by task kind (``NER_DATASETS``,
``RE_DATASETS``, ``QA_DATASETS``, ``YESNO_DATASETS``, ``BLURB_TEXT_DATASETS``; BLURB's own files of sets
other tables hold in another form, and EBM PICO, ``BLURB_FORM_DATASETS``; all of them in ``DATASETS``). Finding, caching and
downloading them is :mod:`downstream.registry`'s."""

from __future__ import annotations

from dataclasses import dataclass, field

#: BioBERT's pre-processed benchmark archive (the link in Bio-ELECTRA's README; BioBERT's ``download.sh``).
#: It unpacks to ``datasets/NER/<Name>/{train,devel,test,train_dev}.tsv`` and ``datasets/RE/<Name>/...``.
BIOBERT_ARCHIVE_URL = "http://nlp.dmis.korea.edu/projects/biobert-2020-checkpoints/datasets.tar.gz"


@dataclass(frozen=True)
class DatasetSpec:
    """One registered benchmark.

    Attributes:
        name: registry key (``--dataset``).
        task: the task kind, ``"ner"``, ``"re"``, ``"qa"``, ``"yesno"``, ``"similarity"``, ``"doc-classification"`` or ``"pico"``.
        title: human-readable name.
        entity_types: entity types annotated (NER), as named by the original corpus.
        archive_url: the pre-processed archive the files come from.
        archive_member: folder inside the archive holding the split files.
        original_url: the original corpus' home page.
        citation: whom to cite.
        sha256: expected SHA-256 of split files (``{"train.tsv": "..."}``), where known.
        shipped: whether a copy ships inside this package (``downstream/data/<name>/``).
        files: files downloaded one by one instead of from ``archive_url`` (``{relative path: URL}``).
        layout: ``splits`` (train/dev/test files), ``folds`` (``1/`` .. ``10/`` fold folders, each with its
            splits) or ``ddi-zip`` (the DDI 2013 XML zip, converted on first use).
        labels: the benchmark's label set, where fixed (RE; documentation and tests, the files decide).
        untyped_entity_type: NER: the type given to the files' bare ``B`` / ``I`` tags (BioBERT's files carry
            no type), so a saved model's labels read ``B-Disease``; default: the only entry of
            ``entity_types`` (see :meth:`tag_entity_type`).
        split_files: the files of each part in the dataset's folder, where the folder holds more than one
            dataset's files (BioBERT's ``datasets/QA/BioASQ/``): ``{"train": name, "test": name, "golden": name}``.
        in_suites: whether ``bioelectra benchmark``'s kind suites (``ner``, ``all`` ...) hold it; ``False`` for
            the general-domain sets of the original ELECTRA code (CoNLL-2000 chunking), named on their own.
        get_from: for a dataset that is never downloaded (no ``archive_url`` nor ``files``): where to get it.
    """

    name: str
    task: str
    title: str
    entity_types: tuple[str, ...]
    archive_url: str
    archive_member: str
    original_url: str
    citation: str
    sha256: dict[str, str] = field(default_factory=dict)
    shipped: bool = False
    files: dict[str, str] = field(default_factory=dict)
    layout: str = "splits"
    labels: tuple[str, ...] = ()
    untyped_entity_type: str | None = None
    split_files: dict[str, str] = field(default_factory=dict)
    in_suites: bool = True
    get_from: str = ""

    def tag_entity_type(self) -> str | None:
        """The entity type written into this dataset's bare ``B`` / ``I`` tags: ``untyped_entity_type``, else
        the single annotated type, else ``None`` (the tags stay bare). Only the NER kind asks
        (:func:`downstream.ner.types.entity_type_of`, for its own datasets)."""
        if self.untyped_entity_type:
            return self.untyped_entity_type
        return self.entity_types[0] if len(self.entity_types) == 1 else None


# SHA-256 of the BioBERT-format files as redistributed in the BioMedBERT repository (commit 93fd69d6),
# which match BioBERT's published split sizes (see ../shared/data/SOURCES.md, section 1).
_NCBI_SHA = {
    "train.tsv": "26df55fb9da14f52834c7c7238ec30af271aa4e3bbe2256ef96cab2c0a7e159b",
    "devel.tsv": "a91324724fa0783ef3096f060580e6b4e8dfdf83664d48e77951a45b693c0eaa",
    "test.tsv": "ca56aff802f8c8849793e806914636f7c9d8bf03bbd88c66402266289beb3995",
}

NER_DATASETS: dict[str, DatasetSpec] = {
    spec.name: spec
    for spec in [
        DatasetSpec(
            name="bc2gm",
            task="ner",
            title="BioCreative II Gene Mention (BC2GM)",
            entity_types=("Gene",),
            archive_url=BIOBERT_ARCHIVE_URL,
            archive_member="datasets/NER/BC2GM",
            original_url="https://biocreative.bioinformatics.udel.edu/tasks/biocreative-ii/task-1a-gene-mention-tagging/",
            citation="Smith et al., Genome Biology 9(Suppl 2):S2, 2008",
            sha256={
                "train.tsv": "1f180df262ba11c108bf798eae9d94e2090b51985694eb5acd8e9c544045f9a0",
                "devel.tsv": "634e84223ef02cf231fa4b5a5a256ad581efe1405c5bb31986ac0cf055b64e38",
                "test.tsv": "ea0d230134416109a1feb1ff4169e43b89893ef93b91e392c2534944828b724a",
            },
        ),
        DatasetSpec(
            name="bc4chemd",
            task="ner",
            title="BioCreative IV CHEMDNER (BC4CHEMD)",
            entity_types=("Chemical",),
            archive_url=BIOBERT_ARCHIVE_URL,
            archive_member="datasets/NER/BC4CHEMD",
            original_url="https://biocreative.bioinformatics.udel.edu/resources/biocreative-iv/chemdner-corpus/",
            citation="Krallinger et al., Journal of Cheminformatics 7(Suppl 1):S2, 2015",
        ),
        DatasetSpec(
            name="bc5cdr-chem",
            task="ner",
            title="BioCreative V CDR, chemicals (BC5CDR-chem)",
            entity_types=("Chemical",),
            archive_url=BIOBERT_ARCHIVE_URL,
            archive_member="datasets/NER/BC5CDR-chem",
            original_url="https://biocreative.bioinformatics.udel.edu/tasks/biocreative-v/track-3-cdr/",
            citation="Li et al., Database 2016:baw068",
            sha256={
                "train.tsv": "1272b747a1d64ccfaa21061c515c26e9e1f134e3afd3c2ef14d8cd0697e9a234",
                "devel.tsv": "17a6bc43d459c9dedaedad7990eb44ce0c4789a3a9813104aef9d2f3192c8fd0",
                "test.tsv": "4da9183ad83d0921eaca25ba011871308b9476c14f9b10fba7bfee55a9750649",
            },
        ),
        DatasetSpec(
            name="bc5cdr-disease",
            task="ner",
            title="BioCreative V CDR, diseases (BC5CDR-disease)",
            entity_types=("Disease",),
            archive_url=BIOBERT_ARCHIVE_URL,
            archive_member="datasets/NER/BC5CDR-disease",
            original_url="https://biocreative.bioinformatics.udel.edu/tasks/biocreative-v/track-3-cdr/",
            citation="Li et al., Database 2016:baw068",
            sha256={
                "train.tsv": "ed209466f99f192460c8b2079cb9dd688c445ce1f2601c2c141f6a84b4a7edf2",
                "devel.tsv": "405332504d3f6d577f33084494d0916bcdfee789aa1bd954e93a5b79239c2967",
                "test.tsv": "a291f73998031d910dd84ae3c52c744d10ddc44042895056f978c39838bd48b3",
            },
        ),
        DatasetSpec(
            name="jnlpba",
            task="ner",
            title="JNLPBA 2004 bio-entity recognition (BioBERT version: the five GENIA types collapsed)",
            entity_types=("protein", "DNA", "RNA", "cell_line", "cell_type"),
            # BioBERT's files collapse the five types into bare B / I: one "bio-entity" type
            untyped_entity_type="bio-entity",
            archive_url=BIOBERT_ARCHIVE_URL,
            archive_member="datasets/NER/JNLPBA",
            original_url="http://www.geniaproject.org/shared-tasks/bionlp-jnlpba-shared-task-2004",
            citation="Kim et al., JNLPBA workshop, 2004",
            sha256={
                "train.tsv": "b54193c955d91fb7079f53961e72871c9d4522eb28a141f717f14d2e4eb76a42",
                "devel.tsv": "b770901337d10d844c2fd849266f99afb83850035c8f20db8c053b5874912520",
                "test.tsv": "ab07e2323e99f8be522cfe6287191244d94988b0455c08922d1b8dfb6c785d98",
            },
        ),
        DatasetSpec(
            name="linnaeus",
            task="ner",
            title="LINNAEUS species corpus",
            entity_types=("Species",),
            archive_url=BIOBERT_ARCHIVE_URL,
            archive_member="datasets/NER/linnaeus",
            original_url="http://linnaeus.sourceforge.net/",
            citation="Gerner et al., BMC Bioinformatics 11:85, 2010",
            sha256={
                "train.tsv": "398c0b30b3762d587ec1398715daef928a70b507d6c99094018989af7fab0eb6",
                "devel.tsv": "2a237cbd5860b87a789607a79b0d831351842cda081f8f5c268c3807ff4d08bc",
                "test.tsv": "122acde9645923138fb7411519f564b662f2caf977fa9aec21b7b8f0dd7d2c2e",
            },
        ),
        DatasetSpec(
            name="ncbi-disease",
            task="ner",
            title="NCBI disease corpus",
            entity_types=("Disease",),
            archive_url=BIOBERT_ARCHIVE_URL,
            archive_member="datasets/NER/NCBI-disease",
            original_url="https://www.ncbi.nlm.nih.gov/CBBresearch/Dogan/DISEASE/",
            citation="Dogan, Leaman and Lu, Journal of Biomedical Informatics 47:1-10, 2014",
            sha256=_NCBI_SHA,
            shipped=True,
        ),
        DatasetSpec(
            name="s800",
            task="ner",
            title="SPECIES-800 (S800)",
            entity_types=("Species",),
            archive_url=BIOBERT_ARCHIVE_URL,
            archive_member="datasets/NER/s800",
            original_url="https://species.jensenlab.org/",
            citation="Pafilis et al., PLoS ONE 8(6):e65390, 2013",
        ),
    ]
}

#: Bio-ELECTRA's repository at the commit its ChemProt files were taken from (../shared/data/SOURCES.md 3c).
BIO_ELECTRA_RAW = "https://raw.githubusercontent.com/SciCrunch/bio_electra/7a53526773e047c02f03400f61a906a636b9054d"
#: The DDI corpus authors' repository (SOURCES.md 3e).
DDI_CORPUS_URL = "https://github.com/isegura/DDICorpus/raw/819b0fa538ed83ab2a8b4f5417bba3c03249b7f3/DDICorpus-2013.zip"

# SHA-256 of BioBERT's GAD folds as redistributed in BioMedBERT @ 93fd69d6 (SOURCES.md 3a); every fold's
# dev.tsv is empty (SHA-256 of b"").
_GAD_SHA = {
    "1/test.tsv": "68fe2b2bddefac2cd5d35b4bc8a13bceee95ee9a582a623632981e893cdb512e",
    "1/train.tsv": "21e3765852a13cf03e6e759e201c5ad2d18b10d3ab05a8ac6bd7510f18f68fec",
    "10/test.tsv": "d12df5d5418f91ff0170511593489b87e4046e9ca04e4a5cea14a5334a2982d2",
    "10/train.tsv": "0296153d9c30da60ab73727c85deaf7a6b0149e43b06b42316227419b257d03b",
    "2/test.tsv": "51600ff88ed405725e8860f11b8c2d17cbb38b420a8faa83eaaf44c21bbb89d4",
    "2/train.tsv": "c920a8977d3963708be4115d440c4ad04f09de2d9facd3b3b64082287cc6e09a",
    "3/test.tsv": "72058831d5c983b4b9a5db93011c851c02cd7be4c91df271502df3f2dccce50a",
    "3/train.tsv": "69993033b7d9717cac902d2108ce9e5cb65a294da5a342043cd7a76e9e459cac",
    "4/test.tsv": "9bf6dd6986899367f8e028fa5a24f02b15dabb2621e344d6d8e4787c056f1de6",
    "4/train.tsv": "980f3fe19676dac4e40595b0a6c76965161de341cd9a304ec493d8e003a61df4",
    "5/test.tsv": "dbac9eba54f137ce01d3b29bc6dd4f61a2881ef0a2990193ff53b1d95f1a6e30",
    "5/train.tsv": "25b2f6ff645839e6cf55f12526f3692bb689176e9f1bd757cfc52cb71ca8109d",
    "6/test.tsv": "7d6ec806d9152670bcfecb6f56703116756e51d438bc16e9aed272186f7af679",
    "6/train.tsv": "5588e16c9e9698c8fbf73d26814202e0d1016721b5f5415c0d75e474159a552c",
    "7/test.tsv": "32462105be3f2637d9b9aa452101812b329f0350a10de31dfff240aca4766b0e",
    "7/train.tsv": "f8e5b6b4498978d484d098da4168e91a54894d383ad5af75ea6f1fd96ef4a0bf",
    "8/test.tsv": "e78c0eb47929002b99ff82534853a6261376c461e479759e50456a84be7c151f",
    "8/train.tsv": "f4ad27106243e667c3e2fe6040393a9baf62cb4edee5ceada7105db6bd77141f",
    "9/test.tsv": "5e673314a57edf65020d37fe3d36d59c39b878a79a36d30f44cef1344af0abf5",
    "9/train.tsv": "41c7f5b639a64058d5a09e698503463147369bb9b8c61f51da8bca582ca4464b",
}

RE_DATASETS: dict[str, DatasetSpec] = {
    spec.name: spec
    for spec in [
        DatasetSpec(
            name="chemprot",
            task="re",
            title="ChemProt (BioCreative VI CHEMPROT), Bio-ELECTRA's sentence-level files",
            entity_types=("CHEMICAL", "GENE"),
            archive_url=BIO_ELECTRA_RAW,
            archive_member="electra/data/finetuning_data/chemprot",
            original_url="https://biocreative.bioinformatics.udel.edu/tasks/biocreative-vi/track-5/",
            citation="Krallinger et al., Proceedings of the BioCreative VI Workshop, 2017",
            sha256={
                "train.tsv": "f69f85e7b449defe6bec4eea7005114293c2fc4919b9fb474411b9120239439b",
                "dev.tsv": "71be2ade9dce952da88f09dc61fbc309f96d9698fbd64e6ef4cb597f3d87c3be",
                "test.tsv": "9b9774a598cbdbeb89894b4117cf35d102331860e91f4aed1e2ff8cc839cf2f0",
            },
            files={
                name: f"{BIO_ELECTRA_RAW}/electra/data/finetuning_data/chemprot/{name}"
                for name in ("train.tsv", "dev.tsv", "test.tsv")
            },
            labels=("False", "CPR:3", "CPR:4", "CPR:5", "CPR:6", "CPR:9"),
        ),
        DatasetSpec(
            name="ddi",
            task="re",
            title="DDI 2013 extraction task (original XML corpus, converted to BLURB-style pairs)",
            entity_types=("DRUG",),
            archive_url=DDI_CORPUS_URL,
            archive_member="DDICorpus",
            original_url="https://github.com/isegura/DDICorpus",
            citation="Segura-Bedmar, Martinez and Herrero-Zazo, SemEval-2013 Task 9; Herrero-Zazo et al., J Biomed Inform 46(5), 2013",
            sha256={"DDICorpus-2013.zip": "87fc63e32ebce20d9841c372e0c594ec72d60882ab5621550ca73c3eaf80ab60"},
            files={"DDICorpus-2013.zip": DDI_CORPUS_URL},
            layout="ddi-zip",
            labels=("DDI-false", "DDI-advise", "DDI-effect", "DDI-int", "DDI-mechanism"),
        ),
        DatasetSpec(
            name="gad",
            task="re",
            title="GAD gene-disease associations (BioBERT's 10-fold split)",
            entity_types=("GENE", "DISEASE"),
            archive_url=BIOBERT_ARCHIVE_URL,
            archive_member="datasets/RE/GAD",
            original_url="https://geneticassociationdb.nih.gov/",
            citation="Becker et al., Nature Genetics 36:431-432, 2004; Bravo et al., BMC Bioinformatics 16:55, 2015",
            sha256=_GAD_SHA,
            layout="folds",
            labels=("0", "1"),
        ),
    ]
}

#: deepset's COVID-QA repository at the commit ``../shared/data/qa/covid-qa`` was taken from (SOURCES.md 9a).
COVID_QA_URL = "https://raw.githubusercontent.com/deepset-ai/COVID-QA/fb2eb5e249618457e5359806601086c635c8eb8f/data/question-answering/200423_covidQA.json"
#: PubMedQA's repository at the commit of ``../shared/data/corpus/pubmedqa-pqal`` (SOURCES.md 4c).
PUBMEDQA_URL = "https://raw.githubusercontent.com/pubmedqa/pubmedqa/1cbae8e92f72f20c8d3747cbb3bf5bc53554d997/data/ori_pqal.json"
#: BioBERT's BioASQ folder: the 7b factoid and yes/no sets and the 7b golden answers (BioBERT-PyTorch's files).
BIOASQ_MEMBER = "datasets/QA/BioASQ"

QA_DATASETS: dict[str, DatasetSpec] = {
    spec.name: spec
    for spec in [
        DatasetSpec(
            name="covid-qa",
            task="qa",
            title="COVID-QA (extractive QA on CORD-19 articles, SQuAD format)",
            entity_types=(),
            archive_url=COVID_QA_URL,
            archive_member="data/question-answering",
            original_url="https://github.com/deepset-ai/COVID-QA",
            citation="Möller et al., COVID-QA: A Question Answering Dataset for COVID-19, ACL 2020 NLP-COVID workshop",
            sha256={"200423_covidQA.json": "ab310b4e39f726e087c8fa3d1787c73771dacddc584977204ebe3cc889ee1264"},
            files={"200423_covidQA.json": COVID_QA_URL},
        ),
        DatasetSpec(
            name="bioasq-factoid",
            task="qa",
            title="BioASQ 7b factoid questions (BioBERT's SQuAD-format files, golden answers for test)",
            entity_types=(),
            archive_url=BIOBERT_ARCHIVE_URL,
            archive_member=BIOASQ_MEMBER,
            original_url="http://bioasq.org/",
            citation="Tsatsaronis et al., BMC Bioinformatics 16:138, 2015; Yoon et al., Pre-trained Language Model for Biomedical Question Answering, 2019",
            split_files={"train": "BioASQ-train-factoid-7b.json", "test": "BioASQ-test-factoid-7b.json", "golden": "7B_golden.json"},
        ),
    ]
}

YESNO_DATASETS: dict[str, DatasetSpec] = {
    spec.name: spec
    for spec in [
        DatasetSpec(
            name="pubmedqa",
            task="yesno",
            title="PubMedQA PQA-L (yes / no / maybe; the official 450 / 50 / 500 split, BLURB's fold 0)",
            entity_types=(),
            archive_url=PUBMEDQA_URL,
            archive_member="data",
            original_url="https://pubmedqa.github.io/",
            citation="Jin et al., PubMedQA: A Dataset for Biomedical Research Question Answering, EMNLP 2019",
            sha256={"ori_pqal.json": "8b3276be8942ebbd77f3ddcda12c1749bf0e490045a736fd8438ee40cf37a41d"},
            files={"ori_pqal.json": PUBMEDQA_URL},
        ),
        DatasetSpec(
            name="bioasq-yesno",
            task="yesno",
            title="BioASQ 7b yes/no questions (BioBERT's SQuAD-format files, golden answers for test)",
            entity_types=(),
            archive_url=BIOBERT_ARCHIVE_URL,
            archive_member=BIOASQ_MEMBER,
            original_url="http://bioasq.org/",
            citation="Tsatsaronis et al., BMC Bioinformatics 16:138, 2015; Yoon et al., Pre-trained Language Model for Biomedical Question Answering, 2019",
            split_files={"train": "BioASQ-train-yesno-7b.json", "test": "BioASQ-test-yesno-7b.json", "golden": "7B_golden.json"},
        ),
    ]
}

#: CoNLL-2000 chunking (the original ELECTRA code's ``chunk`` task), a dataset of the NER kind: IOB2 tags, phrases
#: scored as entities (conlleval). Never downloaded (Penn Treebank WSJ text): ``get_from`` says where it is.
#: SHA-256 of the shared task's files, gunzipped (../shared/data/chunk/PROVENANCE.md).
CHUNK_DATASETS: dict[str, DatasetSpec] = {
    "chunk": DatasetSpec(
        name="chunk",
        task="ner",
        title="CoNLL-2000 chunking (WSJ sections 15-18 train, 20 test; dev is the test set)",
        entity_types=("ADJP", "ADVP", "CONJP", "INTJ", "LST", "NP", "PP", "PRT", "SBAR", "UCP", "VP"),
        archive_url="",
        archive_member="",
        original_url="https://www.clips.uantwerpen.be/conll2000/chunking/",
        citation="Tjong Kim Sang and Buchholz, Introduction to the CoNLL-2000 Shared Task: Chunking, CoNLL 2000",
        sha256={
            "train.txt": "82033cd7a72b209923a98007793e8f9de3abc1c8b79d646c50648eb949b87cea",
            "test.txt": "73b7b1e565fa75a1e22fe52ecdf41b6624d6f59dacb591d44252bf4d692b1628",
        },
        in_suites=False,
        get_from=(
            "the shared task's page https://www.clips.uantwerpen.be/conll2000/chunking/ (train.txt.gz, test.txt.gz), "
            "or NLTK's conll2000 corpus (python -m nltk.downloader conll2000)"
        ),
    ),
}

#: BLURB's data-generation pipeline (Microsoft's BLURB ``data_generation/`` scripts, MIT) makes the BIOSSES and
#: HoC files from their authors' releases; its output is the layout these datasets are read in.
BLURB_DATA_GENERATION = "BLURB's data-generation scripts (linked from BLURB's site https://microsoft.github.io/BLURB/)"

#: BLURB's sentence-similarity and document-classification sets. GPL-3.0 data (their authors' repositories): never
#: downloaded nor shipped; ``get_from`` says where they are. SHA-256 of BLURB's pipeline output (the files'
#: PROVENANCE.md in ../shared/data/sts/biosses and ../shared/data/doc-classification/hoc).
BLURB_TEXT_DATASETS: dict[str, DatasetSpec] = {
    "biosses": DatasetSpec(
        name="biosses",
        task="similarity",
        title="BIOSSES biomedical sentence similarity (BLURB's 64 / 16 / 20 pairs, scores 0-4)",
        entity_types=(),
        archive_url="",
        archive_member="",
        original_url="https://tabilab.cmpe.boun.edu.tr/BIOSSES/",
        citation="Soğancıoğlu, Öztürk and Özgür, BIOSSES: a semantic sentence similarity estimation system for the "
        "biomedical domain, Bioinformatics 33(14):i49-i58, 2017",
        sha256={
            "train.tsv": "19dfcb8d4f07636422cb4b945992131383bf0dfa87847012673abcfc026aa9e7",
            "dev.tsv": "15902014e1cf828aaf39ab83051063af3b4aec0f6e38edc3ea609299221d4735",
            "test.tsv": "dd68d01d5cc0f73d6790a94b054fdb14b0cd443979f7fc42d1d98aba2cb6791b",
        },
        get_from=(
            "its authors' repository https://github.com/gizemsogancioglu/biosses (GPL-3.0) turned into BLURB's "
            f"train.tsv / dev.tsv / test.tsv (pair_id, sent1, sent2, score) by {BLURB_DATA_GENERATION}"
        ),
    ),
    "hoc": DatasetSpec(
        name="hoc",
        task="doc-classification",
        title="Hallmarks of Cancer (HoC), BLURB's split: 1,295 / 186 / 371 abstracts, ten hallmarks",
        entity_types=(),
        archive_url="",
        archive_member="",
        original_url="https://github.com/sb895/Hallmarks-of-Cancer",
        citation="Baker et al., Automatic semantic classification of scientific literature according to the hallmarks "
        "of cancer, Bioinformatics 32(3):432-440, 2016",
        sha256={
            "train.tsv": "48352fe9828a63254c9302d5c9a13abe0167a5016dd1143e7f7e47c0348c9a81",
            "dev.tsv": "c0bae75eab5940db8afd3ac620d391661c826fa1428e38d258c9e730f4358b99",
            "test.tsv": "2e9ffe24c756b126efa2d351a9572ebb671a3473658bc0766d02ec80b9129d48",
        },
        get_from=(
            "its authors' repository https://github.com/sb895/Hallmarks-of-Cancer (GPL-3.0) turned into BLURB's "
            f"train.tsv / dev.tsv / test.tsv (labels, sentence, index) by {BLURB_DATA_GENERATION}"
        ),
    ),
}

#: BLURB's own files of sets the kinds already read in another form (BioBERT's JNLPBA and GAD, BioBERT's BioASQ
#: JSON), and EBM PICO. Never downloaded (BioASQ needs registration; the others are the pipeline's output, not
#: published as files): ``get_from`` says where they come from. Outside the kind suites (they repeat sets there);
#: ``bioelectra benchmark --suite blurb`` runs them (:mod:`downstream.blurb`).
BLURB_FORM_DATASETS: dict[str, DatasetSpec] = {
    spec.name: spec
    for spec in [
        DatasetSpec(
            name="jnlpba-blurb", task="ner",
            title="JNLPBA 2004 in BLURB's form (its own train / dev split; bare B / I tags, 8,662 test mentions)",
            entity_types=("protein", "DNA", "RNA", "cell_line", "cell_type"),
            untyped_entity_type="bio-entity",
            archive_url="", archive_member="",  # never downloaded
            original_url="http://www.geniaproject.org/shared-tasks/bionlp-jnlpba-shared-task-2004",
            citation="Kim et al., JNLPBA workshop, 2004; Gu et al., ACM Transactions on Computing for Healthcare 3(1), 2021",
            sha256={
                "train.tsv": "e3bd594512fcffd9d79dbf4785e805f87c31d576692eeae33458c54b0416a8e0",
                "dev.tsv": "ac56df325166c779c76177de16efff624f0cdb0e9a6a406c13dbd02b712b1e7c",
                "test.tsv": "6da4243aa7b9822c188bb81391689bcec22756f2ae653b823cfb9cf21d7eb938",
            },
            # dev.tsv, never the folder's devel.tsv (the pipeline's typed intermediate of the same abstracts)
            split_files={"train": "train.tsv", "dev": "dev.tsv", "test": "test.tsv"},
            in_suites=False,
            get_from=f"{BLURB_DATA_GENERATION}, run on the JNLPBA 2004 shared-task files (Genia4ER): train.tsv, dev.tsv, test.tsv",
        ),
        DatasetSpec(
            name="gad-blurb", task="re",
            title="GAD gene-disease associations, BLURB's train / dev / test split",
            entity_types=("GENE", "DISEASE"),
            archive_url="", archive_member="",  # never downloaded
            original_url="https://geneticassociationdb.nih.gov/",
            citation="Becker et al., Nature Genetics 36:431-432, 2004; Bravo et al., BMC Bioinformatics 16:55, 2015; Gu et al. 2021",
            sha256={
                "train.tsv": "8c57f5f28a843cd64bcd939c62842cf685552315e7a78069be7d1ceff47bb663",
                "dev.tsv": "ede2bebdf5fa6094a493801f447bb7827ab0e5511fa0c399234e9e77a96d7159",
                "test.tsv": "68fe2b2bddefac2cd5d35b4bc8a13bceee95ee9a582a623632981e893cdb512e",
            },
            labels=("0", "1"), in_suites=False,
            get_from=f"{BLURB_DATA_GENERATION}, run on BioBERT's GAD files: train.tsv, dev.tsv, test.tsv with the header index<TAB>sentence<TAB>label",
        ),
        DatasetSpec(
            name="bioasq-blurb", task="yesno",
            title="BioASQ 7b yes/no questions in BLURB's form (one passage per question: its snippets joined)",
            entity_types=(), archive_url="", archive_member="",  # never downloaded
            original_url="http://bioasq.org/",
            citation="Tsatsaronis et al., BMC Bioinformatics 16:138, 2015; Gu et al. 2021",
            sha256={
                "train.tsv": "980f3508f4e8022bdd07dfdbe36611aa4c3e1f3801b27560329d14f224577017",
                "dev.tsv": "bf9ae5f70164bb9eff330faa6bf827d53d34b721b744abc7e8004865612e6695",
                "test.tsv": "eab1e35b18a2ea65cd0d780431198568dd15241eaf3f8faadb13372c20156530",
            },
            in_suites=False,
            get_from=(
                "BioASQ after registering (http://participants-area.bioasq.org/: the 7b training set and the 7b golden test "
                f"batches), then {BLURB_DATA_GENERATION}: train.tsv, dev.tsv, test.tsv without a header, "
                "qid<TAB>question<TAB>passage<TAB>label"
            ),
        ),
        DatasetSpec(
            name="ebm-pico", task="pico",
            title="EBM PICO (EBM-NLP 2.00 in BLURB's form: IO tags for participants, interventions, outcomes)",
            entity_types=("PAR", "INT", "OUT"),
            archive_url="", archive_member="",  # never downloaded
            original_url="https://github.com/bepnye/EBM-NLP",
            citation="Nye et al., A Corpus with Multi-Level Annotations of Patients, Interventions and Outcomes, ACL 2018; Gu et al. 2021",
            sha256={
                "dev.tsv": "700c7bf7642fcfde8cfe52605e1ead8f8ffa5d4f6b09b5e96ef62744e604a8d4",
                "test.tsv": "60f676f1664ad491a6378b1029c7dd1371c461912322fc6382cec8d6784dd508",
            },
            get_from=(
                f"{BLURB_DATA_GENERATION}, run on EBM-NLP 2.00 (https://github.com/bepnye/EBM-NLP, ebm_nlp_2_00.tar.gz): "
                "dev.tsv and test.tsv, and train.tsv (the PMIDs of BLURB's split_pmids/train_pmid.tsv) to fine-tune"
            ),
        ),
    ]
}

#: Every registered dataset, by name.
DATASETS: dict[str, DatasetSpec] = {**NER_DATASETS, **RE_DATASETS, **QA_DATASETS, **YESNO_DATASETS}
DATASETS.update(CHUNK_DATASETS)
DATASETS.update(BLURB_TEXT_DATASETS)
DATASETS.update(BLURB_FORM_DATASETS)
