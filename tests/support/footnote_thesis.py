"""A German thesis that cites in footnotes, as humanities and law theses do, set with
pymupdf the way LaTeX and Word set it, and the truth of every footnote citation.

The body is 11 pt with raised 7 pt note marks; the notes are 9 pt at the page bottom
under a short rule, each opened by its raised number. The first note on a work gives
the full reference; later ones use the short author-year form, "Ebd.", "a.a.O.",
"Ders."/"Dies." and short titles, some name two or three works. A
"Literaturverzeichnis" closes the thesis, and each work has a small source PDF (title,
authors and place with year on its first page) for the mapping. Everything is fixed
text and a seeded filler, so the same bytes come out every time.
"""

from __future__ import annotations

import dataclasses
import functools
import random
import typing

import pymupdf

WIDTH, HEIGHT = 595.0, 842.0  # A4
LEFT, TEXT_WIDTH = 72.0, 451.0
TOP = 80.0
NOTES_BOTTOM = 740.0  # above the bottom margin, where running footers would be read
BODY_SIZE, BODY_LEADING = 11.0, 15.0
NOTE_SIZE, NOTE_LEADING = 9.0, 11.0
MARK_SCALE, MARK_RISE = 0.64, 0.36
# The whole Latin glyph set (umlauts, ß), with exact widths.
REGULAR = pymupdf.Font("helv")  # type: ignore[no-untyped-call]
BOLD = pymupdf.Font("hebo")  # type: ignore[no-untyped-call]


@dataclasses.dataclass(frozen=True)
class Work:
    """A cited work: ``key`` is its author-year key, ``authors`` as a source prints them."""

    key: str
    authors: tuple[str, ...]
    year: int
    title: str
    place: str
    entry: str  # as the Literaturverzeichnis lists it


@dataclasses.dataclass(frozen=True)
class NoteCitation:
    """One citation of a footnote: the body sentence (mark cut out), the page of its
    mark, the work and the locator."""

    note: int
    page: int
    sentence: str
    work: str
    locator: str | None
    form: str  # "full", "short", "ebd", "aao", "ders", "title"


@dataclasses.dataclass(frozen=True)
class Thesis:
    pdf: bytes
    citations: tuple[NoteCitation, ...]
    works: tuple[Work, ...]
    sources: dict[str, bytes]  # work key -> source PDF
    remarks: tuple[int, ...]  # notes that cite nothing
    pages: int


WORKS = (
    Work("mueller2019", ("Jana Müller",), 2019, "Gründächer in der Stadt. Ökologische Wirkungen und Planung",
         "Berlin", "Müller, Jana: Gründächer in der Stadt. Ökologische Wirkungen und Planung, Berlin 2019."),
    Work("schmidt2018", ("Peter Schmidt",), 2018, "Regenwassermanagement in urbanen Räumen", "München",
         "Schmidt, Peter: Regenwassermanagement in urbanen Räumen, München 2018."),
    Work("weber2020", ("Anna Weber", "Thomas Fischer"), 2020, "Stadtklima und Vegetation", "Stuttgart",
         "Weber, Anna/Fischer, Thomas: Stadtklima und Vegetation, Stuttgart 2020."),
    Work("mueller2017", ("Jana Müller",), 2017, "Dachbegrünung. Technik und Recht", "Hamburg",
         "Müller, Jana: Dachbegrünung. Technik und Recht, Hamburg 2017."),
    Work("becker2015", ("Klaus Becker",), 2015, "Kommunale Umweltpolitik im Wandel", "Frankfurt am Main",
         "Becker, Klaus: Kommunale Umweltpolitik im Wandel, Frankfurt am Main 2015."),
    Work("hoffmann2021", ("Lena Hoffmann",), 2021, "Biodiversität auf Dachflächen", "Leipzig",
         "Hoffmann, Lena: Biodiversität auf Dachflächen, Leipzig 2021."),
    Work("wagner2016", ("Stefan Wagner",), 2016, "Baurecht und Klimaanpassung. Kommentar", "Köln",
         "Wagner, Stefan: Baurecht und Klimaanpassung. Kommentar, Köln 2016."),
    Work("schulz2014", ("Martin Schulz",), 2014, "Die grüne Stadt. Freiraumplanung heute", "Dresden",
         "Schulz, Martin: Die grüne Stadt. Freiraumplanung heute, Dresden 2014."),
    Work("koch2022", ("Sabine Koch",), 2022, "Wasserhaushalt urbaner Böden", "Bonn",
         "Koch, Sabine: Wasserhaushalt urbaner Böden, Bonn 2022."),
    Work("richter2013", ("Paul Richter",), 2013, "Planungsinstrumente der Klimaanpassung", "Kassel",
         "Richter, Paul: Planungsinstrumente der Klimaanpassung, Kassel 2013."),
)

