"""The repository as a Space: front matter, pins, and the README's test command = CI's."""
import re

import gradio

from tests.conftest import ROOT


def front_matter() -> dict[str, str]:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    block = text.split("---\n")[1]
    return dict(line.split(": ", 1) for line in block.strip().splitlines())


def test_front_matter_pins_the_installed_gradio():
    meta = front_matter()
    assert meta["sdk"] == "gradio" and meta["app_file"] == "app.py"
    assert meta["sdk_version"] == gradio.__version__
    assert re.fullmatch(r'"3\.\d+"', meta["python_version"])          # quoted, or YAML reads 3.1


def test_requirements_are_pinned_and_agree_with_gradio():
    lines = [ln for ln in (ROOT / "requirements.txt").read_text().splitlines() if ln and not ln.startswith("#")]
    assert all("==" in ln for ln in lines), lines
    assert f"gradio=={gradio.__version__}" in lines


def test_readme_test_command_is_what_ci_runs():
    ci = (ROOT / ".ci" / "run").read_text()
    command = re.search(r"TEST_COMMAND='([^']+)'", ci).group(1)
    assert f"\n{command}\n" in (ROOT / "README.md").read_text(encoding="utf-8")


def test_browser_tests_are_the_ui_files():
    """tests/conftest.py schedules the tests of ``*_ui.py`` files apart (one Chromium at a time, but for the
    last files): that holds only while the browser tests are exactly those files."""
    marks = re.compile(r"^(pytestmark = .*|\s*@)pytest\.mark\.e2e", re.MULTILINE)
    marked = {p.name for p in (ROOT / "tests").glob("test_*.py") if marks.search(p.read_text(encoding="utf-8"))}
    assert marked == {p.name for p in (ROOT / "tests").glob("test_*_ui.py")}
    from tests.conftest import FIRST_BROWSER_FILES, LAST_BROWSER_FILES
    assert set(FIRST_BROWSER_FILES + LAST_BROWSER_FILES) <= marked           # a renamed file would drop out
