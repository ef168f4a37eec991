-- Events per producer per day in a date range. Parameters, in order:
--   1 first event_date, 2 last event_date ('YYYY-MM-DD').
SELECT
  event_date,
  producer,
  count(*) AS events
FROM lineageflow_archive.events
WHERE event_date BETWEEN ? AND ?
GROUP BY event_date, producer
ORDER BY event_date, producer
