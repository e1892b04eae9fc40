"""Entity linking end to end, scored at the document level, in one call (``bioelectra evaluate --loader linking
--model NER_DIR --linker LINKER_DIR --dataset NAME``): :func:`evaluate_end_to_end`.

1. The benchmark's original test corpus (:func:`downstream.linking.spec.locate`, read by
   :func:`downstream.linking.corpus.read_corpus`; with ``max_eval_examples`` its first abstracts).
2. Each abstract, its title and text joined by a line break, through ``predict``'s own machinery
   (:func:`downstream.predict.files.predict_files` with the linker): the NER model's entities, those of the
   linker's type linked (:class:`downstream.linking.predict.EntityLinker`), written as PubTator
   (``test_predictions.pubtator``; the line break makes PubTator's title and abstract lines, so the offsets
   are the gold file's).
3. That file scored against the gold one (:func:`downstream.linking.documents.score_files`): each abstract's
   set of concept ids of the benchmark's type against the gold set, micro-averaged over (abstract, concept id)
   pairs, BioCreative V CDR's DNER measure. NCBI-disease's gold keeps its four disease mention types
   (``SpecificDisease``, ``DiseaseClass``, ``Modifier``, ``CompositeMention``), BC5CDR's the linker's type.
4. ``results.json`` and ``results.md`` beside the published figures
   (:data:`downstream.linking.documents.PUBLISHED_DNER`), each written to a temporary name then renamed.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bioelectra.textio import atomic_write_text
from downstream.errors import DownstreamError
from downstream.linking.spec import LinkingSpec

#: The predictions file an end-to-end run writes in its output folder.
PREDICTIONS_FILE = "test_predictions.pubtator"
#: What the scores measure, as the reports say it.
METRIC = "micro-averaged precision / recall / F1 over (abstract, concept id) pairs (BioCreative V CDR's DNER measure)"


def default_output_dir(dataset: str) -> Path:
    """Where a run of ``dataset`` writes when no folder is given: ``runs/linking-end-to-end-<dataset>``."""
    return Path("runs") / f"linking-end-to-end-{dataset}"


def check_end_to_end(model_dir: str | Path, linker_dir: str | Path, spec: LinkingSpec) -> dict[str, Any]:
    """Refuse, before any data is read, a pair that cannot be scored on ``spec``; return the linker's card.

    Raises:
        DownstreamError: ``model_dir`` not a fine-tuned NER model (a RE model, a base model, no folder);
            ``linker_dir`` not a saved linker; a linker of another type than the benchmark's; a NER model none
            of whose labels has the linker's type (the types it has named).
    """
    from downstream.linking.saved import read_linker_card
    from downstream.predict.predictor import PREDICTORS, check_model_dir, entity_types
    from downstream.predict.results import UNTYPED_ENTITY

    kind = check_model_dir(model_dir, PREDICTORS)
    if kind != "ner":
        raise DownstreamError(
            f"--model {model_dir} is a {PREDICTORS[kind].description} model; the linking end-to-end evaluation needs "
            "a NER model (token classification, finetune --loader ner) to find the entities the linker links"
        )
    card = read_linker_card(linker_dir)
    linked = str(card.get("entity_type"))
    if linked.lower() != spec.linked_type.lower():
        raise DownstreamError(
            f"--linker {linker_dir} links {linked} mentions (saved by a run on {card.get('dataset')}), and "
            f"--dataset {spec.name} scores {spec.linked_type} concepts: give the linker of a {spec.linked_type} "
            "benchmark (finetune --loader linking --dataset NAME writes one in trial-<i>/linker/)"
        )
    types = entity_types(model_dir)
    if linked.lower() not in {t.lower() for t in types}:
        found = ", ".join(types) if types else "no types (no B- / I- labels)"
        untyped = (f" ('{UNTYPED_ENTITY}' is the type of bare B / I labels when config.json has no entity_type: "
                   "fine-tune with --entity-type TYPE)") if UNTYPED_ENTITY in types else ""  # fmt: skip
        raise DownstreamError(
            f"--model {model_dir} finds {found}{untyped}; none is {linked}, the type --linker {linker_dir} links: "
            f"give a NER model trained on {linked} mentions"
        )
    return card


def evaluate_end_to_end(
    model_dir: str | Path,
    linker_dir: str | Path,
    dataset: str | None,
    *,
    data_dir: str | Path | None = None,
    output_dir: str | Path | None = None,
    max_eval_examples: int | None = None,
    max_seq_length: int = 512,
    batch_size: int = 32,
    device: str = "auto",
    progress: Callable[[int], None] | None = None,
) -> dict[str, Any]:
    """NER, linking and the document-level score of one linking benchmark's test set (module docstring).

    Args:
        model_dir: a fine-tuned NER model (a trial's ``model/``) that finds entities of the linker's type.
        linker_dir: a saved linker (a linking trial's ``linker/``) of the benchmark's type.
        dataset: the linking benchmark (:data:`downstream.linking.spec.LINKING_DATASETS`).
        data_dir: the folder of its files (:func:`downstream.linking.spec.data_root`); only the test corpus is read.
        output_dir: where the files go; default :func:`default_output_dir`.
        max_eval_examples: the first N test abstracts only (a smoke run, not comparable with published figures).
        max_seq_length, batch_size, device: the NER model's, as ``predict`` takes them
            (:func:`downstream.predict.predictor.load_predictor`).
        progress: called with the number of abstracts predicted, chunk by chunk.

    Returns:
        The content of ``results.json``: ``precision``, ``recall``, ``f1`` (fractions), ``tp``, ``fp``, ``fn``,
        ``documents``, the model and linker paths, ``entity_type`` (the linker's), ``seconds`` (wall time of the
        whole call), ``published`` (:func:`downstream.linking.documents.published_figures`) and the files.

    Raises:
        DownstreamError: an unknown dataset; a bad model or linker (:func:`check_end_to_end`); a benchmark
            without a test corpus, or its test file missing (``DatasetUnavailableError``: the path expected and
            where to get it); ``max_eval_examples`` < 1; an output folder that is a file.
        DataFormatError: a bad line in the test corpus.
    """
    from downstream.linking.corpus import read_corpus
    from downstream.linking.documents import score_files
    from downstream.linking.spec import data_root, linking_spec, locate
    from downstream.predict.files import predict_files

    started = time.perf_counter()
    spec = linking_spec(dataset)
    card = check_end_to_end(model_dir, linker_dir, spec)
    if max_eval_examples is not None and max_eval_examples < 1:
        raise DownstreamError(f"--max-eval-examples {max_eval_examples}: expected at least 1")
    out = Path(output_dir) if output_dir is not None else default_output_dir(spec.name)
    if out.exists() and not out.is_dir():
        raise DownstreamError(f"--output-dir {out}: exists and is a file, not a folder")
    if "test" not in spec.files:
        raise DownstreamError(f"--dataset {spec.name}: no test corpus to score on (its files: {', '.join(spec.files)})")
    test_file = locate(spec, data_root(None if data_dir is None else Path(data_dir)), keys=("test",))["test"]
    documents = read_corpus(test_file, entity_type=spec.entity_type)[:max_eval_examples]
    out.mkdir(parents=True, exist_ok=True)
    predictions = out / PREDICTIONS_FILE
    abstracts = out / ".test_abstracts.jsonl"  # predict's input, removed after
    try:
        atomic_write_text(abstracts, "".join(json.dumps({"id": d.pmid, "text": f"{d.title}\n{d.abstract}"}, ensure_ascii=False) + "\n"
                                             for d in documents))  # fmt: skip
        summary = predict_files(model_dir, [abstracts], output_format="pubtator", output=predictions, input_format="jsonl",
                                max_seq_length=max_seq_length, batch_size=batch_size, device=device, progress=progress,
                                overwrite=True, linker_dir=linker_dir)  # fmt: skip
    finally:
        abstracts.unlink(missing_ok=True)
    scores = score_files(test_file, predictions, entity_type=spec.entity_type, dataset=spec.name, max_documents=max_eval_examples)
    results = {
        "kind": "linking-end-to-end", "dataset": spec.name, "title": spec.title, "metric": METRIC,
        "precision": scores["precision"], "recall": scores["recall"], "f1": scores["f1"],
        "tp": scores["tp"], "fp": scores["fp"], "fn": scores["fn"], "documents": scores["documents"],
        "entities_found": summary.predictions, "ner_model": str(model_dir), "linker": str(linker_dir),
        "linker_method": card.get("linker"), "linker_dataset": card.get("dataset"), "entity_type": str(card["entity_type"]),
        "gold_mention_types": spec.entity_type or "all", "test_file": str(test_file), "predictions": str(predictions),
        "max_eval_examples": max_eval_examples, "seconds": round(time.perf_counter() - started, 1),
        "published": scores["published"], "citation": spec.citation,
    }  # fmt: skip
    atomic_write_text(out / "results.md", end_to_end_markdown(results))
    atomic_write_text(out / "results.json", json.dumps(results, indent=2, ensure_ascii=False) + "\n")
    return results


def _percent(value: float | None) -> str:
    return "–" if value is None else f"{100 * value:.2f}"


def end_to_end_markdown(results: dict[str, Any]) -> str:
    """``results.md`` of an end-to-end run: what was run, then one table in percent, this run beside the
    published figures, and their sources."""
    level = {True: "document", None: "not stated"}
    lines = [f"# Entity linking end to end: {results['title']}", ""]
    if results.get("max_eval_examples"):
        lines += [f"**Limited run** (--max-eval-examples {results['max_eval_examples']}): the first "
                  f"{results['documents']} test abstracts only. A smoke test, not a result: not comparable with the "
                  "published figures.", ""]  # fmt: skip
    lines += [
        f"NER model `{results['ner_model']}`, linker `{results['linker']}` ({results['linker_method']}, "
        f"{results['entity_type']}), over {results['documents']} test abstracts of `{results['test_file']}`: "
        f"{results['entities_found']} entities found; {METRIC}. {results['seconds']} s.",
        "",
        "| system | level | precision | recall | F1 |",
        "|---|---|---:|---:|---:|",
        f"| this run (tp {results['tp']}, fp {results['fp']}, fn {results['fn']}) | document | "
        f"{_percent(results['precision'])} | {_percent(results['recall'])} | {_percent(results['f1'])} |",
    ]
    for system, figure in results["published"].items():
        lines.append(f"| {system} | {level[figure['document_level']]} | {_percent(figure['precision'])} | "
                     f"{_percent(figure['recall'])} | {_percent(figure['f1'])} |")  # fmt: skip
    if results["published"]:
        lines += ["", "Published figures (\"not stated\": the source read does not say at which level it scores):", ""]
        lines += [f"- {system}: {figure['source']}; {figure['url']}" for system, figure in results["published"].items()]
    lines += ["", f"Data: {results['citation']}.", ""]
    return "\n".join(lines)
