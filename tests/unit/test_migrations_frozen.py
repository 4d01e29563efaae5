"""A released migration is never edited: a database that applied it records its sha256
and refuses to start when the file's text changed (citerun.core.db). Even a comment counts, so
the checksums of the released files are pinned here; a new migration is a new file, added
to this table when it is released: every migration but the newest must be pinned (a later
migration exists, so a database may have applied it), which
``test_every_migration_but_the_newest_is_pinned`` checks."""

from __future__ import annotations

from citerun.core import db

RELEASED = {
    "0001_initial.sql": "3bd659d1f9773220e75daff8c2069e23a184a6d59c9036b2e3e339d8362e9669",
    "0002_dead_states_embedding_model_retention.sql": "14c98252dc64298d5a61c1cf2121b29cc376e519cf80588b0284b1eb1f2602a9",
    "0003_tenancy.sql": "51e113ff15863019fe617e47ad4b27ad7d7ea78f5e4df7012bbf65d98fd3aa53",
    "0004_fair_claim.sql": "706c94cad4a5951617cebb33f05d8aad9c512aa386299cdd433a4a13a7ea07f2",
    "0005_judge_answers.sql": "053539269bd99aae75095d95f1fcae805915e06be6259142305ccc9e0a8bf582",
    "0007_layout_identity.sql": "f20487c2a0b5d3f630f5469139de63e8521773ecaa62fefce732faea4fcfc27c",
    "0013_upload_ownership.sql": "d7e1b2cbf7e139aff53dac4fadf08172de4d9e5d16bc63d4288dc7d0d46bd939",
    "0014_written_thesis.sql": "b16fed51220e0e0afd8bee8ae3945ae1ed9799586d0fe5e4ba2fb18bf1be4a13",
    "0015_web_owners.sql": "aac23d9d1d4db4ca7e2c113e9b6ea25a2b186a4ee458a4cb62fa654b39e4c1eb",
    "0016_access_policy_epochs.sql": "0ef62a980289d398851d33964c63525c16af321bbc28b8c59e023fccb5c8c58c",
    "0017_web_cluster_runs.sql": "71d68f3e335257e52a5eb872df439ffbe7099ebd158a77f89d3c041c181711d1",
    "0018_web_shares.sql": "82278ac0b6cae0e8d13705f1c3c897b7b3afaabe499fd79c01344b3a96ffa818",
    "0019_citation_location.sql": "0a246953f6dbceef869841712663003f324ee219801c1d93c934f6725d0de031",
    "0020_judge_spend.sql": "d4f027a9a7d359cbb4cf8fcd55bf5d52b042d5536f67022cbc2ae637d7a66110",
    "0021_page_ocr.sql": "bc6dc8ef20a4d39735f74913080d9223ab61557af74d4f305a192b6b837e9c73",
    "0022_web_users.sql": "84ce0fe4140fbc5fdf1c50ea2ec12d4ef3cad23cb5787196514a3c44c794c74f",
    "0023_fetched_works.sql": "d786b90752bcf2ded2a1f528966988fc5e3d3af83e1cb40675234c5931b826a1",
    "0024_parser_version.sql": "63e36d787536dd5073d06059a649ccdb1879ce03b00e93e8546437809a29d368",
}


def test_released_migrations_are_byte_for_byte_what_databases_applied() -> None:
    found = {f"{m.version:04d}_{m.name}.sql": m.checksum for m in db.available_migrations()}
    changed = {name for name, digest in RELEASED.items() if found.get(name) != digest}
    assert not changed, f"released migrations were edited (or removed): {sorted(changed)}"


def test_every_migration_but_the_newest_is_pinned() -> None:
    names = [f"{m.version:04d}_{m.name}.sql" for m in db.available_migrations()]
    unpinned = [name for name in names[:-1] if name not in RELEASED]
    assert not unpinned, f"pin these released migrations in RELEASED: {unpinned}"
