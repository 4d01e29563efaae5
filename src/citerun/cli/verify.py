"""``citerun verify``: one thesis, its sources, local workers, one report.

The same pipeline as on a cluster: the CLI stages the PDFs in Postgres, creates a run,
starts ``--workers`` ordinary ``citerun worker`` processes against the same database and
follows the run's progress until it ends. Documents are content-addressed, so verifying
the same files again reuses what was parsed before.

The workers live and die with the verify: they claim only its run
(``CITERUN_WORKER__RUN_ID``), ask the kernel for SIGTERM when the verify dies
(``PR_SET_PDEATHSIG``, see :func:`citerun.cli.main.cmd_worker`) and then cancel the run
themselves. A run the verify leaves early (Ctrl-C, ``--timeout``, an error) is cancelled,
not left ``running``; a run whose verify and workers were all killed at once is cancelled
by the next verify on the same database (the run's spec names the process that owns it).

This module reads the command line's inputs (what a thesis file stages as is
:mod:`citerun.pipeline.intake`'s) and starts the local workers
(:class:`citerun.local.workers.LocalWorkers`); the run itself (started, followed,
cancelled, its report saved and summed up) is :mod:`.verify_run`.
"""

from __future__ import annotations

import asyncio
import os
import sys
import uuid
from dataclasses import dataclass
from pathlib import Path

import asyncpg
from rich.console import Console

from citerun.cli.verify_run import cancel_run, follow, save_report, start_run
from citerun.core import citekeys, errors
from citerun.core.settings import Settings
from citerun.pipeline.settings import LimitSettings
from citerun.core.states import RunState
from citerun.local.workers import LocalWorkers
from citerun.pipeline import intake
from citerun.pipeline.writer import formats
from citerun.pipeline.writer.model import LibraryItem, WriterFileError


class UsageError(errors.CiterunError):
    """The command line is not usable."""


@dataclass(frozen=True)
class VerifyResult:
    run_id: uuid.UUID
    state: str
    html_path: Path | None
    json_path: Path | None
    verdicts: dict[str, int]
    error: str | None


def collect_sources(items: list[str]) -> list[Path]:
    """PDF files named directly or found in named directories (sorted, no duplicates)."""
    found: list[Path] = []
    for item in items:
        path = Path(item)
        if path.is_dir():
            found.extend(sorted(p for p in path.iterdir()
                                if p.is_file() and p.suffix.lower() == ".pdf"))
        elif path.is_file():
            found.append(path)
        else:
            raise UsageError(f"source {item!r} is neither a file nor a directory")
    unique = list(dict.fromkeys(p.resolve() for p in found))
    if not unique:
        raise UsageError(f"no PDF sources found in {', '.join(items)}")
    return unique


MAX_WORKERS = 64
MAX_CONCURRENCY = 256  # WorkerSettings.concurrency's upper bound


#: A LaTeX folder is read this deep and this far, text files only (formats.BUNDLE_SUFFIXES).
MAX_FOLDER_FILES = 2_000
MAX_FOLDER_DEPTH = 8


@dataclass(frozen=True)
class ThesisInput:
    """The thesis as staged: its bytes (a PDF, a .docx, or a bundle made here) and name."""

    path: Path
    data: bytes
    filename: str


def check_thesis(thesis: str) -> Path:
    path = Path(thesis)
    if path.is_dir():
        return path
    if not path.is_file():
        raise UsageError(f"thesis {thesis!r} is neither a file nor a directory")
    if not intake.is_thesis_name(path.name):
        raise UsageError(f"thesis {thesis!r}: give a .pdf, a .docx, a .tex (its folder is "
                         "read with it), a .zip holding a LaTeX thesis, or a LaTeX folder")
    return path


def _folder_files(root: Path) -> dict[str, bytes]:
    """The text files of a LaTeX folder a bundle is made of (no figures, no hidden
    directories, never following a link out of it)."""
    files: dict[str, bytes] = {}
    base = root.resolve()
    for path in sorted(root.rglob("*")):
        rel = path.relative_to(root)
        if (any(part.startswith(".") for part in rel.parts) or len(rel.parts) > MAX_FOLDER_DEPTH
                or not path.is_file() or path.suffix.lower() not in formats.BUNDLE_SUFFIXES):
            continue
        if not path.resolve().is_relative_to(base):
            continue  # a link leading out of the folder
        if len(files) >= MAX_FOLDER_FILES:
            raise UsageError(f"the thesis folder {str(root)!r} holds more than "
                             f"{MAX_FOLDER_FILES} text files")
        files[rel.as_posix()] = path.read_bytes()
    return files


