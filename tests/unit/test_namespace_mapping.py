"""Issue 41, finding 5 (Medium): two users could land in one namespace. A user name that
had to change got an 8-hex hash suffix, and a user literally named that result mapped to
the same namespace (``alice@uni.edu`` and ``alice-uni-edu-01b8dabb`` both got
``thesis-alice-uni-edu-01b8dabb``): shared caps, queue share and judge cache.

Property-style: over adversarial names (every mapped name fed back as a user name, case
and separator variants, names of hex suffixes, long names cut at the template's room,
names that are nothing but separators, 20,000 seeded random names over an alphabet rich
in what the mapping changes), no two distinct names share a namespace and every
namespace is a DNS label within 63 characters.
"""

from __future__ import annotations

import random
import re

import pytest

from citerun.web.cluster import namespace_for
from citerun.web.settings import WebSettings

LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
TEMPLATES = ("thesis-{user}", "{user}-t", "a-very-long-department-prefix-{user}-ns")


def _settings(template: str) -> WebSettings:
    return WebSettings(backend="kubernetes", namespace_template=template)


def _adversarial(template: str, seed: int = 41, count: int = 20_000) -> set[str]:
    settings = _settings(template)
    rng = random.Random(seed)
    alphabet = "abcAB01-_.@ é9f" + "0123456789abcdef"
    names = {"alice@uni.edu", "alice-uni-edu", "Alice", "alice", "ALICE", "-alice-", "@@@",
             "---", "a", "0" * 16, "f" * 16, "x-" + "0" * 16, "alice-01b8dabb",
             "alice-uni-edu-01b8dabb", "é", "ü", "a" * 63, "a" * 64, "a" * 200,
             "a" * 200 + "b", "a-" * 40}
    names |= {"".join(rng.choice(alphabet) for _ in range(rng.randint(1, 80)))
              for _ in range(count)}
    # Each name's namespace, and its label alone, tried as user names of their own: the
    # attack of the issue (a user named what another's name became).
    prefix, _, suffix = template.partition("{user}")
    for name in list(names):
        mapped = namespace_for(name, settings)
        names.add(mapped)
        names.add(mapped[len(prefix):len(mapped) - len(suffix)])
    return names


@pytest.mark.parametrize("template", TEMPLATES)
def test_no_two_names_share_a_namespace(template: str) -> None:
    settings = _settings(template)
    seen: dict[str, str] = {}
    for name in sorted(_adversarial(template)):
        namespace = namespace_for(name, settings)
        assert len(namespace) <= 63 and LABEL.match(namespace), (name, namespace)
        assert namespace not in seen, (seen.get(namespace), name, namespace)
        seen[namespace] = name


def test_the_issues_pair_lands_in_two_namespaces() -> None:
    settings = _settings("thesis-{user}")
    first = namespace_for("alice@uni.edu", settings)
    label = first.removeprefix("thesis-")
    assert namespace_for(label, settings) != first
    assert namespace_for("alice", settings) == "thesis-alice"  # a plain label stays itself
    assert namespace_for("Alice", settings) != "thesis-alice"
