-- What an assistant gets back at the start of a session: memory_context (a budgeted pack of principles and
-- decisions, the memories relevant to a query and the tail of the last session, each with its id; memory_get in
-- 72_web.sql returns the full text by id) and capture_progress (how far a growing transcript is stored).
-- CREATE OR REPLACE only.

-- ---------------------------------------------------------------------------------------------
-- memory_context

CREATE OR REPLACE FUNCTION memsql.context_line(memory_id bigint, knowledge_type text, stamp timestamptz,
                                               content text, max_chars integer)
RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE
RETURN '- [#' || memory_id || '] ' || knowledge_type
       || coalesce(' ' || to_char(stamp AT TIME ZONE 'UTC', 'YYYY-MM-DD'), '') || ': '
       || CASE WHEN length(regexp_replace(btrim(content), '\s+', ' ', 'g')) <= max_chars
               THEN regexp_replace(btrim(content), '\s+', ' ', 'g')
               ELSE left(regexp_replace(btrim(content), '\s+', ' ', 'g'), greatest(max_chars - 3, 1)) || '...' END;
COMMENT ON FUNCTION memsql.context_line(bigint, text, timestamptz, text, integer) IS
$c$One line of memory_context: "- [#id] knowledge_type YYYY-MM-DD: text", the text's white space collapsed and cut
to max_chars characters (ending in "..." when cut). Internal helper.
Args: memory_id, knowledge_type, stamp (date shown, UTC; NULL = none), content, max_chars (>= 4).
Returns text. Errors: none. Source: sql/functions/70_context.sql.$c$;

CREATE OR REPLACE FUNCTION memsql.context_fit(memory_id bigint, knowledge_type text, stamp timestamptz,
                                              content text, max_chars integer, room integer)
RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE
RETURN CASE
    WHEN length(memsql.context_line(memory_id, knowledge_type, stamp, content, max_chars)) + 1 <= room
        THEN memsql.context_line(memory_id, knowledge_type, stamp, content, max_chars)
    -- too long for what is left: cut shorter when 40 characters of its text or more still fit
    WHEN room - 1 - length(memsql.context_line(memory_id, knowledge_type, stamp, '', 4)) >= 40
        THEN memsql.context_line(memory_id, knowledge_type, stamp, content,
                                 room - 1 - length(memsql.context_line(memory_id, knowledge_type, stamp, '', 4)))
END;
COMMENT ON FUNCTION memsql.context_fit(bigint, text, timestamptz, text, integer, integer) IS
$c$A memory_context line that fits what is left of its section: memsql.context_line cut to max_chars characters of text,
or shorter so that the line and its newline take at most room characters, as long as 40 characters of text or more
remain; NULL when not even that fits. Internal helper.
Args: memory_id, knowledge_type, stamp, content, max_chars as memsql.context_line; room (characters left).
Returns text or NULL. Errors: none. Source: sql/functions/70_context.sql.$c$;

CREATE OR REPLACE FUNCTION memsql.memory_context(
    namespace         text     DEFAULT 'default',
    query             text     DEFAULT NULL,
    query_embeddings  vector[] DEFAULT NULL,
    budget            integer  DEFAULT 8000,
    session_id        text     DEFAULT NULL,
    knowledge_types   text[]   DEFAULT NULL,
    line_chars     integer  DEFAULT 300,
    last_session      boolean  DEFAULT true,
    memory_rerank     boolean  DEFAULT true,
    importance_threshold double precision DEFAULT 0.3
)
RETURNS text
LANGUAGE plpgsql VOLATILE
SET search_path FROM CURRENT
AS $$
#variable_conflict use_column
DECLARE
    ns          text := memory_context.namespace;
    max_budget  CONSTANT integer := 10000;   -- Claude Code's limit for one hook output
    header      text;
    used        integer;
    part        text[] := '{}';
    principles  text[] := '{}';
    relevant    text[] := '{}';
    last_lines  text[] := '{}';
    shown       bigint[] := '{}';
    cap         integer;
    line        text;
    r           record;
    last_sid    text;
    last_title  text;
    last_doc    bigint;
    head_p      CONSTANT text := E'\n## Principles and decisions\n';
    head_r      text;
    head_l      text;
    out         text;
