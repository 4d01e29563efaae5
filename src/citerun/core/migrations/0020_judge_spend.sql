-- Issue 48. A namespace's judge spend per UTC day and judge profile, charged when the
-- tokens are spent (run_add_tokens), not summed over the runs created in the period: a
-- run created before midnight that judged after it counted in neither day (3,500 tokens
-- against a 500-a-day budget), and a deleted run took its spend with it. A week or a
-- month is the sum of its days.
CREATE TABLE judge_spend (
    tenant  text   NOT NULL,
    profile text   NOT NULL,
    day     date   NOT NULL,
    tokens  bigint NOT NULL DEFAULT 0 CHECK (tokens >= 0),
    PRIMARY KEY (tenant, profile, day)
);

-- What runs spent before this migration: charged to the day each run last changed (its
-- last judge answer touched it), the nearest record of when it was spent.
INSERT INTO judge_spend (tenant, profile, day, tokens)
SELECT tenant, coalesce(spec #>> '{judge,openai,profile}', 'default'),
       (updated_at AT TIME ZONE 'UTC')::date, sum(tokens_spent)
FROM runs
WHERE tokens_spent > 0 AND spec #>> '{judge,kind}' = 'openai'
GROUP BY 1, 2, 3;
