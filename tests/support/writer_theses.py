"""Theses from the writer's own files that cite the demo's sources (issue 24): a Word
document with Zotero fields as Zotero writes them, for the end-to-end and cluster tests."""

from __future__ import annotations

from tests.support import docx_fixtures as dx

ALVAREZ = dx.csl_item("ALV19", "Nocturnal Heat in Dense Urban Cores: A Two-Year Sensor Study in Seville",
                      [("Alvarez", "Maria"), ("Becker", "Thomas")], 2019)
WEI = dx.csl_item("WEI18", "Heat Waves and Emergency Hospital Admissions among Older Adults",
                  [("Wei", "Li"), ("Mitchell", "Sarah")], 2018)
LINDQVIST = dx.csl_item("LIN21", "Street Trees and Surface Temperature: Evidence from Twelve European Cities",
                        [("Lindqvist", "Hannah"), ("Haddad", "Omar"), ("Novak", "Petra")], 2021)
KELLER = dx.csl_item("KEL17", "Compact street grids and urban ventilation", [("Keller", "Eva")], 2017)

NIGHT = "In dense city centres the heat island is most pronounced after sunset"
ADMISSIONS = ("Emergency hospital admissions of people aged 75 and over rose by 12 percent "
              "for each degree by which the daily maximum exceeded 30 °C")
CANOPY = ("Every ten additional percentage points of tree canopy lower the afternoon "
          "surface temperature of a neighbourhood by about 1.4 °C")
WIND = "Compact street grids also block the wind that would otherwise ventilate heat out"


def zotero(item: dict[str, object], key: str, shown: str, locator: str | None = None) -> str:
    cited: dict[str, object] = {"key": key, "data": item}
    if locator:
        cited.update(locator=locator, label="page")
    return dx.field(dx.zotero_code([cited], shown), shown, parts=4)


def docx_thesis() -> bytes:
    """Four claims: three cite demo sources (one with a page locator), one a work not given."""
    body = "".join([
        dx.paragraph(dx.run("1 Heat in cities"), style="Heading1"),
        dx.paragraph(dx.run(NIGHT + " "), zotero(ALVAREZ, "ALV19", "(Alvarez & Becker, 2019, p. 3)", "3"),
                     dx.run(". " + ADMISSIONS + " "), zotero(WEI, "WEI18", "(Wei & Mitchell, 2018)"),
                     dx.run(".")),
        dx.paragraph(dx.run(CANOPY + " "), zotero(LINDQVIST, "LIN21", "(Lindqvist et al., 2021)"),
                     dx.run(". " + WIND + " "), zotero(KELLER, "KEL17", "(Keller, 2017)"), dx.run(".")),
    ])
    return dx.docx(body)
