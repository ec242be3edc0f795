-- Namespaces as a whole: list them with counts, rename one, drop one (dry run first), export one as JSON lines and
-- import such an export into another namespace, database or server. CREATE OR REPLACE only.
--
-- An export is self-contained: a header line (format, version, namespace, embedding model and dimension, whether
-- vectors are included), the knowledge types it uses, its documents, its memories (every version, with access
-- statistics and, optionally, the embedding), its archive, and an end line with the counts. Rows are written as
-- to_jsonb of the table row (the namespace left out), so a column added by a later migration travels without a
-- change here; an import writes the columns a line carries and leaves the others to their defaults. Ids are kept:
-- an import goes into a namespace that holds nothing yet, where no id can collide (every key includes namespace),
-- so memory ids, superseded_by chains and archived ids mean the same after the move.

-- ---------------------------------------------------------------------------------------------
-- namespace_list

CREATE OR REPLACE FUNCTION memsql.namespace_list(namespace text DEFAULT NULL)
RETURNS SETOF memsql.namespace_info
LANGUAGE plpgsql STABLE
SET search_path FROM CURRENT
AS $$
DECLARE
    ns  text := namespace_list.namespace;
BEGIN
    RETURN QUERY
    WITH d AS (SELECT d.namespace, count(*) AS n, max(d.updated_at) AS last_write
               FROM memsql.documents d WHERE ns IS NULL OR d.namespace = ns GROUP BY d.namespace),
         m AS (SELECT m.namespace, count(*) AS n FROM memsql.memories m
               WHERE ns IS NULL OR m.namespace = ns GROUP BY m.namespace),
         s AS (SELECT m.namespace, count(*) AS n FROM memsql.memories m
               WHERE m.valid_to IS NOT NULL AND (ns IS NULL OR m.namespace = ns) GROUP BY m.namespace),
         a AS (SELECT a.namespace, count(*) AS n, max(a.archived_at) AS last_write
               FROM memsql.archive a WHERE ns IS NULL OR a.namespace = ns GROUP BY a.namespace)
    SELECT x.namespace, coalesce(d.n, 0), coalesce(m.n, 0) - coalesce(s.n, 0), coalesce(s.n, 0), coalesce(a.n, 0),
           greatest(d.last_write, a.last_write)
    FROM (SELECT d.namespace FROM d UNION SELECT a.namespace FROM a) x
    LEFT JOIN d ON d.namespace = x.namespace
    LEFT JOIN m ON m.namespace = x.namespace
    LEFT JOIN s ON s.namespace = x.namespace
    LEFT JOIN a ON a.namespace = x.namespace
    ORDER BY x.namespace;
END
$$;
COMMENT ON FUNCTION memsql.namespace_list(text) IS
$c$The namespaces that hold something (a document or an archived memory), with their counts.
Args: namespace text (NULL = every namespace): only this one (no row when it holds nothing).
Returns (namespace, documents, memories, superseded, archived, last_write) ordered by namespace: memories counts
  current versions, superseded the older versions kept as history, archived the rows forgetting moved to
  memsql.archive; last_write the latest documents.updated_at or archive.archived_at.
Errors: none. Source: sql/functions/56_namespaces.sql.$c$;

-- ---------------------------------------------------------------------------------------------
-- helpers: the columns of a table (for copies that survive added columns), the namespace guard

CREATE OR REPLACE FUNCTION memsql.namespace_columns(tbl regclass, skip text[] DEFAULT '{}')
RETURNS text[]
LANGUAGE sql STABLE
SET search_path FROM CURRENT
AS $$
    SELECT coalesce(pg_catalog.array_agg(a.attname::text ORDER BY a.attnum), '{}')
    FROM pg_catalog.pg_attribute a
    WHERE a.attrelid = tbl AND a.attnum > 0 AND NOT a.attisdropped AND a.attgenerated = ''
      AND a.attname <> 'namespace' AND a.attname <> ALL (skip)
