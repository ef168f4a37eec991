-- Every event of one run, in event time order (ties: stream order), with
-- the raw event as the producer sent it. Parameters, in order:
--   1 run id, 2 first event_date, 3 last event_date ('YYYY-MM-DD'; a run's
--   events are in the partitions of the days it ran: give those, so that
--   only they are read).
SELECT
  event_time,
  event_type,
  job_namespace,
  job_name,
  producer,
  shard,
  sequence,
  sub_sequence,
  idempotency_key,
  from_utf8(event) AS event
FROM lineageflow_archive.events
WHERE run_id = ?
  AND event_date BETWEEN ? AND ?
ORDER BY event_time, shard, sequence, sub_sequence
