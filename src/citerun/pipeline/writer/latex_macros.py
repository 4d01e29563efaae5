"""The LaTeX reader's macros: a thesis's own definitions (``\\newcommand``,
``\\def``, xparse's document commands) and their expansion (a template's cite wrappers),
local packages and classes read for their definitions, and conditionals, TeX's and
packages', decided on their arguments where they can be."""

from __future__ import annotations

import re

from citerun.pipeline.writer.latex_blocks import _Frame
from citerun.pipeline.writer.latex_commands import _Commands
from citerun.pipeline.writer.latex_tables import (
    _ARG_CONDITIONALS, _BUILTIN, _CITE_ANYWHERE,
    _CONDITIONAL_ARGS, _CONDITIONAL_TOKEN, _DECIDED, _EMPTY_TESTS, _LOADS, _NAME, _NO_VALUE,
    _SPACES, _TOKEN,
)
from citerun.pipeline.writer.latex_text import (
    _newlines, _skip_macro_space, _skip_optional, _skip_spaces, _skip_star, _Source, _uncomment,
    read_group,
)

#: Characters an expansion counts towards ``max_total_chars`` besides its text, so that a
#: million expansions of an empty macro are bounded too; and for each command in the
#: body, since a command costs the reader far more than a letter: a body of ten unknown
#: commands expanded 161,000 times (a fuzzed macro bomb, issue 48) took 5.4 CPU s under
#: the cap at 100 an expansion, about 1.5 s now.
EXPANSION_COST = 100
COMMAND_COST = 30


def _decide(name: str, tests: list[str]) -> bool | None:
    """The test of a conditional read on its arguments' text; None when it cannot be."""
    if name not in _DECIDED:
        return None
    first = tests[0].strip() if tests else ""
    if name in ("ifblank", "ifstrempty"):
        return not first
    if name == "notblank":
        return bool(first)
    if name == "ifstrequal":
        return tests[0] == tests[1]
    if name.startswith("IfNoValue"):
        return first == _NO_VALUE
    if name.startswith("IfValue"):
        return first != _NO_VALUE
    if name.startswith("IfBoolean"):
        return {"\\BooleanTrue": True, "\\BooleanFalse": False}.get(first)
    negate = False
    while True:  # ifthenelse: \\equal{a}{b}, \\isempty{a}, each maybe under \\not
        found = re.match(r"\\(?:not|NOT)(?![A-Za-z@])\s*", first)
        if not found:
            break
        negate, first = not negate, first[found.end():]
    result: bool | None = None
    if re.match(r"\\equal(?![A-Za-z@])", first):
        a, end = read_group(first, 6)
        b, end = read_group(first, end) if a is not None else (None, -1)
        if a is not None and b is not None and not first[end:].strip():
            result = a.strip() == b.strip()
    elif re.match(r"\\isempty(?![A-Za-z@])", first):
        a, end = read_group(first, 8)
        if a is not None and not first[end:].strip():
            result = not a.strip()
    return None if result is None else result != negate


def _skip_conditional(text: str, i: int, stop_at_else: bool) -> tuple[int, str]:
    """Past the branch a TeX conditional skips: to its \\fi (or \\else), nested ones
    counted; the position after it and which it was ("" at the text's end)."""
    depth = 0
    for found in _CONDITIONAL_TOKEN.finditer(text, i):
        name = found.group(1)
        if name == "fi":
            if depth == 0:
                return found.end(), "fi"
            depth -= 1
        elif name == "else":
            if depth == 0 and stop_at_else:
                return found.end(), "else"
        elif name not in _ARG_CONDITIONALS and name != "ifthenelse":
            depth += 1
    return len(text), ""


