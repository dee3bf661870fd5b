"""An opened index is a snapshot, a rebuild is swapped in whole, and a changed byte in any
index file is found before the first answer: rebuilt and deleted folders under an open index
(both searches), a folder swapped while it is being opened, readers racing rebuilds, an
interrupted build, and one changed byte in each file."""

from __future__ import annotations

import json
import shutil
import threading
from pathlib import Path

import pytest

from copyprobe import cli
from copyprobe.spans import build as build_mod
from copyprobe.spans import index as index_mod
from copyprobe.spans import layout
from copyprobe.spans.build import build_index
from copyprobe.spans.index import SpanIndex, index_digest
from copyprobe.spans.types import SpanIndexError

SHARD = "shard-00000-of-00001"
OLD = "the quick brown fox jumps over the lazy dog near the old river bank today"
NEW = "a completely different sentence about green fields and tall mountains far away"


def _corpus(path: Path, text: str, doc_id: str) -> Path:
    rows = [{"text": text, "doc_id": doc_id},
            {"text": f"filler words {doc_id} " * 30, "doc_id": f"{doc_id}-filler"}]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


@pytest.fixture()
def corpora(tmp_path) -> tuple[Path, Path]:
    return (_corpus(tmp_path / "old.jsonl", OLD, "old-doc"),
            _corpus(tmp_path / "new.jsonl", NEW, "new-doc"))


def _doc_of(index: SpanIndex, text: str) -> str | None:
    """The doc_id the index credits ``text``'s span to (None: no span)."""
    spans = index.find_spans(text, min_words=6)
    return spans[0].docs[0].doc_id if spans else None


# -- an open index is a snapshot --------------------------------------------------------
@pytest.mark.parametrize("search", ["mmap", "engine"])
def test_an_open_index_keeps_answering_from_its_build_after_a_rebuild_and_a_delete(
        tmp_path, corpora, search):
    old, new = corpora
    out = tmp_path / "idx"
    build_index([old], out)
    index = SpanIndex.open(out, search=search)
    digest = index.digest
    assert _doc_of(index, OLD) == "old-doc"
    rebuilt = build_index([new], out)  # another corpus into the folder the index serves
    assert not rebuilt["reused"] and index_digest(out) == rebuilt["digest"] != digest
    # the open index: the old build whole (spans, counts, documents), never the new one
    assert index.digest == digest and _doc_of(index, OLD) == "old-doc"
    assert _doc_of(index, NEW) is None
    assert index.count(["quick", "brown", "fox"]) == 1 and index.count(["green"]) == 0
    with SpanIndex.open(out, search=search) as fresh:  # a new open: the new build
        assert fresh.digest == rebuilt["digest"] and _doc_of(fresh, NEW) == "new-doc"
        assert _doc_of(fresh, OLD) is None
    shutil.rmtree(out)  # deleted: still the old build, from its mapped files
    assert _doc_of(index, OLD) == "old-doc" and index.count(["lazy", "dog"]) == 1
    index.close()
    with pytest.raises(SpanIndexError, match=rf"^{out}/index.json: no span-index manifest"):
        SpanIndex.open(out)
    with pytest.raises(SpanIndexError, match=rf"^{out}/index.json: no span-index manifest"):
        index_digest(out)


@pytest.mark.parametrize("remove_old", [False, True])
def test_a_folder_swapped_while_it_is_opened_is_opened_whole(tmp_path, corpora, monkeypatch,
                                                            remove_old):
    """A rebuild published between the manifest's read and the engine's opening, its
    swapped-out build deleted or not: the engine maps the files the checks read, through
    their held descriptors (the old build whole)."""
    old, new = corpora
    out = tmp_path / "idx"
    build_index([old], out)
    other = build_index([new], tmp_path / "other")
    real = index_mod._open_engine
    swapped = []

    def swap_then_open(shards, codec):  # the race, provoked at the worst moment
        if not swapped:
            swapped.append(True)
            build_mod.publish(tmp_path / "other", out)  # "other" now holds the old build
            if remove_old:
                shutil.rmtree(tmp_path / "other")
        return real(shards, codec)

    monkeypatch.setattr(index_mod, "_open_engine", swap_then_open)
    with SpanIndex.open(out, search="engine") as index:
        assert index.digest != other["digest"] and _doc_of(index, OLD) == "old-doc"
        assert index.count(["quick", "brown"]) == 1 and index.count(["green"]) == 0
    with SpanIndex.open(out, search="engine") as fresh:  # the next open: the new build
        assert fresh.digest == other["digest"] and _doc_of(fresh, NEW) == "new-doc"
    assert swapped


