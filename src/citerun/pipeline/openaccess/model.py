"""What a lookup found (:class:`Found`) and what it tried on the way (:class:`Attempt`).

Plain frozen dataclasses; :meth:`Found.to_json` is what a run stores beside the fetched
PDF (the bytes are stored once, by their hash, not in the JSON).
"""

from __future__ import annotations

import dataclasses
import typing

Kind = typing.Literal["pdf", "abstract", "none"]
KINDS: tuple[Kind, ...] = typing.get_args(Kind)


@dataclasses.dataclass(frozen=True)
class Attempt:
    """One thing the client tried, in plain words for the report: ``service``
    ("Unpaywall"), ``identifier`` ("DOI 10.1000/x", a PDF link) and ``outcome``
    ("no open-access copy", "refused: a private address", "not a PDF (an HTML page)")."""

    service: str
    identifier: str
    outcome: str

    def to_json(self) -> dict[str, str]:
        return {"service": self.service, "identifier": self.identifier,
                "outcome": self.outcome}

    @classmethod
    def from_json(cls, data: typing.Mapping[str, typing.Any]) -> Attempt:
        return cls(str(data["service"]), str(data["identifier"]), str(data["outcome"]))


@dataclasses.dataclass(frozen=True)
class Found:
    """The best the services had for one work.

    ``kind`` "pdf": ``pdf`` holds the bytes (size-capped, ``%PDF`` checked), ``pdf_url``
    where they came from, ``service`` who named the link, ``licence`` and ``version``
    ("publishedVersion", "acceptedVersion", "submittedVersion") where the service says;
    "abstract": no PDF, ``abstract`` holds the text and ``abstract_service`` who gave
    it; "none": neither. ``landing_url`` is the work's page where known. ``attempts``
    lists every request and its outcome, in order, for the report's "identifiers tried".
    """

    kind: Kind
    pdf: bytes | None = None
    pdf_url: str | None = None
    landing_url: str | None = None
    service: str | None = None
    licence: str | None = None
    version: str | None = None
    abstract: str | None = None
    abstract_service: str | None = None
    attempts: tuple[Attempt, ...] = ()

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"unknown kind {self.kind!r}")
        if (self.kind == "pdf") != (self.pdf is not None):
            raise ValueError("a Found of kind 'pdf', and only that, holds PDF bytes")
        if self.kind == "abstract" and not self.abstract:
            raise ValueError("a Found of kind 'abstract' holds an abstract")

    def to_json(self) -> dict[str, typing.Any]:
        """Everything but the PDF's bytes, as JSON values."""
        return {"kind": self.kind, "pdf_url": self.pdf_url, "landing_url": self.landing_url,
                "service": self.service, "licence": self.licence, "version": self.version,
                "abstract": self.abstract, "abstract_service": self.abstract_service,
                "attempts": [a.to_json() for a in self.attempts]}

    @classmethod
    def from_json(cls, data: typing.Mapping[str, typing.Any], pdf: bytes | None = None
                  ) -> Found:
        """The :class:`Found` of :meth:`to_json`, its PDF's bytes given back as ``pdf``
        (needed for kind "pdf")."""
        def text(name: str) -> str | None:
            value = data.get(name)
            return None if value is None else str(value)
        kind = data["kind"]
        if kind not in KINDS:
            raise ValueError(f"unknown kind {kind!r}")
        return cls(kind=kind, pdf=pdf, pdf_url=text("pdf_url"),
                   landing_url=text("landing_url"), service=text("service"),
                   licence=text("licence"), version=text("version"),
                   abstract=text("abstract"), abstract_service=text("abstract_service"),
                   attempts=tuple(Attempt.from_json(a) for a in data.get("attempts", ())))
