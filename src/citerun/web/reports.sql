-- name: report_bytes --
-- One of a run's stored reports as UTF-8 bytes, as Postgres writes it ($2: 'json' or
-- 'html'), and the thesis's name: sent as it is, never decoded on the web's loop.
SELECT CASE WHEN $2 = 'json' THEN convert_to(json::text, 'UTF8')
            ELSE convert_to(html, 'UTF8') END AS body,
       json->>'name' AS name
FROM reports WHERE run_id = $1;

-- name: report_head --
-- A run's stored report without its citations.
SELECT (json - 'citations')::text AS head FROM reports WHERE run_id = $1;

-- name: report_citations --
-- A stored report's citations, one row each, in their order.
SELECT c.value::text AS citation
FROM reports, jsonb_array_elements(reports.json->'citations') WITH ORDINALITY AS c(value, n)
WHERE reports.run_id = $1
ORDER BY c.n;

-- name: report_html --
-- A run's stored report page.
SELECT html FROM reports WHERE run_id = $1;
