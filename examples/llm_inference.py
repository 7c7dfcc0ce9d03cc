"""LLM inference on mlu: a Llama-class decoder generating text in float32, bfloat16, int8 and int4 weight-only.

The model is Hugging Face transformers' LlamaForCausalLM built from a config (grouped-query attention, RMSNorm,
SwiGLU, rotary positions; random weights unless --weights names a state dict: nothing is downloaded) over a
character vocabulary, so its "text" is the characters its greedy tokens stand for. Each mode generates the same
greedy continuation of a prompt with a static KV cache, on mlu and on the CPU, and prints decode tokens per
second, the weights' bytes and mlu's peak memory, and whether the two devices chose the same tokens; bfloat16
also runs compiled with mode="reduce-overhead" (Inductor, then mlu graph replay of each decode step). int8 and
int4 are torchao's weight-only configs (Int8WeightOnlyConfig; PrototypeInt4WeightOnlyConfig, the CPU's int4
packing), which on mlu run the native quantized products (torch_mlu/_torchao.py). A bar chart of the rates is
written to --plot.

    .venv/bin/python examples/llm_inference.py                 # the default model, about a minute
    .venv/bin/python examples/llm_inference.py --fast --plot ""  # a tiny model, a few seconds (what CI runs)
"""
import argparse
import copy
import gc
import time

import torch

import torch_mlu

VOCAB = [chr(c) for c in range(32, 127)] + ["\n"]


def encode(text):
    return torch.tensor([[VOCAB.index(c) if c in VOCAB else 0 for c in text]])


def decode(ids):
    return "".join(VOCAB[i] if i < len(VOCAB) else "?" for i in ids)


