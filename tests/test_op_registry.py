"""tools/gen_op_registry.py: docs/op_registry.md is current, and the scan reads registrations right.

The first test regenerates the registry from the built library and the sources and fails when the
committed file differs (a registration added, removed or moved without rerunning the tool). The
others run the source scan on small made-up trees: the registration macros expand to schema names,
at::_ops identifiers resolve through the op list, and each .impl() gets its block's dispatch key.
"""
import importlib.util
import pathlib
import subprocess
import sys
import textwrap

from conftest import REPO, TESTING_INSTALLED

ROOT = pathlib.Path(REPO)
TOOL = ROOT / "tools" / "gen_op_registry.py"


def load_tool():
    spec = importlib.util.spec_from_file_location("gen_op_registry", TOOL)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def scan(tmp_path, files):
    for rel, text in files.items():
        path = tmp_path / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))
    return load_tool().scan_sources(tmp_path)


def names(tool, file_scan, all_ops=()):
    table = tool.unambiguous_names(all_ops)
    return sorted((key, name or table.get(ident, ident)) for key, name, ident, _ in file_scan.impls)


def test_op_registry_is_current():
    # Installed-wheel runs (tools/test_wheel.sh) must not import the tree's torch_mlu: -P keeps it off sys.path.
    command = [sys.executable] + (["-P"] if TESTING_INSTALLED else []) + [str(TOOL), "--check", "--quiet"]
    result = subprocess.run(command, capture_output=True, text=True, cwd=REPO, timeout=600)
    assert result.returncode == 0, result.stdout + result.stderr


# Registration macros of the shape the op files took from csrc/aten/StructuredPointwise.h before
# csrc/aten/mlu_functions.yaml (ForeachOps.cpp still defines its own): macros over macros, naming the schema
# by its at::_ops identifier.
MACROS = r"""
    #define MLU_COMMA_IF(...) __VA_OPT__(, ) __VA_ARGS__
    #define MLU_IMPL(m, fn, ARGS_DECL, ARGS) \
      m.impl(::torch_mlu::schema_name<ATEN_OP(fn)>(), [](const at::Tensor& self MLU_COMMA_IF ARGS_DECL) { \
        return ::torch_mlu::cpu_fallback<ATEN_OP(fn)>(self MLU_COMMA_IF ARGS); \
      })
    #define MLU_REGISTER_POINTWISE(m, fn, ip, out, ARGS_DECL, ARGS) \
      MLU_IMPL(m, fn, ARGS_DECL, ARGS); MLU_IMPL(m, ip, ARGS_DECL, ARGS); MLU_IMPL(m, out, ARGS_DECL, ARGS)
    #define MLU_REGISTER_POINTWISE_NO_INPLACE(m, fn, out, ARGS_DECL, ARGS) \
      MLU_IMPL(m, fn, ARGS_DECL, ARGS); MLU_IMPL(m, out, ARGS_DECL, ARGS)
    #define MLU_REGISTER_UNARY(m, name) MLU_REGISTER_POINTWISE(m, name, name##_, name##_out, (), ())
    #define MLU_REGISTER_BINARY(m, fn, ip, out) \
      MLU_REGISTER_POINTWISE(m, fn, ip, out, (const at::Tensor& other), (other))
    """


def test_pointwise_macros_expand_to_schema_names(tmp_path):
    # MACROS in a header (and ATEN_OP from Fallback.h), used as the op files used them.
    fallback = (ROOT / "csrc/aten/Fallback.h").read_text()
    scans = scan(tmp_path, {
        "csrc/aten/Registration.h": MACROS,
        "csrc/aten/Fallback.h": fallback,
        "csrc/aten/ops/Made.cpp": """
            TORCH_MLU_ATEN_IMPL(m) {
              MLU_REGISTER_UNARY(m, expm1);
              MLU_REGISTER_BINARY(m, add_Tensor, add__Tensor, add_out);
              MLU_REGISTER_POINTWISE_NO_INPLACE(m, fmax, fmax_out, (const at::Tensor& o), (o));
            #define MLU_COMPARISON(name) MLU_REGISTER_BINARY(m, name##_Tensor, name##__Tensor, name##_Tensor_out)
              MLU_COMPARISON(eq);
            #undef MLU_COMPARISON
              m.impl("softmax.int", TORCH_FN(f));  // a plain schema name
            }
            """,
    })
    tool = load_tool()
    all_ops = ["aten::expm1", "aten::expm1_", "aten::expm1.out", "aten::add.Tensor", "aten::add_.Tensor",
               "aten::add.out", "aten::fmax", "aten::fmax.out", "aten::eq.Tensor", "aten::eq_.Tensor",
               "aten::eq.Tensor_out"]
    assert list(scans) == ["csrc/aten/ops/Made.cpp"]  # the headers only define macros; the tree has no yaml
    found = names(tool, scans["csrc/aten/ops/Made.cpp"], all_ops)
    assert found == sorted([("PrivateUse1", op) for op in all_ops] + [("PrivateUse1", "aten::softmax.int")])


def test_blocks_give_keys_namespaces_fallbacks_and_stubs(tmp_path):
    scans = scan(tmp_path, {
        "csrc/Other.cpp": """
            #define NAME_OF(x) #x
            TORCH_LIBRARY_IMPL(_, AutocastPrivateUse1, m) { m.fallback(torch::CppFunction::makeFallthrough()); }
            TORCH_LIBRARY_IMPL(aten, AutocastPrivateUse1, m) {
              m.impl(TORCH_SELECTIVE_NAME("aten::binary_cross_entropy"), TORCH_FN(banned));
            }
            TORCH_LIBRARY(torch_mlu, m) { m.def("fused_adam(Tensor x) -> ()"); }
            TORCH_LIBRARY_IMPL(torch_mlu, PrivateUse1, m) { m.impl(NAME_OF(fused_adam), TORCH_FN(f)); }
            /* m.impl("commented_out", f); */
            // m.impl("also_commented_out", f);
            REGISTER_PRIVATEUSE1_DISPATCH(index_put_stub, &kernel)
            """,
    })
    tool = load_tool()
    other = scans["csrc/Other.cpp"]
    assert names(tool, other) == [("AutocastPrivateUse1", "aten::binary_cross_entropy"),
                                  ("PrivateUse1", "torch_mlu::fused_adam")]
    assert other.fallbacks == {("_", "AutocastPrivateUse1", True)}
    assert other.defs == ["torch_mlu::fused_adam"]
    assert other.stubs == ["index_put_stub"]


def test_ops_identifiers_map_through_the_op_list():
    table = load_tool().unambiguous_names(["aten::add_.Tensor", "aten::__and__.Tensor", "aten::_softmax",
                                           "aten::sub.out", "torch_mlu::fused_adam"])
    assert table == {"add__Tensor": "aten::add_.Tensor", "__and___Tensor": "aten::__and__.Tensor",
                     "_softmax": "aten::_softmax", "sub_out": "aten::sub.out"}


def test_check_fails_on_a_stale_registry(tmp_path):
    stale = tmp_path / "op_registry.md"
    stale.write_text("# Op registry\n")
    command = [sys.executable] + (["-P"] if TESTING_INSTALLED else []) + [
        str(TOOL), "--check", "--quiet", "--output", str(stale)]
    result = subprocess.run(command, capture_output=True, text=True, cwd=REPO, timeout=600)
    assert result.returncode == 1, result.stdout + result.stderr
    assert "is stale: run python tools/gen_op_registry.py" in result.stderr
