-- memsql schema, version 11: memory_search gains posting_budget (issue 9).
-- Released files are never edited: add a later version instead.

-- Its argument list changes, so the old signature is dropped (sql/functions/20_search.sql creates the new one, with
-- posting_budget last: calls that name their arguments, or pass the first ones by position, are unchanged).
DROP FUNCTION IF EXISTS memsql.memory_search(text, vector[], integer, text, text[], text[], integer, integer,
    double precision, double precision, double precision, double precision, boolean, double precision,
    double precision, double precision, double precision, boolean, double precision, double precision,
    double precision, integer, text, text[], integer, boolean, double precision, boolean, timestamptz);   -- as of V0008
