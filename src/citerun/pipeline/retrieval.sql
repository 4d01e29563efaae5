-- name: chunk_vector_search --
-- Nearest chunks of the given documents by cosine distance.
SELECT id, 1 - (embedding <=> $1) AS score
FROM chunks WHERE digest = ANY($2::text[]) AND embedding_model = $4
ORDER BY embedding <=> $1 LIMIT $3;

-- name: chunk_models_of_documents --
-- The embedding models of the given documents' chunks, with the documents that use each.
SELECT embedding_model, array_agg(DISTINCT digest ORDER BY digest) AS digests
FROM chunks WHERE digest = ANY($1::text[]) GROUP BY embedding_model;

-- name: chunk_texts_of_documents --
-- Chunk ids and texts of documents, in a stable order (what a BM25 index is built from).
SELECT id, text FROM chunks WHERE digest = ANY($1::text[]) ORDER BY id;

-- name: chunk_get_many --
-- Chunks by id.
SELECT id, text, page_start, page_end, digest FROM chunks WHERE id = ANY($1::bigint[]);

-- name: hnsw_iterative_scan --
-- Let a filtered HNSW scan keep searching until it has enough rows (pgvector >= 0.8).
SET LOCAL hnsw.iterative_scan = strict_order;

-- name: hnsw_ef_search --
-- Candidate list size of an HNSW scan for this transaction.
SELECT set_config('hnsw.ef_search', $1::text, true);