def load_thesis(path: Path, bibs: list[Path]) -> ThesisInput:
    """The thesis's bytes as a run stages them, with the ``--bib`` libraries added.

    A PDF or a .docx alone is staged as it is; a .tex is staged as a bundle of its folder
    (its chapters and .bib: ``\\input`` is resolved inside it), the .tex named as the
    main file; a .zip as it is, or rebuilt with the libraries added.
    """
    libraries = [(b.name, b.read_bytes()) for b in bibs]
    if path.is_dir():
        files = _folder_files(path)
        return ThesisInput(path, intake.bundle(files, libraries), f"{path.name}.zip")
    if intake.suffix(path.name) != ".tex":  # a .pdf, .docx or .zip: the intake's rule
        try:
            return ThesisInput(path, intake.thesis_bytes(path.name, path.read_bytes(),
                                                         libraries), path.name)
        except WriterFileError as err:
            raise UsageError(f"thesis {str(path)!r}: {err}") from None
    return ThesisInput(path, intake.bundle(_folder_files(path.parent), libraries,
                                           main=path.name), path.name)


Libraries = list[tuple[Path, tuple[LibraryItem, ...]]]


def read_libraries(bibs: list[Path], limits: LimitSettings) -> Libraries:
    """Each ``--bib`` library's items, read once within the configured limits, as the
    worker will read them: in a child process under ``limits.parse`` (CPU seconds,
    address space, wall clock: :mod:`citerun.worker.sandbox`, issue 48), a file over
    ``limits.library.max_bytes`` refused before it is read. A library that cannot be
    read, or not within them, is a :class:`UsageError`."""
    from citerun.worker import sandbox

    libraries: Libraries = []
    for bib_path in bibs:
        size = bib_path.stat().st_size
        if size > limits.library.max_bytes:
            raise UsageError(f"--bib {str(bib_path)!r}: the library {bib_path.name}: file of "
                             f"{size:,} bytes is over the limit of "
                             f"{limits.library.max_bytes:,}")
        data = bib_path.read_text(errors="replace").encode()
        try:
            found = asyncio.run(sandbox.run(limits.parse, read_library, bib_path.name, data,
                                            limits, slots=1, spawn=True))
        except sandbox.DocumentTooComplex as err:
            raise UsageError(f"--bib {str(bib_path)!r}: the library cannot be read within "
                             f"the limits the worker reads it under: {err.limit} "
                             "(CITERUN_LIMITS__PARSE__*)") from None
        except sandbox.SandboxError as err:
            raise UsageError(f"--bib {str(bib_path)!r}: {err}") from None
        if isinstance(found, str):
            raise UsageError(f"--bib {str(bib_path)!r}: {found}")
        libraries.append((bib_path, found))
    return libraries


def read_library(name: str, data: bytes, limits: LimitSettings
                 ) -> tuple[LibraryItem, ...] | str:
    """A library's items, or why it cannot be read (:func:`read_libraries`' child)."""
    try:
        items, _ = formats.read_library({name: data}, limits.library, limits.writer.bib)
    except WriterFileError as err:
        return str(err)
    return items


def library_sources(libraries: Libraries, within: list[Path] | None
                    ) -> tuple[list[Path], list[tuple[str, str]]]:
    """The PDFs the libraries attach (their ``file`` fields) that exist on this machine,
    relative to the library file as Zotero's and JabRef's exports write them: those
    inside one of the folders ``within`` or the library's own folder (all of them where
    ``within`` is None), and the (key, file as named) of those outside, which are not read
    (issue 48: ``../`` and absolute paths pulled any PDF of the machine into the report).
    A link is where it leads."""
    roots = None if within is None else [root.resolve() for root in within]
    found: list[Path] = []
    outside: list[tuple[str, str]] = []
    for bib_path, items in libraries:
        # The library's folder: a JabRef or Zotero export beside its storage folder.
        here = None if roots is None else [*roots, bib_path.parent.resolve()]
        for item in items:
            for name in item.files:
                path = _attached_path(bib_path, name)
                if path.suffix.lower() != ".pdf" or not path.is_file():
                    continue
                if here is None or any(path.resolve().is_relative_to(r) for r in here):
                    found.append(path)
                else:
                    outside.append((item.key, name))
    return found, outside


def outside_lines(outside: list[tuple[str, str]]) -> list[str]:
    """What :func:`library_sources` left outside, one line each, for stderr."""
    if not outside:
        return []
    return [f"citerun verify: {len(outside)} PDF(s) named by the library lie outside the "
            "thesis's folder and the library's and were not read; their citations are "
            "reported unresolved "
            "(give their folder to --sources, or --bib-files-anywhere reads them):",
            *(f"  {key}: {name}" for key, name in outside)]


