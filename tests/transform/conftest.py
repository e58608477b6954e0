import pytest


@pytest.fixture(autouse=True)
def _verify_between_passes(monkeypatch):
    """Every mlc.lower run in these tests checks the IR after each pass (MLC_DEBUG=1)."""
    monkeypatch.setenv("MLC_DEBUG", "1")
    monkeypatch.delenv("MLC_TRACE", raising=False)
