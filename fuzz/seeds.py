"""The fuzz corpus's seeds: what the tests feed the readers, written to ``fuzz/corpus/``.

``python -m fuzz.seeds [--check]``

The readers' tests (:data:`TEST_FILES`: real and hostile theses, libraries, bundles and
reference lists) run in this process with the readers' entry points wrapped, and every
input a reader is called with is kept for the target that reads it (:func:`_record`);
the hostile builders of ``tests/support`` add theirs at a size a corpus holds
(:func:`built`). Each seed is a file named by its SHA-1 under ``fuzz/corpus/<target>/``;
a text over :data:`MAX_BYTES` is cut at a line (its shape kept), a zip over it is left
out. The same tests give the same corpus (a zip a test writes gets a fixed time), but
for the few inputs that carry a random id or a time of their own (a Citavi field's
GUIDs, a zip's timestamps set by the test): run it again after changing the tests;
``--check`` lists the seeds that differ from the repository's and writes nothing. The
findings' inputs (``finding-*``, tests/unit/test_fuzz_findings.py) and those the fuzzer
adds (``bench.fuzz --keep-corpus``) stand beside the seeds and are left alone.
"""

from __future__ import annotations

import argparse
import functools
import hashlib
import io
import pathlib
import sys
import types
import zipfile
from collections.abc import Callable, Iterator, Mapping
from typing import Any

ROOT = pathlib.Path(__file__).resolve().parents[1]
CORPUS = ROOT / "fuzz" / "corpus"
#: Bytes of one seed at most (the fuzzer makes inputs up to twice as long).
MAX_BYTES = 16 * 1024
#: Seeds of a target at most (the smallest first): the replay test reads them all.
MAX_SEEDS = 150
#: Tests whose inputs seed the corpus (those of the readers; no Postgres, no workers).
TEST_FILES = [
    "tests/unit/test_writer_latex.py",
    "tests/unit/test_writer_docx.py",
    "tests/unit/test_writer_library.py",
    "tests/unit/test_writer_archive.py",
    "tests/unit/test_writer_text.py",
    "tests/unit/test_writer_where_lines.py",
    "tests/unit/test_writer_claims_as_written.py",
    "tests/unit/test_latex_main_file.py",
    "tests/unit/test_source_reference_list.py",
    "tests/unit/test_citations.py",
]
SEED_PREFIX = "seed-"


class Seeds:
    def __init__(self) -> None:
        self.by_target: dict[str, dict[str, bytes]] = {}

    def add(self, target: str, data: bytes) -> None:
        if len(data) > MAX_BYTES:
            if target == "zip":
                return
            data = data[:MAX_BYTES]
            cut = data.rfind(b"\n")
            data = data[:cut] if cut > MAX_BYTES // 2 else data
        name = SEED_PREFIX + hashlib.sha1(data).hexdigest()
        self.by_target.setdefault(target, {})[name] = data


def _text(value: Any) -> bytes:
    return value.encode("utf-8", "surrogatepass") if isinstance(value, str) else bytes(value)


def _record(seeds: Seeds) -> list[tuple[types.ModuleType, str, Callable[..., Any]]]:
    """Wrap the readers' entry points so that their inputs are kept; the wrapped
    functions (module, name, original), to be put back."""
    from citerun.pipeline.citations import references
    from citerun.pipeline.writer import archive, bib, csl, docx, formats, latex
    from fuzz import targets

    def on_library(files: Mapping[str, bytes], *args: Any, **kwargs: Any) -> None:
        for path, data in files.items():
            if path.lower().endswith(".bib"):
                seeds.add("bib", data)
            elif path.lower().endswith(".json"):
                seeds.add("csl", data)

    def on_files(files: Mapping[str, bytes], *args: Any, **kwargs: Any) -> None:
        files = dict(files)
        if "word/document.xml" in files:
            seeds.add("docx", targets.encode_members(files, targets.FIRST_FILE["docx"]))
        elif any(p.lower().endswith(".tex") for p in files):
            seeds.add("latex", targets.encode_members(files, _first_tex(files)))

    def on_latex(files: Mapping[str, bytes], main: str | None = None, *args: Any,
                 **kwargs: Any) -> None:
        files = dict(files)
        if main is not None:
            files[formats.MAIN_MEMBER] = main.encode()
        seeds.add("latex", targets.encode_members(files, _first_tex(files)))

    def on_docx_files(files: Mapping[str, bytes], *args: Any, **kwargs: Any) -> None:
        seeds.add("docx", targets.encode_members(dict(files), targets.FIRST_FILE["docx"]))

    def on_pages(pages: Any, *args: Any, **kwargs: Any) -> None:
        pages = list(pages)
        texts = [p.text if hasattr(p, "text") else p[1] for p in pages]
        seeds.add("references", "\f".join(texts).encode("utf-8", "surrogatepass"))

    hooks: list[tuple[types.ModuleType, str, Callable[..., None]]] = [
        (formats, "read_library", on_library),
        (formats, "read_files", on_files),
        (latex, "read_latex", on_latex),
        (docx, "read_docx_files", on_docx_files),
        (bib, "read_bibtex", lambda text, *a, **k: seeds.add("bib", _text(text))),
        (csl, "read_csl_json", lambda text, *a, **k: seeds.add("csl", _text(text))),
        (csl, "is_csl_json", lambda text, *a, **k: seeds.add("csl", _text(text))),
        (archive, "read_bundle", lambda data, *a, **k: seeds.add("zip", bytes(data))),
        (references, "find_reference_section", on_pages),
        (references, "parse_reference_list",
         lambda text, *a, **k: seeds.add("references", _text(text))),
    ]
    undo = []
    for module, name, hook in hooks:
        original = getattr(module, name)

        def wrapped(*args: Any, __original: Callable[..., Any] = original,
                    __hook: Callable[..., None] = hook, **kwargs: Any) -> Any:
            try:
                __hook(*args, **kwargs)
            except Exception:  # noqa: BLE001 - a hook never changes what the test sees
                pass
            return __original(*args, **kwargs)

        functools.update_wrapper(wrapped, original)
        # Every module that imported the function by name holds it too.
        for holder in list(sys.modules.values()):
            if getattr(holder, name, None) is original:
                setattr(holder, name, wrapped)
                undo.append((holder, name, original))
    return undo


