"""GLUE (CoLA, SST-2, MRPC, STS-B, QQP, MNLI, QNLI, RTE, WNLI): task table, reader, the task kind, its metrics and analysis."""
