-- memsql schema, version 28: knowledge_type note (the default for notes and documents) decays with a half-life of
-- five years (1825 days) instead of one year. Released files are never edited: add a later version instead.
--
-- Why: a person's notes hold decisions, incident reviews and references that stay true for years. With a one-year
-- half-life the memory axis ranked a years-old note that answers the query below newer notes that merely share its
-- words (bench/dated_notes: nDCG@10 0.926 with the axis, 0.958 without it). From 1460 to 2920 days the axis keeps
-- every "dated" answer where the search without it has them and ranks the newer fact first on the "newer" queries
-- (nDCG@10 0.969); 1825 is inside that range. The other development sets hold no aged note (bench/results/
-- quality_genres.md).
--
-- Only the shipped value moves: a half-life someone set to anything else stays, and memsql init writes the
-- half_life_days of memsql.toml after every migration, as before.
UPDATE memsql.knowledge_types
SET half_life_days = 1825,
    description = 'Default for notes and documents; half-life five years (decisions and references stay true for years).'
WHERE name = 'note' AND half_life_days = 365;
