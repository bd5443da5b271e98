"""Evaluation harness: retrieval metrics and TREC-style run scoring."""