M19, S18, WF20, M17, B15, H21, W16, SZ14, K22, R13 = (w.key for w in WORKS)

# (sentence with "^" where the mark stands, the footnote, its citations (work, locator, form)).
NOTES: tuple[tuple[str, str, tuple[tuple[str, str | None, str], ...]], ...] = (
    ("Gründächer senken die Temperatur der Dachflächen im Sommer deutlich.^",
     "Vgl. Müller, Jana: Gründächer in der Stadt. Ökologische Wirkungen und Planung, Berlin 2019, S. 45.",
     ((M19, "45", "full"),)),
    ("Auch die Luft über den Dächern kühlt spürbar ab.^", "Ebd., S. 46 f.", ((M19, "46 f.", "ebd"),)),
    ("Begrünte Dächer halten einen großen Teil des Niederschlags zurück.^",
     "Schmidt, Peter: Regenwassermanagement in urbanen Räumen, München 2018, S. 12.",
     ((S18, "12", "full"),)),
    ("Als Retention^ gilt dabei jede zeitweilige Speicherung von Wasser.",
     "Der Begriff wird hier im weiten Sinne verwendet.", ()),
    ("Die Kühlwirkung hängt stark von der Dicke des Substrats ab.^", "Vgl. Müller 2019, S. 47 f.",
     ((M19, "47 f.", "short"),)),
    ("Stadtbäume und Dachgärten ergänzen einander in ihrer Wirkung auf das Stadtklima.^",
     "Weber, Anna/Fischer, Thomas: Stadtklima und Vegetation, Stuttgart 2020, S. 33 ff.",
     ((WF20, "33 ff.", "full"),)),
    ("In dicht bebauten Quartieren ist dieser Effekt am stärksten.^", "Ebd., S. 35.",
     ((WF20, "35", "ebd"),)),
    ("Der Abfluss bei Starkregen verringert sich um bis zu die Hälfte.^", "Vgl. Schmidt, a.a.O., S. 14.",
     ((S18, "14", "aao"),)),
    ("Für die Statik des Gebäudes ist vor allem das Gewicht im wassergesättigten Zustand maßgeblich.^",
     "Müller, Jana: Dachbegrünung. Technik und Recht, Hamburg 2017, S. 3.", ((M17, "3", "full"),)),
    ("Extensive Begrünungen kommen mit einer geringen Aufbauhöhe aus.^",
     "Dies., Gründächer in der Stadt, S. 50.", ((M19, "50", "ders"),)),
    ("Viele Kommunen fördern Gründächer inzwischen mit eigenen Programmen.^",
     "Vgl. Becker, Klaus: Kommunale Umweltpolitik im Wandel, Frankfurt am Main 2015, S. 101.",
     ((B15, "101", "full"),)),
    ("Die Entlastung der Kanalisation ist dabei ein zentrales Argument.^",
     "Siehe hierzu Schmidt (2018), S. 12 ff.", ((S18, "12 ff.", "short"),)),
    ("Regenwasser und Vegetation müssen gemeinsam geplant werden.^",
     "Vgl. Schmidt 2018, S. 20; Weber/Fischer 2020, S. 40.",
     ((S18, "20", "short"), (WF20, "40", "short"))),
    ("Auf begrünten Dächern siedeln sich zahlreiche Insektenarten an.^",
     "Hoffmann, Lena: Biodiversität auf Dachflächen, Leipzig 2021, S. 7.", ((H21, "7", "full"),)),
    # "Ebenda." alone: the same work at the same page.
    ("Darunter finden sich auch seltene Wildbienen.^", "Ebenda.", ((H21, "7", "ebd"),)),
    ("Die Pflicht zur Dachbegrünung kann in einem Bebauungsplan festgesetzt werden.^",
     "Wagner, Stefan: Baurecht und Klimaanpassung. Kommentar, Köln 2016, Rn. 12.",
     ((W16, "Rn. 12", "full"),)),
    ("Eine solche Festsetzung muss städtebaulich begründet sein.^", "Wagner 2016, Rn. 15 f.",
     ((W16, "Rn. 15 f.", "short"),)),
    ("Die finanzielle Förderung wirkt vor allem bei Neubauten.^", "So auch Becker, a.a.O., S. 110.",
     ((B15, "110", "aao"),)),
    ("Grünflächen prägen das Bild einer Stadt seit langer Zeit.^",
     "Vgl. Schulz, Martin: Die grüne Stadt. Freiraumplanung heute, Dresden 2014, S. 88.",
     ((SZ14, "88", "full"),)),
    ("Dächer werden dabei erst in jüngerer Zeit als Freiraum verstanden.^",
     "Ders., Die grüne Stadt, S. 92.", ((SZ14, "92", "ders"),)),
    ("Urbane Böden speichern Wasser sehr unterschiedlich.^",
     "Koch, Sabine: Wasserhaushalt urbaner Böden, Bonn 2022, S. 8.", ((K22, "8", "full"),)),
    ("Die klassischen Instrumente der Planung stoßen hier an ihre Grenzen.^",
     "Zur Kritik vgl. Richter, Paul: Planungsinstrumente der Klimaanpassung, Kassel 2013, S. 55 ff.",
     ((R13, "55 ff.", "full"),)),
    ("Boden und Dachsubstrat verhalten sich dabei ähnlich.^",
     "Vgl. Koch 2022, S. 10; ferner Hoffmann 2021, S. 12 f.",
     ((K22, "10", "short"), (H21, "12 f.", "short"))),
    ("Das Gewicht des Aufbaus bleibt eine technische Hürde.^", "Vgl. Müller, a.a.O., S. 52.",
     ((M19, "52", "aao"),)),
    ("Für die Abdichtung gelten eigene technische Regeln.^", "Dies., Dachbegrünung, 2017, S. 9.",
     ((M17, "9", "ders"),)),
    ("Die Wahl der Pflanzen richtet sich nach dem Standort.^", "Hoffmann 2021, S. 30 f.",
     ((H21, "30 f.", "short"),)),
    ("Sukkulenten überstehen lange Trockenphasen besonders gut.^", "Ebd., S. 31.",
     ((H21, "31", "ebd"),)),
    ("Die Kommunen verfügen über mehrere rechtliche Instrumente.^", "Vgl. Wagner, a.a.O., Rn. 20.",
     ((W16, "Rn. 20", "aao"),)),
    ("Neben dem Bebauungsplan kommen städtebauliche Verträge in Betracht.^", "Ebd., Rn. 24 ff.",
     ((W16, "Rn. 24 ff.", "ebd"),)),
    ("Kommunale Satzungen können zusätzliche Anforderungen stellen.^",
     "Siehe Becker 2015, S. 120; Richter 2013, S. 60.",
     ((B15, "120", "short"), (R13, "60", "short"))),
    ("Ein Gründach ersetzt keine ausreichende Entwässerung des Grundstücks.^", "Schmidt (2018), S. 44.",
     ((S18, "44", "short"),)),
    ("Die Verdunstung^ trägt den größten Teil zur Kühlung bei.", "Vgl. Weber/Fischer 2020, S. 51.",
     ((WF20, "51", "short"),)),
    ("Die Pflege extensiver Dächer ist vergleichsweise gering.^", "Vgl. Müller 2017, S. 14 ff.",
     ((M17, "14 ff.", "short"),)),
    ("Gleichwohl müssen die Dächer regelmäßig kontrolliert werden.^", "Ebd., S. 18.",
     ((M17, "18", "ebd"),)),
    ("Die Akzeptanz in der Bevölkerung ist insgesamt hoch.^", "Vgl. Schulz 2014, S. 120.",
     ((SZ14, "120", "short"),)),
    ("Bewohner schätzen vor allem den Blick ins Grüne.^", "Zum Folgenden Schulz, a.a.O., S. 124 f.",
     ((SZ14, "124 f.", "aao"),)),
    ("Die Speicherfähigkeit sinkt, wenn das Substrat verdichtet ist.^", "Koch 2022, S. 41.",
     ((K22, "41", "short"),)),
    ("Die Planung sollte früh alle Beteiligten einbeziehen.^", "Vgl. Richter, a.a.O., S. 70 ff.",
     ((R13, "70 ff.", "aao"),)),
    ("Eine reine Angebotsplanung reicht dafür nicht aus.^",
     "Ders., Planungsinstrumente der Klimaanpassung, S. 72.", ((R13, "72", "ders"),)),
    ("Langfristig gewinnen Gründächer für die Anpassung an den Klimawandel an Bedeutung.^",
     "Vgl. Müller 2019, S. 120; Becker 2015, S. 130 f.",
     ((M19, "120", "short"), (B15, "130 f.", "short"))),
    ("Dies gilt besonders für wachsende Großstädte.^", "Vgl. Weber/Fischer, a.a.O., S. 60.",
     ((WF20, "60", "aao"),)),
    ("Eine Übersicht^ der Fördermodelle fehlt bislang.",
     "Eine solche Übersicht wäre Gegenstand weiterer Forschung.", ()),
    ("Der Nutzen für die Artenvielfalt ist gut belegt.^", "Vgl. hierzu Hoffmann (2021), S. 50 ff.",
     ((H21, "50 ff.", "short"),)),
    ("Wasser, Boden und Pflanzen bilden auf dem Dach ein eigenes System.^",
     "Koch, Wasserhaushalt urbaner Böden, S. 60.", ((K22, "60", "title"),)),
    ("Die rechtlichen Fragen sind damit jedoch nicht erschöpft.^", "Vgl. Wagner 2016, Rn. 30.",
     ((W16, "Rn. 30", "short"),)),
    ("Gründächer sind daher ein wichtiger Baustein der Klimaanpassung.^",
     "Vgl. Müller 2019, S. 130; Schmidt 2018, S. 50; Koch 2022, S. 70.",
     ((M19, "130", "short"), (S18, "50", "short"), (K22, "70", "short"))),
)

