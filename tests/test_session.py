"""Episode 5's first line (gpulesson.classroom.session): a job without a GPU stops before any training."""

import pytest

from gpulesson.classroom.session import CPU_ONLY, NoGPUError, gpu_or_stop
from gpulesson.errors import SettingsError

GPU = {"gpu_count": 1, "device": "NVIDIA H200", "backend": "tensorflow"}
NONE = {"gpu_count": 0, "device": "CPU", "backend": "tensorflow"}
JOB = {"SLURM_JOB_ID": "42", "SLURM_JOB_PARTITION": "cpu"}


def test_a_gpu_is_said_in_one_line(capsys):
    assert gpu_or_stop(JOB, GPU) is None
    out = capsys.readouterr().out
    assert out == "GPU session: Keras sees 1 GPU(s), NVIDIA H200 (tensorflow backend).\n"


@pytest.mark.bad_input("no GPU")
def test_a_job_without_a_gpu_stops_before_training_and_says_what_to_do():
    with pytest.raises(NoGPUError) as stopped:
        gpu_or_stop(JOB, NONE)
    message = str(stopped.value)
    assert "job 42 on the partition cpu" in message and "Nothing has trained yet" in message
    assert "start the GPU session" in message and f"%env {CPU_ONLY}=1" in message
    assert "\n" not in message


@pytest.mark.bad_input("no GPU")
@pytest.mark.parametrize("env", [{}, {**JOB, CPU_ONLY: "1"}], ids=["laptop", "on purpose"])
def test_without_a_job_or_on_purpose_the_cpu_trains_alone(env, capsys):
    gpu_or_stop(env, NONE)
    assert capsys.readouterr().out.startswith("No GPU here (tensorflow backend): this notebook "
                                              "trains on the CPU only")


@pytest.mark.bad_input("bad argument")
def test_going_on_without_a_gpu_is_read_as_every_other_yes_or_no_setting(capsys):
    """The lesson's one parser of yes/no settings: 'YES' goes on, '0' stops, a typo is named."""
    gpu_or_stop({**JOB, CPU_ONLY: " YES "}, NONE)
    assert capsys.readouterr().out.startswith("No GPU here")
    with pytest.raises(NoGPUError):
        gpu_or_stop({**JOB, CPU_ONLY: "0"}, NONE)
    with pytest.raises(SettingsError, match=f"{CPU_ONLY}='yse' is not understood"):  # codespell:ignore yse
        gpu_or_stop({**JOB, CPU_ONLY: "yse"}, NONE)  # codespell:ignore yse


def test_the_episode_checks_before_its_first_training():
    from conftest import ROOT

    text = (ROOT / "_episodes" / "05-cpu-vs-gpu.md").read_text()
    assert text.index("gpu_or_stop()") < text.index("## The model") < text.index("train_on(")
