"""The settings fingerprint is stable: a rerun of a finished run reuses its trials.

The values were computed before the task kinds moved into their own folders; a change here means every
earlier run's trials would be trained again.
"""

import pytest

import downstream.kinds  # noqa: F401 - every task kind known
from downstream.settings import FinetuneSettings

CASES = [
    ('ner', {}, '8c9219a20099de8d'),
    ('ner', {'fold': 2}, '8c9219a20099de8d'),
    ('ner', {'re_head': 'cls'}, '8c9219a20099de8d'),
    ('ner', {'iob1_policy': 'keep'}, 'cfc8cbc116369078'),
    ('ner', {'dev_fraction': 0.2}, '8c9219a20099de8d'),
    ('ner', {'dev_split_seed': 7}, '8c9219a20099de8d'),
    ('ner', {'doc_stride': 64}, '5aa66e4a4986795c'),
    ('ner', {'layerwise_lr_decay': 0.8, 'optimizer': 'electra', 'dropout': 0.2}, 'b8188840c9b09c70'),
    ('ner', {'entity_type': 'Gene'}, '4f48144f52afb80f'),
    ('ner', {'protocol': 'electra', 'learning_rate': 0.0003, 'num_trials': 5}, '2eef1eef149168b3'),
    ('re', {}, '90d46ccc550205d7'),
    ('re', {'fold': 2}, '5435a455666f52f1'),
    ('re', {'re_head': 'cls'}, 'ba569a7bd12bb50d'),
    ('re', {'iob1_policy': 'keep'}, '282c114c06aec6b2'),
    ('re', {'dev_fraction': 0.2}, '06f926f2064ac90e'),
    ('re', {'dev_split_seed': 7}, '0e6e404f6a90d587'),
    ('re', {'doc_stride': 64}, 'b02b6959b08fe516'),
    ('re', {'layerwise_lr_decay': 0.8, 'optimizer': 'electra', 'dropout': 0.2}, '3cc3dcd3a0951bcd'),
    ('re', {'protocol': 'electra', 'learning_rate': 0.0003, 'num_trials': 5}, '96bc26f995fd8589'),
    ('qa', {}, '70e522cab67f2537'),
    ('qa', {'fold': 2}, '70e522cab67f2537'),
    ('qa', {'re_head': 'cls'}, '70e522cab67f2537'),
    ('qa', {'iob1_policy': 'keep'}, '70e522cab67f2537'),
    ('qa', {'dev_fraction': 0.2}, '0c19d36f8b2459e0'),
    ('qa', {'dev_split_seed': 7}, 'e59f9cb6f54b388b'),
    ('qa', {'doc_stride': 64}, 'e898d8cf2d3a83ae'),
    ('qa', {'layerwise_lr_decay': 0.8, 'optimizer': 'electra', 'dropout': 0.2}, '29cf9a7a1d19686d'),
    ('qa', {'protocol': 'electra', 'learning_rate': 0.0003, 'num_trials': 5}, 'aa70a4d68378258b'),
    ('yesno', {}, '12a0348feb364e75'),
    ('yesno', {'fold': 2}, '12a0348feb364e75'),
    ('yesno', {'re_head': 'cls'}, 'bb7711f7b2673c37'),
    ('yesno', {'iob1_policy': 'keep'}, '12a0348feb364e75'),
    ('yesno', {'dev_fraction': 0.2}, '9e4c7f3253145b87'),
    ('yesno', {'dev_split_seed': 7}, 'fad6916e7b38eaaf'),
    ('yesno', {'doc_stride': 64}, '0c22c91fbbb882b8'),
    ('yesno', {'layerwise_lr_decay': 0.8, 'optimizer': 'electra', 'dropout': 0.2}, '63e57b89af3bf6e3'),
    ('yesno', {'protocol': 'electra', 'learning_rate': 0.0003, 'num_trials': 5}, '4def5504aacf4efd'),
    ('ner', {'dataset': 'ncbi-disease', 'data_dir': None}, '3ac43dad70eedb8f'),
]


@pytest.mark.parametrize(("task", "extra", "expected"), CASES)
def test_fingerprint_unchanged(task, extra, expected):
    base = dict(task=task, checkpoint="ckpt", output_dir="out", data_dir="d")
    if "dataset" in extra:
        base = dict(task=task, checkpoint="c", output_dir="o")
    assert FinetuneSettings(**{**base, **extra}).fingerprint() == expected
