"""Issue 47: the main .tex of a zipped LaTeX thesis is found the way LaTeX editors find
it. Before, a thesis whose ``\\documentclass`` options span lines in an ``\\input``
preamble was refused ("no .tex file of the bundle has a \\documentclass (ten chapters);
name the main file"), main.tex not even listed."""

from __future__ import annotations

import pytest

from citerun.pipeline import intake
from citerun.pipeline.writer import formats
from citerun.pipeline.writer.model import WriterFileError
from tests.support import latex_zip


def test_a_class_over_lines_in_an_input_preamble_is_read() -> None:
    thesis = formats.read_thesis(latex_zip.zipped(latex_zip.files()))
    assert thesis.format == "latex"
    assert len(thesis.citations) == 20, thesis.citations[:3]
    assert {k for c in thesis.citations for k in c.keys} == {"alvarez2019", "bostock1999"}
    assert {i.key for i in thesis.library} >= {"alvarez2019", "bostock1999"}


def test_in_a_top_folder_and_as_the_web_checks_it() -> None:
    data = latex_zip.zipped(latex_zip.files(), top="my-thesis/")
    assert intake.zip_main(data) == "my-thesis/main.tex"
    assert len(formats.read_thesis(data).citations) == 20


def test_a_commented_class_and_a_subfile_are_no_main_file() -> None:
    members = latex_zip.files(**{
        "old.tex": "% \\documentclass{article}\n% \\begin{document}\n",
        "chapters/standalone-fig.tex": "\\documentclass{standalone}\n\\begin{document}x"
                                       "\\end{document}\n",
        "chapters/sub.tex": "\\documentclass[../main.tex]{subfiles}\n\\begin{document}y"
                            "\\end{document}\n"})
    assert intake.zip_main(latex_zip.zipped(members)) == "main.tex"


def test_two_full_documents_are_ambiguous_until_one_is_named() -> None:
    members = {k: v for k, v in latex_zip.files().items() if k != "main.tex"}
    members["a-thesis.tex"] = latex_zip.MAIN
    members["b-slides.tex"] = latex_zip.MAIN.replace("\\maketitle", "")
    data = latex_zip.zipped(members)
    with pytest.raises(WriterFileError) as refused:
        intake.zip_main(data)
    assert "a-thesis.tex" in str(refused.value) and "b-slides.tex" in str(refused.value)
    assert "chapters/" not in str(refused.value)
    assert intake.zip_main(data, "b-slides") == "b-slides.tex"
    assert intake.zip_main(data, "a-thesis.tex") == "a-thesis.tex"
    with pytest.raises(WriterFileError, match="not in the zip"):
        intake.zip_main(data, "thesis.tex")
    # The bundle that names it is read.
    named = formats.bundle({**{k: v.encode() for k, v in members.items()},
                            formats.MAIN_MEMBER: b"a-thesis.tex"})
    assert len(formats.read_thesis(named).citations) == 20


def test_a_conventional_name_and_the_magic_comment_decide() -> None:
    members = latex_zip.files(**{"poster.tex": latex_zip.MAIN})
    assert intake.zip_main(latex_zip.zipped(members)) == "main.tex"
    members = latex_zip.files(**{
        "poster.tex": latex_zip.MAIN,
        "chapters/01-chapter.tex": "% !TEX root = ../poster.tex\n" + latex_zip.chapter(1)})
    assert intake.zip_main(latex_zip.zipped(members)) == "poster.tex"
