"""``training.ship`` records what it writes as tests/unit/test_reader.py holds the package's
manifest to (issue 50, item 6): every file's machine, seconds and data with their terms."""

from __future__ import annotations

import json
import pathlib

import numpy
import pytest

from training import ship


def _pairs(path: pathlib.Path, names: list[str], sets: list[int]) -> pathlib.Path:
    numpy.savez(path, set_names=numpy.array(names), sets=numpy.array(sets, dtype=numpy.int64))
    return path


def test_the_manifest_entry_names_every_set_trained_on_with_its_terms(tmp_path: pathlib.Path) -> None:
    pairs = _pairs(tmp_path / "pairs.npz", ["scifact", "mnli", "wice"], [0, 1, 1, 1, 0])
    manifest = tmp_path / "MANIFEST.json"
    manifest.write_text(json.dumps({"files": {"other.tsv": {"sha256": "x"}}}), encoding="utf-8")
    (tmp_path / "reader.int8.onnx").write_bytes(b"onnx")
    ship.record({"reader.int8.onnx": {"made_by": "fit_reader train", "machine": "AMD EPYC, 1 threads, fp32",
                                      "seconds": 123.4, "data": ship.data_of(pairs)}}, "python -m training.ship",
                manifest)
    files = json.loads(manifest.read_text(encoding="utf-8"))["files"]
    assert files["other.tsv"] == {"sha256": "x"}  # others' entries are kept
    entry = files["reader.int8.onnx"]
    assert entry["bytes"] == 4 and entry["machine"] == "AMD EPYC, 1 threads, fp32" and entry["seconds"] == 123.4
    names = [d["name"] for d in entry["data"]]
    assert names[0].startswith("all-MiniLM-L6-v2")
    assert [n.rsplit("(", 1)[1] for n in names[1:]] == ["scifact)", "mnli)"]  # wice: no pair, not named
    assert "2 pairs" in names[1] and "3 pairs" in names[2]
    assert all(d["terms"] for d in entry["data"])


def test_a_set_without_terms_stops_the_ship(tmp_path: pathlib.Path) -> None:
    with pytest.raises(SystemExit, match="no terms for"):
        ship.data_of(_pairs(tmp_path / "pairs.npz", ["scifact", "newset"], [0, 1]))


def test_every_set_of_the_training_data_has_terms() -> None:
    from training import nli_data, reader_data

    names = {take.name for take in nli_data.SETS} | set(reader_data.SETS)
    assert names <= set(ship.TERMS), sorted(names - set(ship.TERMS))
