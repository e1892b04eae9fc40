"""``bioelectra link-score``: NER then linking scored at the document level against a gold PubTator file."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

from bioelectra.cli.common import _fail, app, console


@app.command("link-score")
def link_score(
    gold: Annotated[Path, typer.Option(help="The gold PubTator file with concept ids (e.g. CDR_TestSet.PubTator.txt).")],
    predicted: Annotated[Path, typer.Option(help="bioelectra predict --linker DIR --format pubtator's output on the same abstracts.")],
    entity_type: Annotated[str | None, typer.Option("--entity-type", help="Score the mentions of this type only (Disease, Chemical; any case) [default: all].")] = None,
    output: Annotated[Path | None, typer.Option("--output", "-o", help="Also write the scores as JSON here.")] = None,
) -> None:
    """Document-level concept precision, recall and F1 (the BioCreative V CDR DNER measure: each abstract's set
    of concept ids against the gold set, micro-averaged), beside the published figures for the type."""
    from bioelectra.textio import atomic_write_text
    from downstream.errors import DownstreamError
    from downstream.linking.documents import score_files

    try:
        scores = score_files(gold, predicted, entity_type=entity_type)
        if output is not None:
            atomic_write_text(output, json.dumps(scores, indent=2))
    except (DownstreamError, OSError) as exc:
        _fail(exc)
        return
    print(f"{scores['documents']} documents, {entity_type or 'all types'}: precision {100 * scores['precision']:.2f}, "
          f"recall {100 * scores['recall']:.2f}, F1 {100 * scores['f1']:.2f} (tp {scores['tp']}, fp {scores['fp']}, fn {scores['fn']})")  # fmt: skip
    for name, values in scores["published"].items():
        print(f"  published, {name}: precision {100 * values['precision']:.0f}, recall {100 * values['recall']:.0f}, F1 {100 * values['f1']:.0f}")
    if output is not None:
        console.print(f"[green]scores:[/] {output}")
