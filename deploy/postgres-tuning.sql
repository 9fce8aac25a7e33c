-- Autovacuum and statistics for the hot tables (docs/deploy.md). No migration: run it once
-- as the database owner after `manage.py migrate`. Storage parameters are part of a dump, so a
-- database restored with deploy/restore.sh keeps them.
--   psql "$DATABASE_URL" -f deploy/postgres-tuning.sql
--
-- PostgreSQL's defaults vacuum a table when 20 % of its rows are dead and analyse it at 10 %:
-- on a table of 50 million messages that is 10 million dead rows before anything happens.
-- These tables grow all the time (messages, retrievals, audit) or are updated in place
-- (nodes superseded and touched by use, capture jobs, idempotency records), so they are
-- vacuumed and analysed after a fixed number of changes instead.

-- Append-mostly, large: insert-driven vacuum keeps the visibility map fresh for index-only scans.
ALTER TABLE memory_message SET (
    autovacuum_vacuum_scale_factor = 0.0, autovacuum_vacuum_threshold = 10000,
    autovacuum_vacuum_insert_scale_factor = 0.0, autovacuum_vacuum_insert_threshold = 50000,
    autovacuum_analyze_scale_factor = 0.0, autovacuum_analyze_threshold = 20000);
ALTER TABLE memory_retrieval SET (
    autovacuum_vacuum_scale_factor = 0.0, autovacuum_vacuum_threshold = 10000,
    autovacuum_vacuum_insert_scale_factor = 0.0, autovacuum_vacuum_insert_threshold = 50000,
    autovacuum_analyze_scale_factor = 0.0, autovacuum_analyze_threshold = 20000);
ALTER TABLE memory_auditevent SET (
    autovacuum_vacuum_scale_factor = 0.0, autovacuum_vacuum_threshold = 10000,
    autovacuum_vacuum_insert_scale_factor = 0.0, autovacuum_vacuum_insert_threshold = 50000,
    autovacuum_analyze_scale_factor = 0.0, autovacuum_analyze_threshold = 20000);

-- Updated in place: dead tuples pile up in the ranked indexes the context reads.
ALTER TABLE memory_node SET (
    autovacuum_vacuum_scale_factor = 0.02, autovacuum_vacuum_threshold = 1000,
    autovacuum_analyze_scale_factor = 0.02, autovacuum_analyze_threshold = 1000,
    autovacuum_vacuum_cost_limit = 1000);
ALTER TABLE memory_capturejob SET (
    autovacuum_vacuum_scale_factor = 0.0, autovacuum_vacuum_threshold = 2000,
    autovacuum_analyze_scale_factor = 0.0, autovacuum_analyze_threshold = 2000);
ALTER TABLE memory_idempotencyrecord SET (
    autovacuum_vacuum_scale_factor = 0.0, autovacuum_vacuum_threshold = 2000,
    autovacuum_analyze_scale_factor = 0.0, autovacuum_analyze_threshold = 2000);
ALTER TABLE memory_heartbeat SET (autovacuum_vacuum_threshold = 100, autovacuum_vacuum_scale_factor = 0.0);

-- What autovacuum did last (a quick check after a day of traffic):
-- SELECT relname, n_live_tup, n_dead_tup, last_autovacuum, last_autoanalyze
--   FROM pg_stat_user_tables WHERE relname LIKE 'memory_%' ORDER BY n_dead_tup DESC;
