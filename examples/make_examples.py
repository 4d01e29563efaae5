"""Write the demo thesis, its sources and the verdicts we expect for them.

Run ``python -m examples.make_examples`` from the repository root; it rewrites, next to itself,
``thesis.pdf`` (author-year citations), ``thesis_numeric.pdf`` (numeric citations),
``sources/*.pdf`` and ``expected.json``. The output is byte-for-byte reproducible (fixed
metadata dates, no random document id), so a re-run leaves ``git status`` clean.

The studies, authors and journals below are invented for the demo; the numbers in them
are plausible, not real findings. Each thesis contains, on purpose:

- claims that closely paraphrase a sentence of their cited source (``supported``),
- a claim that says the opposite of its source (``contradicted``),
- a claim its source does not speak to at all (``unsupported``),
- a claim of which the source backs only one half (``partially_supported``),
- a citation whose reference entry has no source PDF (``unresolved_citation``).

The page layout is ``examples/pdfwriter.py``'s (by hand, with a running header and a page
number on each page, so the parser's header/footer removal gets exercised by the demo too).
"""

# pymupdf's annotations are partial; its untyped calls are fine in this script.
# mypy: disable-error-code="no-untyped-call"

from __future__ import annotations

import json
import pathlib

from examples.pdfwriter import Block, DocumentSpec, front_matter, paragraphs, write_pdf

HERE = pathlib.Path(__file__).resolve().parent

# --- the sources -----------------------------------------------------------------------

ALVAREZ = DocumentSpec(
    filename="sources/alvarez2019.pdf",
    title="Nocturnal Heat in Dense Urban Cores: A Two-Year Sensor Study in Seville",
    authors=("Maria Alvarez", "Thomas Becker"),
    year=2019,
    running_header="Urban Climate Letters 7(2) 2019",
    blocks=(
        *front_matter(
            "Nocturnal Heat in Dense Urban Cores: A Two-Year Sensor Study in Seville",
            ("Maria Alvarez", "Thomas Becker"),
            "Urban Climate Letters, 7(2), 45-58, 2019",
        ),
        Block("heading", "Abstract"),
        *paragraphs(
            """We report two years of air temperature measurements from 48 street-level
            sensors in Seville, Spain, and from four rural reference stations. The urban heat
            island was strongest at night: the median difference between the dense city
            centre and the rural reference stations reached 6.2 °C two hours after sunset,
            while the daytime difference rarely exceeded 2 °C."""
        ),
        Block("heading", "1. Introduction"),
        *paragraphs(
            """Cities are warmer than the land around them because built surfaces store
            heat during the day, waste heat is released by traffic and buildings, and
            evaporation is suppressed by sealed ground. Most studies of this urban heat
            island rely on a few fixed weather stations, which cannot show how temperature
            varies from one street to the next.""",
            """Seville is a good test case: its historic core consists of narrow, deep
            streets, while the districts built after 1960 have wide roads and open blocks.
            Summer maxima regularly exceed 40 °C.""",
        ),
        Block("heading", "2. Data and methods"),
        *paragraphs(
            """Sensors were mounted 3 m above the pavement in radiation shields and logged
            air temperature every ten minutes from June 2016 to May 2018. Each sensor was
            calibrated against a reference thermometer before and after deployment; the
            drift stayed below 0.1 °C. For every sensor we computed the sky view factor
            from fisheye photographs taken at the mounting point.""",
            """The heat island intensity is the difference between a sensor and the mean of
            the four rural stations at the same time. We model it with a mixed model that
            includes hour of day, season, wind speed, cloud cover and the sky view
            factor.""",
        ),
        Block("heading", "3. Results"),
        *paragraphs(
            """The heat island intensity followed a clear daily cycle. It was small around
            noon, grew through the evening and peaked about two hours after sunset. In the
            dense historic core the median night-time difference to the rural stations was
            6.2 °C; in the post-1960 districts it was 3.1 °C.""",
            """Sky view factor explained most of the variation between sensors: narrow
            streets with a low sky view factor released stored heat slowly and stayed
            warmest until dawn. Wind speeds above 4 m/s reduced the night-time intensity by
            about half, and cloudy nights showed smaller differences than clear nights.""",
        ),
        Block("heading", "4. Discussion"),
        *paragraphs(
            """The city core does not heat up faster than its surroundings during the day;
            it cools down more slowly at night. Measures that let streets release heat after
            sunset, such as lighter paving or more open street sections, deserve more
            attention than measures aimed only at the daytime peak.""",
            """Our sensors measured air temperature only. We did not record humidity, so we
            cannot report heat stress indices, and we did not study health outcomes.""",
        ),
    ),
)

