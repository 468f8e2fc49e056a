"""Episode 3's kernel exercise: the advice for a venv kernel on a GPU node can be followed.

Both routes of the setup register the kernel under one name, "gpulesson" ("Python (gpulesson)"),
so there is no second, conda kernel to choose: the answer registers the kernel again from the
conda environment, with the setup page's command."""

import re

from conftest import ROOT

EPISODE = ROOT / "_episodes" / "03-environments.md"


def test_a_venv_kernel_on_a_gpu_node_is_registered_again_from_conda():
    text = EPISODE.read_text(encoding="utf-8")
    answer = " ".join(text[text.index("3. The venv `.venv` in Ben's"):text.index("4. The name at")].split())
    assert "choose the conda kernel" not in answer
    assert "the last registration wins" in answer
    assert ("conda activate {{ site_conda_env }}`, then `python -m ipykernel install --user "
            "--name gpulesson ...`") in answer
    # The name the answer registers is the one both routes of the setup use.
    setup = (ROOT / "setup.md").read_text(encoding="utf-8")
    names = set(re.findall(r"python -m ipykernel install --user --name (\S+)", setup))
    assert names == {"gpulesson"}
