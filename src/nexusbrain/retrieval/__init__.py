"""Retrieval: turning a query into ranked, explained hits."""
