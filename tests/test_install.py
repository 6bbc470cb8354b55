"""Installing loopwright as a user would, outside the checkout: `make dist`'s wheel and sdist
build, the wheel installs into a fresh virtual environment from the package registries, and the
installed `loopwright` on that environment's PATH answers `--version` and runs the offline demo."""

from __future__ import annotations

import os
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def dist(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("dist")
    done = subprocess.run([sys.executable, "-m", "build", "--outdir", str(out), str(ROOT)],
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return out


def test_the_sdist_carries_the_licence_and_the_package_data(dist: Path) -> None:
    [sdist] = dist.glob("loopwright-*.tar.gz")
    with tarfile.open(sdist) as tar:
        names = {n.split("/", 1)[1] for n in tar.getnames() if "/" in n}
    assert "LICENSE" in names
    assert "src/loopwright/sandbox/launch.py" in names
    assert "pyproject.toml" in names


def test_the_wheel_declares_its_metadata(dist: Path) -> None:
    [wheel] = dist.glob("loopwright-*.whl")
    with zipfile.ZipFile(wheel) as z:
        meta_name = next(n for n in z.namelist() if n.endswith(".dist-info/METADATA"))
        meta = z.read(meta_name).decode()
        names = set(z.namelist())
    assert "License-Expression: Apache-2.0" in meta
    assert "Requires-Python: >=3.11" in meta
    assert "Classifier: Typing :: Typed" in meta
    assert "Provides-Extra: serve" in meta and "Provides-Extra: durable" in meta
    assert any(n.endswith(".dist-info/licenses/LICENSE") for n in names)
    for data in ("loopwright/py.typed", "loopwright/policy/models.json", "loopwright/tools/builtin.json"):
        assert data in names, data
    assert any(n.startswith("loopwright/web/static/") for n in names)


def test_the_installed_wheel_runs_the_offline_demo(dist: Path, tmp_path: Path) -> None:
    [wheel] = dist.glob("loopwright-*.whl")
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=300)
    pip = subprocess.run([str(venv / "bin" / "python"), "-m", "pip", "install", "--quiet", str(wheel)],
                         capture_output=True, text=True, timeout=600)
    assert pip.returncode == 0, pip.stderr[-3000:]
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LOOPWRIGHT_", "ANTHROPIC_", "PYTHON"))}
    env.update(HOME=str(tmp_path / "home"), PATH=f"{venv / 'bin'}:{env.get('PATH', '/usr/bin:/bin')}")
    (tmp_path / "home").mkdir()
    version = subprocess.run(["loopwright", "--version"], capture_output=True, text=True, env=env,
                             cwd=tmp_path, timeout=60)
    assert version.returncode == 0, version.stderr
    assert version.stdout.strip().startswith("loopwright ") or "0." in version.stdout
    demo = subprocess.run(["loopwright", "demo"], capture_output=True, text=True, env=env, cwd=tmp_path,
                          timeout=300)
    assert demo.returncode == 0, demo.stdout[-3000:] + demo.stderr[-3000:]
    assert "independent check (the demo runs the tests itself): PASS" in demo.stdout
    # the installed package, not the checkout, answered
    where = subprocess.run([str(venv / "bin" / "python"), "-c", "import loopwright; print(loopwright.__file__)"],
                           capture_output=True, text=True, env=env, cwd=tmp_path, timeout=60)
    assert str(venv) in where.stdout, where.stdout