LINDQVIST = DocumentSpec(
    filename="sources/lindqvist2021.pdf",
    title="Street Trees and Surface Temperature: Evidence from Twelve European Cities",
    authors=("Hannah Lindqvist", "Omar Haddad", "Petra Novak"),
    year=2021,
    running_header="Landscape and Urban Climate 15 (2021)",
    blocks=(
        *front_matter(
            "Street Trees and Surface Temperature: Evidence from Twelve European Cities",
            ("Hannah Lindqvist", "Omar Haddad", "Petra Novak"),
            "Landscape and Urban Climate, 15, 112-130, 2021",
        ),
        Block("heading", "Abstract"),
        *paragraphs(
            """We combine satellite land surface temperature with tree canopy maps for 2,400
            neighbourhoods in twelve European cities. Each additional ten percentage points
            of tree canopy cover lowered the mean afternoon land surface temperature of a
            neighbourhood by 1.4 °C. The cooling effect of canopy was largest in cities
            with hot, dry summers and smallest in maritime climates."""
        ),
        Block("heading", "1. Introduction"),
        *paragraphs(
            """Urban trees shade streets and facades and cool the air through
            transpiration. Many cities have adopted canopy targets, but the evidence for how
            much cooling a given increase in canopy buys comes mostly from single cities and
            short field campaigns.""",
        ),
        Block("heading", "2. Data"),
        *paragraphs(
            """Land surface temperature was taken from Landsat 8 scenes recorded between
            13:00 and 14:00 local time on cloud-free summer days from 2015 to 2019. Tree
            canopy cover came from the Copernicus street tree layer at 10 m resolution.
            Neighbourhoods were defined as census tracts; we excluded tracts with more than
            20 percent water surface.""",
            """The twelve cities span four climate zones: Madrid, Rome, Athens, Lyon, Vienna,
            Budapest, Berlin, Warsaw, Stockholm, Dublin, Amsterdam and Glasgow.""",
        ),
        Block("heading", "3. Results"),
        *paragraphs(
            """Across all cities, higher canopy cover went with lower surface temperature.
            Each additional ten percentage points of tree canopy cover lowered the mean
            afternoon land surface temperature of a neighbourhood by 1.4 °C, after
            controlling for building density, impervious surface share and elevation.""",
            """The relation was not linear: gains were small below 10 percent canopy and
            largest between 20 and 40 percent. In Madrid and Athens the cooling per ten
            points of canopy exceeded 2 °C, while in Dublin and Glasgow it was below
            0.6 °C.""",
        ),
        Block("heading", "4. Limitations"),
        *paragraphs(
            """Land surface temperature is not air temperature, and satellite overpasses
            miss the night, when the urban heat island is often strongest. Our results
            describe afternoon surfaces only.""",
        ),
    ),
)