CHAPTERS = ("1 Einleitung", "2 Wirkungen begrünter Dächer", "3 Regenwasser und Boden",
            "4 Rechtliche Instrumente", "5 Planung und Akzeptanz", "6 Fazit")

# Filler: plain sentences with no name, year or number, so nothing in them cites.
_SUBJECTS = ("Die Stadtplanung", "Das Quartier", "Die Verwaltung", "Der Bestand", "Die Fläche",
             "Das Vorhaben", "Die Bauherrschaft", "Der Stadtrat", "Die Nachbarschaft", "Das Gebäude")
_VERBS = ("berücksichtigt", "verändert", "betrachtet", "beeinflusst", "verbessert", "prüft",
          "beschreibt", "erfordert")
_OBJECTS = ("die Ansprüche der Bewohner", "den Wasserhaushalt des Gebiets", "die Kosten der Pflege",
            "die Gestaltung der Freiräume", "den Schutz der Gebäude", "die Wahl geeigneter Materialien",
            "die Nutzung der Dachflächen", "das Verhältnis von Bau und Natur")
_TAILS = ("in besonderem Maße", "auf lange Sicht", "im Einzelfall", "schon in der frühen Phase",
          "mit großer Sorgfalt", "nur in Grenzen", "in vielen Fällen", "auf unterschiedliche Weise")


