"""Deterministic perturbations of English claims: negation, un-negation, direction flip.

Used by ``training.judge`` to augment SciFact train (a supported claim negated is a
contradicted claim of the same abstract; a contradicted claim with its negation removed
is usually a supported one) and by ``bench.quality.scifact --negations`` to build the
negation test set from dev supported claims. Rules, no model: each function returns
``None`` when it finds no place it can change safely.
"""

from __future__ import annotations

import re

_AUX = re.compile(
    r"\b(is|are|was|were|can|could|may|might|will|would|should|must|has been|have been|"
    r"had been)\b(?!\s+not\b)", re.IGNORECASE)
_VERBS = (
    "increase decrease reduce cause induce inhibit promote improve lead result correlate "
    "associate affect regulate enhance prevent protect require contribute mediate block "
    "activate suppress predict impair confer play lower raise have show exhibit produce "
    "express trigger accelerate delay drive modulate alter impact elevate limit stimulate "
    "enable prolong shorten extend attenuate exacerbate worsen reverse restore bind "
    "interact depend occur facilitate correspond lack contain target control confer "
    "maintain slow boost recruit repress upregulate downregulate decline rise"
).split()
_BASE_OF: dict[str, str] = {}
for _verb in _VERBS:
    if _verb == "have":
        _BASE_OF["has"] = "have"
    elif _verb.endswith(("s", "sh", "ch", "x", "z")):
        _BASE_OF[_verb + "es"] = _verb
    elif _verb.endswith("y") and _verb[-2] not in "aeiou":
        _BASE_OF[_verb[:-1] + "ies"] = _verb
    else:
        _BASE_OF[_verb + "s"] = _verb
_THIRD = re.compile(r"\b(" + "|".join(sorted(_BASE_OF, key=len, reverse=True)) + r")\b", re.IGNORECASE)
_PLURAL = re.compile(r"\b(" + "|".join(_VERBS) + r")\b", re.IGNORECASE)
_NEGATED = re.compile(
    r"\b(?:(does|do|did) not (\w+)|(is|are|was|were|can|could|may|might|will|would|should|"
    r"must|has|have|had) not|(\w+)n't)\b", re.IGNORECASE)
_NO = re.compile(r"\bno\b", re.IGNORECASE)
_FLIPS = {
    "increases": "decreases", "decreases": "increases", "increased": "decreased",
    "decreased": "increased", "increase": "decrease", "decrease": "increase",
    "increasing": "decreasing", "decreasing": "increasing", "higher": "lower",
    "lower": "higher", "reduces": "increases", "reduced": "increased", "reduce": "increase",
    "promotes": "inhibits", "inhibits": "promotes", "activates": "inhibits",
    "enhances": "impairs", "impairs": "enhances", "improves": "worsens", "worsens": "improves",
    "more": "less", "less": "more", "greater": "smaller", "positive": "negative",
    "negative": "positive", "positively": "negatively", "negatively": "positively",
    "upregulates": "downregulates", "downregulates": "upregulates", "high": "low",
    "low": "high", "elevated": "reduced", "younger": "older", "older": "younger",
    "prevents": "causes", "protects": "predisposes", "suppresses": "promotes",
    "induces": "inhibits", "accelerates": "delays", "delays": "accelerates",
}
_FLIP = re.compile(r"\b(" + "|".join(_FLIPS) + r")\b", re.IGNORECASE)


# Groups a claim may be about; swapping one for its counterpart makes a claim about
# others, which the source usually contradicts (SciFact's annotators wrote many such).
_GROUP_SWAPS = {
    "men": "women", "women": "men", "male": "female", "female": "male", "boys": "girls",
    "girls": "boys", "children": "adults", "adults": "children", "mice": "humans",
    "humans": "mice", "elderly": "young", "young": "elderly", "older": "younger",
    "smokers": "non-smokers", "infants": "adults",
}
_GROUP = re.compile(r"\b(" + "|".join(_GROUP_SWAPS) + r")\b", re.IGNORECASE)
_DIGITS = re.compile(r"(?<![\w.])(\d+(?:\.\d+)?)(?![\w.])")
_MORE_FLIPS = {
    "encourages": "inhibits", "stimulates": "inhibits", "facilitates": "impairs",
    "causes": "prevents", "triggers": "suppresses", "restores": "impairs",
    "accurate": "inaccurate", "effective": "ineffective", "dependent": "independent",
    "independent": "dependent", "beneficial": "harmful", "harmful": "beneficial",
    "increased": "decreased", "improved": "worsened", "enhanced": "reduced",
    "promoted": "inhibited", "inhibited": "promoted", "activated": "inhibited",
}
_MORE_FLIP = re.compile(r"\b(" + "|".join(_MORE_FLIPS) + r")\b", re.IGNORECASE)


