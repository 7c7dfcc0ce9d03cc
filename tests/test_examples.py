"""The examples run end to end on mlu: the demo (shortened) trains, agrees with the CPU over the shared steps and
writes its plot; the digits MLP and CNN and the keyword spotter reach their stated held-out accuracy on mlu (the
CPU runs alongside as the reference), the keyword spotter's stft front end and training with no CPU fallback;
the DLRM-style recommender trains its sparse-gradient embeddings natively to its stated AUC, as the CPU does; the
LLM inference example generates in every mode on mlu with the CPU's tokens where the arithmetic is the same; the
detector trains (fast mode) to its stated mAP with every box operator native and draws its detections; the video
action recogniser trains (fast mode, bfloat16, channels-last-3d) to its stated accuracy natively; the ArcFace
face recogniser verifies unseen identities at its stated rate (fast mode) natively; the vocoder (transposed 1-D
convolutions, a multi-resolution STFT loss) synthesises held-out speech within its stated log-mel distance (fast
mode) natively and writes its spectrograms and WAV."""
import os
import sys
import wave

import pytest
import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "examples"))
import cnn_digits  # noqa: E402
import demo  # noqa: E402
import detection  # noqa: E402
import face_recognition  # noqa: E402
import keyword_spotting  # noqa: E402
import llm_inference  # noqa: E402
import mlp_digits  # noqa: E402
import recommendation  # noqa: E402
import speech_synthesis  # noqa: E402
import video_actions  # noqa: E402

import torch_mlu  # noqa: E402

pytestmark = pytest.mark.slow  # runs the example scripts


def test_demo_trains_and_matches_the_cpu(tmp_path, capsys):
    plot = tmp_path / "loss.png"
    torch_mlu.reset_fallback_report()
    result = demo.main(["--steps", "30", "--size", "tiny", "--batch-size", "8", "--block-size", "64",
                        "--compare-steps", "10", "--sample-chars", "40", "--plot", str(plot)])
    losses = result["losses"]
    assert len(losses) == 30
    assert sum(losses[-5:]) / 5 < losses[0] - 0.8, f"loss did not go down: {losses[0]:.3f} -> {losses[-5:]}"
    # Same weights, batches and bf16 autocast on both devices: the first ten losses agree to bf16 rounding.
    torch.testing.assert_close(torch.tensor(result["compare_losses"]), torch.tensor(losses[:10]), atol=0.05, rtol=0)
    assert result["rate"] > 0 and result["compare_rate"] > 0
    assert plot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert result["sample"].startswith("This License ") and len(result["sample"]) == len("This License ") + 40
    out = capsys.readouterr().out
    assert "mlu / cpu:" in out and "ops that ran through the CPU fallback: none" in out
    assert torch_mlu.fallback_report() == {}


def test_demo_comparison_stops_at_its_time_bound(capsys):
    # A bound already passed: the comparison stops at its second read-back (two intervals of 2 steps), says so,
    # and still reports a rate and the loss agreement over the steps it ran.
    result = demo.main(["--steps", "12", "--size", "tiny", "--batch-size", "4", "--block-size", "32",
                        "--compare-steps", "12", "--compare-seconds", "1e-9", "--sample-chars", "8", "--plot", ""])
    assert len(result["losses"]) == 12 and len(result["compare_losses"]) == 4
    torch.testing.assert_close(torch.tensor(result["compare_losses"]), torch.tensor(result["losses"][:4]), atol=0.05,
                               rtol=0)
    assert result["compare_rate"] > 0
    assert "the comparison stopped after 4 of 12 steps" in capsys.readouterr().out


@pytest.mark.parametrize("example", [mlp_digits, cnn_digits], ids=["mlp", "cnn"])
def test_digits_examples_reach_their_stated_accuracy(example):
    results = example.main([])  # exits with an error when mlu misses STATED_ACCURACY
    assert results["mlu"][0] >= example.STATED_ACCURACY
    assert "cpu" in results  # the reference run (its accuracy depends on the host's CPU kernels: digits.report)


def test_keyword_spotting_trains_natively_to_its_stated_accuracy(capsys):
    results = keyword_spotting.main(["--devices", "mlu"])  # exits with an error below STATED_ACCURACY
    accuracy, _, fell_back = results["mlu"]
    assert accuracy >= keyword_spotting.STATED_ACCURACY
    assert fell_back == {}, f"ops on the CPU fallback: {fell_back}"
    assert "ops that ran through the CPU fallback: none" in capsys.readouterr().out


