-- Namespaces enforced by Row Level Security for non-owner roles. Named 90_ to run after every other functions file
-- (their CREATE OR REPLACE VIEW resets security_invoker). CREATE OR REPLACE, then one idempotent call of
-- memsql.namespace_rls_apply() at the end, so every table with a namespace column (also one added by a later
-- migration) gets its policy each time `memsql init` runs.
--
-- Nothing here is SECURITY DEFINER, and no memsql function is (tests/test_isolation.py checks it): every function
-- runs with the privileges of its caller, so memory_search, memory_add and the other verbs read and write through
-- the caller's policies. The owner of the tables and superusers bypass RLS; their plans do not change.

CREATE OR REPLACE FUNCTION memsql.namespace_rls_apply() RETURNS integer
LANGUAGE plpgsql VOLATILE
SET search_path FROM CURRENT
AS $$
DECLARE
    t        record;
    n        integer := 0;
    grantee  boolean;
    expr     constant text :=
        'namespace = ANY (ARRAY(SELECT r.namespace FROM memsql.role_namespaces r WHERE r.role_name = current_user))';
BEGIN
    IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'memsql_namespace_user') THEN
        BEGIN
            CREATE ROLE memsql_namespace_user NOLOGIN;
            COMMENT ON ROLE memsql_namespace_user IS
                'Group of the roles made by memsql.role_create: table privileges on memsql; rows limited by RLS.';
        EXCEPTION WHEN insufficient_privilege OR duplicate_object THEN
            NULL;  -- no CREATEROLE, or made concurrently: RLS still denies every non-owner role by default
        END;
    END IF;
    grantee := EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'memsql_namespace_user');
    IF grantee THEN
        EXECUTE 'GRANT USAGE ON SCHEMA memsql TO memsql_namespace_user';
    END IF;
    FOR t IN
        SELECT c.oid, c.relname, c.relrowsecurity,
               EXISTS (SELECT 1 FROM pg_attribute a WHERE a.attrelid = c.oid AND a.attname = 'namespace'
                       AND NOT a.attisdropped AND a.attnum > 0) AS namespaced
        FROM pg_class c
        WHERE c.relnamespace = 'memsql'::regnamespace AND c.relkind IN ('r', 'p') AND NOT c.relispartition
        ORDER BY c.relname
    LOOP
        IF t.relname = 'role_namespaces' OR NOT t.namespaced THEN
            -- the reference tables and the role map are read only; any other table without a namespace column
            -- (e.g. query_embedding_cache: query texts of every namespace) is not granted at all
            IF grantee AND t.relname IN ('knowledge_types', 'settings', 'schema_version', 'role_namespaces') THEN
                EXECUTE pg_catalog.format('GRANT SELECT ON memsql.%I TO memsql_namespace_user', t.relname);
            ELSIF grantee THEN
                EXECUTE pg_catalog.format('REVOKE ALL ON memsql.%I FROM memsql_namespace_user', t.relname);
            END IF;
            CONTINUE;
        END IF;
        IF NOT t.relrowsecurity THEN  -- ALTER TABLE takes an exclusive lock: only when needed
            EXECUTE pg_catalog.format('ALTER TABLE memsql.%I ENABLE ROW LEVEL SECURITY', t.relname);
        END IF;
        IF NOT EXISTS (SELECT 1 FROM pg_policy p WHERE p.polrelid = t.oid AND p.polname = 'namespace_isolation') THEN
            EXECUTE pg_catalog.format('CREATE POLICY namespace_isolation ON memsql.%I USING (%s) WITH CHECK (%s)',
                           t.relname, expr, expr);
        END IF;
        IF grantee AND NOT has_table_privilege('memsql_namespace_user', t.oid, 'SELECT, INSERT, UPDATE, DELETE') THEN
            EXECUTE pg_catalog.format('GRANT SELECT, INSERT, UPDATE, DELETE ON memsql.%I TO memsql_namespace_user', t.relname);
        END IF;
        n := n + 1;
    END LOOP;
    -- a view reads its tables with its owner's rights unless security_invoker is set: the owner bypasses RLS
    FOR t IN
        SELECT c.relname FROM pg_class c
        WHERE c.relnamespace = 'memsql'::regnamespace AND c.relkind = 'v'
          AND NOT coalesce('security_invoker=true' = ANY (c.reloptions), false)
        ORDER BY c.relname
    LOOP
        EXECUTE pg_catalog.format('ALTER VIEW memsql.%I SET (security_invoker = true)', t.relname);
    END LOOP;
    IF grantee THEN
        FOR t IN SELECT c.relname FROM pg_class c WHERE c.relnamespace = 'memsql'::regnamespace AND c.relkind = 'v'
                 ORDER BY c.relname LOOP
            EXECUTE pg_catalog.format('GRANT SELECT ON memsql.%I TO memsql_namespace_user', t.relname);
        END LOOP;
    END IF;
    RETURN n;
