"""Relation extraction (DDI included): readers, the DDI 2013 XML conversion, the task kind, its metrics and analysis."""
