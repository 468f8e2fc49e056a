"""Episode 5's "What the GPU did": operations counted from the model, rates against the card's
published peak, the host's share of a step from the do-nothing model on the same GPU, and the
speed-up of a whole training against the speed-up per epoch."""

import json

import pytest

from gpulesson.experiments.cnn import gpu_use
from gpulesson.machine import flops
from gpulesson.records.results import NOT_RECORDED


def test_the_counted_operations_follow_the_lessons_model():
    from gpulesson.lesson import build_cnn
    from gpulesson.lesson.feeding import flops_per_image

    assert flops_per_image(build_cnn()) == flops.cnn_forward_flops()
    assert flops.training_flops_per_image() == 3 * flops.cnn_forward_flops()
    with pytest.raises(ValueError, match="positive"):
        flops.tflops(1, 1, 0)


def _cnn(kind, device, epochs, *, n_train=45_000, batch=256, precision="tf32"):
    return {"experiment": "cnn-cpu-vs-gpu", "run_id": "r", "device_kind": kind, "device": device,
            "date": "2026-11-23T00:00:00", "backend": "jax", "n_train": n_train,
            "n_validation": 5_000, "batch_size": batch,
            "epoch_seconds": epochs, "first_epoch_seconds": epochs[0],
            "float32_precision": {"matmul": precision, "convolution": precision}}


def _run_file(folder, *records):
    """The CNN's results file in ``folder`` holding ``records``, the reference run read from it."""
    folder.mkdir(exist_ok=True)
    path = folder / "cnn-cpu-vs-gpu.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


def _ceiling(device, pipeline, rate, backend="jax"):
    return {"experiment": "ceiling", "run_id": "c", "device_kind": "gpu", "device": device,
            "backend": backend, "pipeline": pipeline, "batch_size": 256, "images_per_second": rate}


def test_rates_peaks_host_share_and_the_whole_training(tmp_path):
    ceiling = tmp_path / "ceiling.jsonl"
    ceiling.write_text("".join(json.dumps(r) + "\n" for r in [
        _ceiling("NVIDIA H200", "ram", 256 / 0.0005),       # 0.5 ms a step, the fastest in memory
        _ceiling("NVIDIA H200", "arrays", 256 / 0.0008),
        _ceiling("NVIDIA H200", "lesson", 256 / 0.0001),    # a reading pipeline: never the floor
        _ceiling("NVIDIA H200", "device", 256 / 0.0001),    # the old device method: never used
        _ceiling("NVIDIA H100 PCIe", "ram", 256 / 0.0001),  # another card: never used
        _ceiling("NVIDIA H200", "ram", 256 / 0.0001, backend="torch"),
    ]))
    gpu_epoch = 176 * 0.002  # 2 ms a step
    records = [_cnn("cpu", "CPU", [22.0] + [20.0] * 5),
               _cnn("gpu", "NVIDIA H200", [10.0 + gpu_epoch] + [gpu_epoch] * 5)]
    values = gpu_use.substitutions(records, _run_file(tmp_path, *records))
    operations = 45_000 * flops.training_flops_per_image() + 5_000 * flops.cnn_forward_flops()
    assert values["ref_use_gpu_tflops"] == f"{operations / gpu_epoch / 1e12:.3g} TFLOP/s"
    assert values["ref_use_gpu_share"] == f"{100 * operations / gpu_epoch / 1e12 / 494.5:.1f} %"
    assert values["ref_use_gpu_peak"].startswith("494.5 TFLOP/s in TF32 (NVIDIA H200")
    assert values["ref_use_host_step"] == "500 µs" and values["ref_use_host_share"] == "25 %"
    assert values["ref_use_host_run"] == "c"
    gpu_total = 10.0 + 30 * gpu_epoch
    assert values["ref_use_gpu_warmup_share"] == f"{100 * 10 / gpu_total:.0f} %"
    assert values["ref_use_full_speedup"] == f"{(2.0 + 30 * 20.0) / gpu_total:.0f}×"


def test_without_a_gpu_or_a_known_card_the_values_say_so(tmp_path):
    cpu = _cnn("cpu", "CPU", [22.0] + [20.0] * 5)
    values = gpu_use.substitutions([cpu], _run_file(tmp_path, cpu))
    assert values["ref_use_cpu_tflops"] != NOT_RECORDED
    assert all(values[k] == NOT_RECORDED for k in ("ref_use_gpu_tflops", "ref_use_gpu_share",
                                                   "ref_use_host_step", "ref_use_full_speedup"))
    odd = _cnn("gpu", "A card nobody knows", [2.0] + [1.0] * 5, precision="float32")
    values = gpu_use.substitutions([cpu, odd], _run_file(tmp_path, cpu, odd))
    assert values["ref_use_gpu_tflops"] != NOT_RECORDED and values["ref_use_gpu_peak"] == NOT_RECORDED


def test_the_keys_are_the_values_a_run_gives(tmp_path):
    cpu = _cnn("cpu", "CPU", [22.0] + [20.0] * 5)
    gpu = _cnn("gpu", "NVIDIA H200", [2.0] + [1.0] * 5)
    # and episode 9's note on episode 5's run beside the feeding benchmark, empty without both
    values = gpu_use.substitutions([cpu, gpu], _run_file(tmp_path, cpu, gpu))
    assert set(values) == {*gpu_use.KEYS, "ref_use_feeding"} and values["ref_use_feeding"] == ""
    assert set(gpu_use.substitutions([], tmp_path / "none.jsonl").values()) == {NOT_RECORDED, ""}


def test_the_host_floor_is_set_beside_the_profiles_dispatch_with_the_profilers_overhead(tmp_path):
    """The do-nothing model's step is a floor; the CNN's profiled dispatch is more, but the
    profiled step is longer than an unprofiled one, and the page says so with both steps."""
    profiled = {"experiment": "profile", "run_id": "p", "device_kind": "gpu",
                "device": "NVIDIA H200", "backend": "jax", "step_seconds": 0.0026,
                "profile": {"steps": 100, "step": 0.0036,
                            "host": {"input": 0.0009, "dispatch": 0.0016, "other": 0.0011},
                            "device": {"kernels": 0.0007, "copies": 0.0, "idle": 0.0029}}}
    ahead = {**profiled, "run_id": "newer", "read_ahead": True}  # not as the CNN's run read
    path = tmp_path / "profile.jsonl"
    path.write_text(json.dumps(profiled) + "\n" + json.dumps(ahead) + "\n")
    gpu = _cnn("gpu", "NVIDIA H200", [2.0] + [1.0] * 5)
    said = gpu_use.substitutions([gpu], _run_file(tmp_path, gpu))["ref_use_host_profile"]
    assert said == ("Episode 9's profile of this CNN (run p) reads its batches without reading "
                    "ahead, as this run does, and trains without the validation that this run's "
                    "step of 5.68 ms includes. It counts 1.6 ms of dispatch in a "
                    "step, with the profiler's overhead in it: a profiled step took 3.6 ms, a "
                    "step of the same run without the profiler 2.6 ms, so the dispatch alone "
                    "takes at least 600 µs without it")
    other = _cnn("gpu", "NVIDIA H100 PCIe", [2.0] + [1.0] * 5)  # another card's profile: none
    assert gpu_use.substitutions([other], _run_file(tmp_path, other))[
        "ref_use_host_profile"] == NOT_RECORDED
    assert gpu_use.substitutions([gpu], _run_file(tmp_path / "elsewhere", gpu))[  # no profile there
        "ref_use_host_profile"] == NOT_RECORDED