def test_readers_racing_rebuilds_see_one_build_whole(tmp_path, corpora):
    old, new = corpora
    out = tmp_path / "idx"
    first = build_index([old], out)
    expect = {first["digest"]: ("old-doc", OLD)}
    seen, errors, stop = [], [], threading.Event()

    def reader():
        while not stop.is_set():
            try:
                with SpanIndex.open(out) as index:
                    doc, text = expect[index.digest]
                    seen.append(_doc_of(index, text) == doc)
            except Exception as exc:  # noqa: BLE001 - every failure is the finding
                errors.append(repr(exc))

    t = threading.Thread(target=reader)
    t.start()
    try:
        for k in range(6):
            corpus, doc, text = (new, "new-doc", NEW) if k % 2 == 0 else (old, "old-doc", OLD)
            _corpus(corpus, text, doc)
            m = build_index([corpus], out)
            expect[m["digest"]] = (doc, text)
    finally:
        stop.set()
        t.join()
    assert errors == [] and seen and all(seen)
    assert not list(tmp_path.glob(".idx.build-*"))  # every swapped-out build removed


# -- a rebuild is swapped in whole --------------------------------------------------------
def test_an_interrupted_build_leaves_the_old_index(tmp_path, corpora, monkeypatch):
    old, new = corpora
    out = tmp_path / "idx"
    before = build_index([old], out)

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(build_mod, "finalize_index", interrupted)
    with pytest.raises(KeyboardInterrupt):
        build_index([new], out)
    monkeypatch.undo()
    with SpanIndex.open(out) as index:
        assert index.digest == before["digest"] and _doc_of(index, OLD) == "old-doc"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["idx", "new.jsonl", "old.jsonl"]
    # a build killed outright leaves its folder (its process gone): the next build removes it
    stale = tmp_path / ".idx.build-999999999-dead"
    (stale / SHARD).mkdir(parents=True)
    again = build_index([old], out)
    assert again["reused"] and not stale.exists()


def test_without_an_atomic_swap_two_renames_replace_the_index(tmp_path, corpora, monkeypatch,
                                                               caplog):
    old, new = corpora
    out = tmp_path / "idx"
    build_index([old], out)
    monkeypatch.setattr(build_mod, "_exchange", lambda a, b: False)
    m = build_index([new], out)
    assert "no atomic swap of folders here" in caplog.text
    with SpanIndex.open(out) as index:
        assert index.digest == m["digest"] and _doc_of(index, NEW) == "new-doc"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["idx", "new.jsonl", "old.jsonl"]


def test_a_folder_holding_other_files_is_not_replaced(tmp_path, corpora):
    out = tmp_path / "mine"
    out.mkdir()
    (out / "notes.txt").write_text("keep me", encoding="utf-8")
    with pytest.raises(SpanIndexError, match=rf"^{out}: holds notes.txt, which is not part of a "
                                             r"span index; a build replaces the whole folder"):
        build_index([corpora[0]], out)
    assert (out / "notes.txt").read_text(encoding="utf-8") == "keep me"
    empty = tmp_path / "empty"
    empty.mkdir()
    assert build_index([corpora[0]], empty)["n_docs"] == 2


