import json
import subprocess
import sys

import pandas as pd
import pytest

from copyprobe.cli import main


def run_cli(capsys, *argv):
    assert main(list(argv)) == 0
    return json.loads(capsys.readouterr().out)


def test_msr_stats_reproduces_table_1_gpt35(capsys):
    out = run_cli(capsys, "msr-stats", "--pre", "153,124,108,97,87,80,74,69",
                  "--post", "32,20,14,10,6,5,5,4")
    assert out["cliffs_delta"] == -1.0 and out["ks"] == 1.0
    assert round(out["kw_h"], 2) == 11.31 and round(out["kw_p"], 4) == 0.0008


def test_msr_stats_degenerate_is_reported_not_raised(capsys):
    out = run_cli(capsys, "msr-stats", "--pre", "0,0,0", "--post", "0,0,0")
    assert out["kw_h"] is None and out["verdict"] == "no document reached k words in either set"


def test_msr_stats_bad_number():
    with pytest.raises(SystemExit, match="--pre: expected comma-separated numbers"):
        main(["msr-stats", "--pre", "1,x", "--post", "1"])


def _authors_csv(tmp_path):
    doc1 = ("alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu nu xi omicron "
            "pi rho sigma tau upsilon")
    ref1 = "kappa lambda mu nu xi omicron pi rho sigma tau upsilon"
    gen1 = "and then kappa lambda mu nu xi omicron pi rho went away"  # 8 shared words
    doc2 = "one two three four five six seven eight nine ten"
    ref2 = "six seven eight nine ten"
    gen2 = "something else entirely"
    df = pd.DataFrame({"contents": [doc1, doc2, "x y"], "last_user_message": [ref1, ref2, "y"],
                       "gpt_response": [gen1, gen2, None]})
    p = tmp_path / "released.csv"
    df.to_csv(p, index=False)
    return p


def test_msr_score_paper_mode_on_authors_columns(capsys, tmp_path):
    p = _authors_csv(tmp_path)
    out_pq = tmp_path / "per_doc.parquet"
    out = run_cli(capsys, "msr-score", str(p), "--document-col", "contents",
                  "--reference-col", "last_user_message", "--generation-col", "gpt_response",
                  "--out", str(out_pq))
    # doc 1: LCS " kappa lambda mu nu xi omicron pi rho " -> 8 words, unique in the document:
    # counts for k = 5, 6, 7 (8 > k), not for k >= 8.
    assert out["documents"] == 2 and out["skipped_rows"] == 1
    assert out["f_k"] == [1, 1, 1, 0, 0, 0, 0, 0]
    per_doc = pd.read_parquet(out_pq)
    assert per_doc.loc[0, "lcs_words"] == 8 and bool(per_doc.loc[0, "unique"])


def test_msr_score_words_mode_and_failed_marker(capsys, tmp_path):
    p = _authors_csv(tmp_path)
    df = pd.read_csv(p)
    df.loc[1, "gpt_response"] = "FAIL"
    df.to_parquet(tmp_path / "r.parquet")
    out = run_cli(capsys, "msr-score", str(tmp_path / "r.parquet"), "--document-col",
                  "contents", "--reference-col", "last_user_message", "--generation-col",
                  "gpt_response", "--mode", "words", "--failed-marker", "FAIL")
    assert out["documents"] == 1 and out["skipped_rows"] == 2
    assert out["longest_max"] == 8
    assert out["f_k"] == [1, 1, 1, 1, 0, 0, 0, 0]  # word mode: longest >= k
    assert out["f_k_kgrams"][:4] == [4, 3, 2, 1]  # distinct shared k-grams of an 8-word run


def test_msr_score_missing_column_names_file(tmp_path):
    p = _authors_csv(tmp_path)
    with pytest.raises(SystemExit, match=r"released\.csv: missing column\(s\) \['answer'\]"):
        main(["msr-score", str(p), "--document-col", "contents", "--reference-col",
              "last_user_message", "--generation-col", "answer"])


def test_console_script_entry_point(tmp_path):
    proc = subprocess.run([sys.executable, "-m", "copyprobe.cli", "msr-stats", "--pre", "3,2,1",
                           "--post", "1,1,0"], capture_output=True, text=True, check=True)
    assert json.loads(proc.stdout)["cliffs_delta"] < 0