END
$$;
REVOKE EXECUTE ON FUNCTION memsql.namespace_rls_apply() FROM PUBLIC;
COMMENT ON FUNCTION memsql.namespace_rls_apply() IS
$c$Enables Row Level Security with policy namespace_isolation on every memsql table that has a namespace column
(memories, documents, archive, memory_access, postings, term_stats, namespace_stats, and any later one): a non-owner
role sees and writes only rows whose namespace is one of its rows in memsql.role_namespaces (none = nothing). Creates
the group role memsql_namespace_user (NOLOGIN) if the caller may, grants it SELECT/INSERT/UPDATE/DELETE on those
tables and SELECT on the reference tables (knowledge_types, settings, schema_version, role_namespaces) and views (no
other table without a namespace column: query_embedding_cache holds query texts of every namespace), and sets security_invoker on every memsql view (a view would
otherwise read with its owner's rights, which bypass RLS). Idempotent; `memsql init` runs it. Args: none.
Returns the number of namespaced tables protected. Errors: 42501 when the caller does not own the tables.
Source: sql/functions/90_roles.sql.$c$;

CREATE OR REPLACE FUNCTION memsql.role_create(role_name text, namespace text, login boolean DEFAULT true)
RETURNS text[]
LANGUAGE plpgsql VOLATILE
SET search_path FROM CURRENT
AS $$
DECLARE
    rname  text := role_create.role_name;
    ns     text := role_create.namespace;
    r      record;
    known  boolean;
BEGIN
    IF rname IS NULL OR length(rname) NOT BETWEEN 1 AND 63 THEN
        PERFORM memsql.raise_invalid(pg_catalog.format('role_create: role_name must be 1 to 63 characters, got %s',
                                            coalesce(quote_literal(rname), 'NULL')),
                                     'Pass a role name such as ''assistant_work''.');
    END IF;
    IF ns IS NULL OR length(ns) NOT BETWEEN 1 AND 200 THEN
        PERFORM memsql.raise_invalid(pg_catalog.format('role_create: namespace must be 1 to 200 characters, got %s',
                                            coalesce(quote_literal(ns), 'NULL')),
                                     'Pass the namespace the role may use, e.g. ''work''.');
    END IF;
    IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'memsql_namespace_user') THEN
        PERFORM memsql.namespace_rls_apply();
    END IF;
    IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'memsql_namespace_user') THEN   -- no CREATEROLE to make it
        RAISE EXCEPTION 'role_create: role % may not create roles (no CREATEROLE), so the group role '
                        'memsql_namespace_user could not be made', quote_ident(current_user)
            USING ERRCODE = '42501',
                  HINT = pg_catalog.format('A superuser runs ALTER ROLE %I CREATEROLE; then call role_create again.', current_user);
    END IF;
    SELECT a.oid, a.rolsuper, a.rolbypassrls INTO r FROM pg_roles a WHERE a.rolname = rname;
    known := FOUND;
    IF known THEN
        IF r.rolsuper OR r.rolbypassrls OR pg_has_role(r.oid, (SELECT c.relowner FROM pg_class c
                                                              WHERE c.oid = 'memsql.memories'::regclass), 'USAGE') THEN
            PERFORM memsql.raise_invalid(
                pg_catalog.format('role_create: role %s bypasses row level security (superuser, BYPASSRLS or owner of the '
                       'memsql tables): it would see every namespace', quote_ident(rname)),
                'Create a new role for the namespace instead.');
        END IF;
    END IF;
    BEGIN
        IF known THEN
            EXECUTE pg_catalog.format('GRANT memsql_namespace_user TO %I', rname);
        ELSE
            EXECUTE pg_catalog.format('CREATE ROLE %I %s IN ROLE memsql_namespace_user',
                           rname, CASE WHEN coalesce(role_create.login, true) THEN 'LOGIN' ELSE 'NOLOGIN' END);
        END IF;
    EXCEPTION WHEN insufficient_privilege THEN   -- no CREATEROLE, or no ADMIN OPTION on memsql_namespace_user
        RAISE EXCEPTION 'role_create: %', SQLERRM
            USING ERRCODE = '42501',
                  HINT = pg_catalog.format('Run it as a role with CREATEROLE that made memsql_namespace_user (the one that ran '
                                'memsql init, given CREATEROLE by a superuser: ALTER ROLE %I CREATEROLE), or as a '
                                'superuser.', current_user);
    END;
    INSERT INTO memsql.role_namespaces (namespace, role_name) VALUES (ns, rname) ON CONFLICT DO NOTHING;
    RETURN ARRAY(SELECT x.namespace FROM memsql.role_namespaces x WHERE x.role_name = rname ORDER BY x.namespace);