OKAFOR = DocumentSpec(
    filename="sources/okafor2020.pdf",
    title="Cool Roofs and Indoor Heat Exposure in Social Housing",
    authors=("James Okafor",),
    year=2020,
    running_header="Energy and Buildings Review 9(1) 2020",
    blocks=(
        *front_matter(
            "Cool Roofs and Indoor Heat Exposure in Social Housing",
            ("James Okafor",),
            "Energy and Buildings Review, 9(1), 1-14, 2020",
        ),
        Block("heading", "Abstract"),
        *paragraphs(
            """Top-floor flats are the hottest homes in a building during a heat wave. We
            compared indoor temperatures in 64 top-floor flats of a social housing estate in
            Lagos before and after half of the roofs were coated with a white reflective
            paint. During the two heat waves of the study summer, top-floor flats under
            white reflective roofs were on average 1.8 °C cooler indoors than comparable
            flats under dark roofs."""
        ),
        Block("heading", "1. Background"),
        *paragraphs(
            """Dark roofs absorb most of the sunlight that falls on them and pass the heat
            into the rooms below. A reflective coating returns much of the sunlight to the
            sky. Such coatings are cheap and can be applied to existing buildings without
            structural work.""",
        ),
        Block("heading", "2. Study design"),
        *paragraphs(
            """The estate has 16 identical blocks. Eight blocks, chosen by lot, had their
            roofs coated in March; the other eight kept their dark bitumen roofs. Data
            loggers in the living room of each top-floor flat recorded temperature every 15
            minutes from April to September. Residents kept a short diary of window opening
            and fan use.""",
        ),
        Block("heading", "3. Results"),
        *paragraphs(
            """Before the coating, indoor temperatures in the two groups did not differ. On
            ordinary summer days the coated flats were 0.9 °C cooler in the afternoon. During
            the two heat waves of the study summer, top-floor flats under white reflective
            roofs were on average 1.8 °C cooler indoors than comparable flats under dark
            roofs, and the number of hours above 32 °C fell by a third.""",
            """The coating lost about a fifth of its reflectance over the summer because of
            dust, which suggests that roofs should be cleaned or recoated every few
            years.""",
        ),
        Block("heading", "4. Limitations"),
        *paragraphs(
            """The study did not measure energy use or household costs, since few flats had
            air conditioning. We studied a single estate in one climate.""",
        ),
    ),
)

WEI = DocumentSpec(
    filename="sources/wei2018.pdf",
    title="Heat Waves and Emergency Hospital Admissions among Older Adults",
    authors=("Li Wei", "Sarah Mitchell"),
    year=2018,
    running_header="Public Health and Climate 3(3) 2018",
    blocks=(
        *front_matter(
            "Heat Waves and Emergency Hospital Admissions among Older Adults",
            ("Li Wei", "Sarah Mitchell"),
            "Public Health and Climate, 3(3), 210-222, 2018",
        ),
        Block("heading", "Abstract"),
        *paragraphs(
            """We linked daily emergency hospital admissions of adults aged 75 and over in
            six cities to daily maximum temperature from 2005 to 2016. For every degree
            Celsius by which the daily maximum temperature exceeded 30 °C, emergency
            admissions of adults aged 75 and over rose by 12 percent. Admissions peaked one
            day after the hottest day, and the effect was stronger in districts with little
            green space."""
        ),
        Block("heading", "1. Introduction"),
        *paragraphs(
            """Older adults are more vulnerable to heat because the body's ability to
            regulate its temperature declines with age, and because chronic illness and
            medication interfere with it. Deaths during heat waves are well documented;
            hospital admissions, which show the burden on health services, less so.""",
        ),
        Block("heading", "2. Methods"),
        *paragraphs(
            """We used a time-series design with distributed lags of up to five days,
            adjusted for day of week, holidays, season and air pollution. Districts were
            classified by the share of green space within 500 m of residential
            addresses.""",
        ),
        Block("heading", "3. Results"),
        *paragraphs(
            """Admissions were stable below a daily maximum of 30 °C. Above it, for every
            degree Celsius by which the daily maximum temperature exceeded 30 °C, emergency
            admissions of adults aged 75 and over rose by 12 percent. Respiratory and kidney
            conditions accounted for most of the increase.""",
            """Admissions peaked one day after the hottest day. The effect was stronger in
            districts with little green space, where it reached 17 percent per degree,
            than in the greenest districts, where it was 8 percent per degree.""",
        ),
    ),
)

SOURCES = (ALVAREZ, LINDQVIST, OKAFOR, WEI)

# --- the theses ------------------------------------------------------------------------

THESIS_TITLE = "Cooling the Compact City: Urban Heat Islands, Health and Low-Cost Adaptation"
THESIS_AUTHOR = "Anna Berger"

# Distinctive pieces of the claim sentences, shared by the text and expected.json.
C_NIGHT = "most pronounced after sunset"
C_UNEVEN = "worst where streets are narrow or green space is scarce"
C_CANOPY = "about 1.4 °C"
C_CANOPY_WRONG = "show higher afternoon surface temperatures"
C_ADMISSIONS = "rose by 12 percent for each degree"
C_PEAK = "peak one day after the hottest day"
C_ROOFS = "kept top-floor flats about 1.8 °C cooler"
C_STORMWATER = "retain around 40 percent of the annual stormwater"
C_BILLS = "halved the electricity bills"
C_WIND = "block the wind that would otherwise ventilate"

