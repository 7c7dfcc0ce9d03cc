"""tools/gen_mlu_ops.py: the op list (csrc/aten/mlu_functions.yaml) and the files it generates for.

No build is needed: these read the yaml and the sources. That the built library registers exactly what the
yaml declares is tests/test_op_registry.py's check (docs/op_registry.md is generated from both).
"""
import pathlib
import re
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tools"))

import gen_mlu_ops  # noqa: E402

INCLUDE = re.compile(r'^#include "generated/ops/(\w+)\.inc"$', re.M)


@pytest.fixture(scope="module")
def native():
    return gen_mlu_ops.Native()


def test_every_section_renders(native):
    for section in gen_mlu_ops.load_sections():
        text = gen_mlu_ops.render_section(section, native)
        assert text.count("m.impl(") == sum(len(gen_mlu_ops.entry_functions(e, native)) for e in section["ops"])


def test_each_section_file_includes_its_registrations_and_only_those():
    sections = {section["file"] for section in gen_mlu_ops.load_sections()}
    including = {}
    for path in (ROOT / "csrc").rglob("*.cpp"):
        found = INCLUDE.findall(path.read_text())
        if found:
            including[str(path.relative_to(ROOT))] = found
    assert set(including) == sections
    for rel, stems in including.items():
        assert stems == [pathlib.Path(rel).stem], f"{rel} includes {stems}"
        text = (ROOT / rel).read_text().rstrip()
        assert text.endswith(f'#include "generated/ops/{stems[0]}.inc"'), f"{rel}: the include is not last"


def test_no_op_is_registered_twice(native):
    seen = {}
    for file, per_key in gen_mlu_ops.registered_ops(gen_mlu_ops.load_sections(), native).items():
        for key, names in per_key.items():
            for name in names:
                assert (key, name) not in seen, f"{key} {name}: in {seen.get((key, name))} and {file}"
                seen[(key, name)] = file


def write_yaml(tmp_path, text):
    (tmp_path / "csrc" / "aten" / "ops").mkdir(parents=True)
    (tmp_path / "csrc" / "aten" / "ops" / "Made.cpp").write_text("")
    path = tmp_path / "csrc" / "aten" / "mlu_functions.yaml"
    path.write_text(text)
    return path


@pytest.mark.parametrize("entry, message", [
    ("{func: no_such_op, impl: f}", "no such op"),
    ("{func: abs, impl: f, colour: red}", "unknown keys: ['colour']"),
    ("{func: abs}", "needs exactly one of"),
    ("{func: abs, impl: f, key: QuantizedPrivateUse1}", "key QuantizedPrivateUse1"),
    ("{structured: abs.out, impl: f}", "not the functional op of a structured group"),
    ("{structured: upsample_nearest1d, impl: f, forms: [inplace]}", "has no inplace form"),
    ("{func: bmm, impl: shared, key: NestedTensorPrivateUse1}", "share no kernel"),
    ("{func: mm, impl: f}", None),
])
def test_bad_entries_are_refused_with_the_reason(tmp_path, native, entry, message):
    path = write_yaml(tmp_path, f"- file: csrc/aten/ops/Made.cpp\n  ops:\n  - {entry}\n")
    if message is None:
        (section,) = gen_mlu_ops.load_sections(path)
        assert "wrapper_PrivateUse1_mm(" in gen_mlu_ops.render_section(section, native)
        return
    with pytest.raises(gen_mlu_ops.YamlError, match=re.escape(message)):
        for section in gen_mlu_ops.load_sections(path):
            gen_mlu_ops.render_section(section, native)


def test_a_missing_file_and_a_file_in_two_sections_are_refused(tmp_path):
    path = write_yaml(tmp_path, "- file: csrc/aten/ops/Gone.cpp\n  ops: []\n")
    with pytest.raises(gen_mlu_ops.YamlError, match="does not exist"):
        gen_mlu_ops.load_sections(path)
    path.write_text("- file: csrc/aten/ops/Made.cpp\n  ops: []\n" * 2)
    with pytest.raises(gen_mlu_ops.YamlError, match="two sections"):
        gen_mlu_ops.load_sections(path)


def test_the_wrappers_keep_the_fallback_guard_and_meta_order(tmp_path, native):
    path = write_yaml(tmp_path, "- file: csrc/aten/ops/Made.cpp\n  ops:\n"
                                "  - {structured: upsample_nearest1d, native_if: ok(self), impl: \"go(self, out)\"}\n")
    (section,) = gen_mlu_ops.load_sections(path)
    text = gen_mlu_ops.render_section(section, native)
    body = text[text.index("wrapper_PrivateUse1_upsample_nearest1d_out("):]
    fallback = body.index("if (!(ok(self))) return cpu_fallback<at::_ops::upsample_nearest1d_out>(")
    guard = body.index("c10::OptionalDeviceGuard guard(at::device_of(self));")
    meta = body.index("run_out<at::meta::structured_upsample_nearest1d, 1>(")
    assert fallback < guard < meta
    assert 'm.impl("upsample_nearest1d.out", TORCH_FN(wrapper_PrivateUse1_upsample_nearest1d_out));' in text