END
$$;
REVOKE EXECUTE ON FUNCTION memsql.role_create(text, text, boolean) FROM PUBLIC;
COMMENT ON FUNCTION memsql.role_create(text, text, boolean) IS
$c$Makes a role that can read and write only the given namespace, even with raw SQL (Row Level Security).
Args: role_name text (1..63 characters; created when missing, else given the namespace too), namespace text
  (1..200 characters; call again to add another namespace), login boolean (true: LOGIN; no password is set: add one
  with ALTER ROLE ... PASSWORD for a server reached over TCP; the embedded server trusts its owner-only socket).
Returns the role's namespaces, sorted. The role joins memsql_namespace_user (table privileges); its rows in other
  namespaces are invisible, and writing one fails with SQLSTATE 42501. It can read knowledge_types and settings but
  not change them. Needs CREATEROLE and ownership of memsql.role_namespaces (the role that ran memsql init).
Errors: MS002 bad name or namespace, or an existing role that bypasses RLS (superuser, BYPASSRLS, table owner);
  42501 when the caller may not create roles. Source: sql/functions/90_roles.sql.$c$;

CREATE OR REPLACE FUNCTION memsql.role_drop(role_name text, namespace text DEFAULT NULL)
RETURNS integer
LANGUAGE plpgsql VOLATILE
SET search_path FROM CURRENT
AS $$
DECLARE
    rname  text := role_drop.role_name;
    n      integer;
BEGIN
    DELETE FROM memsql.role_namespaces x
    WHERE x.role_name = rname AND (role_drop.namespace IS NULL OR x.namespace = role_drop.namespace);
    GET DIAGNOSTICS n = ROW_COUNT;
    IF n = 0 THEN
        RAISE EXCEPTION 'role_drop: role % has no namespace%', coalesce(quote_ident(rname), 'NULL'),
            CASE WHEN role_drop.namespace IS NULL THEN '' ELSE ' ' || quote_literal(role_drop.namespace) END
            USING ERRCODE = 'MS004', HINT = 'List them with SELECT * FROM memsql.role_namespaces.';
    END IF;
    IF role_drop.namespace IS NULL OR NOT EXISTS (SELECT 1 FROM memsql.role_namespaces x WHERE x.role_name = rname) THEN
        IF EXISTS (SELECT 1 FROM pg_roles WHERE rolname = rname) THEN
            EXECUTE pg_catalog.format('DROP ROLE %I', rname);
        END IF;
    END IF;
    RETURN n;
END
$$;
REVOKE EXECUTE ON FUNCTION memsql.role_drop(text, text) FROM PUBLIC;
COMMENT ON FUNCTION memsql.role_drop(text, text) IS
$c$Takes a namespace from a role made by role_create; without a namespace, or when it was the last one, drops the
role. Args: role_name text, namespace text (NULL = all). Returns the namespaces removed. The role's memories stay.
Errors: MS004 the role has no such namespace; 2BP01 when the role still owns objects or holds other privileges
  (REASSIGN OWNED / DROP OWNED first). Source: sql/functions/90_roles.sql.$c$;

SELECT memsql.namespace_rls_apply();
