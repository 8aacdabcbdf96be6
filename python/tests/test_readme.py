"""The README's walkthrough: every ``python`` block of python/README.md, run in order in one
namespace from the repository's root, so that the documentation cannot drift."""

from __future__ import annotations

import os
import re
import tempfile

from conftest import REPO


def test_readme_walkthrough_runs(capsys, tmp_path, monkeypatch):
    text = (REPO / "python" / "README.md").read_text()
    blocks = re.findall(r"```python\n(.*?)```", text, flags=re.S)
    assert len(blocks) >= 5
    # The walkthrough's `tempfile.mkdtemp` lands in this test's directory, removed by pytest.
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    here = os.getcwd()
    os.chdir(REPO)
    try:
        namespace: dict = {}
        for block in blocks:
            exec(compile(block, "python/README.md", "exec"), namespace)
    finally:
        os.chdir(here)
    out = capsys.readouterr().out
    assert "InsertResult(inserted_count=2192)" in out
