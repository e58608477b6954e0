"""The course in a real browser: JupyterLab + headless Chromium, driven by Playwright.

What a student does on day one, end to end: open a notebook in JupyterLab, run all cells,
see the loop nest drawn (an SVG from graphviz) and the tile-size slider (an ipywidgets
``IntSlider``), move the slider, and see the printed loop nest change from ``range(8)`` to
``range(16)``. Everything is real: the Jupyter server, the kernel, the browser, the widget
comm round trip. Nothing touches the network.

The test starts its own server on 127.0.0.1 (a free port, a random token, temporary root,
runtime, config, data and settings directories), so two copies can run side by side under
pytest-xdist. It skips, with the reason, where Chromium or the ``playwright`` package is
missing (``make test`` installs both on Debian); it never runs ``playwright install``.
"""

from __future__ import annotations

import json
import os
import re
import secrets
import shutil
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

pytestmark = [pytest.mark.browser, pytest.mark.timeout(300)]

HERE = Path(__file__).resolve().parent
FIXTURE = HERE / "fixture_tiling.ipynb"
COURSE_NOTEBOOK = HERE.parents[1] / "notebooks" / "02_schedule_primitives.ipynb"

CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]

# Generous: JupyterLab's first start takes 20-40 s on a 2-core machine.
SERVER_START_S = 90.0
UI_TIMEOUT_MS = 60_000
KERNEL_RUN_MS = 90_000
WIDGET_MS = 30_000

# JupyterLab user settings for the test's private settings dir: no news/update toasts
# over the notebook, and every cell in the DOM (no virtual scrolling) so selectors see them.
LAB_SETTINGS = {
    "@jupyterlab/apputils-extension/notification.jupyterlab-settings": {
        "fetchNews": "false",
        "checkForUpdates": False,
    },
    "@jupyterlab/notebook-extension/tracker.jupyterlab-settings": {"windowingMode": "none"},
}


def _find_chromium() -> str | None:
    for candidate in (
        "/usr/bin/chromium",
        shutil.which("chromium"),
        shutil.which("chromium-browser"),
    ):
        if candidate and os.access(candidate, os.X_OK):
            return candidate
    return None


def _require(tool: str, why: str) -> None:
    if shutil.which(tool) is None:
        pytest.skip(why)


@dataclass
class Lab:
    """A running JupyterLab server of our own."""

    url: str
    token: str
    process: subprocess.Popen[bytes]
    log: Path

    def notebook_url(self, name: str) -> str:
        return f"{self.url}/lab/tree/{name}?token={self.token}&reset"

    def log_tail(self, n: int = 40) -> str:
        try:
            return "\n".join(self.log.read_text(errors="replace").splitlines()[-n:])
        except OSError:
            return "(no server log)"


class LabDidNotStart(RuntimeError):
    """The server process died or never answered /api/status."""


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _write_settings(settings_dir: Path) -> None:
    for rel, value in LAB_SETTINGS.items():
        path = settings_dir / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(value))


def _copy_without_outputs(src: Path, dst: Path) -> None:
    """Copy a notebook with its outputs cleared, so everything the browser shows was made now."""
    nb = json.loads(src.read_text())
    for cell in nb["cells"]:
        if cell["cell_type"] == "code":
            cell["outputs"], cell["execution_count"] = [], None
    nb.get("metadata", {}).pop("widgets", None)
    dst.write_text(json.dumps(nb, indent=1))


@contextmanager
def running_lab(base: Path, notebook: Path) -> Iterator[Lab]:
    """Start ``jupyter lab`` on a free port with everything under ``base``; stop it after."""
    dirs = {name: base / name for name in ("root", "runtime", "config", "data", "ipython", "ws")}
    for d in dirs.values():
        d.mkdir(parents=True, exist_ok=True)
    settings = base / "settings"
    _write_settings(settings)
    _copy_without_outputs(notebook, dirs["root"] / notebook.name)

    port, token = _free_port(), secrets.token_hex(16)
    env = dict(os.environ)
    env.update(
        JUPYTER_CONFIG_DIR=str(dirs["config"]),
        JUPYTER_RUNTIME_DIR=str(dirs["runtime"]),
        JUPYTER_DATA_DIR=str(dirs["data"]),
        IPYTHONDIR=str(dirs["ipython"]),
        JUPYTER_PLATFORM_DIRS="0",
        PYTHONUNBUFFERED="1",
    )
    cmd = [
        sys.executable, "-m", "jupyterlab",
        "--no-browser",
        "--ServerApp.ip=127.0.0.1",
        f"--ServerApp.port={port}",
        "--ServerApp.port_retries=0",
        f"--IdentityProvider.token={token}",
        f"--ServerApp.root_dir={dirs['root']}",
        f"--LabApp.user_settings_dir={settings}",
        f"--LabApp.workspaces_dir={dirs['ws']}",
        "--LabApp.news_url=",
    ]  # fmt: skip
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        cmd.append("--allow-root")
    log = base / "jupyterlab.log"
    with log.open("wb") as log_file:
        process = subprocess.Popen(
            cmd, cwd=dirs["root"], env=env, stdout=log_file, stderr=subprocess.STDOUT
        )
    lab = Lab(url=f"http://127.0.0.1:{port}", token=token, process=process, log=log)
    try:
        _wait_for_server(lab)
        yield lab
    finally:
        _stop(process)