def test_recommendation_trains_sparse_embeddings_natively_to_its_stated_auc(capsys):
    results = recommendation.main([])  # mlu and cpu; exits with an error below STATED_AUC on mlu
    auc, _, fell_back = results["mlu"]
    cpu_auc = results["cpu"][0]
    assert auc >= recommendation.STATED_AUC
    assert fell_back == {}, f"ops on the CPU fallback: {fell_back}"
    # The same data, initial weights and batches on both devices (rounding differences grow over 470 Adam
    # steps, so the scores themselves drift apart; test_sparse.py compares short runs exactly).
    assert abs(auc - cpu_auc) < 0.01
    assert "ops that ran through the CPU fallback: none" in capsys.readouterr().out


def test_llm_inference_generates_in_every_mode(tmp_path, capsys):
    pytest.importorskip("torchao")
    plot = tmp_path / "llm.png"
    rows, fallback = llm_inference.main(["--fast", "--plot", str(plot)])
    assert set(rows) == {"float32", "bfloat16", "int8", "int4", "bfloat16 compiled"}
    assert fallback == {}
    for mode, r in rows.items():
        assert len(r["mlu"]["tokens"]) == 8 and r["mlu"]["rate"] > 0 and r["mlu"]["peak"] > 0
        if mode != "bfloat16 compiled":
            assert r["cpu"]["rate"] > 0
    # float32 and bfloat16 are the same arithmetic on both devices; the compiled run gives eager's tokens.
    assert rows["float32"]["mlu"]["tokens"] == rows["float32"]["cpu"]["tokens"]
    assert rows["bfloat16 compiled"]["mlu"]["tokens"] == rows["bfloat16"]["mlu"]["tokens"]
    # Weight bytes shrink with the mode: bfloat16 half of float32, int8 and int4 less again.
    weights = {mode: r["mlu"]["weights"] for mode, r in rows.items()}
    assert weights["int4"] < weights["int8"] < weights["bfloat16"] < weights["float32"]
    assert plot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "ops that ran through the CPU fallback: none" in capsys.readouterr().out


def test_detection_trains_natively_to_its_stated_map_in_fast_mode(tmp_path, capsys):
    plot = tmp_path / "detection.png"
    results = detection.main(["--devices", "mlu", "--fast", "--quiet", "--plot", str(plot)])  # exits below
    mean_ap, per_class, fell_back = results["mlu"]
    assert mean_ap >= detection.STATED_MAP_FAST and min(per_class) > 0
    assert fell_back == {}, f"ops on the CPU fallback: {fell_back}"
    assert plot.stat().st_size > 10_000
    assert "ops that ran through the CPU fallback: none" in capsys.readouterr().out


def test_video_actions_train_natively_to_their_stated_accuracy_in_fast_mode(tmp_path, capsys):
    plot = tmp_path / "confusion.png"
    results = video_actions.main(["--devices", "mlu", "--fast", "--quiet", "--plot", str(plot)])  # exits below
    accuracy, confusion, fell_back = results["mlu"]
    assert accuracy >= video_actions.STATED_ACCURACY_FAST
    assert int(confusion.sum()) == 16 * len(video_actions.MOTIONS)
    assert fell_back == {}, f"ops on the CPU fallback: {fell_back}"
    assert plot.stat().st_size > 10_000


def test_face_recognition_verifies_unseen_identities_at_its_stated_rate_in_fast_mode(tmp_path):
    plot = tmp_path / "roc.png"
    results = face_recognition.main(["--devices", "mlu", "--fast", "--quiet", "--plot", str(plot)])  # exits below
    tar_1e2, tar_1e3, fell_back = results["mlu"]
    assert tar_1e2 >= face_recognition.STATED_TAR_FAST and tar_1e3 <= tar_1e2
    assert fell_back == {}, f"ops on the CPU fallback: {fell_back}"
    assert plot.stat().st_size > 10_000


def test_speech_synthesis_vocoder_trains_natively_to_its_stated_distance_in_fast_mode(tmp_path):
    plot, wav = tmp_path / "spectrograms.png", tmp_path / "speech.wav"
    results = speech_synthesis.main(["--devices", "mlu", "--fast", "--quiet", "--plot", str(plot),
                                     "--wav", str(wav)])  # exits above the stated distance
    distance, convergence, (untrained_convergence, untrained_distance), fell_back = results["mlu"]
    assert distance <= speech_synthesis.STATED_DISTANCE_FAST and distance < untrained_distance / 3
    assert convergence < untrained_convergence
    assert fell_back == {}, f"ops on the CPU fallback: {fell_back}"
    assert plot.stat().st_size > 10_000
    with wave.open(str(wav)) as f:  # three pairs of target and generated half-seconds with gaps
        assert f.getframerate() == speech_synthesis.SAMPLE_RATE and f.getnframes() > 6 * speech_synthesis.LENGTH