$$;
COMMENT ON FUNCTION memsql.namespace_columns(regclass, text[]) IS
$c$The columns of a memsql table a namespace copy writes: every column but namespace, generated ones and skip, in
table order. Internal helper of namespace_rename and namespace_import. Args: tbl regclass, skip text[] ('{}').
Returns text[]. Errors: none. Source: sql/functions/56_namespaces.sql.$c$;

CREATE OR REPLACE FUNCTION memsql.namespace_check(fn text, namespace text) RETURNS void
LANGUAGE plpgsql STABLE
SET search_path FROM CURRENT
AS $$
BEGIN
    IF namespace IS NULL OR length(namespace) NOT BETWEEN 1 AND 200 THEN
        PERFORM memsql.raise_invalid(pg_catalog.format('%s: a namespace is 1 to 200 characters, got %s', fn,
                                            coalesce(quote_literal(namespace), 'NULL')),
                                     'SELECT namespace FROM memsql.namespace_list() lists the namespaces.');
    END IF;
END
$$;
COMMENT ON FUNCTION memsql.namespace_check(text, text) IS
$c$Raises MS002 unless namespace is a valid namespace name (1..200 characters). Internal helper of the namespace
verbs. Args: fn text (the verb named in the message), namespace text. Returns void. Errors: MS002.
Source: sql/functions/56_namespaces.sql.$c$;

CREATE OR REPLACE FUNCTION memsql.namespace_holds(namespace text) RETURNS boolean
LANGUAGE sql STABLE
SET search_path FROM CURRENT
AS $$
    SELECT EXISTS (SELECT 1 FROM memsql.documents d WHERE d.namespace = namespace_holds.namespace)
        OR EXISTS (SELECT 1 FROM memsql.archive a WHERE a.namespace = namespace_holds.namespace)
$$;
COMMENT ON FUNCTION memsql.namespace_holds(text) IS
$c$Whether a namespace holds anything: a document (and so its memories) or an archived memory.
Args: namespace text. Returns boolean. Errors: none. Source: sql/functions/56_namespaces.sql.$c$;

-- ---------------------------------------------------------------------------------------------
-- namespace_rename

CREATE OR REPLACE FUNCTION memsql.namespace_rename(namespace text, new_name text)
RETURNS SETOF memsql.namespace_change
LANGUAGE plpgsql VOLATILE
SET search_path FROM CURRENT
AS $$
DECLARE
    old   text := namespace_rename.namespace;
    new   text := namespace_rename.new_name;
    cols  text;
    n     bigint;
