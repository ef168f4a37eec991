-- The events table of the event archive (Athena / Glue Data Catalog):
-- one row per unique valid event, Parquet (zstd), Hive-style partitions
-- event_date=YYYY-MM-DD with partition projection (no MSCK REPAIR, no
-- Glue partitions to add: Athena computes the partitions of a query from
-- its event_date predicate). Columns: archive.Row (archive/row.go); the
-- test TestAthenaDDLMatchesRow checks names, order and types.
-- Replace ARCHIVE_BUCKET/ARCHIVE_PREFIX (lineageflow run -archive
-- s3://ARCHIVE_BUCKET/ARCHIVE_PREFIX) and the projection's first date.
CREATE DATABASE IF NOT EXISTS lineageflow_archive;

CREATE EXTERNAL TABLE IF NOT EXISTS lineageflow_archive.events (
  event_time timestamp,
  event_type string,
  kind string,
  run_id string,
  job_namespace string,
  job_name string,
  parent_run_id string,
  parent_job string,
  producer string,
  schema_url string,
  inputs array<string>,
  outputs array<string>,
  shard string,
  sequence string,
  sub_sequence bigint,
  arrival_time timestamp,
  idempotency_key string,
  event binary
)
PARTITIONED BY (event_date string)
STORED AS PARQUET
LOCATION 's3://ARCHIVE_BUCKET/ARCHIVE_PREFIX/events/'
TBLPROPERTIES (
  'parquet.compression' = 'ZSTD',
  'projection.enabled' = 'true',
  'projection.event_date.type' = 'date',
  'projection.event_date.format' = 'yyyy-MM-dd',
  'projection.event_date.range' = '2026-01-01,NOW',
  'projection.event_date.interval' = '1',
  'projection.event_date.interval.unit' = 'DAYS',
  'storage.location.template' = 's3://ARCHIVE_BUCKET/ARCHIVE_PREFIX/events/event_date=${event_date}/'
);