class _Macros(_Commands):
    """The thesis's own macros (definitions, their expansion, local packages read
    for them) and the conditionals of TeX and of packages."""

    def define(self, src: _Source, start: int, name: str, i: int) -> int:
        """``\\newcommand{\\x}{text}``: kept for expansion when it takes no arguments."""
        text = src.text
        i = _skip_star(text, i)
        j = _skip_spaces(text, i)
        if text.startswith("{", j):
            macro, end = read_group(text, j)
            if macro is None:
                return i
            macro = macro.strip()
            j = end
        elif text.startswith("\\", j):
            found = _NAME.match(text, j + 1)
            if found is None:
                return j + 1
            macro, j = "\\" + found.group(), found.end()
        else:
            return i
        count, default = 0, None
        if name in ("def", "gdef", "edef", "xdef"):
            brace = text.find("{", j, j + 200)
            if brace < 0:
                return j
            # TeX's parameter text: "#1#2" read as two arguments, a delimited one not read
            parameters = _SPACES.sub("", text[j:brace])
            count = len(parameters) // 2 if parameters == "".join(
                f"#{k}" for k in range(1, len(parameters) // 2 + 1)) else -1
            j = brace
        else:
            arity, j = _skip_optional(src, j)
            count = int(arity.strip()) if arity and arity.strip() in "123456789" else (
                -1 if arity is not None else 0)
            default, j = _skip_optional(src, j)
        body, end = read_group(text, j)
        if body is None:
            if end >= 0:
                self.frames.append(_Frame("raw", None, depth=1))
                return end
            return j
        if count >= 0:
            spec: list[tuple[str, str | None]] = [("m", None)] * count
            if count and default is not None:
                spec[0] = ("O", default)
            self.keep_macro(macro, tuple(spec), body)
        return end

    def keep_macro(self, macro: str, spec: tuple[tuple[str, str | None], ...],
                   body: str) -> None:
        """Keep a definition for expansion; a package's never replaces a command this
        reader reads itself (a template's \\renewcommand of \\footnote or \\section)."""
        name = macro[1:] if macro.startswith("\\") else macro
        if (len(body) > self.limits.max_macro_body or len(self.macros) >= self.limits.max_macros
                or not re.fullmatch(r"[A-Za-z@]+", name)):
            return
        if self.in_package and name in _BUILTIN and name not in self.macros:
            return
        self.macros[name] = (spec, body)

    def define_document_command(self, src: _Source, start: int, i: int) -> int:
        """``\\NewDocumentCommand{\\x}{O{}mm}{body}``: kept when its arguments are of
        the kinds m, o, O{..} and s (others: not expanded, read as any other macro)."""
        text = src.text
        j = _skip_spaces(text, i)
        if text.startswith("{", j):
            macro, j = read_group(text, j)
        elif text.startswith("\\", j):
            found = _NAME.match(text, j + 1)
            macro, j = ("\\" + found.group(), found.end()) if found else (None, j + 1)
        else:
            return i
        if macro is None:
            return j
        argspec, j2 = read_group(text, j)
        if argspec is None:
            return j
        body, end = read_group(text, j2)
        if body is None:
            return j2
        spec: list[tuple[str, str | None]] = []
        k, argspec = 0, argspec.replace(" ", "").replace("\n", "")
        while k < len(argspec):
            kind = argspec[k]
            k += 1
            if kind in "+!":
                continue
            if kind == "O" or kind == ">":
                value, after = read_group(argspec, k)
                if value is None:
                    return end
                k = after
                if kind == ">":
                    continue
                spec.append(("O", value))
            elif kind in "mos":
                spec.append((kind, None))
            else:  # delimited, embellishments, verbatim: not expanded
                return end
        self.keep_macro(macro.strip(), tuple(spec), body)
        return end

    def expand(self, src: _Source, start: int, name: str, i: int, depth: int) -> int:
        """A user macro read as its definition's text, ``#1``... replaced by the
        arguments given (``\\newcommand{\\mycite}[1]{\\parencite{#1}}`` cites)."""
        if depth + 1 > self.limits.max_depth:
            self.skip(src.where(start), "\\" + name,
                      f"macro \\{name} expands over {self.limits.max_depth} levels deep")
            return i
        spec, body = self.macros[name]
        count = len(spec)
        text = src.text
        if not count:
            i = _skip_macro_space(text, i)
        args: list[str] = []
        for kind, default in spec:
            if kind == "s":
                star = _skip_spaces(text, i)
                given = text.startswith("*", star)
                args.append("\\BooleanTrue" if given else "\\BooleanFalse")
                i = star + 1 if given else i
                continue
            if kind in "oO":
                optional, i = _skip_optional(src, i)
                args.append(optional if optional is not None else (
                    default if default is not None else _NO_VALUE))
                continue
            arg, end = read_group(text, i)
            if arg is None:
                if end >= 0:
                    return i  # an argument that does not close: not expanded
                j = _skip_spaces(text, i)
                token = _NAME.match(text, j + 1) if text.startswith("\\", j) else None
                end = token.end() if token else j + 1
                arg = text[j:end]
            args.append(arg)
            i = end
        if count:
            body = re.sub(r"#(#|[1-9])", lambda m: "#" if m.group(1) == "#" else (
                args[int(m.group(1)) - 1] if int(m.group(1)) <= count else ""), body)
        line = int(src.where(start).rsplit(":", 1)[1])
        self.invocations.append(text[start:i])
        try:
            self.scan(_Source(src.path, body, [], line=line), depth + 1,
                      cost=EXPANSION_COST + COMMAND_COST * body.count("\\"))
        finally:
            self.invocations.pop()
        return i

    def load(self, src: _Source, start: int, name: str, i: int, depth: int) -> int:
        """``\\usepackage[..]{a,b}``, ``\\documentclass{x}``: a package or class of the
        bundle (a template's ``sty/mystyle.sty``) is read for its definitions; one that
        is not in the bundle is a standard one, not read."""
        text = src.text
        i = self.drop_args(src, "[", i, start)
        names, end = read_group(text, i)
        if names is None:
            return i
        i = self.drop_args(src, "[", end, start)
        suffix = _LOADS[name]
        universe = [p for p in self.files if p.lower().endswith(suffix)]
        for package in (_uncomment(names) or "").split(","):
            path, _ = self.resolve(package, src.path, suffix, universe) if package.strip() \
                else (None, "")
            if path is None or path in self.loaded or path in self.open_files:
                continue
            if depth + 1 > self.limits.max_depth:
                self.skip(src.where(start), text[start:i],
                          f"package {path!r}: files nest over {self.limits.max_depth} deep")
                continue
            self.loaded.add(path)
            self.frames.append(_Frame("package", None))
            self.open_files.append(path)
            self.in_package += 1
            try:
                body = self.files[path]
                self.scan(_Source(path, body, _newlines(body)), depth + 1)
            finally:
                self.in_package -= 1
                self.open_files.pop()
                self.frames.pop()
        return i

    def arg_conditional(self, src: _Source, start: int, name: str, i: int,
                        depth: int) -> int:
        """A conditional whose branches are arguments (``\\ifthenelse{\\equal{#2}{}}{A}{B}``,
        etoolbox's ``\\ifblank``, xparse's ``\\IfNoValueTF``): the branch the test
        decides is read, the other not; a test that cannot be decided here (a boolean, a
        counter) reads the first branch, and a citation in the other is listed."""
        text = src.text
        if depth + 1 > self.limits.max_depth:
            self.skip(src.where(start), "\\" + name,
                      f"conditionals nest over {self.limits.max_depth} levels deep: read as text")
            return i
        tests, kinds = _CONDITIONAL_ARGS.get(name, (1, "TF"))
        args: list[str] = []
        for _ in range(tests + len(kinds)):
            arg, end = read_group(text, i)
            if arg is None:  # not the shape expected: read on as text
                return i
            args.append(arg)
            i = end
        branches = dict(zip(kinds, args[tests:]))
        decided = _decide(name, args[:tests])
        if decided is None:
            chosen, other = branches.get("T", ""), branches.get("F", "")
            if _CITE_ANYWHERE.search(other):
                self.skip(src.where(start), text[start:i][:300],
                          f"a citation in a branch of \\{name} not read: which branch TeX "
                          f"takes is not known without running it")
        else:
            chosen = branches.get("T" if decided else "F", "")
        if chosen:
            line = int(src.where(start).rsplit(":", 1)[1])
            self.scan(_Source(src.path, chosen, [], line=line), depth + 1, cost=100)
        return i

    def if_file_exists(self, src: _Source, start: int, name: str, i: int, depth: int) -> int:
        """``\\IfFileExists{file}{then}{else}`` (``\\InputIfFileExists`` inputs the file
        too): decided by the bundle, as TeX decides it by the disk. The branch not taken
        is not read, nor listed: its ``\\input`` of a file that is not there is no
        citation lost (issue 46). A file the bundle lacks may be a system one TeX finds;
        the bundle is all this reader has, so the else branch is read."""
        text = src.text
        args: list[str] = []
        for _ in range(3):
            arg, end = read_group(text, i)
            if arg is None:  # not the shape expected: read on as text
                return i
            args.append(arg)
            i = end
        if depth + 1 > self.limits.max_depth:
            self.skip(src.where(start), "\\" + name,
                      f"conditionals nest over {self.limits.max_depth} levels deep: read as text")
            return i
        target = (_uncomment(args[0]) or "").strip()
        path = self.resolve(target, src.path, ".tex")[0] if target else None
        line = int(src.where(start).rsplit(":", 1)[1])
        chosen = args[1] if path is not None else args[2]
        if chosen:
            self.scan(_Source(src.path, chosen, [], line=line), depth + 1, cost=100)
        if path is not None and name == "InputIfFileExists":
            self.include(target, src, start, depth, text[start:i])
        return i

    def tex_if(self, src: _Source, name: str, i: int) -> int:
        """A TeX conditional: ``\\iffalse``, ``\\ifx&#1&`` and ``\\if\\relax\\detokenize{#1}
        \\relax`` (a template's test for an empty argument) are decided and the branch
        TeX skips is skipped; any other is read through, both branches (as TeX's state
        is not known here)."""
        text = src.text
        decided: bool | None = None
        end = i
        if name == "iftrue":
            decided = True
        elif name == "iffalse":
            decided = False
        elif name in ("if", "ifx"):
            found = next((m for m in (p.match(text, i) for p in _EMPTY_TESTS) if m), None)
            if found:
                decided, end = not found.group("arg").strip(), found.end()
            elif name == "ifx":
                first = _TOKEN.match(text, i)
                second = _TOKEN.match(text, first.end()) if first else None
                if first and second:
                    a, b = first.group(1), second.group(1)
                    if a == b:
                        decided = True
                    elif not (a.startswith("\\") and b.startswith("\\")):
                        decided = False
                    if decided is not None:
                        end = second.end()
        if decided is None:
            self.conditionals.append("unknown")
            return i
        if decided:
            self.conditionals.append("true")
            return end
        found_at, token = _skip_conditional(text, end, stop_at_else=True)
        if token == "else":
            self.conditionals.append("else")
        return found_at

    def tex_else_fi(self, src: _Source, name: str, i: int) -> int:
        if not self.conditionals:
            return i
        if name == "fi":
            self.conditionals.pop()
            return i
        if self.conditionals[-1] == "true":  # the true branch read: its \else part skipped
            self.conditionals.pop()
            return _skip_conditional(src.text, i, stop_at_else=False)[0]
        return i
