-- memsql schema, version 21: memory_search gains reference_time (the time decay is computed from) and group_by (the
-- best memory per document), and returns document_rank. Released files are never edited: add a later version instead.

-- Its argument list and result change, so the old signature is dropped (sql/functions/20_search.sql creates the new
-- one, the new arguments last: calls that name their arguments, or pass the first ones by position, are unchanged).
DROP FUNCTION IF EXISTS memsql.memory_search(text, vector[], integer, text, text[], text[], integer, integer,
    double precision, double precision, double precision, double precision, boolean, double precision,
    double precision, double precision, double precision, boolean, double precision, double precision,
    double precision, integer, text, text[], integer, boolean, double precision, boolean, timestamptz,
    integer);   -- as of V0011
