"""``robot-rl report RUN``: a one-page HTML summary that needs nothing outside the file; rendered by a real
headless browser (Chromium from the system packages) with every network request refused."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest
from test_cli import TINY

from robot_rl.cli import main


@pytest.fixture(scope="module")
def run(tmp_path_factory) -> Path:
    run = tmp_path_factory.mktemp("report") / "run"
    assert main(["train", "--task", "reach", "--total-env-steps", "200", "--eval-every", "100", "--video", "on",
                 "--scripted-demos", "1", "--run-dir", str(run), *TINY]) == 0
    return run


def test_the_report_holds_curves_evaluations_stills_config_and_git_state_offline(run: Path, capsys) -> None:
    assert main(["report", str(run)]) == 0
    page = (run / "report.html").read_text()
    assert f"report: {run / 'report.html'}" in capsys.readouterr().out
    assert "<h1>run: reach (state)</h1>" in page
    assert len(re.findall(r"<tr><td>", page)) == 2  # the evaluations at 100 and 200 steps
    assert page.count('src="data:image/png;base64,') >= 1 + 2  # the curves and the video stills
    assert "&quot;task&quot;: &quot;reach&quot;" in page and "commit" in page
    assert not re.search(r"""(src|href)=["'](?!data:)""", page) and "http" not in page.replace("https://", "")
    assert "<script" not in page


def test_a_folder_that_is_not_a_run_is_refused(tmp_path: Path, capsys) -> None:
    assert main(["report", str(tmp_path)]) == 2
    assert "is not a run folder" in capsys.readouterr().err


def test_a_headless_browser_renders_the_page_with_the_network_refused(run: Path, tmp_path: Path) -> None:
    browser = shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")
    if browser is None:
        pytest.skip("no Chromium on this machine (scripts/test.sh installs it from the system packages as root)")
    page = run / "report.html"
    if not page.exists():
        main(["report", str(run)])
    flags = [browser, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
             f"--user-data-dir={tmp_path / 'profile'}", "--host-resolver-rules=MAP * ~NOTFOUND",
             "--proxy-server=127.0.0.1:9", "--window-size=1000,1400"]
    dom = subprocess.run([*flags, "--dump-dom", page.as_uri()], capture_output=True, text=True, timeout=120)
    assert dom.returncode == 0, dom.stderr[-2000:]
    assert "Learning curves" in dom.stdout and "Evaluations" in dom.stdout and "Git state" in dom.stdout
    shot = tmp_path / "report.png"
    done = subprocess.run([*flags, f"--screenshot={shot}", page.as_uri()], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0 and shot.exists(), done.stderr[-2000:]
    import imageio.v2 as imageio

    pixels = np.asarray(imageio.imread(shot))[..., :3]
    assert pixels.shape[:2] == (1400, 1000)
    assert (pixels.std(axis=(0, 1)) > 20).all()  # text, table and figures drawn, not a blank page
    blue = (pixels[..., 2] > 150) & (pixels[..., 0] < 100)  # the curve's line (matplotlib's C0)
    assert blue.sum() > 100


def test_evaluations_and_corrected_training_episodes_are_drawn_as_panels(tmp_path: Path) -> None:
    """Each evaluation's first episode becomes a panel in the run folder and TensorBoard; with the scripted
    corrector taking over, so does a training episode with an intervention (shaded where it acted)."""
    from robot_rl.training.panels import spans

    run = tmp_path / "run"
    assert main(["train", "--task", "reach", "--obs", "pixels", "--image-size", "64", "--total-env-steps", "120",
                 "--eval-every", "100", "--eval-episodes", "1", "--teleop", "scripted", "--scripted-demos", "1",
                 "--run-dir", str(run), *TINY]) == 0
    names = sorted(p.name for p in (run / "panels").iterdir())
    assert "eval_0000100.png" in names and any(n.startswith("train_") for n in names)
    import imageio.v2 as imageio

    image = np.asarray(imageio.imread(run / "panels" / "eval_0000100.png"))
    assert image.shape[0] > 400 and image[..., :3].std() > 20
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    events = EventAccumulator(str(run / "tb"), size_guidance={"images": 0})
    events.Reload()
    assert {"eval/panel", "train/panel", "eval/video"} <= set(events.Tags()["images"])
    assert events.Images("eval/video")[0].encoded_image_string[:6] == b"GIF89a"  # TensorBoard plays it
    assert spans([False, True, True, False, True]) == [(1, 3), (4, 5)]
    assert main(["report", str(run)]) == 0
    assert "What the policy saw" in (run / "report.html").read_text()
