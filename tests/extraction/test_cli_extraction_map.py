"""``copyprobe extraction-map``'s argument and input handling: every bad input is one line
that names the file (and the config key). The scoring itself runs through the engines' tests
and the workflow's."""

from __future__ import annotations

import pytest

from copyprobe.cli import main
from copyprobe.extraction.cli import fraction_table, model_entry


def run(capsys, *args: str) -> tuple[int, str]:
    """(exit status, its one line): a SystemExit's message, or what main printed."""
    try:
        code = main(["extraction-map", *args])
    except SystemExit as exc:
        return 1, str(exc.code)
    return code, capsys.readouterr().err.strip()


@pytest.fixture()
def text(tmp_path):
    p = tmp_path / "book.txt"
    p.write_text("It was a bright cold day in April. " * 40, encoding="utf-8")
    return p


def test_a_model_that_cannot_score_names_the_file_the_key_and_the_alternatives(
        tmp_path, text, capsys):
    m = tmp_path / "api.yaml"
    m.write_text("my-api:\n  backend: openai\n  model_id: gpt-x\n  api_key_env: X_KEY\n")
    code, err = run(capsys, "--model-config", str(m), str(text),
                    "--out", str(tmp_path / "o.parquet"))
    assert code == 1
    assert err.startswith(f"copyprobe: --model-config {m}: config key "
                          "'models.my-api.backend'")
    assert "method: monte_carlo" in err and "llamacpp" in err


@pytest.mark.parametrize(("content", "match"), [
    (None, "cannot read it"),
    ("backend: [unclosed", "not YAML"),
    ("model_id: x\n", "expected a model entry with a 'backend'"),
    ("backend: llamacpp\nmodel_file: {path: /nowhere/m.gguf}\n", "model_file"),
    ("backend: llamacpp\nmodel_file: {path: m.gguf}\nmethod: often\n", "'models.model.method'"),
])
def test_bad_model_configs(tmp_path, text, capsys, content, match):
    m = tmp_path / "m.yaml"
    if content is not None:
        m.write_text(content)
    code, err = run(capsys, "--model-config", str(m), str(text), "--out",
                    str(tmp_path / "o.parquet"))
    assert code == 1 and str(m) in err and match in err, err


def test_a_missing_text_file_is_named(tmp_path, capsys):
    code, err = run(capsys, "--model-config", str(tmp_path / "m.yaml"),
                    str(tmp_path / "none.txt"), "--out", str(tmp_path / "o.parquet"))
    assert code == 1 and "none.txt: cannot read it" in err


def test_window_flags_are_validated_as_config_keys(tmp_path, text, capsys):
    m = tmp_path / "m.yaml"
    m.write_text("backend: openai\nmodel_id: x\nmethod: monte_carlo\n")
    code, err = run(capsys, "--model-config", str(m), str(text), "--out",
                    str(tmp_path / "o.parquet"), "--stride", "0")
    assert code == 1 and "'extraction.windows.stride'" in err


def test_a_named_entry_and_the_printed_table(tmp_path):
    import pandas as pd

    m = tmp_path / "m.yaml"
    m.write_text("gemma:\n  backend: llamacpp\n  n_ctx: 512\n")
    assert model_entry(str(m)) == ("gemma", {"backend": "llamacpp", "n_ctx": 512})
    curve = pd.DataFrame({"n": [1, 1, 10, 10], "p": [0.1, 0.5, 0.1, 0.5],
                          "fraction": [0.25, 0.0, 0.5, float("nan")]})
    lines = fraction_table(curve, [1, 10], [0.1, 0.5]).splitlines()
    assert lines[1].split() == ["n", "\\", "p", "0.1", "0.5"]
    assert lines[2].split() == ["1", "0.2500", "0.0000"]
    assert lines[3].split() == ["10", "0.5000", "n/a"]
