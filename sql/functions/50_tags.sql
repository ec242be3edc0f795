-- Tags: memory_tag (importance, knowledge_type and tags of a memory or a document) and find_by_tag.
-- CREATE OR REPLACE only.

-- ---------------------------------------------------------------------------------------------
-- Helpers

CREATE OR REPLACE FUNCTION memsql.tags_edit(current_tags text[], tags text[], add_tags text[], remove_tags text[])
RETURNS text[]
LANGUAGE sql IMMUTABLE PARALLEL SAFE
SET search_path FROM CURRENT
RETURN (
    SELECT coalesce(pg_catalog.array_agg(s.t ORDER BY s.ord), '{}')
    FROM (
        SELECT u.t, min(u.ord) AS ord
        FROM pg_catalog.unnest(coalesce(tags_edit.tags, tags_edit.current_tags, '{}') || coalesce(tags_edit.add_tags, '{}'))
             WITH ORDINALITY AS u(t, ord)
        WHERE u.t IS NOT NULL AND NOT (u.t = ANY (coalesce(tags_edit.remove_tags, '{}')))
        GROUP BY u.t
    ) s
);
COMMENT ON FUNCTION memsql.tags_edit(text[], text[], text[], text[]) IS
$c$Edits a tag list: start from tags (replace) or else current_tags, append add_tags, drop remove_tags.
Args: current_tags text[], tags text[] (NULL = keep current), add_tags text[], remove_tags text[] (NULL = none).
Returns text[]: distinct tags in first-seen order, NULL elements dropped; '{}' when nothing is left. Internal helper
of memory_tag. Source: sql/functions/50_tags.sql.$c$;

CREATE OR REPLACE FUNCTION memsql.check_tag_list(fn text, arg text, tags text[]) RETURNS void
LANGUAGE plpgsql IMMUTABLE
SET search_path FROM CURRENT AS $$
BEGIN
    IF tags IS NOT NULL AND (pg_catalog.array_position(tags, NULL) IS NOT NULL OR '' = ANY (tags)) THEN
        PERFORM memsql.raise_invalid(pg_catalog.format('%s: %s holds a NULL or empty tag', fn, arg),
                                     'Tags are non-empty strings, e.g. ARRAY[''project-x'', ''todo''].');
    END IF;
    IF tags IS NOT NULL AND EXISTS (SELECT 1 FROM pg_catalog.unnest(tags) AS t WHERE length(t) > 500) THEN
        PERFORM memsql.raise_invalid(pg_catalog.format('%s: %s holds a tag of %s characters; a tag holds at most 500', fn, arg,
                                            (SELECT max(length(t)) FROM pg_catalog.unnest(tags) AS t)),
                                     'A tag is a short label, e.g. ''project-x''; put long text in the content.');
    END IF;
    IF tags IS NOT NULL AND pg_catalog.array_ndims(tags) > 1 THEN
        PERFORM memsql.raise_invalid(pg_catalog.format('%s: %s must be a one-dimensional array', fn, arg),
                                     'Pass ARRAY[''a'', ''b''].');
    END IF;
END $$;
COMMENT ON FUNCTION memsql.check_tag_list(text, text, text[]) IS
$c$Raises MS002 when a tag array holds a NULL or empty element or one over 500 characters (an entry of the tags' GIN
index holds at most about 2.7 kB), or is multi-dimensional. Internal helper.
Args: fn (calling function, for the message), arg (argument name), tags text[] (NULL passes).
Source: sql/functions/50_tags.sql.$c$;

-- ---------------------------------------------------------------------------------------------
-- memory_tag

CREATE OR REPLACE FUNCTION memsql.memory_tag(
    memory_id         bigint   DEFAULT NULL,
    document_id       bigint   DEFAULT NULL,
    namespace         text     DEFAULT 'default',
    importance        double precision DEFAULT NULL,
    knowledge_type    text     DEFAULT NULL,
    tags              text[]   DEFAULT NULL,
    add_tags          text[]   DEFAULT NULL,
    remove_tags       text[]   DEFAULT NULL,
    clear_importance  boolean  DEFAULT false
)
RETURNS integer
LANGUAGE plpgsql VOLATILE
SET search_path FROM CURRENT
AS $$
#variable_conflict use_column
DECLARE
    ns       text := memory_tag.namespace;
    edit     boolean := memory_tag.tags IS NOT NULL OR memory_tag.add_tags IS NOT NULL OR memory_tag.remove_tags IS NOT NULL;
    n        integer;
