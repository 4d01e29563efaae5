-- citerun schema, version 5: the LLM judge's answer cache (see docs/architecture.md,
-- "Judge"). Never edit this file once it has landed.

-- One validated answer of an OpenAI-compatible judge per (model, prompt): the key is the
-- sha256 of the model name, the system prompt and the user prompt (the claim and its
-- numbered passages), so an identical question is never paid for twice, across runs and
-- tenants. `tokens` is what the answer cost when it was asked; a cache hit costs 0.
CREATE TABLE judge_answers (
    key         text PRIMARY KEY CHECK (key ~ '^[0-9a-f]{64}$'),
    model       text NOT NULL,
    answer      jsonb NOT NULL,
    tokens      integer NOT NULL DEFAULT 0 CHECK (tokens >= 0),
    created_at  timestamptz NOT NULL DEFAULT now(),
    hits        bigint NOT NULL DEFAULT 0,
    last_hit_at timestamptz
);
-- A cleaner that drops answers nobody asked for in a long time walks this.
CREATE INDEX judge_answers_last_used_idx ON judge_answers (coalesce(last_hit_at, created_at));
