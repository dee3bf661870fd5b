"""The benchmark's manifest: row counts from the released layout extended to 250 materials,
notices present and absent (never invented), the prompt rebuilt from a row, and the command."""

from __future__ import annotations

import csv
import json
import os
import shutil
from pathlib import Path

import pandas as pd
import pytest

from copyprobe.artifacts import read_meta, read_table
from copyprobe.cli import main
from copyprobe.copyright.manifest import (
    COPYRIGHT_MANIFEST,
    ManifestError,
    build_manifest,
    prompt_for,
)
from copyprobe.copyright.notices import GENERIC_NOTICE, NOTICE_FORMS
from copyprobe.copyright.queries import TASKS, own_seeds
from copyprobe.prompt import image_digests, image_parts
from copyprobe.sources.materials.rights import strip_notices

SHARED = Path(os.environ.get("COPYPROBE_SHARED_FIXTURES")
              or Path(__file__).resolve().parents[2].parent / "shared" / "fixtures")
COPYGUARD = SHARED / "copyguard"
#: the fixture's news files whose text holds a copyright line ("© 2025 Cable News Network")
NOTICES_IN_FIXTURE_TEXT = 17


def _need_fixture() -> None:
    if not (COPYGUARD / "query" / "seeds.json").is_file():
        pytest.skip(f"shared fixture {COPYGUARD} absent (set COPYPROBE_SHARED_FIXTURES)")


def _extended(dest: Path, *, strip_text_notices: bool) -> Path:
    """The fixture layout (50 code, 50 news, seeds.json) plus 100 synthetic books and 50
    synthetic lyrics: 250 materials. With ``strip_text_notices`` the copyright lines of the
    fixture's texts are left out of the copy, so no material has a notice of its own."""
    _need_fixture()
    for folder in ("code_copyright", "news_copyright", "query"):
        (dest / folder).mkdir(parents=True)
        for f in sorted((COPYGUARD / folder).iterdir()):
            if strip_text_notices and f.suffix == ".txt":
                text, _ = strip_notices(f.read_text(encoding="utf-8"))
                (dest / folder / f.name).write_text(text, encoding="utf-8")
            else:
                shutil.copy(f, dest / folder / f.name)
    for category, n in (("book", 100), ("lyrics", 50)):
        folder = dest / f"{category}_copyright"
        folder.mkdir()
        for i in range(n):
            (folder / f"{category}_{i:03d}.txt").write_text(
                f"The {category} number {i} begins here. It has a second sentence.\n\n"
                f"A second paragraph of {category} {i} follows.", encoding="utf-8")
    return dest


def _notices_csv(root: Path, path: Path) -> Path:
    with path.open("w", newline="", encoding="utf-8") as fh:
        w = csv.writer(fh)
        w.writerow(["file", "holder", "year", "notice"])
        for folder in sorted(root.glob("*_copyright")):
            for f in sorted(folder.glob("*.txt")):
                w.writerow([f"{folder.name}/{f.name}", f"Holder of {f.stem}", "2020",
                            f"Copyright © 2020 Holder of {f.stem}. All rights reserved."])
    return path


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> dict:
    assert main(list(argv)) == 0
    return json.loads(capsys.readouterr().out)


def test_250_materials_with_notices_make_exactly_50000_rows(tmp_path, capsys) -> None:
    root = _extended(tmp_path / "mat", strip_text_notices=False)
    notices = _notices_csv(root, tmp_path / "notices.csv")
    out = tmp_path / "m.parquet"
    summary = _run(capsys, "copyright-manifest", str(root), "--queries",
                   str(root / "query" / "seeds.json"), "--notices", str(notices),
                   "--out", str(out))
    assert summary["rows"] == 50_000
    assert summary["materials"] == 250 and summary["materials_without_original_notice"] == 0
    assert summary["rows_per_form"] == {f: 10_000 for f in NOTICE_FORMS}
    assert summary["rows_per_task"] == {t: 12_500 for t in TASKS}
    df = read_table(out, COPYRIGHT_MANIFEST)
    assert len(df) == 50_000 and df["request_id"].is_unique
    assert df.groupby("material_id").size().eq(200).all()
    assert df["category"].value_counts().to_dict() == {"book": 20_000, "news": 10_000,
                                                      "code": 10_000, "lyrics": 10_000}
    # the notices table wins over a line found in the text
    orig = df[df["notice_form"] == "text_original"]
    assert orig["notice_text"].str.startswith("Copyright © 2020 Holder of ").all()
    assert set(orig["notice_basis"]) == {"rights_notice"}
    assert set(df.loc[df["notice_form"] == "image_generic", "notice_text"]) == {GENERIC_NOTICE}
    assert (df["rights_year"] == 2020).all()
    assert read_meta(out)["params"]["notices"] == str(notices)
    report = json.loads(Path(summary["report"]).read_text())
    assert report["materials_without_original_notice"] == []
    assert report["materials_per_category"] == {"book": 100, "code": 50, "lyrics": 50,
                                                "news": 50}