def build_model(args):
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(args.seed)
    config = LlamaConfig(vocab_size=len(VOCAB), hidden_size=args.hidden, intermediate_size=args.hidden * 11 // 4,
                         num_hidden_layers=args.layers, num_attention_heads=args.heads,
                         num_key_value_heads=max(1, args.heads // 4), max_position_embeddings=1024,
                         bos_token_id=0, eos_token_id=None, pad_token_id=0, tie_word_embeddings=False)
    model = LlamaForCausalLM(config).eval()
    if args.weights:
        model.load_state_dict(torch.load(args.weights, map_location="cpu"))
    return model


def quantize(model, mode):
    """The model in `mode`: float32, bfloat16, or torchao's int8 / int4 weight-only over bfloat16."""
    model = copy.deepcopy(model)
    if mode == "float32":
        return model
    model = model.to(torch.bfloat16)
    if mode in ("bfloat16", "bfloat16 compiled"):
        return model
    from torchao.quantization import Int8WeightOnlyConfig, quantize_

    if mode == "int8":
        quantize_(model, Int8WeightOnlyConfig())
    else:
        from torchao.prototype.quantization.int4 import PrototypeInt4WeightOnlyConfig

        quantize_(model, PrototypeInt4WeightOnlyConfig(group_size=64))
    return model


def weight_bytes(model):
    seen, total = set(), 0
    for t in list(model.parameters()) + list(model.buffers()):
        inner = [getattr(t, a) for a in getattr(t, "__tensor_flatten__", lambda: ([], None))()[0]] or [t]
        for x in inner:
            if x.data_ptr() not in seen:
                seen.add(x.data_ptr())
                total += x.numel() * x.element_size()
    return total


def generate(model, prompt, new_tokens, device, compiled):
    """Greedy tokens after `prompt` and the decode rate (tokens / s, the prefill excluded)."""
    from transformers import CompileConfig, StaticCache

    ids = prompt.to(device)
    kwargs = dict(max_new_tokens=new_tokens, do_sample=False, pad_token_id=0)
    if compiled:
        config = CompileConfig(fullgraph=True, mode="reduce-overhead")
        config._compile_all_devices = True  # transformers auto-compiles decode steps only on cuda/xpu otherwise
        kwargs.update(cache_implementation="static", compile_config=config)
    else:
        kwargs["cache"] = StaticCache(config=model.config, max_cache_len=ids.shape[1] + new_tokens)
    sync = torch.mlu.synchronize if device.startswith("mlu") else (lambda: None)
    with torch.inference_mode():
        model.generate(ids, **dict(kwargs, max_new_tokens=2))  # warm-up (and, compiled, the compilation)
        if compiled:
            model.generate(ids, **dict(kwargs, max_new_tokens=4))  # the graphs are recorded on a later call
        if not compiled:
            kwargs["cache"] = StaticCache(config=model.config, max_cache_len=ids.shape[1] + new_tokens)
        sync()
        start = time.perf_counter()
        first = model.generate(ids, **dict(kwargs, max_new_tokens=1))
        sync()
        prefill = time.perf_counter() - start
        if not compiled:
            kwargs["cache"] = StaticCache(config=model.config, max_cache_len=ids.shape[1] + new_tokens)
        start = time.perf_counter()
        out = model.generate(ids, **kwargs)
        sync()
        elapsed = time.perf_counter() - start
    assert first.shape[1] == ids.shape[1] + 1
    rate = (new_tokens - 1) / max(elapsed - prefill, 1e-9)
    return out[0, ids.shape[1]:].cpu().tolist(), rate


def run_mode(model, mode, args, prompt):
    results = {}
    for device in (args.device, "cpu"):
        if device == "cpu" and mode == "bfloat16 compiled":
            continue  # the CPU's compiled rate is not what this example compares
        m = quantize(model, mode).to(device)  # quantized on the CPU; torchao's tensors move with .to
        if device.startswith("mlu"):
            torch.mlu.reset_peak_memory_stats()
        tokens, rate = generate(m, prompt, args.new_tokens, device, compiled=mode == "bfloat16 compiled")
        peak = torch.mlu.max_memory_allocated() if device.startswith("mlu") else None
        results[device] = dict(tokens=tokens, rate=rate, weights=weight_bytes(m), peak=peak)
        del m
        if mode == "bfloat16 compiled":  # the compiled step and its recorded mlu graphs hold the model: let go
            torch._dynamo.reset()
        gc.collect()
        if device.startswith("mlu"):
            torch.mlu.empty_cache()
    return results


def plot(rows, path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    modes = [m for m, _ in rows]
    fig, ax = plt.subplots(figsize=(7, 3.5))
    width = 0.38
    for i, (device, color) in enumerate((("mlu", "#2a7ab9"), ("cpu", "#aaaaaa"))):
        rates = [r.get(device, {}).get("rate", 0) for _, r in rows]
        ax.bar([x + (i - 0.5) * width for x in range(len(modes))], rates, width, label=device, color=color)
    ax.set_xticks(range(len(modes)), modes)
    ax.set_ylabel("decode tokens / s")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path)


def parse(argv):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--device", default="mlu")
    p.add_argument("--modes", nargs="+", default=["float32", "bfloat16", "int8", "int4", "bfloat16 compiled"])
    p.add_argument("--layers", type=int, default=8)
    p.add_argument("--hidden", type=int, default=1024)
    p.add_argument("--heads", type=int, default=16)
    p.add_argument("--new-tokens", type=int, default=64)
    p.add_argument("--prompt", default="Once upon a time, ")
    p.add_argument("--weights", default="", help="a state dict for the model (random weights otherwise)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--plot", default="llm_inference.png", help='the bar chart ("" for none)')
    p.add_argument("--fast", action="store_true", help="a tiny model and a few tokens (the CI run)")
    args = p.parse_args(argv)
    if args.fast:
        args.layers, args.hidden, args.heads, args.new_tokens = 2, 128, 4, 8
    return args


def main(argv=None):
    args = parse(argv)
    model = build_model(args)
    prompt = encode(args.prompt)
    print(f"Llama-class decoder: {args.layers} layers, width {args.hidden}, {args.heads} heads "
          f"({sum(p.numel() for p in model.parameters()) / 1e6:.1f}M parameters), {args.new_tokens} new tokens")
    rows = []
    torch_mlu.reset_fallback_report()
    for mode in args.modes:
        r = run_mode(model, mode, args, prompt)
        rows.append((mode, r))
        on, cpu = r[args.device], r.get("cpu")
        line = (f"{mode:>18}: mlu {on['rate']:8.1f} tok/s, weights {on['weights'] / 2**20:7.1f} MiB, "
                f"peak {on['peak'] / 2**20:7.1f} MiB")
        if cpu:
            same = "same tokens" if cpu["tokens"] == on["tokens"] else "tokens differ"
            line += f" | cpu {cpu['rate']:8.1f} tok/s ({on['rate'] / cpu['rate']:.2f}x), {same}"
        print(line)
        print(f"{'':>20}{decode(on['tokens'])!r}")
    fallback = torch_mlu.fallback_report()
    print("ops that ran through the CPU fallback:", ", ".join(sorted(fallback)) or "none")
    if args.plot:
        plot(rows, args.plot)
        print(f"plot: {args.plot}")
    return dict(rows), fallback


if __name__ == "__main__":
    main()
