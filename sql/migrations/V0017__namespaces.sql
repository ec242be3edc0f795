-- memsql schema, version 17: row types of the namespace verbs (sql/functions/56_namespaces.sql): list, rename,
-- drop, export and import a namespace. Released files are never edited: add a later version instead.
-- (A RETURNS TABLE column may not share an argument's name, and these rows carry a namespace column.)

CREATE TYPE memsql.namespace_info AS (
    namespace    text,
    documents    bigint,
    memories     bigint,
    superseded   bigint,
    archived     bigint,
    last_write   timestamptz
);
COMMENT ON TYPE memsql.namespace_info IS
    'Row of namespace_list: a namespace with its documents, current memories, superseded versions, archived '
    'memories and the time a document of it was last written.';

CREATE TYPE memsql.namespace_change AS (
    namespace  text,
    item       text,
    count      bigint,
    applied    boolean
);
COMMENT ON TYPE memsql.namespace_change IS
    'Row of namespace_rename, namespace_drop and namespace_import: how many rows of one kind (documents, memories, '
    'archive, ...) the verb moves, deletes or writes in a namespace, and whether it did (false = dry run).';