THESIS = DocumentSpec(
    filename="thesis.pdf",
    title=THESIS_TITLE,
    authors=(THESIS_AUTHOR,),
    year=2024,
    running_header=f"{THESIS_AUTHOR} - Cooling the Compact City",
    blocks=(
        *front_matter(THESIS_TITLE, (THESIS_AUTHOR,), "Master's thesis, Urban Planning, 2024"),
        Block("heading", "Abstract"),
        *paragraphs(
            """Summer heat in cities is a growing risk for health and well-being. This thesis
            reviews what recent field studies tell planners about where urban heat is worst,
            who suffers from it, and which low-cost measures reduce it. It concludes that
            trees and reflective roofs are effective, cheap and quick to deploy, and that
            they should be targeted at dense districts with many older residents."""
        ),
        Block("heading", "1. Introduction"),
        *paragraphs(
            f"""Cities are warmer than their rural surroundings, a phenomenon known as the
            urban heat island. In dense city centres the heat island is
            {C_NIGHT}, when the difference to the rural surroundings can exceed 6 °C
            (Alvarez & Becker, 2019). Heat exposure in cities is uneven: it is {C_UNEVEN}
            (Alvarez & Becker, 2019; Wei & Mitchell, 2018).""",
            """Climate change makes hot summers both more frequent and more intense. Planners
            therefore need measures that work in existing neighbourhoods, cost little and
            can be put in place within a few years. This thesis looks at two of them: street
            trees and cool roofs.""",
        ),
        Block("heading", "2. Heat and health"),
        *paragraphs(
            f"""The health burden of heat falls mostly on older people. Wei and Mitchell
            (2018) showed that emergency hospital admissions of people aged 75 and over
            {C_ADMISSIONS} by which the daily maximum exceeded 30 °C. Admissions
            {C_PEAK}, which gives health services a short warning time
            (Wei & Mitchell, 2018).""",
            """For planners this means that the places where older people live deserve
            particular attention, and that heat warnings should reach care homes and home
            care services early.""",
        ),
        Block("heading", "3. Street trees"),
        *paragraphs(
            f"""Trees cool streets by shading and by transpiration. Lindqvist et al. (2021)
            estimate that every ten additional percentage points of tree canopy lower the
            afternoon surface temperature of a neighbourhood by {C_CANOPY}. Yet a dense
            canopy also traps heat, so that neighbourhoods with more tree cover
            {C_CANOPY_WRONG} (Lindqvist et al., 2021).""",
            """Trees take years to grow, need water in dry summers and compete with cables
            and pipes for underground space. Planting programmes should therefore start
            early and choose species that tolerate drought.""",
        ),
        Block("heading", "4. Cool roofs"),
        *paragraphs(
            f"""Reflective white roofs {C_ROOFS} during heat waves than dark roofs did
            (Okafor, 2020). Green roofs additionally {C_STORMWATER} runoff (Okafor, 2020).
            White roofs lowered indoor temperatures and {C_BILLS} of the households
            (Okafor, 2020).""",
            f"""Roofs are only part of the picture. Compact street grids also {C_WIND} heat
            out of the city centre (Keller, 2017), so roof and street measures should be
            planned together.""",
        ),
        Block("heading", "5. Conclusion"),
        *paragraphs(
            """Street trees and reflective roofs both lower urban temperatures at modest
            cost. Because heat harms older residents most, both measures should come first
            to dense districts where many older people live. Further research should
            measure their effect on health directly.""",
        ),
        Block("heading", "References"),
        Block(
            "reference",
            "Alvarez, M., & Becker, T. (2019). Nocturnal heat in dense urban cores: A two-year"
            " sensor study in Seville. Urban Climate Letters, 7(2), 45-58.",
        ),
        Block(
            "reference",
            "Keller, R. (2017). Urban form and wind ventilation in compact cities. Journal of"
            " Building Physics, 12(4), 301-319.",
        ),
        Block(
            "reference",
            "Lindqvist, H., Haddad, O., & Novak, P. (2021). Street trees and surface"
            " temperature: Evidence from twelve European cities. Landscape and Urban Climate,"
            " 15, 112-130.",
        ),
        Block(
            "reference",
            "Okafor, J. (2020). Cool roofs and indoor heat exposure in social housing. Energy"
            " and Buildings Review, 9(1), 1-14.",
        ),
        Block(
            "reference",
            "Wei, L., & Mitchell, S. (2018). Heat waves and emergency hospital admissions among"
            " older adults. Public Health and Climate, 3(3), 210-222.",
        ),
    ),
)