BEGIN
    PERFORM memsql.namespace_check('namespace_rename', old);
    PERFORM memsql.namespace_check('namespace_rename', new);
    IF old = new THEN
        PERFORM memsql.raise_invalid(pg_catalog.format('namespace_rename: the new name equals the old one (%L)', old),
                                     'Pass another new_name.');
    END IF;
    -- no write of any namespace may slip between the copy and the delete (it would be deleted uncopied)
    LOCK TABLE memsql.documents, memsql.memories, memsql.archive IN SHARE ROW EXCLUSIVE MODE;
    IF NOT memsql.namespace_holds(old) THEN
        RAISE EXCEPTION 'namespace_rename: namespace % holds nothing', quote_literal(old)
            USING ERRCODE = 'MS004', HINT = 'SELECT * FROM memsql.namespace_list() lists the namespaces.';
    END IF;
    IF memsql.namespace_holds(new) THEN
        PERFORM memsql.raise_invalid(pg_catalog.format('namespace_rename: namespace %L already holds memories', new),
                                     'Pick a new name, or drop that namespace first (namespace_drop).');
    END IF;
    -- memories are immutable in place (content and namespace): the rows move by copy and delete, ids kept
    cols := (SELECT string_agg(quote_ident(c), ', ') FROM pg_catalog.unnest(memsql.namespace_columns('memsql.documents')) c);
    EXECUTE pg_catalog.format('INSERT INTO memsql.documents (namespace, %s) SELECT $1, %s FROM memsql.documents '
                   'WHERE namespace = $2 ORDER BY id', cols, cols) USING new, old;
    GET DIAGNOSTICS n = ROW_COUNT;
    RETURN NEXT ROW(new, 'documents', n, true)::memsql.namespace_change;
    cols := (SELECT string_agg(quote_ident(c), ', ')
             FROM pg_catalog.unnest(memsql.namespace_columns('memsql.memories', ARRAY['tsv', 'tsv_len'])) c);
    EXECUTE pg_catalog.format('INSERT INTO memsql.memories (namespace, %s) SELECT $1, %s FROM memsql.memories '
                   'WHERE namespace = $2 ORDER BY id', cols, cols) USING new, old;
    GET DIAGNOSTICS n = ROW_COUNT;
    RETURN NEXT ROW(new, 'memories', n, true)::memsql.namespace_change;
    INSERT INTO memsql.memory_access (namespace, memory_id, access_count, last_accessed_at)
    SELECT new, a.memory_id, a.access_count, a.last_accessed_at FROM memsql.memory_access a WHERE a.namespace = old;
    INSERT INTO memsql.memory_windows AS w (namespace, memory_id, embeddings)   -- the copies' rows came pending
    SELECT new, x.memory_id, x.embeddings FROM memsql.memory_windows x WHERE x.namespace = old ORDER BY x.memory_id
    ON CONFLICT ON CONSTRAINT memory_windows_pkey DO UPDATE SET embeddings = excluded.embeddings;
    DELETE FROM memsql.documents d WHERE d.namespace = old;   -- cascades to memories, memory_access, memory_windows
    UPDATE memsql.archive a SET namespace = new WHERE a.namespace = old;
    GET DIAGNOSTICS n = ROW_COUNT;
    RETURN NEXT ROW(new, 'archive', n, true)::memsql.namespace_change;
    INSERT INTO memsql.role_namespaces (namespace, role_name, created_at)
    SELECT new, r.role_name, r.created_at FROM memsql.role_namespaces r WHERE r.namespace = old
    ON CONFLICT DO NOTHING;
    DELETE FROM memsql.role_namespaces r WHERE r.namespace = old;
    GET DIAGNOSTICS n = ROW_COUNT;
    RETURN NEXT ROW(new, 'role_grants', n, true)::memsql.namespace_change;
    DELETE FROM memsql.namespace_stats s WHERE s.namespace = old AND s.doc_count = 0;
END
$$;
COMMENT ON FUNCTION memsql.namespace_rename(text, text) IS
$c$Renames a namespace: its documents, memories (every version, ids kept), access statistics, window embeddings,
archive and the role grants of memsql.role_namespaces move to new_name. Writes to memsql.documents, memories and
archive wait until it commits (a lock taken for the move); searches go on.
Args: namespace text (the current name), new_name text (1..200 characters, holding nothing yet).
Returns (namespace, item, count, applied) rows for documents, memories, archive and role_grants, namespace = new_name.
Errors: MS002 bad name, same name, or new_name already holds memories; MS004 namespace holds nothing.
Source: sql/functions/56_namespaces.sql.$c$;

-- ---------------------------------------------------------------------------------------------
-- namespace_drop

CREATE OR REPLACE FUNCTION memsql.namespace_drop(namespace text, dry_run boolean DEFAULT true,
                                                 confirm text DEFAULT NULL)
RETURNS SETOF memsql.namespace_change
LANGUAGE plpgsql VOLATILE
SET search_path FROM CURRENT
AS $$
DECLARE
    ns     text := namespace_drop.namespace;
    apply  boolean := NOT coalesce(namespace_drop.dry_run, true);
    nd     bigint;
    nm     bigint;
    na     bigint;
