"""The LaTeX reader's commands: control symbols, accents, dropped and text-last
arguments, ``\\verb``, headings and captions, footnotes, environments, includes,
libraries (``\\bibliography``), cite commands and cite-like commands it does not know."""

from __future__ import annotations

import posixpath
import re
import unicodedata

from citerun.pipeline.writer.latex_blocks import _Cite, _Frame, _Stream
from citerun.pipeline.writer.latex_scan import _ReaderBase
from citerun.pipeline.writer.latex_tables import (
    ARG_WINDOW, FORMULA, LAYOUT_ARG, LENGTH_ARG, _ACCENTS, _CITE_ANYWHERE, _CITES,
    _CONTROL_SYMBOLS, _CONTROL_WORD, _DISPLAY_MATH, _ENV_ARGS, _ENV_COORDINATES, _FLOATS, _FOOT,
    _MATH_TAIL, _MULTI, _NOTES, _QUOTING, _SPACES, _TABULAR, _TEXT_LAST, _VERBATIM,
)
from citerun.pipeline.writer.latex_text import (
    _skip_optional, _skip_spaces, _skip_star, _Source, _uncomment, bibitems, locator_of, math_text,
    note_text, read_group,
)


class _Commands(_ReaderBase):
    """The commands that shape the text (symbols, accents, environments, headings,
    footnotes, dropped arguments, includes) and the cite commands."""

    def control_symbol(self, src: _Source, name: str, i: int) -> int:
        text = src.text
        if name in _ACCENTS:
            return self.accent(text, name, i)
        if name == "\\":
            env = self._env()
            if env in _TABULAR:
                self.brk()
            else:
                self.emit(" ")
            i = _skip_star(text, i)
            return _skip_optional(src, i)[1]
        if name == "[":
            end = src.find("\\]", i, i + ARG_WINDOW)
            if end < 0:
                self.emit(" ")
                return i
            self.display_math(src, i - 2, text[i:end])
            return end + 2
        if name == "(":
            end = src.find("\\)", i, i + ARG_WINDOW)
            if end < 0:
                return i
            self.formula_cites(src, i - 2, text[i:end])
            self.emit(math_text(text[i:end]))
            return end + 2
        self.emit(_CONTROL_SYMBOLS.get(name, ""))
        return i

    def accent(self, text: str, name: str, i: int) -> int:
        """``\\"u``, ``\\"{u}``, ``\\c{c}``, ``\\'{\\i}``: the accented letter."""
        j = i
        while j < len(text) and text[j] == " " and name.isalpha():
            j += 1
        if j < len(text) and text[j] == "{":
            end = text.find("}", j, j + 12)
            if end < 0:
                return i
            base, after = text[j + 1:end].strip(), end + 1
        elif j < len(text):
            base, after = text[j], j + 1
        else:
            return i
        base = {"\\i": "i", "\\j": "j"}.get(base, base)
        if len(base) != 1:
            self.emit(base)
            return after
        self.emit(unicodedata.normalize("NFC", base + _ACCENTS[name]))
        return after

    def _env(self) -> str | None:
        for frame in reversed(self.frames):
            if frame.env is not None:
                return frame.env
        return None

    def drop_args(self, src: _Source, spec: str, i: int, start: int) -> int:
        """Read and drop the arguments ``spec`` describes."""
        text = src.text
        for kind in spec:
            if kind == "*":
                i = _skip_star(text, i)
            elif kind == "[":
                found, i = _skip_optional(src, i)
                self._check_dropped(src, start, i, found)
            elif kind == "{":
                arg, end = read_group(text, i)
                word = _CONTROL_WORD.match(text, i) if arg is None and end < 0 else None
                if word is not None:  # "\\setlength\\parindent{0pt}": one token
                    i = word.end()
                    continue
                if arg is None:
                    if end >= 0:  # opened and not closed within the window: skip as TeX would
                        self.frames.append(_Frame("raw", None, depth=1))
                        return end
                    break  # a one-token argument: "\label x"
                self._check_dropped(src, start, end, arg)
                i = end
        return i

    def _check_dropped(self, src: _Source, start: int, end: int, arg: str | None) -> None:
        if arg and _CITE_ANYWHERE.search(_uncomment(arg) or ""):
            self.skip(src.where(start), src.text[start:min(end, start + 300)],
                      "a citation inside a command whose text is not part of the thesis")

    def text_last(self, src: _Source, start: int, name: str, i: int) -> int:
        """``\\textcolor{red}{text}``, ``\\href{url}{text}``: drop all but the text. A
        csquotes command keeps its quotation marks, so the quotation is checked."""
        i = self.drop_args(src, _TEXT_LAST[name][:-1], i, start)
        j = _skip_spaces(src.text, i)
        if j < len(src.text) and src.text[j] == "{":
            frame = self.top.group()
            if name in _QUOTING:
                self.emit("“")
                frame.on_close = lambda: self.emit("”")
            self.frames.append(frame)
            return j + 1
        return i

    def verb(self, src: _Source, name: str, i: int) -> int:
        text = src.text
        i = _skip_star(text, i)
        if name != "verb":
            i = _skip_optional(src, i)[1]
            if name == "mintinline":
                arg, end = read_group(text, i)
                i = end if arg is not None else i
        if i >= len(text):
            return i
        delimiter = "}" if text[i] == "{" else text[i]
        end = src.find(delimiter, i + 1, i + ARG_WINDOW)
        if end < 0:
            return i + 1
        self.emit(text[i + 1:end])
        return end + 1

    def titled(self, src: _Source, start: int, name: str, i: int) -> int:
        """A heading or a caption: its own block, never glued onto a claim."""
        text = src.text
        i = _skip_star(text, i)
        i = _skip_optional(src, i)[1]
        if name == "caption":
            i = _skip_star(text, i)
        j = _skip_spaces(text, i)
        if j >= len(text) or text[j] != "{":
            return i
        parent = self.top
        if parent.stream is not None:
            parent.stream.brk()
        stream = _Stream("heading" if name != "caption" else "caption", self.blocks) \
            if parent.stream is not None else None

        def done() -> None:
            if parent.stream is not None:
                parent.stream.brk()

        self.frames.append(_Frame("heading", stream, anchor=None, in_footnote=False,
                                  on_close=done))
        return j + 1

    def footnote(self, src: _Source, name: str, i: int) -> int:
        """A note (``\\footnote[3]{..}``, tufte's ``\\sidenote[][-2.7cm]{..}``,
        ``\\marginnote{..}[-1cm]``): its text a block of its own that ends at its own
        brace, its optional arguments (numbers, offsets) dropped."""
        text = src.text
        before, after = _NOTES[name]
        for _ in range(before):
            i = _skip_optional(src, i)[1]
        j = _skip_spaces(text, i)
        if j >= len(text) or text[j] != "{":
            return i
        parent = self.top
        anchor = parent.anchor if parent.in_footnote else (
            parent.stream.block if parent.stream is not None else None)
        stream = _Stream("footnote", self.blocks) if parent.stream is not None else None
        self.frames.append(_Frame("footnote", stream, anchor=anchor, in_footnote=True,
                                  layout_after=after))
        return j + 1

    def layout_args(self, src: _Source, i: int) -> int:
        """Past the optional arguments at ``i`` that only place or size (``[-2.7cm]``,
        ``[htbp]``, ``[width=3cm]``, ``[]``): none of them is text."""
        for _ in range(3):
            arg, j = _skip_optional(src, i)
            if arg is None or not LAYOUT_ARG.fullmatch(arg):
                break
            i = j
        return i

    def display_math(self, src: _Source, start: int, tex: str) -> None:
        """A display formula, marked as one in the text: "[formula]", with the full stop
        or comma the writer set at its end (the sentence ends, or goes on, as written)."""
        self.formula_cites(src, start, tex)
        body = _MATH_TAIL.sub("", tex)
        mark = body[-1] if body and body[-1] in ".,;:" else ""
        self.emit(f" {FORMULA}{mark} ")

    def begin(self, src: _Source, start: int, i: int) -> int:
        text = src.text
        name, end = read_group(text, i)
        if name is None:
            return i
        name = name.strip()
        i = end
        if name == "document":
            self.frames[0].stream = self.body
            if self.top.kind != "base":
                self.top.stream = self.body
            return i
        if name in _VERBATIM or name in _DISPLAY_MATH:
            close = re.compile(r"\\end\s*\{" + re.escape(name) + r"\}")
            found = close.search(text, i)
            if name == "thebibliography":
                self.bibitems.extend(bibitems(text[i:found.start() if found else len(text)],
                                              len(self.bibitems), self.limits.max_bibitems))
            if name in _DISPLAY_MATH:
                self.display_math(src, start, text[i:found.start() if found else i])
            elif (found and name != "thebibliography"
                  and _CITE_ANYWHERE.search(text, i, found.start())):
                self.skip(src.where(start), text[start:start + 200],
                          f"a citation inside a {name} environment, which is not text")
            return found.end() if found else len(text)
        self.brk()
        i = _skip_optional(src, i)[1]
        for _ in range(_ENV_ARGS.get(name, 0)):
            i = self.layout_args(src, i)  # minipage's [c][5cm][t]
            arg, end = read_group(text, i)
            if arg is None:
                break
            i = end
        if name in _ENV_COORDINATES:
            j = _skip_spaces(text, i)
            shut = src.find(")", j, j + 200) if text.startswith("(", j) else -1
            i = shut + 1 if shut > 0 else i
        parent = self.top
        stream = parent.stream
        if name in _FLOATS and stream is not None and stream.kind == "body":
            stream = _Stream("float", self.blocks)
        self.frames.append(_Frame("env", stream, anchor=parent.anchor,
                                  in_footnote=parent.in_footnote, env=name))
        return i

    def end(self, src: _Source, start: int, i: int) -> int:
        name, end = read_group(src.text, i)
        if name is None:
            return i
        name = name.strip()
        if name == "document":
            self.stopped = True
            return end
        for k in range(len(self.frames) - 1, 0, -1):
            if self.frames[k].kind == "env" and self.frames[k].env == name:
                while len(self.frames) > k:
                    self.close()
                break
        self.brk()
        return end

    def include_command(self, src: _Source, start: int, name: str, i: int, depth: int) -> int:
        text = src.text
        i = _skip_star(text, i)
        first, end = read_group(text, i)
        if first is None:
            if name != "input":
                return i
            bare = re.compile(r"\s*([^\s{}\\%]+)").match(text, i)
            if not bare:
                return i
            first, end = bare.group(1), bare.end()
        target = first
        if name in ("import", "subimport", "inputfrom", "subinputfrom", "includefrom",
                    "subincludefrom"):
            second, end2 = read_group(text, end)
            if second is None:
                return end
            directory = first.strip()
            if name.startswith("sub"):
                directory = posixpath.join(posixpath.dirname(src.path), directory)
                directory = posixpath.relpath(directory, self.root or ".") if directory else ""
            target, end = posixpath.join(directory, second.strip()), end2
        marker = text[start:end]
        if name == "include":
            self.brk()
        self.include(target, src, start, depth, marker)
        if name == "include":
            self.brk()
        return end

    def unknown_cite(self, src: _Source, start: int, name: str, i: int) -> int:
        """A command that looks like a citation (its name has "cite") and is no cite
        command this reader knows, nor a macro the thesis defines: listed as not taken,
        its arguments (keys, notes) read and dropped, never left in a claim."""
        text = src.text
        i = _skip_star(text, i)
        for _ in range(2):
            i = _skip_optional(src, i)[1]
        groups = 0
        while groups < 3:
            j = i if groups else _skip_spaces(text, i)
            arg, end = read_group(text, j) if text.startswith("{", j) else (None, -1)
            if arg is None:
                break
            groups, i = groups + 1, end
        frame = self.top
        if frame.in_footnote or frame.stream is not None:
            self.skip(src.where(start), text[start:i],
                      f"\\{name} is no cite command this reader knows (nor one the thesis "
                      f"or its style files define): not read as a citation")
        return i

    def library(self, src: _Source, start: int, i: int) -> int:
        text = src.text
        i = _skip_optional(src, i)[1]
        names, end = read_group(text, i)
        if names is None:
            return i
        for name in self.expand_path(_uncomment(names) or "").split(","):
            if name.strip():
                self.libraries.append((name.strip(), src.where(start)))
        return end

    # -- citations ---------------------------------------------------------------------

    def cite(self, src: _Source, start: int, name: str, i: int) -> int:
        """A cite command: its key groups with their pre- and postnotes."""
        text = src.text
        i = _skip_star(text, i)
        groups: list[tuple[str | None, str | None, str]] = []
        if name in _MULTI:
            for _ in range(2):  # the (multiprenote)(multipostnote)
                j = _skip_spaces(text, i)
                if text.startswith("(", j):
                    close = src.find(")", j, j + ARG_WINDOW)
                    if close < 0:
                        break
                    i = close + 1
        while len(groups) < (self.limits.max_cite_groups if name in _MULTI else 1):
            first, j = _skip_optional(src, i)
            second, j = _skip_optional(src, j) if first is not None else (None, j)
            keys, end = read_group(text, j)
            if keys is None:
                break
            pre, post = (first, second) if second is not None else (None, first)
            # tufte's \\cite[offset][post]{key}: an offset is no note
            if pre is not None and LENGTH_ARG.fullmatch(pre):
                pre = None
            if post is not None and LENGTH_ARG.fullmatch(post):
                post = None
            groups.append((_uncomment(pre), _uncomment(post), _uncomment(keys) or ""))
            i = end
        marker = _SPACES.sub(" ", text[start:i])[:500]
        where = src.where(start)
        if not groups:
            self.skip(where, text[start:start + 200], f"\\{name} without a key argument")
            return i
        frame = self.top
        target = frame.anchor if frame.in_footnote else (
            frame.stream.block if frame.stream is not None else None)
        if target is None:
            self.skip(where, marker, "a citation outside the thesis's text (preamble, "
                                     "bibliography or a command that is not printed)")
            return i
        prints = _CITES[name]
        if self.invocations and len(self.invocations[-1]) <= 300 and all(
                keys.strip() in self.invocations[-1] for _, _, keys in groups):
            marker = _SPACES.sub(" ", self.invocations[-1])  # the wrapper as written
        for pre, post, keys in groups:
            found = tuple(dict.fromkeys(k.strip() for k in keys.split(",") if k.strip()))
            if not found or any(c in k for k in found for c in "\\{}#%"):
                self.skip(where, marker, "a citation without readable keys")
                continue
            target.cite(_Cite(
                keys=found, marker=marker, where=where,
                locator=locator_of(note_text(post)) if post else None,
                prenote=note_text(pre) or None if pre else None, prints=prints,
                in_footnote=frame.in_footnote or prints == _FOOT))
        return i