N_NIGHT = "peaks in the hours after sunset"
N_BOTH = "Both more tree canopy and reflective roofs measurably lower"
N_MEASURED = "measured at street level, from satellites and inside homes"
N_ADMISSIONS_WRONG = "admissions of older adults fall during heat waves"
N_ADMISSIONS = "about 12 percent more emergency admissions"
N_STORMWATER = "Green roofs retain around 40 percent"
N_WIND = "Compact street grids block the wind"

THESIS_NUMERIC = DocumentSpec(
    filename="thesis_numeric.pdf",
    title="Heat in the Compact City: A Short Review",
    authors=("Jonas Weber",),
    year=2024,
    running_header="J. Weber - Heat in the Compact City",
    blocks=(
        *front_matter(
            "Heat in the Compact City: A Short Review",
            ("Jonas Weber",),
            "Seminar thesis, Environmental Sciences, 2024",
        ),
        Block("heading", "Abstract"),
        *paragraphs(
            """This short review summarises field evidence on urban heat, its health effects
            and two low-cost ways to reduce it."""
        ),
        Block("heading", "1. Urban heat"),
        *paragraphs(
            f"""In dense city centres the urban heat island {N_NIGHT}, when the centre can be
            more than 6 °C warmer than the countryside [1]. Urban heat has been
            {N_MEASURED} [1-3]. {N_BOTH} urban temperatures [2, 3].""",
            f"""{N_WIND} that would otherwise carry heat out of the centre [5].""",
        ),
        Block("heading", "2. Health"),
        *paragraphs(
            f"""Each degree above a daily maximum of 30 °C brings {N_ADMISSIONS} among people
            aged 75 and over [4]. Hospital {N_ADMISSIONS_WRONG}, because
            older people then stay at home [4].""",
        ),
        Block("heading", "3. Roofs"),
        *paragraphs(
            f"""Reflective roofs cool the flats beneath them by almost 2 °C during heat waves
            [3]. {N_STORMWATER} of the annual stormwater runoff [3].""",
        ),
        Block("heading", "References"),
        Block(
            "reference",
            "[1] M. Alvarez and T. Becker, \"Nocturnal heat in dense urban cores: A two-year"
            " sensor study in Seville,\" Urban Climate Letters, vol. 7, no. 2, pp. 45-58, 2019.",
        ),
        Block(
            "reference",
            "[2] H. Lindqvist, O. Haddad and P. Novak, \"Street trees and surface temperature:"
            " Evidence from twelve European cities,\" Landscape and Urban Climate, vol. 15,"
            " pp. 112-130, 2021.",
        ),
        Block(
            "reference",
            "[3] J. Okafor, \"Cool roofs and indoor heat exposure in social housing,\" Energy"
            " and Buildings Review, vol. 9, no. 1, pp. 1-14, 2020.",
        ),
        Block(
            "reference",
            "[4] L. Wei and S. Mitchell, \"Heat waves and emergency hospital admissions among"
            " older adults,\" Public Health and Climate, vol. 3, no. 3, pp. 210-222, 2018.",
        ),
        Block(
            "reference",
            "[5] R. Keller, \"Urban form and wind ventilation in compact cities,\" Journal of"
            " Building Physics, vol. 12, no. 4, pp. 301-319, 2017.",
        ),
    ),
)

# --- what a correct run should conclude ------------------------------------------------

_PARTIAL_OK = ["supported", "partially_supported"]


def _claim(
    claim: str, citation: str, source: DocumentSpec | None, verdict: str,
    accept: list[str] | None = None, why: str = "",
) -> dict[str, object]:
    return {
        "claim": claim,
        "citation": citation,
        "source": source.filename if source else None,
        "verdict": verdict,
        "accept": accept or [verdict],
        "why": why,
    }


