-- memsql schema, version 19: the knowledge type 'decision' (what a project decided, read back by memory_context
-- with the principles). Released files are never edited: add a later version instead.

INSERT INTO memsql.knowledge_types (name, half_life_days, description)
VALUES ('decision', NULL, 'Decisions a project made (architecture, conventions); never decays.')
ON CONFLICT (name) DO NOTHING;