BEGIN
    IF ns IS NULL THEN
        PERFORM memsql.raise_invalid('memory_tag: namespace is NULL', 'Pass a namespace, e.g. ''default''.');
    END IF;
    IF (memory_tag.memory_id IS NULL) = (memory_tag.document_id IS NULL) THEN
        PERFORM memsql.raise_invalid('memory_tag: pass exactly one of memory_id, document_id',
                                     'memory_id => 42 changes one memory; document_id => 7 changes a document and all its memories.');
    END IF;
    IF memory_tag.clear_importance IS NULL THEN
        PERFORM memsql.raise_invalid('memory_tag: clear_importance is NULL', 'Pass true or false.');
    END IF;
    PERFORM memsql.check_argument('memory_tag', 'importance', memory_tag.importance, 0, 1,
                                  'Use a value such as 0.8, or clear_importance => true to unset it.', true);
    IF memory_tag.importance IS NOT NULL AND memory_tag.clear_importance THEN
        PERFORM memsql.raise_invalid('memory_tag: importance and clear_importance => true contradict each other',
                                     'Pass one of them.');
    END IF;
    IF memory_tag.knowledge_type IS NOT NULL THEN
        PERFORM memsql.check_knowledge_type(memory_tag.knowledge_type);
    END IF;
    PERFORM memsql.check_tag_list('memory_tag', 'tags', memory_tag.tags);
    PERFORM memsql.check_tag_list('memory_tag', 'add_tags', memory_tag.add_tags);
    PERFORM memsql.check_tag_list('memory_tag', 'remove_tags', memory_tag.remove_tags);

    IF memory_tag.memory_id IS NOT NULL THEN
        PERFORM 1 FROM memsql.memories m WHERE m.namespace = ns AND m.id = memory_tag.memory_id;
        IF NOT FOUND THEN
            RAISE EXCEPTION 'memory_tag: no memory % in namespace %', memory_tag.memory_id, quote_literal(ns)
                USING ERRCODE = 'MS004',
                      HINT = 'An archived memory comes back with memory_restore(ARRAY[id]); see memsql.archive.';
        END IF;
    ELSE
        UPDATE memsql.documents d
        SET knowledge_type = coalesce(memory_tag.knowledge_type, d.knowledge_type),
            tags = CASE WHEN edit THEN memsql.tags_edit(d.tags, memory_tag.tags, memory_tag.add_tags, memory_tag.remove_tags)
                        ELSE d.tags END,
            updated_at = now()
        WHERE d.namespace = ns AND d.id = memory_tag.document_id
          AND (d.knowledge_type, d.tags) IS DISTINCT FROM
              (coalesce(memory_tag.knowledge_type, d.knowledge_type),
               CASE WHEN edit THEN memsql.tags_edit(d.tags, memory_tag.tags, memory_tag.add_tags, memory_tag.remove_tags)
                    ELSE d.tags END);
        IF NOT FOUND THEN
            PERFORM 1 FROM memsql.documents d WHERE d.namespace = ns AND d.id = memory_tag.document_id;
            IF NOT FOUND THEN
                RAISE EXCEPTION 'memory_tag: no document % in namespace %', memory_tag.document_id, quote_literal(ns)
                    USING ERRCODE = 'MS004', HINT = 'List documents with SELECT id, source_key FROM memsql.documents.';
            END IF;
        END IF;
    END IF;

    -- Lock the targets in id order, compute the new values from the locked (latest) rows, and
    -- write only rows that change (an unchanged row is not rewritten, so its index entries stay).
    WITH target AS (
        SELECT m.namespace, m.id,
               CASE WHEN memory_tag.clear_importance THEN NULL
                    ELSE coalesce(memory_tag.importance::real, m.importance) END AS new_importance,
               coalesce(memory_tag.knowledge_type, m.knowledge_type) AS new_kt,
               CASE WHEN edit THEN memsql.tags_edit(m.tags, memory_tag.tags, memory_tag.add_tags, memory_tag.remove_tags)
                    ELSE m.tags END AS new_tags
        FROM memsql.memories m
        WHERE m.namespace = ns
          AND (m.id = memory_tag.memory_id OR m.document_id = memory_tag.document_id)
        ORDER BY m.id
        FOR UPDATE
    )
    UPDATE memsql.memories m
    SET importance = t.new_importance, knowledge_type = t.new_kt, tags = t.new_tags
    FROM target t
    WHERE m.namespace = t.namespace AND m.id = t.id
      AND (m.importance, m.knowledge_type, m.tags) IS DISTINCT FROM (t.new_importance, t.new_kt, t.new_tags);
    GET DIAGNOSTICS n = ROW_COUNT;
    RETURN n;