def _wait_for_server(lab: Lab) -> None:
    deadline = time.monotonic() + SERVER_START_S
    status = f"{lab.url}/api/status?token={lab.token}"
    while time.monotonic() < deadline:
        if lab.process.poll() is not None:
            raise LabDidNotStart(
                f"jupyter lab exited with {lab.process.returncode}:\n{lab.log_tail()}"
            )
        try:
            with urllib.request.urlopen(status, timeout=2) as reply:
                if reply.status == 200:
                    return
        except (urllib.error.URLError, OSError):
            pass
        time.sleep(0.5)
    raise LabDidNotStart(f"jupyter lab did not answer in {SERVER_START_S:.0f} s:\n{lab.log_tail()}")


def _stop(process: subprocess.Popen[bytes]) -> None:
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=5)


def _run_all_cells(page: Any) -> None:
    """Run > Run All Cells, through the menu bar as a student would."""
    page.locator(".lm-MenuBar-itemLabel", has_text="Run").first.click()
    page.locator(".lm-Menu-item[data-command='runmenu:run-all']").click()


def _wait_kernel_idle(page: Any, timeout_ms: int) -> None:
    """Wait until the status bar says "Python 3 (ipykernel) | Idle".

    (The toolbar's execution indicator says "idle" before any kernel exists, so it cannot
    tell us that the kernel has started; the status bar names the kernel and its state.)"""
    kernel_status = page.locator(".jp-StatusBar-TextItem[title^='Change kernel']")
    kernel_status.filter(has_text=re.compile(r"ipykernel\) \| Idle$")).first.wait_for(
        state="visible", timeout=timeout_ms
    )


def _open_and_run_all(page: Any, lab: Lab, name: str) -> Any:
    """Open notebook ``name``, wait for its kernel, Run All Cells; return the notebook locator."""
    page.goto(lab.notebook_url(name), timeout=UI_TIMEOUT_MS)
    notebook = page.locator(".jp-NotebookPanel:not(.lm-mod-hidden) .jp-Notebook")
    notebook.wait_for(state="visible", timeout=UI_TIMEOUT_MS)
    _wait_kernel_idle(page, UI_TIMEOUT_MS)  # the kernel is up: running now loses nothing
    _run_all_cells(page)
    return notebook


def _drive_fixture(page: Any, lab: Lab) -> dict[str, str]:
    """The fixture: a graphviz loop nest, an IntSlider (8) printing code into an Output."""
    notebook = _open_and_run_all(page, lab, FIXTURE.name)
    # The loop nest, drawn by graphviz, rendered by JupyterLab as an SVG image.
    drawing = notebook.locator(".jp-RenderedSVG img, .jp-RenderedSVG svg").first
    drawing.wait_for(state="visible", timeout=KERNEL_RUN_MS)
    # The tile-size slider and the code it prints.
    handle = notebook.locator(".widget-slider .noUi-handle").first
    handle.wait_for(state="visible", timeout=KERNEL_RUN_MS)
    code = notebook.locator(".widget-output").first
    code.get_by_text("tile = 8").wait_for(timeout=WIDGET_MS)
    _wait_kernel_idle(page, KERNEL_RUN_MS)
    readout = notebook.locator(".widget-readout").first
    seen = {
        "drawing": drawing.get_attribute("src") or drawing.inner_html(),
        "code_before": code.inner_text(),
        "readout_before": readout.inner_text(),
    }
    handle.focus()
    handle.press("ArrowRight")  # one step: 8 -> 16
    code.get_by_text("tile = 16").wait_for(timeout=WIDGET_MS)
    seen["code_after"] = code.inner_text()
    seen["readout_after"] = readout.inner_text()
    return seen


