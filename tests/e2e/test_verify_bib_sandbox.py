"""Issue 48 (Low): ``citerun verify --bib`` read the library in its own process, with no
limit on its CPU time or memory, where the worker reads the same library in a parse child
under ``limits.parse`` (``CITERUN_LIMITS__PARSE__*``: CPU seconds, address space, wall
clock). A library the worker would refuse cost the CLI whatever it took (50,000 entries,
the most a library may hold, are about 46 s of CPU here, over the worker's 30 s), and the
run started only to fail. The command as written, the real CLI: the library is read in a
child under the worker's parse limits, and one over them is refused at once with exit 2,
naming the file and the limit, before any database is started."""

from __future__ import annotations

import pathlib
import time

from tests.e2e.test_verify_demo import EXAMPLES, verify

ENTRY = ("@article{{key{i}, title={{A study of \\emph{{things}} number {i} in $x^2$}}, "
         "author={{M{{\\\"u}}ller, Hans and Smith, John and Doe, Jane}}, year={{2019}}, "
         "journal={{Journal of Things}}, file={{:pdfs/key{i}.pdf:PDF}}}}\n")


def test_a_library_over_the_workers_parse_limits_is_refused_by_the_cli(
        tmp_path: pathlib.Path) -> None:
    library = tmp_path / "refs.bib"  # 4,000 entries: 3.7 s of CPU to read here
    library.write_text("".join(ENTRY.format(i=i) for i in range(4_000)))
    started = time.monotonic()
    run = verify(tmp_path / "data", str(EXAMPLES / "thesis.pdf"), "--bib", str(library),
                 "--sources", str(EXAMPLES / "sources"), "--out",
                 str(tmp_path / "report.json"), cwd=tmp_path,
                 env_extra={"CITERUN_LIMITS__PARSE__CPU_S": "1",
                            "CITERUN_LIMITS__PARSE__ADDRESS_SPACE_MB": "1024",
                            "CITERUN_LIMITS__PARSE__WALL_S": "45"})
    elapsed = time.monotonic() - started
    assert run.returncode == 2, (run.returncode, run.stderr[-3000:])
    lines = [line for line in run.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, lines
    assert "--bib" in lines[0] and "refs.bib" in lines[0], lines
    assert "the CPU time limit of 1 s" in lines[0] and "CITERUN_LIMITS__PARSE" in lines[0]
    assert not (tmp_path / "data" / "postgres").exists()  # refused before any work
    assert not (tmp_path / "report.json").exists()
    assert elapsed < 60, elapsed


def test_a_library_within_them_is_read_in_its_child(tmp_path: pathlib.Path) -> None:
    """The same library under the default limits: read, its PDFs (none here) listed."""
    library = tmp_path / "refs.bib"
    library.write_text("".join(ENTRY.format(i=i) for i in range(3)))
    from citerun.cli import verify as cli_verify
    from citerun.pipeline.settings import LimitSettings

    (found,) = cli_verify.read_libraries([library], LimitSettings())
    assert found[0] == library
    assert [item.key for item in found[1]] == ["key0", "key1", "key2"]
    assert found[1][0].authors == ("Müller", "Smith", "Doe")


def test_a_library_over_its_size_is_refused_before_it_is_read(tmp_path: pathlib.Path) -> None:
    library = tmp_path / "refs.bib"
    library.write_text("".join(ENTRY.format(i=i) for i in range(30)))
    run = verify(tmp_path / "data", str(EXAMPLES / "thesis.pdf"), "--bib", str(library),
                 "--out", str(tmp_path / "report.json"), cwd=tmp_path,
                 env_extra={"CITERUN_LIMITS__LIBRARY__MAX_BYTES": "1000"})
    assert run.returncode == 2, (run.returncode, run.stderr[-3000:])
    assert "refs.bib" in run.stderr and "5,850 bytes is over the limit of 1,000" in run.stderr
    assert not (tmp_path / "data" / "postgres").exists()
