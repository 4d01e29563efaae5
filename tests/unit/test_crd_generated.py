"""The CRD and the chart's copy are generated from the RunSpec model (issue 14, item 2):
the committed files must equal the generator's output, and the generated schema must say
what the model says (a spot check of the rules that matter for security)."""

from __future__ import annotations

import pathlib
import subprocess
import sys

import yaml

REPO = pathlib.Path(__file__).resolve().parents[2]


def test_committed_crds_equal_the_generated_one() -> None:
    done = subprocess.run([sys.executable, "-P", str(REPO / "scripts" / "gen_crd.py"), "--check"],
                          capture_output=True, text=True, cwd=REPO, check=False)
    assert done.returncode == 0, done.stderr


def test_generated_spec_has_no_tenant_priority_or_judge_url() -> None:
    crd = yaml.safe_load((REPO / "crds" / "citationrun.yaml").read_text(encoding="utf-8"))
    spec = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]
    assert set(spec["properties"]) == {"thesis", "sources", "judge", "retrieval", "fetchSources"}
    openai = spec["properties"]["judge"]["properties"]["openai"]["properties"]
    assert "baseUrl" not in openai and "model" not in openai
    assert openai["profile"]["pattern"] == "^[a-z0-9]([-a-z0-9]*[a-z0-9])?$"
    assert spec["properties"]["sources"]["x-kubernetes-list-type"] == "map"
    thesis = spec["properties"]["thesis"]
    assert thesis["x-kubernetes-validations"][0]["message"].startswith("exactly one of")


def test_bounds_are_numbers_and_exclusive_flags_booleans() -> None:
    """apiextensions/v1: minimum/maximum are numbers, exclusiveMinimum/Maximum booleans."""
    crd = yaml.safe_load((REPO / "crds" / "citationrun.yaml").read_text(encoding="utf-8"))

    def walk(node: object) -> None:
        if isinstance(node, dict):
            for key in ("minimum", "maximum"):
                if key in node:
                    assert not isinstance(node[key], bool), node
            for key in ("exclusiveMinimum", "exclusiveMaximum"):
                if key in node:
                    assert node[key] is True and ("minimum" if "Min" in key else "maximum") in node
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    walk(crd)