def missing_sources(libraries: Libraries) -> list[tuple[str, str, tuple[str, ...]]]:
    """The library items whose ``file`` fields name PDFs of which none is on this
    machine: (key, reference, the files named), in library order."""
    missing: list[tuple[str, str, tuple[str, ...]]] = []
    for bib_path, items in libraries:
        for item in items:
            pdfs = [n for n in item.files if n.lower().endswith(".pdf")]
            if pdfs and not any(_attached_path(bib_path, n).is_file() for n in pdfs):
                missing.append((item.key, item.reference_text(), tuple(pdfs)))
    return missing


def missing_lines(libraries: Libraries) -> list[str]:
    """What :func:`missing_sources` finds, one line each, for stderr."""
    found = missing_sources(libraries)
    if not found:
        return []
    return [f"citerun verify: {len(found)} source PDF(s) named by the library are not on "
            "this machine; their citations are reported unresolved, with their reference "
            "entries (sources to add):",
            *(f"  {key}: {reference[:160]} -- missing: {', '.join(files[:3])}"
              for key, reference, files in found)]


def _attached_path(bib_path: Path, name: str) -> Path:
    candidate = Path(name.replace("\\", "/"))
    return candidate if candidate.is_absolute() else bib_path.parent / candidate


def check_arguments(thesis: str, sources: list[str], workers: int, concurrency: int = 1,
                    timeout_s: float = 1.0, bibs: list[str] | None = None,
                    limits: LimitSettings | None = None, *, bib_files_anywhere: bool = False,
                    fetch_sources: bool = False
                    ) -> tuple[Path, list[Path]]:
    """The thesis and the sources to verify, or a :class:`UsageError`; the ``--bib``
    libraries read within ``limits`` (the configured ones, ``CITERUN_LIMITS__*``; the
    defaults where a command has none to give). The PDFs their file fields attach are
    read inside the thesis's folder and the folders given to ``--sources`` only, unless
    ``bib_files_anywhere``."""
    limits = limits or LimitSettings()
    thesis_path = check_thesis(thesis)
    for bib_name in bibs or ():
        if not Path(bib_name).is_file():
            raise UsageError(f"--bib {bib_name!r} is not a file")
    if not 1 <= workers <= MAX_WORKERS:
        raise UsageError(f"--workers must be between 1 and {MAX_WORKERS}, got {workers}")
    if not 1 <= concurrency <= MAX_CONCURRENCY:
        raise UsageError(
            f"--concurrency must be between 1 and {MAX_CONCURRENCY}, got {concurrency}")
    if not timeout_s > 0:
        raise UsageError(f"--timeout must be a positive number of seconds, got {timeout_s}")
    libraries = read_libraries([Path(b) for b in bibs or ()], limits)
    within = [thesis_path if thesis_path.is_dir() else thesis_path.parent,
              *(Path(s) for s in sources if Path(s).is_dir())]
    attached, outside = library_sources(libraries, None if bib_files_anywhere else within)
    if not sources and not bibs and not fetch_sources:
        raise UsageError("no sources: give --sources, or a --bib (its file fields name PDFs), "
                         "or --fetch-sources (open-access copies of the works cited)")
    # A run without the source PDFs (issue 40): every key resolved or named missing,
    # every locator read; the PDFs the library names and this machine lacks are listed.
    missing = missing_lines(libraries)
    if missing and fetch_sources:  # issue 51: they are looked for first
        missing.append("  (with --fetch-sources, open-access copies of them are looked for "
                       "first; the report lists what was found)")
    for line in [*missing, *outside_lines(outside)]:
        print(line, file=sys.stderr)
    given = collect_sources(sources) if sources else []
    source_paths = [p for p in dict.fromkeys([*given, *(a.resolve() for a in attached)])
                    if p != thesis_path.resolve()]
    return thesis_path, source_paths


#: ``--out``'s suffix -> the format written there; the other goes beside it.
REPORT_FORMATS = {".html": "html", ".htm": "html", ".json": "json"}


@dataclass(frozen=True)
class ReportPaths:
    html: Path
    json: Path


def report_format(out: Path, option: str = "--out") -> str:
    """The format ``out``'s suffix names (the one rule of ``verify`` and ``report``); a
    symbolic link at ``out`` is refused (issue 48: a report is never written through one)."""
    fmt = REPORT_FORMATS.get(out.suffix.lower())
    if fmt is None:
        raise UsageError(f"{option} {str(out)!r} must end in .html, .htm or .json "
                         f"(it ends in {out.suffix or 'no suffix'!r})")
    _refuse_link(out, out, option)
    return fmt


def _refuse_link(path: Path, out: Path, option: str) -> None:
    if path.is_symlink():  # issue 48: a repository's report.json led out of it
        what = "" if path == out else f": {str(path)!r}, the {fmt_of(path)} beside it,"
        raise UsageError(f"{option} {str(out)!r}{what} is a symbolic link (to "
                         f"{os.readlink(path)!r}); a report is never written through one: "
                         "remove it or choose another path")