BEGIN
    PERFORM memsql.namespace_check('namespace_drop', ns);
    IF apply AND confirm IS DISTINCT FROM ns THEN
        PERFORM memsql.raise_invalid(
            pg_catalog.format('namespace_drop: dropping namespace %L needs confirm => %L (got %s)', ns, ns,
                   coalesce(quote_literal(confirm), 'NULL')),
            'Run it first as a dry run (the default) to see what goes; then pass dry_run => false, confirm => the name.');
    END IF;
    PERFORM pg_advisory_xact_lock(hashtextextended('memsql namespace ' || ns, 0));
    IF NOT memsql.namespace_holds(ns) THEN
        RAISE EXCEPTION 'namespace_drop: namespace % holds nothing', quote_literal(ns)
            USING ERRCODE = 'MS004', HINT = 'SELECT * FROM memsql.namespace_list() lists the namespaces.';
    END IF;
    SELECT count(*) INTO nd FROM memsql.documents d WHERE d.namespace = ns;
    SELECT count(*) INTO nm FROM memsql.memories m WHERE m.namespace = ns;
    SELECT count(*) INTO na FROM memsql.archive a WHERE a.namespace = ns;
    IF apply THEN
        DELETE FROM memsql.documents d WHERE d.namespace = ns;   -- cascades to memories and memory_access
        GET DIAGNOSTICS nd = ROW_COUNT;
        DELETE FROM memsql.archive a WHERE a.namespace = ns;
        GET DIAGNOSTICS na = ROW_COUNT;
        DELETE FROM memsql.namespace_stats s WHERE s.namespace = ns AND s.doc_count = 0;
    END IF;
    RETURN NEXT ROW(ns, 'documents', nd, apply)::memsql.namespace_change;
    RETURN NEXT ROW(ns, 'memories', nm, apply)::memsql.namespace_change;
    RETURN NEXT ROW(ns, 'archive', na, apply)::memsql.namespace_change;
END
$$;
COMMENT ON FUNCTION memsql.namespace_drop(text, boolean, text) IS
$c$Deletes a namespace: its documents, memories (every version), access statistics and archived memories; not
restorable (export it first: namespace_export). Role grants (memsql.role_namespaces) stay.
Args: namespace text; dry_run boolean (true): count only; confirm text (NULL): must equal namespace when dry_run is
  false.
Returns (namespace, item, count, applied) rows for documents, memories and archive; applied false in a dry run.
Errors: MS002 bad name, or dry_run false without confirm equal to the namespace; MS004 namespace holds nothing.
Source: sql/functions/56_namespaces.sql.$c$;

-- ---------------------------------------------------------------------------------------------
-- namespace_export

CREATE OR REPLACE FUNCTION memsql.namespace_export(namespace text, vectors boolean DEFAULT false)
RETURNS SETOF jsonb
LANGUAGE plpgsql STABLE
SET search_path FROM CURRENT
AS $$
DECLARE
    ns   text := namespace_export.namespace;
    nd   bigint;
    nm   bigint;
    na   bigint;
BEGIN
    PERFORM memsql.namespace_check('namespace_export', ns);
    IF NOT memsql.namespace_holds(ns) THEN
        RAISE EXCEPTION 'namespace_export: namespace % holds nothing', quote_literal(ns)
            USING ERRCODE = 'MS004', HINT = 'SELECT * FROM memsql.namespace_list() lists the namespaces.';
    END IF;
    RETURN NEXT pg_catalog.jsonb_build_object(
        'kind', 'header', 'format', 'memsql-namespace', 'version', 1, 'namespace', ns, 'exported_at', now(),
        'embedding_model', (SELECT s.value FROM memsql.settings s WHERE s.key = 'embedding_model'),
        'embedding_dimension', (SELECT s.value::integer FROM memsql.settings s WHERE s.key = 'embedding_dimension'),
        'vectors', coalesce(vectors, false));
    RETURN QUERY
    SELECT pg_catalog.jsonb_build_object('kind', 'knowledge_type') || pg_catalog.to_jsonb(k)
    FROM memsql.knowledge_types k
    WHERE k.name IN (SELECT d.knowledge_type FROM memsql.documents d WHERE d.namespace = ns
                     UNION SELECT m.knowledge_type FROM memsql.memories m WHERE m.namespace = ns
                     UNION SELECT a.knowledge_type FROM memsql.archive a WHERE a.namespace = ns)
    ORDER BY k.name;
    RETURN QUERY
    SELECT pg_catalog.jsonb_build_object('kind', 'document') || (pg_catalog.to_jsonb(d) - 'namespace')
    FROM memsql.documents d WHERE d.namespace = ns ORDER BY d.id;
    GET DIAGNOSTICS nd = ROW_COUNT;
    RETURN QUERY
    SELECT pg_catalog.jsonb_build_object('kind', 'memory')
           || (pg_catalog.to_jsonb(m) - ARRAY['namespace', 'tsv', 'tsv_len', CASE WHEN vectors THEN '' ELSE 'embedding' END])
           || pg_catalog.jsonb_build_object('access_count', coalesce(x.access_count, 0), 'last_accessed_at', x.last_accessed_at)
    FROM memsql.memories m
    LEFT JOIN memsql.memory_access x ON x.namespace = m.namespace AND x.memory_id = m.id
    WHERE m.namespace = ns ORDER BY m.id;
    GET DIAGNOSTICS nm = ROW_COUNT;
    RETURN QUERY
    SELECT pg_catalog.jsonb_build_object('kind', 'archive') || (pg_catalog.to_jsonb(a) - 'namespace')
    FROM memsql.archive a WHERE a.namespace = ns ORDER BY a.id;
    GET DIAGNOSTICS na = ROW_COUNT;
    RETURN NEXT pg_catalog.jsonb_build_object('kind', 'end', 'documents', nd, 'memories', nm, 'archive', na);