def _filler(rng: random.Random) -> str:
    return f"{rng.choice(_SUBJECTS)} {rng.choice(_VERBS)} {rng.choice(_OBJECTS)} {rng.choice(_TAILS)}."


@functools.lru_cache(maxsize=None)
def _length(text: str, size: float) -> float:
    return float(REGULAR.text_length(text, fontsize=size))  # type: ignore[no-untyped-call]


class _Setter:
    """Sets body lines and their footnotes page by page: a line whose marks' notes would
    not fit above the bottom goes to the next page, with its notes."""

    def __init__(self) -> None:
        self.doc = pymupdf.open()  # type: ignore[no-untyped-call]
        self.pages: list[list[tuple[float, float, str, float]]] = []  # (x, y, text, size)
        self.notes: list[list[tuple[int, str]]] = []
        self.note_page: dict[int, int] = {}
        self._new_page()

    def _new_page(self) -> None:
        self.pages.append([])
        self.notes.append([])
        self.y = TOP

    def _notes_height(self, notes: list[tuple[int, str]]) -> float:
        if not notes:
            return 0.0
        lines = sum(len(_note_lines(text)) for _, text in notes)
        return 14.0 + lines * NOTE_LEADING

    def line(self, words: list[tuple[str, int | None]], extra: float = 0.0,
             size: float = BODY_SIZE, notes: dict[int, str] | None = None) -> None:
        """One body line of (word, note number) pieces; ``extra`` space above it."""
        marks = [(n, (notes or {})[n]) for _, n in words if n is not None]
        needed = self._notes_height(self.notes[-1] + marks)
        if self.y + extra + BODY_LEADING > NOTES_BOTTOM - needed and self.pages[-1]:
            self._new_page()
            extra = 0.0
        self.y += extra
        x = LEFT
        segment = ""
        for word, number in words:
            segment = f"{segment} {word}" if segment else word
            if number is not None:  # the mark closes its word, raised and smaller
                self.pages[-1].append((x, self.y, segment, size))
                x += _length(segment, size)
                mark = str(number)
                self.pages[-1].append((x + 0.3, self.y - size * MARK_RISE, mark, size * MARK_SCALE))
                x += _length(mark, size * MARK_SCALE) + 0.3 + _length(" ", size)
                segment = ""
        if segment:
            self.pages[-1].append((x, self.y, segment, size))
        self.notes[-1].extend(marks)
        for number, _ in marks:
            self.note_page[number] = len(self.pages)
        self.y += BODY_LEADING if size == BODY_SIZE else size * 1.6

    def page_break(self) -> None:
        if self.pages[-1]:
            self._new_page()

    def finish(self) -> bytes:
        for index, (placed, notes) in enumerate(zip(self.pages, self.notes), 1):
            page = self.doc.new_page(width=WIDTH, height=HEIGHT)
            writer: typing.Any = pymupdf.TextWriter(page.rect)  # type: ignore[no-untyped-call]
            for x, y, text, size in placed:
                writer.append((x, y), text, font=BOLD if size > BODY_SIZE else REGULAR, fontsize=size)
            if notes:
                lines = [(n, i, line) for n, text in notes
                         for i, line in enumerate(_note_lines(text))]
                y = NOTES_BOTTOM - len(lines) * NOTE_LEADING
                page.draw_line((LEFT, y - 10), (LEFT + 150, y - 10), width=0.5)
                for number, i, line in lines:
                    if i == 0:
                        writer.append((LEFT, y - NOTE_SIZE * MARK_RISE), str(number),
                                      font=REGULAR, fontsize=NOTE_SIZE * MARK_SCALE)
                    writer.append((LEFT + 8, y), line, font=REGULAR, fontsize=NOTE_SIZE)
                    y += NOTE_LEADING
            writer.append((WIDTH / 2 - 4, 800), str(index), font=REGULAR, fontsize=10)
            writer.write_text(page)
        data: bytes = self.doc.tobytes()  # type: ignore[no-untyped-call]
        return data


