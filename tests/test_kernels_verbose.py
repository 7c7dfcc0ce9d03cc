"""MLU_KERNELS_VERBOSE=1: the kernel library logs one line per kernel call, saying which path it took
(mlu_kernels/verbose.h), as torch ops reach it through the plugin."""

import torch_mlu

CODE = """
    import torch, torch.nn.functional as F
    a = torch.randn(96, 96, device="mlu")
    torch.softmax(a, dim=1); torch.softmax(a, dim=0)
    a @ a
    a @ a[:, 0]
    b = torch.randn(128, 128, device="mlu", dtype=torch.bfloat16)  # big enough for oneDNN
    b @ b
    x = torch.randn(2, 3, 8, 8, device="mlu")
    w = torch.randn(4, 3, 3, 3, device="mlu")
    F.conv2d(x, w)
    F.conv2d(x.contiguous(memory_format=torch.channels_last), w.contiguous(memory_format=torch.channels_last))
    q = torch.randn(1, 2, 16, 8, device="mlu")
    F.scaled_dot_product_attention(q, q, q, is_causal=True)
    (a + 1).sum()
    torch.mlu.synchronize()
"""


def log_lines(stderr):
    return [line.split(",") for line in stderr.splitlines() if line.startswith("mlu_kernels_verbose,exec,")]


def paths(lines, kernel):
    return [fields[4] for fields in lines if fields[2] == kernel]


def test_each_kernel_call_names_its_path(python):
    result = python(CODE, env={"MLU_KERNELS_VERBOSE": "1"})
    assert result.returncode == 0, result.stderr
    lines = log_lines(result.stderr)
    config = torch_mlu._C._kernel_config()
    assert all(len(fields) == 8 for fields in lines), lines
    assert {fields[3] for fields in lines} == {config["active_isa"]}
    assert float(lines[0][7]) >= 0
    assert paths(lines, "softmax") == ["rows", "columns"]
    gemm = [fields for fields in lines if fields[2] == "gemm"]
    # Note [Vendor BLAS], Note [oneDNN products]: float32 products run on our kernel unless oneMKL is asked
    # for; 16-bit ones on oneDNN by default where the build links it.
    mkl = config["gemm_library"] == "mkl"
    # oneDNN runs 16-bit products on its AVX-512 brgemm kernels only; on an AVX2 host it declines them.
    dnnl = config["gemm_library"] == "dnnl" and config["active_isa"].startswith("avx512")
    assert config["gemm_library"] == "own" or config[config["gemm_library"] + "_linked"]
    assert config["gemm_library"] != "dnnl" or config["dnnl_linked"]
    assert [f[4] for f in gemm[:2]] == ["mkl" if mkl else "blocked", "gemv"]
    assert gemm[0][5:7] == ["Float32", "m96 n96 k96 batch1"]
    bf16 = gemm[2]
    assert bf16[5] == "BFloat16"
    # Note [AMX tiles]: without MKL, bfloat16 products use the tiles wherever the CPU and the OS allow it,
    # else AVX512-BF16 dot products where the CPU has them (Note [BFloat16 dot products]).
    amx = config["amx_usable"] and config["active_isa"].startswith("avx512")
    dot = config["active_isa"] == "avx512bf16"
    assert bf16[4] == ("mkl_workspace" if mkl else "dnnl" if dnnl else "amx" if amx else "dpbf16" if dot
                       else "blocked_workspace")
    # The glue picks the layout per problem (csrc/aten/ops/ConvolutionOps.cpp); channels-last input runs nhwc,
    # on oneDNN where the build links it (Note [oneDNN convolutions]).
    conv = paths(lines, "conv_forward")
    prefix = "dnnl " if config["conv_library"] == "dnnl" else ""
    assert config["conv_library"] in (("dnnl", "own") if config["dnnl_linked"] else ("own",))
    assert len(conv) == 2 and set(conv) <= {prefix + "nchw", prefix + "nhwc"} and conv[1] == prefix + "nhwc", conv
    assert paths(lines, "attention_forward")
    assert "flat" in paths(lines, "pointwise")
    assert paths(lines, "reduce") == ["rows"]


def test_silent_by_default(python):
    result = python(CODE)
    assert result.returncode == 0, result.stderr
    assert not log_lines(result.stderr)


def test_isa_cap_shows_in_the_log(python):
    result = python("import torch; torch.softmax(torch.randn(4, 8, device='mlu'), 1); torch.mlu.synchronize()",
                    env={"MLU_KERNELS_VERBOSE": "1", "MLU_KERNELS_ISA": "baseline"})
    assert result.returncode == 0, result.stderr
    lines = log_lines(result.stderr)  # randn's line (normal), then softmax's: every family logs
    assert [fields[2] for fields in lines] == ["normal", "softmax"], lines
    assert {fields[3] for fields in lines} == {"baseline"}
