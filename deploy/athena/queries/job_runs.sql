-- A job's runs in a date range (e.g. last week): one row per run, oldest
-- first, with its first and last event time, its outcome and its number
-- of events. Parameters (Athena: EXECUTE ... USING, or the
-- ExecutionParameters of StartQueryExecution), in order:
--   1 job namespace, 2 job name, 3 first event_date, 4 last event_date
--   (dates as 'YYYY-MM-DD': only those partitions are read).
SELECT
  run_id,
  min(event_time) AS started,
  max(event_time) AS ended,
  CASE
    WHEN count_if(event_type = 'COMPLETE') > 0 THEN 'COMPLETE'
    WHEN count_if(event_type = 'FAIL') > 0 THEN 'FAIL'
    WHEN count_if(event_type = 'ABORT') > 0 THEN 'ABORT'
    ELSE 'RUNNING'
  END AS state,
  count(*) AS events
FROM lineageflow_archive.events
WHERE job_namespace = ?
  AND job_name = ?
  AND event_date BETWEEN ? AND ?
  AND kind = 'RunEvent'
GROUP BY run_id
ORDER BY started, run_id