def test_without_notices_no_original_rows_and_every_material_listed(tmp_path, capsys) -> None:
    root = _extended(tmp_path / "mat", strip_text_notices=True)
    summary = _run(capsys, "copyright-manifest", str(root), "--queries",
                   str(root / "query" / "seeds.json"), "--out", str(tmp_path / "m.parquet"))
    assert summary["rows"] == 30_000
    assert summary["rows_per_form"] == {"none": 10_000, "text_generic": 10_000,
                                        "text_original": 0, "image_generic": 10_000,
                                        "image_original": 0}
    report = json.loads(Path(summary["report"]).read_text())
    listed = report["materials_without_original_notice"]
    assert len(listed) == 250 and len({m["material_id"] for m in listed}) == 250


def test_a_copyright_line_in_the_text_is_an_original_notice(tmp_path, capsys) -> None:
    _need_fixture()
    summary = _run(capsys, "copyright-manifest", str(COPYGUARD), "--out",
                   str(tmp_path / "m.parquet"))  # own seeds: 12 queries
    n = NOTICES_IN_FIXTURE_TEXT
    assert summary["rows"] == 100 * 3 * 12 + n * 2 * 12
    assert summary["materials_without_original_notice"] == 100 - n
    df = pd.read_parquet(tmp_path / "m.parquet")
    orig = df[df["notice_form"] == "image_original"]
    assert orig["notice_text"].str.startswith("© 2025 Cable News Network").all()
    assert set(orig["category"]) == {"news"}


def _materials(**over) -> pd.DataFrame:
    row = {"doc_id": "book:1", "title": "A Book", "text": "One. Two.\n\nThree.",
           "category": "book", "rights_holder": "", "rights_year": None, "rights_notice": ""}
    row.update(over)
    return pd.DataFrame([row])


def test_original_notice_composed_only_from_holder_and_year() -> None:
    qs = own_seeds()
    df, report = build_manifest(_materials(rights_holder="Jane  Doe", rights_year=2019), qs)
    orig = df[df["notice_form"] == "text_original"]
    assert set(orig["notice_text"]) == {"© 2019 Jane Doe"}
    assert set(orig["notice_basis"]) == {"composed from rights_holder and rights_year"}
    assert report["materials_without_original_notice"] == []
    # a holder without a year is not a notice: no *_original rows, listed in the report
    df, report = build_manifest(_materials(rights_holder="Jane Doe"), qs)
    assert set(df["notice_form"]) == {"none", "text_generic", "image_generic"}
    assert [m["material_id"] for m in report["materials_without_original_notice"]] == ["book:1"]
    assert len(df) == 3 * 12


def test_request_ids_are_stable_and_tell_rows_apart() -> None:
    qs = own_seeds()
    a, _ = build_manifest(_materials(rights_notice="© 2001 X"), qs)
    b, _ = build_manifest(_materials(rights_notice="© 2001 X"), qs)
    c, _ = build_manifest(_materials(rights_notice="© 2002 X"), qs)
    assert list(a["request_id"]) == list(b["request_id"])
    assert a["request_id"].is_unique
    changed = a["request_id"] != c["request_id"]
    assert set(a.loc[changed, "notice_form"]) == {"text_original", "image_original"}


