"""Episode 1's workflow diagram: drawn by its script, as the committed SVG is, and true to the
lesson's data pipeline (episode 4's generator hands out the stored bytes; the model scales
them), in the picture and in its alt text."""


from conftest import ROOT, load_script

FIG = ROOT / "fig" / "01-introduction"


def workflow():
    return load_script(FIG / "workflow.py")


def test_the_committed_svg_is_the_scripts_drawing(tmp_path):
    workflow().draw(tmp_path / "workflow.svg")
    assert (tmp_path / "workflow.svg").read_bytes() == (FIG / "workflow.svg").read_bytes(), (
        "redraw it: python fig/01-introduction/workflow.py")


def test_the_generator_box_hands_out_bytes_as_the_episodes_generator_does():
    steps = dict(workflow().STEPS)
    generator = " ".join(steps["PyDataset"].split())
    assert "normalis" not in generator and "bytes" in generator and "as stored" in generator
    episode4 = (ROOT / "_episodes" / "04-data-pipeline.md").read_text(encoding="utf-8")
    assert "Images come as stored, uint8 (0..255): the model scales them." in episode4
    episode1 = (ROOT / "_episodes" / "01-introduction.md").read_text(encoding="utf-8")
    alt = next(line for line in episode1.splitlines()
               if line.startswith(":alt:") and "flow diagram" in line)
    assert "reads shuffled batches of bytes from the file, as stored" in alt
    assert "normalis" not in alt
