import argparse
import json
import re
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from copyprobe.cli import build_parser, main


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


# ---- the installed command, run as a user runs it -------------------------------------------

ROOT = Path(__file__).resolve().parents[1]


def copyprobe(*argv: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    """Run the venv's ``copyprobe`` console script (``python -m copyprobe`` if there is none)."""
    script = Path(sys.executable).with_name("copyprobe")
    cmd = [str(script)] if script.is_file() else [sys.executable, "-m", "copyprobe"]
    return subprocess.run([*cmd, *argv], capture_output=True, text=True, cwd=cwd, timeout=120)


def test_console_script_runs_a_command():
    proc = copyprobe("msr-stats", "--pre", "3,2,1", "--post", "1,1,0")
    assert proc.returncode == 0, proc.stderr
    # 7 of the 9 (pre, post) pairs have pre > post, none pre < post
    assert json.loads(proc.stdout)["cliffs_delta"] == pytest.approx(-7 / 9)


def test_python_dash_m_copyprobe():
    proc = subprocess.run([sys.executable, "-m", "copyprobe", "validate-config",
                           str(ROOT / "config" / "config.yaml")],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["datasets"] == ["licences"]


def test_help_says_the_workflow_is_the_main_tool():
    proc = copyprobe("--help")
    assert proc.returncode == 0
    text = " ".join(proc.stdout.split())
    assert "The Snakemake workflow is the main tool" in text
    assert "snakemake --cores" in text
    for command in ("validate-config", "generate", "msr-score", "msr-stats"):
        assert command in text


def _subparsers(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    (action,) = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    return dict(action.choices)


def test_every_option_has_help_and_shows_its_default():
    parser = build_parser()
    subs = _subparsers(parser)
    assert set(subs) == {"validate-config", "collect", "cost", "generate", "msr-score", "msr-stats",
                         "copyright-manifest", "copyright-queries", "copyright-score",
                         "guard", "list", "extraction-map", "index", "membership-score",
                         "membership-train", "membership-canaries", "extract-book"}
    nested = {f"{group} {k}": v for group in ("guard", "index")
              for k, v in _subparsers(subs[group]).items()}
    assert set(nested) == {"guard classify-query", "guard serve", "index build", "index find",
                           "index verify"}
    for name, sub in [("copyprobe", parser), *subs.items(), *nested.items()]:
        text = " ".join(sub.format_help().split())
        for action in sub._actions:
            if isinstance(action, (argparse._HelpAction, argparse._SubParsersAction)):
                continue
            what = f"{name} {action.option_strings or action.dest}"
            assert action.help and action.help.strip(), f"{what}: no help"
            shown = action.default not in (None, False, [], argparse.SUPPRESS)
            if shown and action.option_strings:
                assert f"(default: {action.default})" in text, f"{what}: default not shown"


def test_subcommand_help_from_the_console_script_shows_defaults():
    proc = copyprobe("msr-score", "--help")
    assert proc.returncode == 0
    text = " ".join(proc.stdout.split())
    assert "(default: paper)" in text and "(default: 5)" in text and "(default: 12)" in text


@pytest.mark.parametrize("argv,message", [
    (["generate", "missing.parquet", "--model", "gemma3-270m", "--out", "o.parquet",
      "--config", "CONFIG"], r"copyprobe: missing\.parquet: no such file$"),
    (["validate-config", "nope.yaml"], r"copyprobe: nope\.yaml: cannot read config file"),
    (["msr-score", "nope.csv", "--document-col", "a", "--reference-col", "b",
      "--generation-col", "c"], r"copyprobe: nope\.csv: no such file"),
])
def test_errors_are_one_clean_line(tmp_path, argv, message):
    argv = [str(ROOT / "config" / "config.yaml") if a == "CONFIG" else a for a in argv]
    proc = copyprobe(*argv, cwd=tmp_path)
    assert proc.returncode == 1
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and re.match(message, lines[0]), proc.stderr


def test_generate_runs_a_variant_and_fails_loudly_on_an_unreachable_endpoint(tmp_path):
    """`copyprobe generate` takes the same slice as the workflow's job (the variant's decoding
    applied) and, like the job, exits non-zero when too many requests failed: here every request
    meets a port where nothing listens, so the message names the endpoint and the cause; the
    table of failed rows is still written."""
    import socket

    import yaml

    from copyprobe.artifacts import PROMPTS, provenance, write_table
    from copyprobe.prompt import Prompt

    sock = socket.socket()  # bound, never listening: connections are refused
    sock.bind(("127.0.0.1", 0))
    url = f"http://127.0.0.1:{sock.getsockname()[1]}/v1"
    try:
        config = {
            "cache_dir": str(tmp_path / "cache"),
            "sources": {"docs": {"kind": "local", "path": str(tmp_path)}},
            "datasets": {"mine": ["docs"]},
            "variants": {"t07": {"decoding": {"temperature": 0.7}}},
            "models": {"local-server": {"backend": "openai", "model_id": "m", "base_url": url,
                                        "api_key_optional": True, "cutoff": "2024-01-01",
                                        "decoding": {"temperature": 0.1, "max_tokens": 8}}},
        }
        (tmp_path / "config.yaml").write_text(yaml.safe_dump(config))
        p = Prompt("chat", messages=({"role": "user", "content": "first part"},))
        prompts = pd.DataFrame([{
            "request_id": f"r{i}", "model": "local-server", "source": "docs", "doc_id": f"d{i}",
            "split": "pre", "status": "ready", "reason": "", "prompt_format": "chat",
            "prompt": p.to_json(), "reference": f"held out {i}", "document": "first part",
            "n": 2, "num_words": 1000} for i in range(3)], columns=PROMPTS.columns)
        write_table(prompts, tmp_path / "prompts.parquet", PROMPTS, provenance("test", {}))
        base = ["generate", str(tmp_path / "prompts.parquet"), "--model", "local-server",
                "--config", str(tmp_path / "config.yaml"), "--out", str(tmp_path / "gen.parquet")]

        unknown = copyprobe(*base, "--variant", "t99", cwd=tmp_path)
        assert unknown.returncode == 1
        assert unknown.stderr.strip() == (f"copyprobe: variant 't99' is not in "
                                          f"{tmp_path / 'config.yaml'}; known: main, t07")

        proc = copyprobe(*base, "--variant", "t07", cwd=tmp_path)
    finally:
        sock.close()
    assert proc.returncode == 1
    assert "1 of 1 requests failed" in proc.stderr  # three rows, one distinct request
    assert url in proc.stderr and "connection refused" in proc.stderr
    gen = pd.read_parquet(tmp_path / "gen.parquet")
    assert list(gen["status"]) == ["failed"] * 3
    assert {json.loads(d)["temperature"] for d in gen["decoding"]} == {0.7}