def test_prompt_for_prepends_a_text_notice_and_refuses_an_image_form_without_images() -> None:
    df, _ = build_manifest(_materials(rights_notice="© 2001 X"), own_seeds())
    row = df[(df["notice_form"] == "text_original") & (df["task"] == "translation")].iloc[0]
    msg = prompt_for(row).messages[0]
    assert msg["role"] == "user"
    assert msg["content"] == f"© 2001 X\n{row['query']}\n\nOne. Two.\n\nThree."
    none = df[df["notice_form"] == "none"].iloc[0]
    assert prompt_for(none).messages[0]["content"] == f"{none['query']}\n\nOne. Two.\n\nThree."
    img = df[df["notice_form"] == "image_original"].iloc[0]
    with pytest.raises(ManifestError, match="image_original.*needs the rendered images"):
        prompt_for(img)


def test_prompt_for_sends_images_as_file_urls(tmp_path: Path) -> None:
    from PIL import Image

    page = tmp_path / "p 1.png"
    Image.new("RGB", (8, 8), "white").save(page)
    df, _ = build_manifest(_materials(), own_seeds())
    row = df[df["notice_form"] == "text_generic"].iloc[0].to_dict()
    row["image_paths"] = [str(page)]
    prompt = prompt_for(row)
    content = prompt.messages[0]["content"]
    assert content[0] == {"type": "text", "text": f"{GENERIC_NOTICE}\n{row['query']}"}
    assert [p["image_url"]["url"] for p in image_parts(prompt)] == [page.resolve().as_uri()]
    assert "%20" in content[1]["image_url"]["url"]
    import hashlib
    assert image_digests(prompt) == (hashlib.sha256(page.read_bytes()).hexdigest(),)
    assert "One. Two." not in json.dumps(prompt.as_dict())  # the text travels as the image


def test_extraction_rows_carry_their_passage() -> None:
    df, _ = build_manifest(_materials(), own_seeds())
    ext = df[df["task"] == "extraction"]
    assert sorted(set(ext["passage"])) == ["paragraph:1", "sentence:1", "sentence:2"]
    assert set(df.loc[df["task"] != "extraction", "passage"]) == {""}


def test_benign_queries_add_rows_to_every_form(tmp_path, capsys) -> None:
    corpus = tmp_path / "corpus.parquet"
    from copyprobe.artifacts import CORPUS, write_table

    mats = _materials(rights_notice="© 2001 X")
    for c in CORPUS.columns:
        if c not in mats.columns:
            mats[c] = None
    mats["source"], mats["provenance"] = "local", "{}"
    write_table(mats, corpus, CORPUS, {})
    summary = _run(capsys, "copyright-manifest", str(corpus), "--benign",
                   "--out", str(tmp_path / "m.parquet"))
    assert summary["rows"] == 5 * (12 + 8)
    df = pd.read_parquet(tmp_path / "m.parquet")
    assert df.groupby("benign").size().to_dict() == {False: 60, True: 40}
    assert set(df.loc[df["benign"], "task"]) == {"summary", "author", "comment", "background"}


def test_bad_input_is_one_line_naming_it(tmp_path, capsys) -> None:
    seeds = tmp_path / "seeds.json"
    seeds.write_text(json.dumps({"repeat": ["a"]}))
    assert main(["copyright-manifest", str(tmp_path), "--queries", str(seeds),
                 "--out", str(tmp_path / "m.parquet")]) == 1
    err = capsys.readouterr().err
    assert str(seeds) in err and "no queries for task(s)" in err
    with pytest.raises(SystemExit, match="--overflow applies to the rendered images"):
        main(["copyright-manifest", str(tmp_path), "--overflow", "paginate",
              "--out", str(tmp_path / "m.parquet")])
    with pytest.raises(SystemExit, match="no such folder or corpus file"):
        main(["copyright-manifest", str(tmp_path / "nope"), "--out", str(tmp_path / "m.parquet")])
    # a material file that is not UTF-8 stops the run with its path
    (tmp_path / "mat" / "book_copyright").mkdir(parents=True)
    bad = tmp_path / "mat" / "book_copyright" / "bad.txt"
    bad.write_bytes(b"caf\xe9 \xff")
    assert main(["copyright-manifest", str(tmp_path / "mat"),
                 "--out", str(tmp_path / "m.parquet")]) == 1
    assert str(bad) in capsys.readouterr().err
    with pytest.raises(ManifestError, match="lacks column"):
        build_manifest(pd.DataFrame({"doc_id": ["x"]}), own_seeds())
    with pytest.raises(ValueError, match="notice form 'footer'"):
        build_manifest(_materials(), own_seeds(), forms=["footer"])


