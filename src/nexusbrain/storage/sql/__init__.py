"""The SQL that every engine shares: the graph store, the search filters, export and import,
and the document store's reads, written once over a `Dialect` (dialect.py), which says what
truly differs between the engines' SQL. What is an engine's own (SQLite's FTS5 and its
contentless table; PostgreSQL's postings segments, compaction, pgvector HNSW and advisory
locks; each one's migrations and write path) stays in its backend package."""
