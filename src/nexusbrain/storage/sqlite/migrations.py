"""Numbered schema migrations. Each one is applied atomically, with its version recorded."""

from __future__ import annotations

from nexusbrain.storage.sqlite.lexical import MIGRATION as LEXICAL_MIGRATION
from nexusbrain.storage.sqlite.vectors import COVERAGE_MIGRATION as VECTORS_COVERAGE_MIGRATION
from nexusbrain.storage.sqlite.vectors import MIGRATION as VECTORS_MIGRATION
from nexusbrain.storage.sqlite.vectors import ROWID_MIGRATION as VECTORS_ROWID_MIGRATION

# the graph: entities and bitemporal relationships; a relationship row is written once, and
# retiring it sets `superseded_at` and `reason`: triggers refuse any other update and every
# delete
GRAPH_MIGRATION = """
CREATE TABLE entities (
    id INTEGER PRIMARY KEY,
    key TEXT NOT NULL UNIQUE,
    name TEXT NOT NULL,
    type TEXT,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL
);
CREATE TABLE entity_aliases (
    key TEXT PRIMARY KEY,
    alias TEXT NOT NULL,
    entity_id INTEGER NOT NULL REFERENCES entities (id),
    created_at TEXT NOT NULL
);
CREATE INDEX entity_aliases_entity ON entity_aliases (entity_id);
CREATE TABLE relationships (
    id INTEGER PRIMARY KEY,
    from_id INTEGER NOT NULL REFERENCES entities (id),
    type TEXT NOT NULL,
    to_id INTEGER NOT NULL REFERENCES entities (id),
    valid_at TEXT,
    invalid_at TEXT,
    created_at TEXT NOT NULL,
    superseded_at TEXT,
    reason TEXT,
    source TEXT,
    supersedes INTEGER REFERENCES relationships (id),
    CHECK (valid_at IS NULL OR invalid_at IS NULL OR valid_at < invalid_at),
    CHECK ((superseded_at IS NULL) = (reason IS NULL)),
    CHECK (superseded_at IS NULL OR superseded_at >= created_at)
);
CREATE UNIQUE INDEX relationships_one_current ON relationships (from_id, type, to_id)
    WHERE superseded_at IS NULL;
CREATE UNIQUE INDEX relationships_one_successor ON relationships (supersedes)
    WHERE supersedes IS NOT NULL;
CREATE INDEX relationships_from ON relationships (from_id, type);
CREATE INDEX relationships_to ON relationships (to_id);
CREATE INDEX relationships_source ON relationships (source) WHERE superseded_at IS NULL;
CREATE TRIGGER relationships_never_deleted BEFORE DELETE ON relationships BEGIN
    SELECT RAISE(ABORT, 'relationships are never deleted: retire them');
END;
CREATE TRIGGER relationships_retired_once BEFORE UPDATE ON relationships
WHEN old.superseded_at IS NOT NULL OR new.id IS NOT old.id OR new.from_id IS NOT old.from_id
    OR new.type IS NOT old.type OR new.to_id IS NOT old.to_id
    OR new.valid_at IS NOT old.valid_at OR new.invalid_at IS NOT old.invalid_at
    OR new.created_at IS NOT old.created_at OR new.source IS NOT old.source
    OR new.supersedes IS NOT old.supersedes
BEGIN
    SELECT RAISE(ABORT, 'a relationship version is immutable: only its retirement is recorded');
END;
CREATE TRIGGER entities_never_deleted BEFORE DELETE ON entities BEGIN
    SELECT RAISE(ABORT, 'entities are never deleted');
END;
CREATE TRIGGER entity_aliases_never_deleted BEFORE DELETE ON entity_aliases BEGIN
    SELECT RAISE(ABORT, 'entity aliases are never deleted');
END;
"""

# what each note states, so that a fact two notes state outlives either one.
STATEMENTS_MIGRATION = """
CREATE TABLE note_statements (
    document_id INTEGER NOT NULL REFERENCES documents (id),
    from_id INTEGER NOT NULL REFERENCES entities (id),
    type TEXT NOT NULL,
    to_id INTEGER NOT NULL REFERENCES entities (id),
    valid_at TEXT,
    invalid_at TEXT,
    PRIMARY KEY (document_id, from_id, type, to_id)
);
CREATE INDEX note_statements_triple ON note_statements (from_id, type, to_id);
"""