END
$$;
COMMENT ON FUNCTION memsql.memory_tag(bigint, bigint, text, double precision, text, text[], text[], text[], boolean) IS
$c$Changes the importance, knowledge_type or tags of one memory, or of a document and all its memories. No re-embedding.
Args: exactly one of memory_id bigint, document_id bigint; namespace text ('default').
  Every other argument NULL = leave as is:
  importance in [0, 1] (double precision, stored as real); clear_importance boolean (false; true sets importance to NULL = unset);
  knowledge_type text (a row of memsql.knowledge_types: changes the half-life the memory decays with);
  tags text[] replaces the tag list, then add_tags text[] are appended (once each), then remove_tags text[] removed.
  With document_id the document row's knowledge_type and tags change as well (documents carry no importance).
Returns integer: memories whose values changed (0 when the target already had them).
Errors: MS002 both or neither id, importance outside [0,1] or NaN, importance with clear_importance, NULL or empty
  tag; MS003 unknown knowledge_type; MS004 no such memory / document in the namespace.
Source: sql/functions/50_tags.sql.$c$;

-- ---------------------------------------------------------------------------------------------
-- find_by_tag

CREATE OR REPLACE FUNCTION memsql.find_by_tag(
    tags       text[],
    namespace  text     DEFAULT 'default',
    match_all  boolean  DEFAULT false,
    k          integer  DEFAULT 100
)
RETURNS SETOF memsql.tagged_memory
LANGUAGE plpgsql STABLE
SET search_path FROM CURRENT
AS $$
#variable_conflict use_column
BEGIN
    IF find_by_tag.tags IS NULL OR pg_catalog.cardinality(find_by_tag.tags) = 0 THEN
        PERFORM memsql.raise_invalid('find_by_tag: tags is NULL or empty', 'Pass at least one tag, e.g. ARRAY[''todo''].');
    END IF;
    PERFORM memsql.check_tag_list('find_by_tag', 'tags', find_by_tag.tags);
    IF find_by_tag.namespace IS NULL OR find_by_tag.match_all IS NULL THEN
        PERFORM memsql.raise_invalid('find_by_tag: namespace and match_all must not be NULL',
                                     'Defaults: namespace ''default'', match_all false.');
    END IF;
    PERFORM memsql.check_argument('find_by_tag', 'k', find_by_tag.k, 1, 10000,
                                  'k is the number of memories to return, e.g. k => 100.');
    RETURN QUERY
    SELECT m.id, m.document_id, m.chunk_index, m.content, m.tags, m.knowledge_type, m.importance,
           m.source_date, m.created_at
    FROM memsql.memories m
    WHERE m.namespace = find_by_tag.namespace
      AND CASE WHEN find_by_tag.match_all THEN m.tags @> find_by_tag.tags ELSE m.tags && find_by_tag.tags END
      AND m.valid_to IS NULL   -- versions: current ones only
    ORDER BY m.created_at DESC, m.id
    LIMIT find_by_tag.k;
END
$$;
COMMENT ON FUNCTION memsql.find_by_tag(text[], text, boolean, integer) IS
$c$Current memories (superseded versions excluded) carrying given tags (exact, case-sensitive match), newest first.
Args: tags text[] (non-empty), namespace text ('default'), match_all boolean (false: any of the tags; true: all),
  k integer 1..10000 (100).
Returns (memory_id, document_id, chunk_index, content, tags, knowledge_type, importance, source_date, created_at)
  ordered by created_at DESC, memory_id.
Errors: MS002 empty tags, NULL or empty tag, k out of range. Source: sql/functions/50_tags.sql.$c$;
