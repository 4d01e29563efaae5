-- name: chunk_stale_batch --
-- The next chunks (by id, after $2) not embedded with model $1 (all of them with $3).
SELECT id, text FROM chunks
WHERE id > $2 AND ($3 OR embedding_model <> $1)
ORDER BY id LIMIT $4;

-- name: chunk_reembed --
-- Replace one chunk's embedding, recording the model and width that made it.
UPDATE chunks SET embedding = $2::vector, embedding_model = $3, embedding_dim = vector_dims($2::vector)
WHERE id = $1;
