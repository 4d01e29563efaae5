"""The contradiction funnel's bar sweep (issue 50, item 4) chooses each set's bar on the
other sets only, and holds the precision floor there."""

from __future__ import annotations

from bench.quality import contradiction_funnel as funnel


def _row(name: str, gold: str, p_contradict: float, stated: bool = True) -> dict[str, object]:
    rest = (1 - p_contradict) / 2
    return {"set": name, "gold": gold, "calibrated": [rest, p_contradict, rest], "stated": stated}


def test_a_bar_is_chosen_on_the_other_sets_and_scored_on_the_one_left_out() -> None:
    rows = []
    for name in ("a", "b"):
        # right contradictions at 0.5-0.6, none wrong above 0.45: the best bar is 0.45-0.5
        rows += [_row(name, "CONTRADICT", 0.55) for _ in range(20)]
        rows += [_row(name, "NEI", 0.42) for _ in range(20)]
    # set c: its wrong calls sit at 0.5, so a bar chosen on c would be above it
    rows += [_row("c", "CONTRADICT", 0.75) for _ in range(10)]
    rows += [_row("c", "SUPPORT", 0.5) for _ in range(30)]
    table = funnel.sweep(rows)
    line_c = next(line for line in table.splitlines() if line.startswith("| c |"))
    assert "| 0.45 |" in line_c or "| 0.50 |" in line_c, table  # chosen on a and b
    assert "10/40" in line_c, table  # and it pays for it on c: 30 wrong calls
    assert funnel._at_bar(rows, 0.7) == (10, 10, 50)


def test_no_call_without_a_sentence_that_states_the_opposite() -> None:
    assert funnel._at_bar([_row("a", "CONTRADICT", 0.9, stated=False)], 0.5) == (0, 0, 1)