@functools.lru_cache(maxsize=None)
def _note_lines(text: str) -> tuple[str, ...]:
    return tuple(_wrap(text, TEXT_WIDTH - 8, NOTE_SIZE))


def _wrap(text: str, width: float, size: float) -> list[str]:
    lines: list[str] = []
    current = ""
    for word in text.split():
        candidate = f"{current} {word}".strip()
        if current and _length(candidate, size) > width:
            lines.append(current)
            current = word
        else:
            current = candidate
    if current:
        lines.append(current)
    return lines


def _paragraph(setter: _Setter, sentences: list[str], notes: dict[int, str], first: int) -> int:
    """Set one paragraph; "^" in a sentence is the next note's mark. Returns the next
    note number."""
    words: list[tuple[str, int | None]] = []
    number = first
    for sentence in sentences:
        for word in sentence.split():
            if "^" in word:
                before, after = word.split("^", 1)
                words.append((before, number))
                if after:
                    words.append((after, None))  # never used: marks close their word
                number += 1
            else:
                words.append((word, None))
    line: list[tuple[str, int | None]] = []
    extra = 6.0
    width = 0.0
    for word, mark in words:
        if line and width + _length(word, BODY_SIZE) > TEXT_WIDTH:
            setter.line(line, extra, notes=notes)
            extra = 0.0
            line = []
            width = 0.0
        line.append((word, mark))
        width += _length(word, BODY_SIZE) + _length(" ", BODY_SIZE)
    if line:
        setter.line(line, extra, notes=notes)
    return number


