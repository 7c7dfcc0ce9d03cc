"""LLM inference flows on mlu as their users write them: torchao's weight-only quantization and Hugging Face
generate with a static KV cache, compiled, against the same flow on the CPU.

torchao's int8 and int4 weight-only linears reach the native quantized products on mlu (torch_mlu/_torchao.py
says which torchao paths refuse non-CUDA devices and how torch_mlu registers around them); generate's greedy
tokens equal the CPU's for a GPT-2 and a Llama built from configs, eager, with a static cache, and compiled with
``mode="reduce-overhead"`` (our graph capture).
"""

import pytest
import torch
from torch.utils._python_dispatch import TorchDispatchMode

import torch_mlu

torchao = pytest.importorskip("torchao")
from torchao.quantization import Int4WeightOnlyConfig, Int8WeightOnlyConfig, quantize_  # noqa: E402


class OpLog(TorchDispatchMode):
    """The aten ops a region dispatches."""

    def __init__(self):
        super().__init__()
        self.ops = set()

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        self.ops.add(str(func.overloadpacket.__name__))
        return func(*args, **(kwargs or {}))


def mlp(dtype, seed=0):
    torch.manual_seed(seed)
    return torch.nn.Sequential(torch.nn.Linear(256, 512), torch.nn.SiLU(), torch.nn.Linear(512, 128)).to(dtype)


def quantized_pair(config, dtype, where):
    """The same model quantized on the CPU and on mlu (`where`: "mlu" quantizes a model on mlu, "cpu" moves the
    CPU-quantized model over)."""
    cpu = mlp(dtype)
    quantize_(cpu, config)
    if where == "cpu":
        return cpu, _moved(cpu)
    on = mlp(dtype).to("mlu")
    quantize_(on, config)
    return cpu, on


def _moved(model):
    import copy

    return copy.deepcopy(model).to("mlu")


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=str)
@pytest.mark.parametrize("rows", [1, 7])
def test_torchao_int8_weight_only_is_native_and_matches_the_cpu(dtype, rows):
    cpu, on = quantized_pair(Int8WeightOnlyConfig(), dtype, "mlu")
    x = torch.randn(rows, 256).to(dtype)
    want = cpu(x)
    torch_mlu.reset_fallback_report()
    with OpLog() as log:
        got = on(x.to("mlu"))
    assert torch_mlu.fallback_report() == {}
    assert "_weight_int8pack_mm" in log.ops and "mm" not in log.ops  # no dequantised copy of the weight
    # torchao rounds the product to dtype before scaling it; the native op scales the float sum.
    tol = dict(rtol=2e-2, atol=2e-2) if dtype == torch.bfloat16 else dict(rtol=1e-4, atol=1e-4)
    torch.testing.assert_close(got.cpu(), want, **tol)


