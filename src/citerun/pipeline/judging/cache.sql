-- name: judge_answer_get --
-- The cached answer for a key, counting the hit.
UPDATE judge_answers SET hits = hits + 1, last_hit_at = now()
WHERE key = $1
RETURNING answer::text AS answer, tokens;

-- name: judge_answer_put --
-- Store an answer for a key; the first answer stored wins.
INSERT INTO judge_answers (key, model, answer, tokens) VALUES ($1, $2, $3::text::jsonb, $4)
ON CONFLICT (key) DO NOTHING;