END
$$;
COMMENT ON FUNCTION memsql.namespace_export(text, boolean) IS
$c$A namespace as JSON lines, one jsonb value per line, in this order: a header {kind 'header', format
'memsql-namespace', version 1, namespace, exported_at, embedding_model, embedding_dimension, vectors}; one
{kind 'knowledge_type', name, half_life_days, description} per type it uses; its documents {kind 'document', id,
source_key, ..., metadata, tags}; its memories {kind 'memory', id, document_id, chunk_index, content, knowledge_type,
importance, tags, topics, metadata, ts_config, valid_to, superseded_by, ..., access_count, last_accessed_at[,
embedding]}, every version; its archive {kind 'archive', ...}; last {kind 'end', documents, memories, archive}
(the counts: a file without it is cut short). Each row is to_jsonb of its table row without namespace (and the
memories' tsv, tsv_len), ordered by id; one snapshot.
Args: namespace text; vectors boolean (false): include each memory's embedding (a vector literal string; without
  it the importing side embeds the memories again).
Returns SETOF jsonb; from psql: psql -Atc "SELECT memsql.namespace_export('notes')" > notes.jsonl.
Errors: MS002 bad name; MS004 namespace holds nothing. Source: sql/functions/56_namespaces.sql.$c$;

-- ---------------------------------------------------------------------------------------------
-- namespace_import

CREATE OR REPLACE FUNCTION memsql.namespace_import_rows(ns text, tbl regclass, kind text, items jsonb,
                                                       first_line bigint, extra text[] DEFAULT '{}')
RETURNS bigint
LANGUAGE plpgsql VOLATILE
SET search_path FROM CURRENT
AS $$
DECLARE
    allowed  text[] := memsql.namespace_columns(tbl, ARRAY['tsv', 'tsv_len']);
    keys     text[];
    bad      record;
    cols     text;
    n        bigint;
BEGIN
    IF items IS NULL OR jsonb_array_length(items) = 0 THEN
        RETURN 0;
    END IF;
    SELECT i.line, k.key INTO bad
    FROM jsonb_array_elements(items) e(item)
    CROSS JOIN LATERAL (SELECT (e.item->>'line')::bigint AS line) i
    CROSS JOIN LATERAL jsonb_object_keys(e.item->'row') k(key)
    WHERE k.key <> ALL (allowed || extra)
    ORDER BY i.line LIMIT 1;
    IF FOUND THEN
        PERFORM memsql.raise_invalid(
            pg_catalog.format('namespace_import: line %s: a %s has key %L, which memsql.%s of this database does not have',
                   bad.line, kind, bad.key, tbl),
            'Upgrade this database to the exporting one''s version (memsql init), or remove the key.');
    END IF;
    keys := ARRAY(SELECT DISTINCT k.key FROM jsonb_array_elements(items) e(item)
                  CROSS JOIN LATERAL jsonb_object_keys(e.item->'row') k(key)
                  WHERE k.key = ANY (allowed) ORDER BY 1);
    cols := (SELECT string_agg(quote_ident(c), ', ') FROM pg_catalog.unnest(keys) c);
    EXECUTE pg_catalog.format('INSERT INTO %s (namespace, %s) SELECT $1, %s FROM pg_catalog.jsonb_populate_recordset(NULL::%s, '
                   '(SELECT pg_catalog.jsonb_agg(e->''row'' ORDER BY (e->>''line'')::bigint) FROM jsonb_array_elements($2) e))',
                   tbl, cols, cols, tbl) USING ns, items;
    GET DIAGNOSTICS n = ROW_COUNT;
    RETURN n;