BEGIN
    IF ns IS NULL THEN
        PERFORM memsql.raise_invalid('memory_context: namespace is NULL', 'Pass a namespace, e.g. ''default''.');
    END IF;
    PERFORM memsql.check_argument('memory_context', 'budget', budget, 400, max_budget,
                                  'budget is the size of the pack in characters, 400 at least (the header takes about '
                                  '120, a line about 30 before its text); 8000 (the default) leaves room under 10000.');
    PERFORM memsql.check_argument('memory_context', 'line_chars', line_chars, 40, 2000,
                                  'line_chars caps each memory''s line; memory_get(ids) returns the full text.');
    IF memory_rerank IS NULL THEN
        PERFORM memsql.raise_invalid('memory_context: memory_rerank is NULL', 'Pass true or false.');
    END IF;
    PERFORM memsql.check_argument('memory_context', 'importance_threshold', importance_threshold, 0, 1,
                                  'As memory_search''s: memories with an importance below it are left out.');
    IF NOT EXISTS (SELECT 1 FROM memsql.memories m WHERE m.namespace = ns AND m.valid_to IS NULL) THEN
        RETURN '';
    END IF;

    header := pg_catalog.format(E'# Memory from memsql (namespace %s)\nIds are [#id]: memory_get(ids) returns the full text, '
                     'memory_search finds more.\n', ns);
    used := length(header);

    -- principles and decisions: at most 35% of the budget, most important (unset = 0.5) and newest first; those
    -- below the importance cutoff are left out, as memory_search leaves them out (none with memory_rerank false)
    cap := (budget * 35) / 100 - length(head_p);
    FOR r IN
        SELECT m.id, m.knowledge_type, coalesce(m.source_date, m.created_at) AS stamp, m.content
        FROM memsql.memories m
        WHERE m.namespace = ns AND m.valid_to IS NULL AND m.knowledge_type = ANY (coalesce(knowledge_types, '{principle,decision}'))
          AND NOT ('claude-code-memory' = ANY (m.tags))   -- Claude Code's own memory: it loads that itself
          AND (NOT memory_context.memory_rerank OR coalesce(m.importance, 1) >= memory_context.importance_threshold::real)
        ORDER BY coalesce(m.importance, 0.5::real) DESC, coalesce(m.source_date, m.created_at) DESC, m.id DESC
        LIMIT 200
    LOOP
        line := memsql.context_fit(r.id, r.knowledge_type, r.stamp, r.content, line_chars, cap);
        EXIT WHEN line IS NULL;
        principles := principles || line;
        shown := shown || r.id;
        cap := cap - length(line) - 1;
    END LOOP;
    IF pg_catalog.cardinality(principles) > 0 THEN
        used := used + length(head_p) + length(pg_catalog.array_to_string(principles, E'\n')) + 1;
    END IF;

    -- the last session (conversation documents; a session's captured segments share metadata session_id):
    -- its tail, at most 30% of the budget, shown in order
    SELECT coalesce(d.metadata->>'session_id', 'document:' || d.id), d.title, d.id INTO last_sid, last_title, last_doc
    FROM memsql.documents d
    WHERE memory_context.last_session AND d.namespace = ns AND d.knowledge_type = 'conversation'
      AND (session_id IS NULL OR d.metadata->>'session_id' IS DISTINCT FROM session_id)
      AND EXISTS (SELECT 1 FROM memsql.memories m WHERE m.namespace = ns AND m.document_id = d.id AND m.valid_to IS NULL)
    ORDER BY coalesce(d.source_date, d.updated_at) DESC, d.id DESC
    LIMIT 1;
    IF last_sid IS NOT NULL THEN
        head_l := E'\n## Last session' || coalesce(': ' || left(regexp_replace(last_title, '\s+', ' ', 'g'), 120), '')
                  || E'\n';
        cap := (budget * 30) / 100 - length(head_l);
        FOR r IN
            SELECT m.id, m.knowledge_type, coalesce(m.source_date, m.created_at) AS stamp, m.content
            FROM memsql.memories m JOIN memsql.documents d ON d.namespace = m.namespace AND d.id = m.document_id
            WHERE m.namespace = ns AND m.valid_to IS NULL AND NOT (m.id = ANY (shown))
              AND CASE WHEN last_sid LIKE 'document:%' THEN d.id = last_doc ELSE d.metadata->>'session_id' = last_sid END
            ORDER BY coalesce(m.source_date, m.created_at) DESC, d.id DESC, m.chunk_index DESC, m.id DESC
            LIMIT 200
        LOOP
            line := memsql.context_fit(r.id, r.knowledge_type, r.stamp, r.content, line_chars, cap);
            EXIT WHEN line IS NULL;
            last_lines := line || last_lines;   -- newest were read first: prepend to show them in order
            shown := shown || r.id;
            cap := cap - length(line) - 1;
        END LOOP;
        IF pg_catalog.cardinality(last_lines) > 0 THEN
            used := used + length(head_l) + length(pg_catalog.array_to_string(last_lines, E'\n')) + 1;
        END IF;
    END IF;

    -- relevant to the query: what is left of the budget, ranked by memory_search (no access counted)
    IF query IS NOT NULL AND btrim(query) <> '' THEN
        head_r := E'\n## Relevant to: ' || left(regexp_replace(btrim(query), '\s+', ' ', 'g'), 120) || E'\n';
        cap := budget - used - length(head_r);
        FOR r IN
            SELECT s.memory_id, s.knowledge_type, coalesce(s.source_date, s.created_at) AS stamp, s.content
            FROM memsql.memory_search(query, query_embeddings, k => 20, namespace => ns, touch => false,
                                      memory_rerank => memory_context.memory_rerank,
                                      importance_threshold => memory_context.importance_threshold) s
        LOOP
            CONTINUE WHEN r.memory_id = ANY (shown) OR EXISTS (
                SELECT 1 FROM memsql.memories m
                WHERE m.namespace = ns AND m.id = r.memory_id AND 'claude-code-memory' = ANY (m.tags));
            line := memsql.context_fit(r.memory_id, r.knowledge_type, r.stamp, r.content, line_chars, cap);
            CONTINUE WHEN line IS NULL;
            relevant := relevant || line;
            shown := shown || r.memory_id;
            cap := cap - length(line) - 1;
        END LOOP;
    END IF;

    IF pg_catalog.cardinality(shown) = 0 THEN
        RETURN '';
    END IF;
    out := header;
    IF pg_catalog.cardinality(principles) > 0 THEN
        out := out || head_p || pg_catalog.array_to_string(principles, E'\n') || E'\n';
    END IF;
    IF pg_catalog.cardinality(relevant) > 0 THEN
        out := out || head_r || pg_catalog.array_to_string(relevant, E'\n') || E'\n';
    END IF;
    IF pg_catalog.cardinality(last_lines) > 0 THEN
        out := out || head_l || pg_catalog.array_to_string(last_lines, E'\n') || E'\n';
    END IF;
    RETURN out;
END
$$;
COMMENT ON FUNCTION memsql.memory_context(text, text, vector[], integer, text, text[], integer, boolean, boolean,
                                          double precision) IS
$c$A budgeted context pack for the start of a session (Claude Code's SessionStart hook prints it): the namespace's
principles and decisions, the memories most relevant to a query, and the tail of the last session, one line per memory
"- [#id] knowledge_type YYYY-MM-DD: text" so the reader can fetch the full text with memory_get.
Sections (each present only when it has lines): "## Principles and decisions" (memories of knowledge_types, most
  important (unset = 0.5) then newest first, none with an importance below importance_threshold; at most 35%
  of the budget), "## Relevant to: <query>" (memory_search with touch => false and this call's memory_rerank and
  importance_threshold,
  k 20; what the other sections leave), "## Last session" (the newest conversation document other than session_id, all
  documents sharing its metadata session_id; its newest memories that fit 30% of the budget, shown oldest first). A
  memory appears once. Memories tagged claude-code-memory (CLAUDE.md files and Claude Code's auto-memory notes,
  `memsql claude ingest`) are never in the pack: Claude Code loads them itself.
Args: namespace text ('default'); query text (NULL = no relevance section); query_embeddings vector[] (as for
  memory_search: NULL = the embedding worker embeds the query when it runs, else lexical only; {} = lexical only);
  budget integer characters 400..10000 (8000); session_id text (the current session, left out of "last session");
  knowledge_types text[] (NULL = principle and decision); line_chars integer 40..2000 (300): longest line text;
  last_session boolean (true): false leaves the last-session section out (a prompt's recall: knowledge_types => '{}',
  last_session => false keeps only the relevant memories); memory_rerank boolean (true) and importance_threshold
  double precision 0..1 (0.3): as memory_search's (the cutoff applies to both sections; memory_rerank => false
  applies none).
Returns text of at most budget characters; '' when the namespace has no current memory or nothing fits.
Errors: MS002 NULL namespace or memory_rerank, budget, line_chars or importance_threshold out of range (and memory_search's errors for the query).
Source: sql/functions/70_context.sql.$c$;

-- ---------------------------------------------------------------------------------------------
-- capture_progress

CREATE OR REPLACE FUNCTION memsql.capture_progress(namespace text, source_uri text)
RETURNS bigint
LANGUAGE sql STABLE
SET search_path FROM CURRENT
BEGIN ATOMIC
    SELECT coalesce(max((d.metadata->>'byte_end')::bigint), 0)
    FROM memsql.documents d
    WHERE d.namespace = capture_progress.namespace AND d.source_uri = capture_progress.source_uri
      AND d.metadata ? 'byte_end';
END;
COMMENT ON FUNCTION memsql.capture_progress(text, text) IS
$c$How far a growing source (a Claude Code transcript captured by the hooks) is stored: the largest metadata byte_end
of the namespace's documents from source_uri, written in the same transaction as their memories, so a capture that
died mid-way resumes where the last complete one ended.
Args: namespace text; source_uri text (the transcript's absolute path).
Returns bigint: a byte offset into the file, 0 when nothing is stored.
Errors: none. Source: sql/functions/70_context.sql.$c$;