@pytest.mark.parametrize("where", ["mlu", "cpu"])
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=str)
def test_torchao_int4_weight_only_in_the_cpus_packing_matches_the_cpu(where, dtype):
    from torchao.prototype.quantization.int4 import PrototypeInt4WeightOnlyConfig

    cpu, on = quantized_pair(PrototypeInt4WeightOnlyConfig(group_size=64), dtype, where)
    x = torch.randn(5, 256).to(dtype)
    want = cpu(x)
    torch_mlu.reset_fallback_report()
    with OpLog() as log:
        got = on(x.to("mlu"))
    assert torch_mlu.fallback_report() == {}
    assert "_weight_int4pack_mm_for_cpu" in log.ops
    # The same packed weight and op; the sums in another order (Note [Weight-only sums]).
    tol = dict(rtol=1.6e-2, atol=1e-2) if dtype == torch.bfloat16 else dict(rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(got.cpu(), want, **tol)


def test_torchao_int4_tinygemm_layout_runs_under_the_cuda_migration(migration):
    """Int4WeightOnlyConfig's tinygemm layout asks torch.cuda for a compute capability, which gpu_migration
    answers on mlu; its products are the native _weight_int4pack_mm, compared with the dequantised weight."""
    model = mlp(torch.bfloat16).to("mlu")
    reference = _moved(model)
    quantize_(model, Int4WeightOnlyConfig(group_size=128, int4_packing_format="tile_packed_to_4d"))
    x = torch.randn(3, 256, dtype=torch.bfloat16, device="mlu")
    with OpLog() as log:
        got = model(x)
    assert "_weight_int4pack_mm" in log.ops
    # int4 with groups of 128: within a few per cent of the bfloat16 model.
    want = reference(x)
    assert ((got - want).float().norm() / want.float().norm()).item() < 0.1


def test_torchao_int8_weights_under_trained_activations_keep_a_gradient():
    """Adapters trained over a frozen int8 base need the gradient of the input: torchao's differentiable mm."""
    cpu, on = quantized_pair(Int8WeightOnlyConfig(), torch.float32, "mlu")
    x = torch.randn(3, 256)
    xm = x.to("mlu").requires_grad_()
    on(xm).square().sum().backward()
    xc = x.clone().requires_grad_()
    cpu(xc).square().sum().backward()
    torch.testing.assert_close(xm.grad.cpu(), xc.grad, rtol=1e-4, atol=1e-4)


def test_torchao_paths_mlu_does_not_take_still_run_torchaos_code():
    """Group-wise int8 (a dequantised product in torchao) and the CPU keep torchao's own linear."""
    from torchao.quantization.granularity import PerGroup

    cpu, on = quantized_pair(Int8WeightOnlyConfig(granularity=PerGroup(64)), torch.float32, "mlu")
    x = torch.randn(3, 256)
    with OpLog() as log:
        got = on(x.to("mlu"))
    assert "_weight_int8pack_mm" not in log.ops
    torch.testing.assert_close(got.cpu(), cpu(x))
    with OpLog() as log:
        cpu(x)
    assert "_weight_int8pack_mm" not in log.ops


# ---- Hugging Face generate ----------------------------------------------------------------------------------


def decoder(kind):
    """A GPT-2 or a Llama (grouped-query attention) of two layers from a config, float32, random weights."""
    from transformers import GPT2Config, GPT2LMHeadModel, LlamaConfig, LlamaForCausalLM

    torch.manual_seed(0)
    if kind == "gpt2":
        config = GPT2Config(vocab_size=128, n_embd=64, n_layer=2, n_head=4, n_positions=128, bos_token_id=0,
                            eos_token_id=None)
        return GPT2LMHeadModel(config).eval()
    config = LlamaConfig(vocab_size=128, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                         num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=128,
                         bos_token_id=0, eos_token_id=None)
    return LlamaForCausalLM(config).eval()


def greedy(model, ids, **kwargs):
    with torch.inference_mode():
        out = model.generate(ids, max_new_tokens=12, do_sample=False, pad_token_id=0, **kwargs)
    return out[0, ids.shape[1]:].cpu()


@pytest.mark.parametrize("kind", ["gpt2", "llama"])
def test_generate_with_a_static_cache_gives_the_cpus_tokens(kind):
    from transformers import StaticCache

    model = decoder(kind)
    ids = torch.randint(1, 128, (1, 7), generator=torch.Generator().manual_seed(1))
    want = greedy(model, ids)
    on = _moved(model)
    torch_mlu.reset_fallback_report()
    dynamic = greedy(on, ids.to("mlu"))
    static = greedy(on, ids.to("mlu"), cache=StaticCache(config=on.config, max_cache_len=ids.shape[1] + 12))
    assert torch_mlu.fallback_report() == {}
    assert torch.equal(dynamic, want) and torch.equal(static, want)


@pytest.mark.parametrize("kind", ["gpt2", "llama"])
def test_compiled_generate_replays_mlu_graphs_and_gives_the_cpus_tokens(kind, released_graphs):
    """transformers compiles the decode step of a static-cache generate with mode="reduce-overhead" on the devices
    it knows (cuda, xpu, ...); CompileConfig's _compile_all_devices takes mlu in. Each decode step then replays an
    mlu graph (torch_mlu/_inductor/graphs.py), and the tokens are the CPU's eager ones."""
    from transformers import CompileConfig

    from torch_mlu._inductor import graphs

    model = decoder(kind)
    ids = torch.randint(1, 128, (1, 7), generator=torch.Generator().manual_seed(2))
    want = greedy(model, ids)
    on = _moved(model)
    config = CompileConfig(fullgraph=True, mode="reduce-overhead")
    config._compile_all_devices = True
    torch._dynamo.reset()
    before = graphs.stats["replayed"]
    got = greedy(on, ids.to("mlu"), cache_implementation="static", compile_config=config)
    assert graphs.stats["replayed"] - before >= 8  # the decode steps after the warm-up and the recording
    assert torch.equal(got, want)