# -- a changed byte in any file -----------------------------------------------------------
@pytest.fixture(scope="module")
def built(tmp_path_factory) -> Path:
    """An index whose blocks are 64 bytes (so a byte is located in its block)."""
    base = tmp_path_factory.mktemp("blocks")
    mp = pytest.MonkeyPatch()
    mp.setattr(build_mod, "BLOCK_BYTES", 64)
    try:
        corpus = _corpus(base / "c.jsonl", OLD, "old-doc")
        build_index([corpus], base / "idx")
    finally:
        mp.undo()
    return base / "idx"


def _changed(src: Path, dest: Path, name: str) -> tuple[Path, int]:
    """A copy of the index ``src`` with one byte of shard file ``name`` changed (in its
    second block where it has one); the file and the byte's block."""
    shutil.copytree(src, dest)
    f = dest / SHARD / name
    data = bytearray(f.read_bytes())
    at = min(len(data) - 1, 64 + 5)
    data[at] ^= 0x01
    f.write_bytes(bytes(data))
    return f, at // 64


@pytest.mark.parametrize("name", layout.SHARD_FILES)
def test_a_changed_byte_in_each_file_is_found_before_the_first_answer(built, tmp_path, capsys,
                                                                      name):
    f, block = _changed(built, tmp_path / "idx", name)
    message = rf"{f}: block {block} \(bytes {block * 64}-\d+\) differs from the manifest's crc32"
    with pytest.raises(SpanIndexError, match=rf"^{message}"):
        SpanIndex.open(tmp_path / "idx")
    with pytest.raises(SpanIndexError, match=rf"^{message}"):
        SpanIndex.open(tmp_path / "idx", search="engine")
    for argv in (["index", "find", str(tmp_path / "idx"), OLD, "--min-words", "4"],
                 ["index", "verify", str(tmp_path / "idx")]):
        assert cli.main(argv) == 1
        captured = capsys.readouterr()
        assert captured.out == "" and captured.err.startswith(f"copyprobe: {f}: block {block} ")


def test_verify_checks_every_file_and_its_sha256(built, capsys):
    assert cli.main(["index", "verify", str(built)]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["ok"] and report["verify"] == "full"
    assert report["checked"] == ["crc32 blocks", "sha256"]
    assert report["files"] == len(layout.SHARD_FILES)
    assert report["bytes"] == sum(p.stat().st_size for p in (built / SHARD).iterdir())
    assert cli.main(["index", "find", str(built), OLD, "--min-words", "4", "--verify"]) == 0
    found = json.loads(capsys.readouterr().out)
    assert found["index"]["verified"]["checked"] == ["crc32 blocks", "sha256"]
    assert found["spans"][0]["docs"][0]["doc_id"] == "old-doc"


def test_an_index_built_before_block_checksums_opens_checked_by_sha256(built, tmp_path, caplog):
    """Its manifest records each file's sha256 only: opening checks those instead (slower,
    logged with the advice to rebuild); one recording no checksum at all is refused."""
    d = tmp_path / "old-manifest"
    shutil.copytree(built, d)
    m = json.loads((d / "index.json").read_text())
    del m["checksums"]
    for s in m["shards"]:
        del s["crc32"]
    (d / "index.json").write_text(json.dumps(m))
    caplog.set_level("INFO")
    with SpanIndex.open(d) as index:
        assert index.verified["checked"] == ["sha256"] and _doc_of(index, OLD) == "old-doc"
    assert "built before per-block checksums" in caplog.text and "rebuild" in caplog.text
    table = d / SHARD / "table.0"
    table.write_bytes(bytes([table.read_bytes()[0] ^ 1]) + table.read_bytes()[1:])
    with pytest.raises(SpanIndexError, match=rf"^{table}: sha256 differs from the manifest"):
        SpanIndex.open(d)
    for s in m["shards"]:
        del s["sha256"]
    (d / "index.json").write_text(json.dumps(m))
    with pytest.raises(SpanIndexError, match=rf"^{d}/index.json: no checksums recorded .* "
                                             r"rebuild the index"):
        SpanIndex.open(d)
    with pytest.raises(ValueError, match="verify must be one of sizes, blocks, full"):
        SpanIndex.open(built, verify="fast")