def test_images_one_rendering_per_material_and_image_form(tmp_path, capsys) -> None:
    import hashlib

    mats = pd.concat([_materials(doc_id="book:1", rights_notice="© 2001 Jane Doe"),
                      _materials(doc_id="book:2", text="Another text. Short.")],
                     ignore_index=True)
    images = tmp_path / "img"
    df, report = build_manifest(mats, own_seeds(), images_dir=images)
    assert len(df) == 12 * (5 + 3)
    # book:1 plain / generic footer / original footer, book:2 plain / generic footer
    files = sorted(images.glob("*.png"))
    assert len(files) == 5 and report["images"] == 5
    for row in df.itertuples():
        assert len(row.image_paths) >= 1 and len(row.image_paths) == len(row.image_sha256)
        for p, sha in zip(row.image_paths, row.image_sha256):
            assert hashlib.sha256(Path(p).read_bytes()).hexdigest() == sha
    one = df[df["material_id"] == "book:1"]
    first = one.groupby("notice_form")["image_sha256"].first().map(tuple)
    assert first["none"] == first["text_generic"] == first["text_original"]
    assert len({first["none"], first["image_generic"], first["image_original"]}) == 3
    settings = json.loads(df["render_settings"].iloc[0])
    assert len(settings["font_file"]["sha256"]) == 64 and settings["width"] > 0
    # the text goes as an image: an image-form prompt has the query alone as text
    img_row = one[one["notice_form"] == "image_original"].iloc[0]
    content = prompt_for(img_row).messages[0]["content"]
    assert content[0] == {"type": "text", "text": img_row["query"]}
    assert [p["type"] for p in content[1:]] == ["image_url"] * len(img_row["image_paths"])
    # built again: the same files and ids, nothing drawn again
    mtimes = {f: f.stat().st_mtime_ns for f in files}
    again, _ = build_manifest(mats, own_seeds(), images_dir=images)
    assert list(again["request_id"]) == list(df["request_id"])
    assert {f: f.stat().st_mtime_ns for f in sorted(images.glob("*.png"))} == mtimes
    # the request id follows the images: another width, other images, other ids
    from copyprobe.copyright.render import RenderSettings

    wide, _ = build_manifest(mats, own_seeds(), images_dir=tmp_path / "img2",
                             settings=RenderSettings(width=800))
    assert not set(wide["request_id"]) & set(df["request_id"])


def test_max_words_shows_an_excerpt_which_is_the_reference_and_says_truncated() -> None:
    from copyprobe.copyright.cost import _prompt_tokens

    qs = own_seeds()
    long = "One two three four five.\nSix seven eight nine ten."
    df, report = build_manifest(_materials(text=long), qs, max_words=7)
    assert set(df["text"]) == {"One two three four five.\nSix seven"}
    assert df["truncated"].all() and report["excerpted_materials"] == 1
    assert report["max_words"] == 7
    row = df[df["notice_form"] == "none"].iloc[0]
    assert prompt_for(row).messages[0]["content"].endswith("\n\nOne two three four five.\nSix seven")
    whole, whole_report = build_manifest(_materials(text=long), qs)
    assert not whole["truncated"].any() and whole_report["excerpted_materials"] == 0
    assert not set(df["request_id"]) & set(whole["request_id"])  # the excerpt is in the key
    # a material shorter than the excerpt is shown whole and not marked
    short, short_report = build_manifest(_materials(text=long), qs, max_words=10)
    assert list(short["request_id"]) == list(whole["request_id"])
    assert short_report["excerpted_materials"] == 0 and not short["truncated"].any()
    # the cost plan can price a text benchmark once its excerpt length is known
    spec = {"images": False, "forms": ["none", "text_generic"], "per_task": 1}
    assert _prompt_tokens(spec) is None
    assert _prompt_tokens({**spec, "max_words": 300}) > _prompt_tokens({**spec, "max_words": 30})
