-- memory_search gains guaranteed candidates (priority_*) and a dense similarity floor: its argument list
-- changes, so the old signature is dropped here (sql/functions/20_search.sql creates the new one).
DROP FUNCTION IF EXISTS memsql.memory_search(text, vector[], integer, text, text[], text[], integer, integer,
    double precision, double precision, double precision, double precision, boolean, double precision,
    double precision, double precision, double precision, boolean);
