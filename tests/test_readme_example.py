"""The README's Python example runs as written."""

from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path

import pytest

README = Path(__file__).resolve().parents[1] / "README.md"


def readme_example() -> str:
    found = re.search(r"<!-- readme-example -->\n```python\n(.*?)```", README.read_text(), re.S)
    assert found is not None, "README lost its marked Python example"
    return found.group(1)


@pytest.mark.slow
def test_the_readme_python_example_runs_as_written() -> None:
    scope: dict[str, object] = {"__name__": "readme_example"}
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        exec(compile(readme_example(), str(README), "exec"), scope)  # noqa: S102
    result = scope["result"]
    assert getattr(result, "rounds") == 3
    lines = printed.getvalue().splitlines()
    assert len(lines) == 3 and lines[1].startswith("fixed32 ") and lines[2].startswith("dynamic ")
