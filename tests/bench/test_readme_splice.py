from __future__ import annotations

from pathlib import Path

import pytest

from integrity_gym.report.markdown import README_END, README_START, splice_readme


def test_the_results_block_is_replaced_and_the_rest_kept(tmp_path: Path) -> None:
    readme = tmp_path / "README.md"
    readme.write_text(f"# title\n\n{README_START}\nold table\n{README_END}\n\n## After\n")
    splice_readme(readme, "| new | table |\n")
    text = readme.read_text()
    assert "old table" not in text and "| new | table |" in text
    assert text.startswith("# title\n") and text.endswith(f"{README_END}\n\n## After\n")
    splice_readme(readme, "second\n")  # idempotent: the markers survive
    assert "| new | table |" not in readme.read_text() and "second" in readme.read_text()


def test_a_readme_without_the_block_is_a_clear_error(tmp_path: Path) -> None:
    readme = tmp_path / "README.md"
    readme.write_text("# no markers\n")
    with pytest.raises(ValueError, match="results:start"):
        splice_readme(readme, "x")