def _same_file(a: Path, b: Path) -> bool:
    if a.resolve() == b.resolve():
        return True
    try:
        return os.path.samefile(a, b)  # a hard link, or a symlinked directory on the way
    except OSError:
        return False


def input_paths(thesis: Path, sources: list[Path], bibs: list[Path]) -> list[Path]:
    """Every file a verify reads: the thesis, its sources and libraries, and for a .tex or
    a LaTeX folder the folder's files its bundle takes (issue 41: ``--out
    thesis/refs.html`` overwrote ``thesis/refs.json``, which the bundle had read)."""
    paths = [thesis, *sources, *bibs]
    root = thesis if thesis.is_dir() else (
        thesis.parent if thesis.suffix.lower() == ".tex" else None)
    if root is not None:
        paths += [root / rel for rel in _folder_files(root)]
    return paths


def fmt_of(path: Path) -> str:
    return path.suffix[1:].upper()


def report_paths(out: Path, inputs: list[Path], option: str = "--out") -> ReportPaths:
    """Where the report goes: ``out`` in the format of its suffix, the other format
    beside it. Refused when either file would be one of ``inputs``, or is a symbolic link
    (:func:`citerun.cli.verify_run.write_file` replaces a link put there later)."""
    fmt = report_format(out, option)
    sibling = out.with_suffix(".json" if fmt == "html" else ".html")
    _refuse_link(sibling, out, option)
    for path in (out, sibling):
        for given in inputs:
            if _same_file(path, given):
                what = "" if path == out else f" (the {fmt_of(path)} beside it)"
                raise UsageError(f"{option} {str(out)!r} would overwrite the input "
                                 f"{str(given)!r}{what}; choose another path")
    return ReportPaths(html=out, json=sibling) if fmt == "html" else ReportPaths(
        html=sibling, json=out)


def parse_keys(pairs: list[str]) -> dict[str, list[str]]:
    """``KEY=FILE`` pairs -> {file name: [keys]} (explicit citation keys), refused by the
    run spec's rule (:func:`citerun.core.citekeys.check_explicit`) before any work."""
    keys: dict[str, list[str]] = {}
    for pair in pairs:
        key, sep, name = pair.partition("=")
        if not sep or not key or not name:
            raise UsageError(f"--key expects KEY=FILE, got {pair!r}")
        keys.setdefault(Path(name).name, []).append(key)
    try:
        citekeys.check_explicit(keys.items())
    except citekeys.KeyConflict as err:
        raise UsageError(f"--key: {err}") from err
    return keys


def verify(settings: Settings, url: str, thesis: ThesisInput, sources: list[Path], *,
           keys: dict[str, list[str]], out: ReportPaths, workers: int, concurrency: int,
           timeout_s: float, console: Console, fetch_sources: bool = False) -> VerifyResult:
    """Run the thesis on local workers and save its report. ``fetch_sources``
    (``--fetch-sources``, issue 51): the run asks for open-access copies of the cited works
    no source matches, and its workers may fetch them (``CITERUN_OPENACCESS__ENABLED``; the
    rest of ``CITERUN_OPENACCESS__*`` is the environment's)."""
    run_id = asyncio.run(start_run(url, thesis, sources, keys, settings=settings,
                                   fetch_sources=fetch_sources))
    console.print(f"run {run_id}: {thesis.path.name} against {len(sources)} source(s), "
                  f"{workers} worker(s)")
    local = LocalWorkers(settings.database_url, workers, settings.data_dir / "logs",
                         concurrency, run_id, settings.data_dir,
                         extra_env={"CITERUN_OPENACCESS__ENABLED": "true"} if fetch_sources
                         else None)
    reason = "interrupted: citerun verify stopped before the run ended"
    row = None
    try:
        row = asyncio.run(follow(url, run_id, local, console, timeout_s))
    except KeyboardInterrupt:
        reason = "interrupted: citerun verify was stopped (Ctrl-C or SIGTERM)"
        raise
    except errors.CiterunError as err:
        reason = f"interrupted: {err}".splitlines()[0]
        raise
    finally:
        if row is None:
            try:
                asyncio.run(cancel_run(url, run_id, reason))
            except (OSError, asyncpg.PostgresError, errors.CiterunError) as err:
                console.print(f"could not cancel run {run_id}: {err}")
        local.stop()
    verdicts = dict(row["verdicts"] or {})
    if row["state"] != RunState.SUCCEEDED:
        return VerifyResult(run_id, row["state"], None, None, verdicts, row["error"])
    asyncio.run(save_report(url, run_id, out))
    return VerifyResult(run_id, row["state"], out.html, out.json, verdicts, None)
