-- The users the web service has seen sign in (issue 47): a run shared with a name nobody
-- has signed in as (a typo such as "bergr" for "berger") says so. last_seen is refreshed
-- at most hourly per service process.
CREATE TABLE web_users (
    name        text PRIMARY KEY CHECK (length(name) BETWEEN 1 AND 256),
    first_seen  timestamptz NOT NULL DEFAULT now(),
    last_seen   timestamptz NOT NULL DEFAULT now()
);
