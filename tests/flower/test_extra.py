import sys

import pytest

from fedfit.errors import ConfigError


def test_without_flower_a_flower_name_fails_with_one_line_naming_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    import fedfit.flower

    monkeypatch.setitem(sys.modules, "flwr", None)  # what an install without the extra looks like

    with pytest.raises(ConfigError, match=r"pip install fedfit\[flower\]") as caught:
        fedfit.flower.FedfitStrategy  # noqa: B018

    assert "\n" not in str(caught.value)


def test_importing_the_package_does_not_need_flower(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "flwr", None)
    monkeypatch.delitem(sys.modules, "fedfit.flower", raising=False)

    import fedfit.flower

    assert "FedfitStrategy" in fedfit.flower.__all__