def _case(like: str, word: str) -> str:
    return word[:1].upper() + word[1:] if like[:1].isupper() else word


def _swap_first(claim: str, pattern: re.Pattern[str], table: dict[str, str]) -> str | None:
    """``claim`` with the first word ``pattern`` finds replaced by its entry in ``table``
    (in the word's case), or ``None`` when there is none."""
    match = pattern.search(claim)
    if not match:
        return None
    word = match.group(1)
    return claim[: match.start()] + _case(word, table[word.casefold()]) + claim[match.end():]


def negate(claim: str) -> str | None:
    """The claim with its main statement negated, or ``None``.

    "X is associated with Y" -> "X is not associated with Y"; "X increases Y" -> "X
    does not increase Y"; "Mice lacking X show Y" -> "Mice lacking X do not show Y".
    A claim that is already negated is left alone (see :func:`unnegate`).
    """
    if _NEGATED.search(claim) or _NO.search(claim):
        return None
    candidates = []
    aux = _AUX.search(claim)
    if aux:
        candidates.append((aux.start(), aux.end(), aux.group(0) + " not"))
    third = _THIRD.search(claim)
    if third:
        base = _BASE_OF[third.group(1).casefold()]
        candidates.append((third.start(), third.end(), "does not " + base))
    plural = _PLURAL.search(claim)
    if plural and plural.start() > 0 and not re.search(r"\bto\s+$", claim[: plural.start()]):
        candidates.append((plural.start(), plural.end(), "do not " + plural.group(1).casefold()))
    if not candidates:
        return None
    start, end, text = min(candidates)
    return claim[:start] + text + claim[end:]


def unnegate(claim: str) -> str | None:
    """The claim with its one negation removed, or ``None`` when it has none (or two)."""
    matches = list(_NEGATED.finditer(claim))
    if len(matches) != 1 or _NO.search(claim):
        return None
    match = matches[0]
    if match.group(1):
        verb = match.group(2)
        if match.group(1).casefold() == "did":
            return None  # past tense forms are irregular
        if match.group(1).casefold() == "does":
            verb = "has" if verb == "have" else (
                verb + "es" if verb.endswith(("s", "sh", "ch", "x", "z")) else verb + "s")
        return claim[: match.start()] + verb + claim[match.end():]
    if match.group(3):
        return claim[: match.start()] + match.group(3) + claim[match.end():]
    return None


def flip(claim: str) -> str | None:
    """The claim with its first direction word replaced by its opposite, or ``None``."""
    return _swap_first(claim, _FLIP, _FLIPS)


def swap_group(claim: str) -> str | None:
    """The claim about another group (men -> women, mice -> humans), or ``None``."""
    return _swap_first(claim, _GROUP, _GROUP_SWAPS)


def renumber(claim: str) -> str | None:
    """The claim with its first number changed (doubled, or halved when large), or ``None``."""
    match = _DIGITS.search(claim)
    if not match:
        return None
    value = float(match.group(1))
    if 1900 <= value <= 2100 and "." not in match.group(1):
        return None  # a year
    changed = value / 2 if value >= 50 else value * 2 + (1 if value == 0 else 0)
    text = f"{changed:g}" if "." in match.group(1) or changed != int(changed) else str(int(changed))
    return claim[: match.start()] + text + claim[match.end():]


def antonym(claim: str) -> str | None:
    """The claim with an effect word not in :func:`flip` replaced by its opposite, or ``None``."""
    return _swap_first(claim, _MORE_FLIP, _MORE_FLIPS)
