-- memsql schema: lookups of the ingest write path. Released files are never edited.
--
-- documents by content hash: a new document whose content is already stored under another source key (the same
-- file at a second path) is reported instead of written twice.
CREATE INDEX documents_content_hash ON memsql.documents (namespace, content_hash);

-- closed versions by content hash: memory_add of a text that was superseded finds the chain it belongs to and
-- returns the current version (few rows: only closed versions are indexed).
CREATE INDEX memories_closed_content_hash ON memsql.memories (namespace, content_hash) WHERE valid_to IS NOT NULL;