END
$$;
COMMENT ON FUNCTION memsql.namespace_import_rows(text, regclass, text, jsonb, bigint, text[]) IS
$c$Writes the rows of one kind of an import batch into a memsql table, namespace set to ns: the columns the lines
carry (the others take their defaults). Internal helper of namespace_import.
Args: ns text, tbl regclass, kind text (for messages), items jsonb (an array of {line, row}), first_line bigint,
  extra text[] ('{}'): keys allowed besides the table's columns (and left out of the insert).
Returns bigint (rows written). Errors: MS002 a key that is no column of tbl (line named).
Source: sql/functions/56_namespaces.sql.$c$;

CREATE OR REPLACE FUNCTION memsql.namespace_import(lines text[], namespace text DEFAULT NULL,
                                                   first_line bigint DEFAULT 1)
RETURNS SETOF memsql.namespace_change
LANGUAGE plpgsql VOLATILE
SET search_path FROM CURRENT
AS $$
DECLARE
    ns      text;
    start   bigint := coalesce(namespace_import.first_line, 1);
    items   jsonb;
    bad     record;
    head    jsonb;
    tail    jsonb;
    n       bigint;
    seq     regclass;
    top     bigint;
BEGIN
    SELECT start + u.i - 1 AS line INTO bad FROM pg_catalog.unnest(lines) WITH ORDINALITY u(l, i)
    WHERE btrim(u.l) <> '' AND (NOT pg_input_is_valid(u.l, 'jsonb') OR jsonb_typeof(u.l::jsonb) <> 'object'
                                OR (u.l::jsonb->>'kind') IS NULL)
    ORDER BY u.i LIMIT 1;
    IF FOUND THEN
        PERFORM memsql.raise_invalid(pg_catalog.format('namespace_import: line %s is not a JSON object with a kind', bad.line),
                                     'Import a file written by namespace_export (memsql namespace export).');
    END IF;
    items := (SELECT coalesce(pg_catalog.jsonb_agg(pg_catalog.jsonb_build_object('line', start + u.i - 1, 'kind', u.l::jsonb->>'kind',
                                                           'row', u.l::jsonb - 'kind') ORDER BY u.i), '[]')
              FROM pg_catalog.unnest(lines) WITH ORDINALITY u(l, i) WHERE btrim(u.l) <> '');
    SELECT e->>'line' AS line, e->>'kind' AS kind INTO bad FROM jsonb_array_elements(items) e
    WHERE e->>'kind' NOT IN ('header', 'knowledge_type', 'document', 'memory', 'archive', 'end')
       OR (e->>'kind' = 'header' AND (e->>'line')::bigint <> 1)
    ORDER BY (e->>'line')::bigint LIMIT 1;
    IF FOUND THEN
        PERFORM memsql.raise_invalid(pg_catalog.format('namespace_import: line %s: %s', bad.line,
                                            CASE WHEN bad.kind = 'header' THEN 'a header after line 1'
                                                 ELSE pg_catalog.format('unknown kind %L', bad.kind) END),
                                     'Import a file written by namespace_export (memsql namespace export).');
    END IF;
    IF start = 1 THEN
        head := (SELECT e->'row' FROM jsonb_array_elements(items) e WHERE (e->>'line')::bigint = 1 AND e->>'kind' = 'header');
        IF head IS NULL OR head->>'format' IS DISTINCT FROM 'memsql-namespace' THEN
            PERFORM memsql.raise_invalid('namespace_import: line 1 is no memsql namespace export header',
                                         'Import a file written by namespace_export (memsql namespace export).');
        END IF;
    END IF;
    ns := coalesce(namespace_import.namespace, head->>'namespace');
    IF ns IS NULL THEN
        PERFORM memsql.raise_invalid('namespace_import: no namespace given (only the first batch, with the header, '
                                     'may leave it to the export)', 'Pass namespace => the target namespace.');
    END IF;
    PERFORM memsql.namespace_check('namespace_import', ns);
    PERFORM pg_advisory_xact_lock(hashtextextended('memsql namespace ' || ns, 0));
    IF start = 1 THEN
        IF (head->>'version')::integer IS DISTINCT FROM 1 THEN
            PERFORM memsql.raise_invalid(pg_catalog.format('namespace_import: export format version %s; this database reads '
                                                'version 1', head->>'version'), 'Upgrade memsql (memsql init).');
        END IF;
        IF coalesce((head->>'vectors')::boolean, false) AND (
               (head->>'embedding_dimension')::integer IS DISTINCT FROM
                   (SELECT s.value::integer FROM memsql.settings s WHERE s.key = 'embedding_dimension')
            OR head->>'embedding_model' IS DISTINCT FROM
                   (SELECT s.value FROM memsql.settings s WHERE s.key = 'embedding_model')) THEN
            RAISE EXCEPTION 'namespace_import: the export''s vectors are from % (%), this database embeds with % (%)',
                head->>'embedding_model', head->>'embedding_dimension',
                (SELECT s.value FROM memsql.settings s WHERE s.key = 'embedding_model'),
                (SELECT s.value FROM memsql.settings s WHERE s.key = 'embedding_dimension')
                USING ERRCODE = 'MS005', HINT = 'Export without vectors: the importing side embeds the memories again.';
        END IF;
        IF memsql.namespace_holds(ns) THEN
            PERFORM memsql.raise_invalid(pg_catalog.format('namespace_import: namespace %L already holds memories', ns),
                                         'Import into a new namespace, or drop this one first (namespace_drop).');
        END IF;
    END IF;
    INSERT INTO memsql.knowledge_types AS k (name, half_life_days, description)
    SELECT e->'row'->>'name', (e->'row'->>'half_life_days')::double precision, coalesce(e->'row'->>'description', '')
    FROM jsonb_array_elements(items) e WHERE e->>'kind' = 'knowledge_type'
    ON CONFLICT (name) DO NOTHING;   -- a type the database has keeps its own half-life
    GET DIAGNOSTICS n = ROW_COUNT;
    RETURN NEXT ROW(ns, 'knowledge_types', n, true)::memsql.namespace_change;
    n := memsql.namespace_import_rows(ns, 'memsql.documents', 'document',
            (SELECT pg_catalog.jsonb_agg(e) FROM jsonb_array_elements(items) e WHERE e->>'kind' = 'document'), start);
    RETURN NEXT ROW(ns, 'documents', n, true)::memsql.namespace_change;
    n := memsql.namespace_import_rows(ns, 'memsql.memories', 'memory',
            (SELECT pg_catalog.jsonb_agg(jsonb_set(e, '{row}', (e->'row') - 'access_count' - 'last_accessed_at'))
             FROM jsonb_array_elements(items) e WHERE e->>'kind' = 'memory'), start);
    RETURN NEXT ROW(ns, 'memories', n, true)::memsql.namespace_change;
    INSERT INTO memsql.memory_access (namespace, memory_id, access_count, last_accessed_at)
    SELECT ns, (e->'row'->>'id')::bigint, coalesce((e->'row'->>'access_count')::bigint, 0),
           (e->'row'->>'last_accessed_at')::timestamptz
    FROM jsonb_array_elements(items) e
    WHERE e->>'kind' = 'memory'
      AND (coalesce((e->'row'->>'access_count')::bigint, 0) > 0 OR e->'row'->>'last_accessed_at' IS NOT NULL);
    n := memsql.namespace_import_rows(ns, 'memsql.archive', 'archive',
            (SELECT pg_catalog.jsonb_agg(e) FROM jsonb_array_elements(items) e WHERE e->>'kind' = 'archive'), start);
    RETURN NEXT ROW(ns, 'archive', n, true)::memsql.namespace_change;
    tail := (SELECT e FROM jsonb_array_elements(items) e WHERE e->>'kind' = 'end');
    IF tail IS NOT NULL THEN
        IF (tail->>'line')::bigint <> (SELECT max((e->>'line')::bigint) FROM jsonb_array_elements(items) e) THEN
            PERFORM memsql.raise_invalid(pg_catalog.format('namespace_import: line %s: lines after the end line', tail->>'line'),
                                         'Import a file written by namespace_export (memsql namespace export).');
        END IF;
        tail := tail->'row';
        IF (tail->>'documents')::bigint IS DISTINCT FROM (SELECT count(*) FROM memsql.documents d WHERE d.namespace = ns)
           OR (tail->>'memories')::bigint IS DISTINCT FROM (SELECT count(*) FROM memsql.memories m WHERE m.namespace = ns)
           OR (tail->>'archive')::bigint IS DISTINCT FROM (SELECT count(*) FROM memsql.archive a WHERE a.namespace = ns) THEN
            PERFORM memsql.raise_invalid(
                pg_catalog.format('namespace_import: the end line counts %s documents, %s memories, %s archived; the import '
                       'wrote %s, %s, %s', tail->>'documents', tail->>'memories', tail->>'archive',
                       (SELECT count(*) FROM memsql.documents d WHERE d.namespace = ns),
                       (SELECT count(*) FROM memsql.memories m WHERE m.namespace = ns),
                       (SELECT count(*) FROM memsql.archive a WHERE a.namespace = ns)),
                'Import the whole file, in one transaction, into a namespace that holds nothing.');
        END IF;
        -- ids were kept: the identity sequences must not hand them out again
        seq := pg_get_serial_sequence('memsql.documents', 'id')::regclass;
        top := (SELECT max(d.id) FROM memsql.documents d WHERE d.namespace = ns);
        IF top > coalesce(pg_sequence_last_value(seq), 0) THEN
            PERFORM setval(seq, top);
        END IF;
        seq := pg_get_serial_sequence('memsql.memories', 'id')::regclass;
        top := greatest((SELECT max(m.id) FROM memsql.memories m WHERE m.namespace = ns),
                        (SELECT max(a.id) FROM memsql.archive a WHERE a.namespace = ns));
        IF top > coalesce(pg_sequence_last_value(seq), 0) THEN
            PERFORM setval(seq, top);
        END IF;
        RETURN NEXT ROW(ns, 'end', 1, true)::memsql.namespace_change;
    END IF;