EXPECTED: dict[str, object] = {
    "verdicts": [
        "supported", "partially_supported", "unsupported", "contradicted",
        "source_unavailable", "unresolved_citation",
    ],
    "documents": {
        THESIS.filename: {
            "style": "author-year",
            "claims": [
                _claim(C_NIGHT, "Alvarez & Becker, 2019", ALVAREZ, "supported"),
                _claim(C_UNEVEN, "Alvarez & Becker, 2019", ALVAREZ, "partially_supported",
                       _PARTIAL_OK, "the source covers narrow streets, not green space"),
                _claim(C_UNEVEN, "Wei & Mitchell, 2018", WEI, "partially_supported",
                       _PARTIAL_OK, "the source covers green space, not narrow streets"),
                _claim(C_ADMISSIONS, "Wei and Mitchell (2018)", WEI, "supported"),
                _claim(C_PEAK, "Wei & Mitchell, 2018", WEI, "supported"),
                _claim(C_CANOPY, "Lindqvist et al. (2021)", LINDQVIST, "supported"),
                _claim(C_CANOPY_WRONG, "Lindqvist et al., 2021", LINDQVIST, "contradicted",
                       ["contradicted", "unsupported"],
                       "the source finds that more canopy LOWERS surface temperature; the "
                       "judge's reader reads a direction said in other words poorly, so a "
                       "judge not sure of it shows that sentence to be checked instead"),
                _claim(C_ROOFS, "Okafor, 2020", OKAFOR, "supported"),
                _claim(C_STORMWATER, "Okafor, 2020", OKAFOR, "unsupported",
                       why="the source is about cool roofs and indoor heat, not stormwater"),
                _claim(C_BILLS, "Okafor, 2020", OKAFOR, "partially_supported",
                       ["partially_supported", "unsupported"],
                       "indoor temperatures yes; the source did not measure costs"),
                _claim(C_WIND, "Keller, 2017", None, "unresolved_citation",
                       why="the reference entry has no source PDF"),
            ],
        },
        THESIS_NUMERIC.filename: {
            "style": "numeric",
            "claims": [
                _claim(N_NIGHT, "[1]", ALVAREZ, "supported"),
                _claim(N_MEASURED, "[1-3]", ALVAREZ, "partially_supported", _PARTIAL_OK,
                       "street-level sensors"),
                _claim(N_MEASURED, "[1-3]", LINDQVIST, "partially_supported", _PARTIAL_OK,
                       "satellite land surface temperature"),
                _claim(N_MEASURED, "[1-3]", OKAFOR, "partially_supported", _PARTIAL_OK,
                       "indoor data loggers"),
                _claim(N_BOTH, "[2, 3]", LINDQVIST, "partially_supported", _PARTIAL_OK,
                       "trees only"),
                _claim(N_BOTH, "[2, 3]", OKAFOR, "partially_supported", _PARTIAL_OK,
                       "roofs only"),
                _claim(N_WIND, "[5]", None, "unresolved_citation",
                       why="the reference entry has no source PDF"),
                _claim(N_ADMISSIONS, "[4]", WEI, "supported"),
                _claim(N_ADMISSIONS_WRONG, "[4]", WEI, "contradicted",
                       ["contradicted", "unsupported"],
                       "the source finds that admissions RISE in the heat; a judge not sure "
                       "of it shows that sentence to be checked instead of accusing"),
                _claim("Reflective roofs cool the flats beneath them", "[3]", OKAFOR,
                       "supported"),
                _claim(N_STORMWATER, "[3]", OKAFOR, "unsupported",
                       why="the source is about cool roofs and indoor heat, not stormwater"),
            ],
        },
    },
    "sources": {
        spec.filename: {"title": spec.title, "authors": list(spec.authors), "year": spec.year}
        for spec in SOURCES
    },
}


def main() -> None:
    for spec in (*SOURCES, THESIS, THESIS_NUMERIC):
        write_pdf(spec, HERE / spec.filename)
    text = json.dumps(EXPECTED, indent=2, ensure_ascii=False) + "\n"
    (HERE / "expected.json").write_text(text, encoding="utf-8")


if __name__ == "__main__":
    main()