def _first_tex(files: Mapping[str, bytes]) -> str:
    """The file a LaTeX seed leads with: the one with ``\\documentclass`` if any."""
    tex = sorted(p for p in files if p.lower().endswith(".tex"))
    main = [p for p in tex if b"\\documentclass" in files[p]]
    return (main or tex or [next(iter(files), "thesis.tex")])[0]


def _zip(files: Mapping[str, bytes]) -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as z:
        for path, data in files.items():
            z.writestr(zipfile.ZipInfo(path, date_time=(1980, 1, 1, 0, 0, 0)), data)
    return out.getvalue()


def built() -> Iterator[tuple[str, bytes]]:
    """The hostile builders of ``tests/support`` at a size a corpus holds."""
    from citerun.pipeline.writer import formats
    from tests.e2e import test_intake_bombs
    from tests.support import (docx_fixtures, hostile_claims, hostile_references, latex_zip,
                               writer_theses)

    for shape, make in sorted(hostile_references.SHAPES.items()):
        lines = make(0.02)
        yield "references", ("Body text cites (Kalomi, 1990).\n\nReferences\n"
                             + "\n".join(lines)).encode()
    yield "references", ("References\n" + "Aa, " * 4000).encode()  # hostile_pdfs.regex_bomb
    tex = hostile_claims.long_claim_tex(count=2_000)
    yield "zip", tex
    yield "latex", _latex_of_bundle(tex)
    yield "zip", hostile_claims.quoted_300_tex(times=10, count=200)
    yield "zip", test_intake_bombs.bomb(members=4, member_bytes=1_000)
    files = {p: d.encode() for p, d in latex_zip.files().items()}
    yield "zip", _zip(files)
    yield "latex", _encode_latex(files)
    yield "zip", docx_fixtures.thesis_docx()
    yield "zip", formats.bundle({"thesis.docx": writer_theses.docx_thesis(),
                                 "library/0-refs.bib": hostile_claims.BIB.encode()})
    yield "bib", hostile_claims.BIB.encode()
    yield "zip", _zip({"a.tex": b"\\input{b}", "b.tex": b"\\input{a}", "../x.tex": b"x"})


def _encode_latex(files: Mapping[str, bytes]) -> bytes:
    from fuzz import targets

    return targets.encode_members(files, _first_tex(files))


def _latex_of_bundle(data: bytes) -> bytes:
    from citerun.pipeline.writer import archive

    return _encode_latex(archive.read_bundle(data))


def collect() -> dict[str, dict[str, bytes]]:
    import pytest

    seeds = Seeds()
    for target, data in built():
        seeds.add(target, data)
    # The test modules import the readers as they are collected: wrap them first.
    from citerun.pipeline.writer import bib, csl, docx, latex  # noqa: F401

    undo = _record(seeds)
    # A zip a test writes carries the time it was written: a fixed one, so that the same
    # tests give the same bytes.
    clock = zipfile.time  # type: ignore[attr-defined]
    zipfile.time = types.SimpleNamespace(  # type: ignore[attr-defined]
        time=lambda: 946_728_000.0, localtime=clock.localtime, gmtime=clock.gmtime,
        monotonic=clock.monotonic)
    try:
        code = pytest.main(["-q", "-p", "no:cacheprovider", "-x", "--no-header",
                            "-W", "ignore", *(str(ROOT / f) for f in TEST_FILES)])
    finally:
        zipfile.time = clock  # type: ignore[attr-defined]
        for module, name, original in undo:
            setattr(module, name, original)
    if code not in (0, 5):
        raise SystemExit(f"the tests failed (exit status {code}): their inputs are no corpus")
    return {target: dict(sorted(found.items(), key=lambda kv: (len(kv[1]), kv[0]))[:MAX_SEEDS])
            for target, found in seeds.by_target.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true",
                        help="compare with fuzz/corpus instead of writing it")
    args = parser.parse_args()
    sys.path.insert(0, str(ROOT))
    found = collect()
    differ = []
    for target, seeds in sorted(found.items()):
        folder = CORPUS / target
        have = {p.name: p.read_bytes() for p in folder.glob(SEED_PREFIX + "*")} \
            if folder.is_dir() else {}
        if args.check:
            if have != seeds:
                differ.append(f"{target}: {len(set(have) - set(seeds))} of {len(have)} seeds "
                              f"not given by the tests, {len(set(seeds) - set(have))} new")
            continue
        folder.mkdir(parents=True, exist_ok=True)
        for name in set(have) - set(seeds):
            (folder / name).unlink()
        for name, data in seeds.items():
            (folder / name).write_bytes(data)
        print(f"{target}: {len(seeds)} seeds, {sum(map(len, seeds.values())):,} bytes")
    print("\n".join(differ) if differ else "fuzz/corpus holds what the tests give")


if __name__ == "__main__":
    main()