END
$$;
COMMENT ON FUNCTION memsql.namespace_import(text[], text, bigint) IS
$c$Writes a batch of lines of a namespace export (namespace_export) into a namespace. Call it with consecutive
batches in one transaction, the first starting at line 1 (the header): the header is checked (format, version, and
with vectors the embedding model and dimension), the namespace must hold nothing yet, knowledge types missing here
are added (existing ones keep their half-life), documents, memories (ids, versions, access statistics kept),
archive rows are written with the columns they carry; the end line's counts are checked against what the namespace
holds, and the id sequences moved past the imported ids. A file without its end line (cut short) writes nothing
when the caller checks for the 'end' row before committing (memsql's clients do). Memories exported without
vectors are written without an embedding: the embedding worker (or Memory.embed_pending) embeds them.
Args: lines text[] (blank lines skipped); namespace text (NULL = the namespace the header names, first batch only):
  the target; first_line bigint (1): the line number of lines[1] in the file, for messages and the header check.
Returns (namespace, item, count, applied) rows for knowledge_types, documents, memories and archive written by this
  batch, and ('end', 1) when the batch held the end line.
Errors: MS002 a line that is not a JSON object with a kind, a header missing or misplaced, an unknown kind or
  column, a namespace that already holds memories, end counts that differ; MS005 vectors of another model;
  23xxx a row the schema refuses. Source: sql/functions/56_namespaces.sql.$c$;
