"""config/README.md is the table of config keys generated from the schema, and stays so."""

from __future__ import annotations

from pathlib import Path

from copyprobe import config_docs
from copyprobe.config import load_schema

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "config" / "README.md"


def _leaf_paths(node, path=""):
    """Every dotted key path under ``properties`` / ``additionalProperties`` of the schema."""
    out = []
    for key, sub in (node.get("properties") or {}).items():
        sub_path = f"{path}.{key}" if path else key
        out.append(sub_path)
        if isinstance(sub, dict):
            out += _leaf_paths(sub, sub_path)
    extra = node.get("additionalProperties")
    if isinstance(extra, dict):
        sub_path = f"{path}.{config_docs.NAME}" if path else config_docs.NAME
        out.append(sub_path)
        out += _leaf_paths(extra, sub_path)
    return out


def test_config_readme_is_generated_from_the_schema():
    expected = config_docs.render()
    current = README.read_text(encoding="utf-8") if README.exists() else ""
    assert current == expected, (
        f"config/README.md is out of date with the config schema; regenerate it with "
        f"`{config_docs.REGENERATE}` (run from the repository root) and commit the result")


def test_every_schema_key_has_a_row():
    text = config_docs.render()
    for path in _leaf_paths(load_schema()):
        assert f"| `{path}` |" in text, path


def test_types_defaults_and_required_are_read_from_the_schema():
    rows = {r.path: r for _, _, rs in config_docs.sections(load_schema()) for r in rs}
    assert rows["msr.n"].type == "integer, >= 2"
    assert rows["msr.n"].default == "`6`"
    assert rows["models"].default == "required"
    assert rows["models.<name>.backend"].default == "required"
    assert rows["models.<name>.studies"].type.startswith(
        "list of (one of `copyright`, `extraction`, `membership`, `msr`)")
    assert rows["variants.<name>.matching.k_max"].type == "(integer, >= 1) or `auto`"
    # a oneOf told apart by a constant: the key says when it applies
    assert rows["experiments.<name>.split"].condition == "kind: comparison"
    # a $ref is followed (experiments' a/b point at a shared setting block)
    assert rows["experiments.<name>.a.variant"].default == "required"


def test_a_toy_schema_is_walked_generically():
    schema = {
        "type": "object",
        "required": ["things"],
        "properties": {
            "things": {
                "type": "object",
                "description": "name -> thing",
                "additionalProperties": {"$ref": "#/$defs/thing"},
            },
            "mode": {"oneOf": [{"type": "integer", "minimum": 1}, {"const": "auto"}],
                     "default": "auto", "description": "a | pipe and <angle> text"},
        },
        "$defs": {
            "thing": {"type": "object", "properties": {
                "size": {"type": "integer", "default": 3, "description": "how big"},
                "tags": {"type": "array", "items": {"type": "object", "properties": {
                    "label": {"type": "string"}}}},
            }},
            "kinds": {"plain": {"type": "object", "properties": {
                "colour": {"enum": ["red", "blue"], "description": "which"}}}},
        },
    }
    text = config_docs.render(schema)
    assert "| `things` | map of `<name>` to object | required | name -&gt; thing |" in text
    assert "| `things.<name>.size` | integer | `3` | how big |" in text
    assert "| `things.<name>.tags[].label` | string | - |  |" in text
    assert "| `mode` | (integer, >= 1) or `auto` | `auto` | a \\| pipe and &lt;angle&gt; text |" \
        in text
    # $defs reached through a $ref are documented where used, the others get a section
    assert "## `$defs.thing`" not in text
    assert "## `$defs.kinds.plain`" in text
    assert "| `colour` | one of `red`, `blue` | - | which |" in text
    assert config_docs.missing_descriptions(schema) == [
        "things.<name>", "things.<name>.tags", "things.<name>.tags[].label"]


def test_check_mode_names_the_command(tmp_path, capsys):
    stale = tmp_path / "README.md"
    stale.write_text("old\n", encoding="utf-8")
    assert config_docs.main(["--check", str(stale)]) == 1
    assert config_docs.REGENERATE in capsys.readouterr().err
    assert config_docs.main(["--write", str(stale)]) == 0
    assert config_docs.main(["--check", str(stale)]) == 0
