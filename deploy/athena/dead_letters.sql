-- The dead letters of the event archive (Athena / Glue Data Catalog): one
-- row per dead-lettered record with its reason, partitioned like the
-- events (event_date: the day the record arrived). Columns:
-- archive.DeadLetterRow (archive/row.go), checked by TestAthenaDDLMatchesRow.
-- Replace ARCHIVE_BUCKET/ARCHIVE_PREFIX as in events.sql.
CREATE EXTERNAL TABLE IF NOT EXISTS lineageflow_archive.dead_letters (
  reason string,
  detail string,
  shard string,
  sequence string,
  sub_sequence bigint,
  arrival_time timestamp,
  record binary
)
PARTITIONED BY (event_date string)
STORED AS PARQUET
LOCATION 's3://ARCHIVE_BUCKET/ARCHIVE_PREFIX/dead_letters/'
TBLPROPERTIES (
  'parquet.compression' = 'ZSTD',
  'projection.enabled' = 'true',
  'projection.event_date.type' = 'date',
  'projection.event_date.format' = 'yyyy-MM-dd',
  'projection.event_date.range' = '2026-01-01,NOW',
  'projection.event_date.interval' = '1',
  'projection.event_date.interval.unit' = 'DAYS',
  'storage.location.template' = 's3://ARCHIVE_BUCKET/ARCHIVE_PREFIX/dead_letters/event_date=${event_date}/'
);
