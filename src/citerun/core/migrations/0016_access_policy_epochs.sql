-- When each configuration of the access policy and its binding (their uids and
-- generations) was first seen enforced by the API server: the operator's probe was
-- refused by the policy at in_force_since (the API server's clock). A CitationRun
-- created before the epoch of the configuration in force may never have been checked,
-- so the operator fails it instead of reading its Secrets and ConfigMaps (issue 27).
-- State, not cache: a restarted operator must not move the epoch forward or lose it.
CREATE TABLE access_policy_epochs (
    policy_uid          text NOT NULL,
    policy_generation   bigint NOT NULL,
    binding_uid         text NOT NULL,
    binding_generation  bigint NOT NULL,
    in_force_since      timestamptz NOT NULL,
    PRIMARY KEY (policy_uid, policy_generation, binding_uid, binding_generation)
);
