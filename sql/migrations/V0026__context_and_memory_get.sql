-- memsql schema, version 26: what the Claude Code plugin and agents need.
-- The knowledge type 'decision' (what a project decided, read back by memory_context with the principles), and
-- memory_get serving agents as well as the web page: memories by id (an array), each text cut at max_chars, with
-- the whole text's length (chars) and whether it was cut (truncated).
-- Released files are never edited: add a later version instead.

INSERT INTO memsql.knowledge_types (name, half_life_days, description)
VALUES ('decision', NULL, 'Decisions a project made (architecture, conventions); never decays.')
ON CONFLICT (name) DO NOTHING;

ALTER TYPE memsql.memory_record ADD ATTRIBUTE chars integer, ADD ATTRIBUTE truncated boolean;
COMMENT ON TYPE memsql.memory_record IS
    'Row of memory_get: one memory (live, superseded or archived) with its access statistics and its document '
    '(source_uri, title, adapter, tags, current chunks); content cut at max_chars (chars = whole length, truncated).';
