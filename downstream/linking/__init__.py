"""Entity linking (normalisation): corpora with concept ids, vocabularies, the standard preprocessing, the
sparse and dense linkers and accuracy@k."""