def _drive_course_explorer(page: Any, lab: Lab) -> dict[str, str]:
    """Notebook 02: ``viz.matmul_explorer`` (tile_i/tile_j sliders 32, 16, ... and the code).

    Relies on the explorer's documented classes: ``.mlc-explorer``, ``.mlc-control-<knob>``,
    ``.mlc-status`` and ``.mlc-code`` (see mlc/viz/widgets.py)."""
    notebook = _open_and_run_all(page, lab, COURSE_NOTEBOOK.name)
    explorer = notebook.locator(".mlc-explorer").first
    explorer.wait_for(state="visible", timeout=KERNEL_RUN_MS)
    handle = explorer.locator(".mlc-control-tile_i .noUi-handle").first
    handle.wait_for(state="visible", timeout=WIDGET_MS)
    status = explorer.locator(".mlc-status").first
    status.get_by_text("tile_i=32").wait_for(timeout=WIDGET_MS)
    _wait_kernel_idle(page, KERNEL_RUN_MS)
    code = explorer.locator(".mlc-code").first
    readout = explorer.locator(".mlc-control-tile_i .widget-readout").first
    seen = {
        "code_before": code.inner_text(),
        "readout_before": readout.inner_text(),
    }
    handle.focus()
    handle.press("ArrowRight")  # one step along the choices: 32 -> 16
    status.get_by_text("tile_i=16").wait_for(timeout=WIDGET_MS)
    seen["code_after"] = code.inner_text()
    seen["readout_after"] = readout.inner_text()
    seen["status_after"] = status.inner_text()
    return seen


Drive = Callable[[Any, Lab], dict[str, str]]


def _one_attempt(
    playwright: Any, chromium: str, base: Path, notebook: Path, drive: Drive
) -> dict[str, str]:
    with running_lab(base, notebook) as lab:
        browser = playwright.chromium.launch(
            executable_path=chromium, headless=True, args=CHROMIUM_ARGS, timeout=UI_TIMEOUT_MS
        )
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 2400})
            try:
                return drive(page, lab)
            except Exception:
                shot = base / "failure.png"
                try:
                    page.screenshot(path=str(shot), full_page=True)
                except Exception as err:  # keep the original failure, not the screenshot's
                    print(f"no screenshot: {err}")
                print(f"screenshot: {shot}\nserver log:\n{lab.log_tail()}")
                raise
        finally:
            browser.close()


def _in_browser(tmp_path: Path, notebook: Path, drive: Drive) -> dict[str, str]:
    """Skip where the browser parts are missing; else drive ``notebook``, one retry if cold."""
    chromium = _find_chromium()
    if chromium is None:
        pytest.skip("Chromium is not installed (Debian: apt-get install chromium; make test does)")
    try:
        from playwright import sync_api
    except ImportError as err:
        pytest.skip(f"the playwright package is missing (pip install -e '.[dev]'): {err}")
    try:
        import jupyterlab  # noqa: F401
    except ImportError as err:
        pytest.skip(f"JupyterLab is missing (pip install -e '.[notebook]'): {err}")

    with sync_api.sync_playwright() as playwright:
        try:
            return _one_attempt(playwright, chromium, tmp_path / "first", notebook, drive)
        except (sync_api.Error, LabDidNotStart) as cold_start:
            # A cold JupyterLab (first build of its caches, a slow neighbour) gets one retry.
            print(f"first attempt failed, retrying once: {cold_start}")
            return _one_attempt(playwright, chromium, tmp_path / "second", notebook, drive)


def test_tile_slider_changes_printed_code_in_jupyterlab(tmp_path: Path) -> None:
    _require("dot", "graphviz's `dot` is missing, so the loop nest cannot be drawn (make setup)")
    seen = _in_browser(tmp_path, FIXTURE, _drive_fixture)

    assert "loop_i_0" in seen["drawing"] or "for i_0" in seen["drawing"], seen["drawing"][:300]
    assert seen["readout_before"].strip() == "8"
    assert "range(8)" in seen["code_before"] and "range(16)" not in seen["code_before"]
    assert seen["readout_after"].strip() == "16"
    assert "range(16)" in seen["code_after"] and "range(4)" in seen["code_after"]
    assert "i_0 * 16 + i_1" in seen["code_after"]


def test_course_notebook_tile_explorer_in_jupyterlab(tmp_path: Path) -> None:
    if not COURSE_NOTEBOOK.exists() or "matmul_explorer" not in COURSE_NOTEBOOK.read_text():
        pytest.skip(f"{COURSE_NOTEBOOK.name} has no viz.matmul_explorer cell")
    seen = _in_browser(tmp_path, COURSE_NOTEBOOK, _drive_course_explorer)

    assert seen["readout_before"].strip() == "32"
    assert "range(32)" in seen["code_before"] and "range(16)" not in seen["code_before"]
    assert seen["readout_after"].strip() == "16"
    assert "i_0 * 16 + i_1" in seen["code_after"], seen["code_after"]
    assert "range(16)" in seen["code_after"] and "range(4)" in seen["code_after"]
    assert "this choice does not work" not in seen["status_after"]