MIGRATIONS: tuple[tuple[int, str], ...] = (
    (
        1,
        """
        CREATE TABLE documents (
            id INTEGER PRIMARY KEY,
            uri TEXT NOT NULL UNIQUE,
            title TEXT NOT NULL,
            domain TEXT NOT NULL,
            kind TEXT NOT NULL,
            revision TEXT NOT NULL,
            content TEXT NOT NULL,
            metadata TEXT NOT NULL DEFAULT '{}',
            created_at TEXT NOT NULL,
            updated_at TEXT NOT NULL,
            deleted_at TEXT
        );
        CREATE INDEX documents_domain ON documents (domain);
        CREATE INDEX documents_updated ON documents (updated_at);

        CREATE TABLE document_revisions (
            id INTEGER PRIMARY KEY,
            document_id INTEGER NOT NULL REFERENCES documents (id),
            revision TEXT NOT NULL,
            title TEXT NOT NULL,
            event TEXT NOT NULL,
            recorded_at TEXT NOT NULL
        );
        CREATE INDEX document_revisions_doc ON document_revisions (document_id);

        CREATE TABLE chunks (
            id INTEGER PRIMARY KEY,
            document_id INTEGER NOT NULL REFERENCES documents (id),
            ordinal INTEGER NOT NULL,
            char_start INTEGER NOT NULL,
            char_end INTEGER NOT NULL,
            line_start INTEGER NOT NULL,
            line_end INTEGER NOT NULL,
            heading TEXT NOT NULL,
            text TEXT NOT NULL,
            unit TEXT,
            meta TEXT NOT NULL DEFAULT '{}',
            UNIQUE (document_id, ordinal)
        );

        CREATE VIRTUAL TABLE chunks_fts USING fts5 (
            text, heading,
            content = 'chunks', content_rowid = 'id',
            tokenize = 'porter unicode61 remove_diacritics 2'
        );
        CREATE TRIGGER chunks_fts_insert AFTER INSERT ON chunks BEGIN
            INSERT INTO chunks_fts (rowid, text, heading) VALUES (new.id, new.text, new.heading);
        END;
        CREATE TRIGGER chunks_fts_delete AFTER DELETE ON chunks BEGIN
            INSERT INTO chunks_fts (chunks_fts, rowid, text, heading)
            VALUES ('delete', old.id, old.text, old.heading);
        END;

        CREATE TABLE captures (
            id INTEGER PRIMARY KEY,
            at TEXT NOT NULL,
            operation TEXT NOT NULL,
            query TEXT NOT NULL,
            mode TEXT,
            filters TEXT NOT NULL,
            results TEXT NOT NULL,
            latency_ms REAL NOT NULL
        );
        """,
    ),
    (2, GRAPH_MIGRATION),
    (3, VECTORS_MIGRATION),
    (4, VECTORS_ROWID_MIGRATION),
    (
        5,
        # a random id, so that files kept beside the database (the vector cache) can tell
        # it from another database later created at the same path
        """
        CREATE TABLE store_identity (id TEXT NOT NULL);
        INSERT INTO store_identity VALUES (lower(hex(randomblob(16))));
        """,
    ),
    (6, VECTORS_COVERAGE_MIGRATION),
    (
        7,
        # the revision of each markdown note whose graph edges were written with it: a note
        # missing here, or at another revision, is re-synced by the next ingest-dir
        """
        CREATE TABLE note_edges (
            document_id INTEGER PRIMARY KEY REFERENCES documents (id),
            revision TEXT NOT NULL
        );
        """,
    ),
    (8, LEXICAL_MIGRATION),  # the analyzer's tokens (storage/analyzer.py), contentless FTS5
    (9, STATEMENTS_MIGRATION),
    # each chunk's near-duplicate signature (storage/signature.py), set by every write from
    # now on; a chunk stored before has none, and a search works its signature out from its text
    (10, "ALTER TABLE chunks ADD COLUMN signature INTEGER;"),
    # the named folders kept in sync (`sources add`, storage/sql/sources.py); their documents
    # are found by the root's prefix, so a source's row holds only itself and its last sync
    (
        11,
        """
        CREATE TABLE sources (
            name TEXT PRIMARY KEY,
            root TEXT NOT NULL UNIQUE,
            include TEXT NOT NULL DEFAULT '[]',
            exclude TEXT NOT NULL DEFAULT '[]',
            domain TEXT,
            created_at TEXT NOT NULL,
            synced_at TEXT,
            problems TEXT NOT NULL DEFAULT '[]'
        );
        """,
    ),
    # the brain's own settings: which model its search uses (brain/models.py)
    (12, "CREATE TABLE brain_settings (key TEXT PRIMARY KEY, value TEXT NOT NULL);"),
)

LATEST = max(version for version, _ in MIGRATIONS)
