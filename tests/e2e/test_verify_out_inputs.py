"""Issue 41 (Low): ``citerun verify thesis/main.tex --out thesis/refs.html`` overwrote
``thesis/refs.json``, a file it had read (the .tex's folder is bundled with it, its CSL
library among the files). The command as written, a real process: refused with exit 2 and
one line naming the file, before any work; the library is unchanged."""

from __future__ import annotations

import json
from pathlib import Path

from tests.e2e.test_verify_errors import SOURCES, assert_one_error_line, citerun

LIBRARY = json.dumps([{"id": "alvarez2019", "type": "article-journal",
                       "title": "Nocturnal Heat in Dense Urban Cores",
                       "author": [{"family": "Alvarez", "given": "Maria"}],
                       "issued": {"date-parts": [[2019]]}}])


def test_an_out_whose_sibling_is_a_file_of_the_thesis_folder_is_refused(tmp_path: Path) -> None:
    folder = tmp_path / "thesis"
    folder.mkdir()
    (folder / "main.tex").write_text(
        "\\documentclass{article}\n\\begin{document}\nIn dense city centres the urban heat "
        "island is most pronounced after sunset \\cite{alvarez2019}.\n\\end{document}\n")
    (folder / "refs.json").write_text(LIBRARY)
    done = citerun("verify", "thesis/main.tex", "--sources", SOURCES, "--out",
                   "thesis/refs.html", data_dir=tmp_path / "data", timeout=300)
    assert_one_error_line(done, 2, "--out", "would overwrite the input", "refs.json",
                          "the JSON beside it")
    assert (folder / "refs.json").read_text() == LIBRARY
    assert not (folder / "refs.html").exists()
    assert not (tmp_path / "data" / "postgres").exists()  # refused before any work
