-- memsql schema, version 5: namespaces enforced by Row Level Security for non-owner roles; finite half-lives.
-- Released files are never edited: add V0006__... instead.
--
-- Which namespaces a role may use is a row here, not a setting: a session cannot grant itself another
-- namespace (SET would). The policies themselves (one per table with a namespace column), the group role
-- memsql_namespace_user and its grants are made by memsql.namespace_rls_apply() in
-- sql/functions/90_roles.sql, which every `memsql init` runs again, so a table added by a later migration is
-- covered without editing this file. The owner of the tables (the role that runs `memsql init`) and
-- superusers are not subject to RLS: their plans, and so memory_search's speed, do not change.

CREATE TABLE memsql.role_namespaces (
    namespace   text NOT NULL CHECK (length(namespace) BETWEEN 1 AND 200),
    role_name   text NOT NULL CHECK (length(role_name) BETWEEN 1 AND 63),
    created_at  timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (namespace, role_name)
);
CREATE INDEX role_namespaces_role ON memsql.role_namespaces (role_name, namespace);
COMMENT ON TABLE memsql.role_namespaces IS
    'Namespaces each restricted role may read and write (Row Level Security on every table with a namespace '
    'column). Written by memsql.role_create / memsql.role_drop; a role reads only its own rows.';

ALTER TABLE memsql.role_namespaces ENABLE ROW LEVEL SECURITY;
CREATE POLICY own_rows ON memsql.role_namespaces FOR SELECT USING (role_name = current_user);

-- A half-life of NaN passed the V0001 check (NaN > 0 is true in PostgreSQL, which sorts NaN above every number)
-- and would make every score of its knowledge_type NaN; infinity means "never decays", which NULL already says.
ALTER TABLE memsql.knowledge_types ADD CONSTRAINT knowledge_types_half_life_finite
    CHECK (half_life_days IS NULL OR half_life_days < 'Infinity'::double precision);