@functools.cache
def thesis() -> Thesis:
    """The thesis, its sources and the truth (built once: the bytes never change)."""
    rng = random.Random(24)
    setter = _Setter()
    setter.line([("Gründächer als Instrument der städtischen Klimaanpassung", None)], 120, size=18)
    setter.line([("Masterarbeit im Studiengang Stadtplanung", None)], 20)
    setter.line([("vorgelegt von Lea Beispiel", None)], 10)
    setter.page_break()
    notes = {n: text for n, (_, text, _) in enumerate(NOTES, 1)}
    per_chapter = -(-len(NOTES) // len(CHAPTERS))
    number = 1
    for chapter_index, heading in enumerate(CHAPTERS):
        setter.line([(heading, None)], 12, size=14)
        chunk = NOTES[chapter_index * per_chapter:(chapter_index + 1) * per_chapter]
        # Two cited sentences a paragraph, each among filler, several paragraphs a page.
        for start in range(0, len(chunk), 2):
            sentences = [_filler(rng) for _ in range(rng.randint(4, 7))]
            for offset, (sentence, _, _) in enumerate(chunk[start:start + 2]):
                sentences.insert(1 + offset * 3, sentence)
            number = _paragraph(setter, sentences, notes, number)
            number = _paragraph(setter, [_filler(rng) for _ in range(rng.randint(5, 8))], notes, number)
        setter.line([("", None)], 0)
        setter.page_break()
    setter.line([("Literaturverzeichnis", None)], 12, size=14)
    for work in sorted(WORKS, key=lambda w: w.entry):
        lines = _wrap(work.entry, TEXT_WIDTH - 18, BODY_SIZE)
        for i, line in enumerate(lines):
            setter.pages[-1].append((LEFT + (18 if i else 0), setter.y + (6 if not i else 0),
                                     line, BODY_SIZE))
            setter.y += BODY_LEADING + (6 if not i else 0)
    data = setter.finish()
    truth = tuple(
        NoteCitation(number, setter.note_page[number], sentence.replace("^", ""), work, locator, form)
        for number, (sentence, _, cited) in enumerate(NOTES, 1)
        for work, locator, form in cited)
    remarks = tuple(number for number, (_, _, cited) in enumerate(NOTES, 1) if not cited)
    return Thesis(data, truth, WORKS, {w.key: source_pdf(w) for w in WORKS}, remarks,
                  len(setter.pages))


def source_pdf(work: Work) -> bytes:
    """A short source: title, authors and the imprint with its year on the first page,
    then text about its subject."""
    doc = pymupdf.open()  # type: ignore[no-untyped-call]
    page = doc.new_page(width=WIDTH, height=HEIGHT)
    writer: typing.Any = pymupdf.TextWriter(page.rect)  # type: ignore[no-untyped-call]
    y = 120.0
    for line in _wrap(work.title, TEXT_WIDTH, 18):
        writer.append((LEFT, y), line, font=BOLD, fontsize=18)
        y += 24
    writer.append((LEFT, y + 16), ", ".join(work.authors), font=REGULAR, fontsize=12)
    writer.append((LEFT, y + 40), f"© {work.year} Verlag für Stadtforschung, {work.place}",
                  font=REGULAR, fontsize=10)
    y += 90
    body = (f"Dieses Buch behandelt {work.title.split('.')[0]}. Es fasst den Stand der Forschung "
            "zusammen und beschreibt die Folgen für Planung und Praxis in den Städten.")
    for line in _wrap(body, TEXT_WIDTH, BODY_SIZE):
        writer.append((LEFT, y), line, font=REGULAR, fontsize=BODY_SIZE)
        y += BODY_LEADING
    writer.write_text(page)
    data: bytes = doc.tobytes()  # type: ignore[no-untyped-call]
    return data
