"""Code stamps: one input standing for a script's library files, rewritten (its mtime moved)
exactly when one of their contents changes, saying which."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from copyprobe.code_stamps import stamp_files, stamp_name, write_stamp

OLD_NS = 1_600_000_000 * 10**9


@pytest.fixture()
def tree(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    for name, text in (("a.py", "A = 1\n"), ("b.py", "B = 2\n"), ("c.py", "C = 3\n")):
        (tmp_path / name).write_text(text)
        os.utime(tmp_path / name, ns=(OLD_NS, OLD_NS))
    return tmp_path


def test_a_new_stamp_lists_each_files_sha256_and_takes_the_newest_files_time(tree):
    os.utime("b.py", ns=(OLD_NS + 5, OLD_NS + 5))
    said = []
    path = write_stamp("rule", ["b.py", "a.py"], say=said.append)
    assert path == ".snakemake/copyprobe/code/rule/stamp.json" and said == []
    record = json.loads((tree / path).read_text())
    assert record["stamp"] == "rule" and record["changed"] == []
    assert list(record["files"]) == ["a.py", "b.py"]
    assert record["files"]["a.py"] == hashlib.sha256(b"A = 1\n").hexdigest()
    # as old as the newest file: results made after them are not out of date
    assert os.stat(path).st_mtime_ns == OLD_NS + 5
    assert stamp_files(path) == ["a.py", "b.py"]


def test_unchanged_contents_leave_the_stamp_alone_even_when_touched(tree):
    path = write_stamp("rule", ["a.py", "b.py"])
    before = os.stat(path).st_mtime_ns
    os.utime("a.py")  # touched, same bytes
    said = []
    assert write_stamp("rule", ["a.py", "b.py"], say=said.append) == path
    assert os.stat(path).st_mtime_ns == before and said == []


@pytest.mark.parametrize("change, files, named", [
    ("edit", ["a.py", "b.py"], "a.py"),
    ("add", ["a.py", "b.py", "c.py"], "c.py"),
    ("remove", ["b.py"], "a.py"),
])
def test_a_changed_added_or_removed_file_rewrites_the_stamp_and_names_it(tree, change, files,
                                                                         named):
    path = write_stamp("rule", ["a.py", "b.py"])
    before = os.stat(path).st_mtime_ns
    if change == "edit":
        (tree / "a.py").write_text("A = 10\n")
        os.utime("a.py", ns=(OLD_NS, OLD_NS))  # even with its old time
    said = []
    write_stamp("rule", files, say=said.append)
    assert os.stat(path).st_mtime_ns > before
    assert said == [f"{path}: {named} changed; its jobs rerun"]
    record = json.loads((tree / path).read_text())
    assert record["changed"] == [named] and sorted(record["files"]) == sorted(files)


def test_a_damaged_stamp_is_written_again(tree):
    path = write_stamp("rule", ["a.py"])
    (tree / path).write_text("{not json")
    said = []
    write_stamp("rule", ["a.py"], say=said.append)
    assert stamp_files(path) == ["a.py"] and said == []


def test_names_say_the_parts_and_two_choices_never_share_one():
    assert stamp_name("a_script", None) == "a_script"
    assert stamp_name("a_script", {"backend": ["llamacpp"], "study": []}) == "a_script.llamacpp"
    assert stamp_name("a_script", {"backend": [], "study": []}) == "a_script.no-model"
    assert stamp_name("a_script", {"study": [], "backend": ["llamacpp"]}) == "a_script.llamacpp"
    assert stamp_name("a_script", {"backend": ["openai", "llamacpp"], "study": ["copyright"]}
                      ) == "a_script.copyright+llamacpp+openai"
    with pytest.raises(ValueError, match=r"code stamp a_script\.llamacpp: named by two choices"):
        stamp_name("a_script", {"backend wrapper": ["llamacpp"]})


SNAKEFILE = textwrap.dedent("""
    from copyprobe.code_stamps import write_stamp

    rule all:
        input: "c.txt"

    for name, before in (("a", []), ("b", ["a.txt"]), ("c", ["b.txt"])):
        rule:
            name: name
            input: *before, lib=lambda w, name=name: write_stamp(name, ["x.py"])
            output: f"{name}.txt"
            shell: "touch {output}"
""")


def test_stamps_made_while_snakemake_plans_are_seen_by_it(tmp_path):
    """Snakemake lists a folder once and then takes a file missing from the listing for
    absent: three stamps made one after another while it plans are each found."""
    (tmp_path / "Snakefile").write_text(SNAKEFILE)
    (tmp_path / "x.py").write_text("X = 1\n")
    root = Path(__file__).resolve().parents[1]
    env = {**os.environ, "PYTHONPATH": str(root)}
    for args in (["--dry-run"], []):
        proc = subprocess.run([sys.executable, "-m", "snakemake", "--cores", "1", *args],
                              cwd=tmp_path, env=env, capture_output=True, text=True,
                              timeout=300)
        assert proc.returncode == 0, proc.stderr[-3000:]
    assert sorted(p.parent.name for p in (tmp_path / ".snakemake/copyprobe/code").glob(
        "*/stamp.json")) == ["a", "b", "c"]
    assert (tmp_path / "c.txt").exists()
