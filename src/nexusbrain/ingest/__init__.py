"""Ingest: turning files, notes, memories and conversations into documents and chunks."""
