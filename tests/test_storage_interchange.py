"""Storages, legacy tensor and storage types, DLPack and safetensors on mlu, against the CPU's behaviour.

Storages: UntypedStorage / TypedStorage on mlu (construction, fill_, copy_ both ways, resize_ keeping the
prefix, tolist, pickling, torch.save / torch.load keeping views of one storage shared, Tensor.set_).
Legacy types: torch.mlu.FloatTensor & co. (construction, isinstance, Tensor.type in both forms) and
torch.mlu.FloatStorage & co. DLPack: zero-copy round trips with the device kept (kDLExtDev), views and
strides, copies to and from the CPU. safetensors: save_file of mlu tensors, load_file(device="mlu").
"""
import io
import pickle
import warnings

import pytest
import torch

import torch_mlu  # noqa: F401  (registers mlu)

# Zero-copy interchange (DLPack, storages aliasing device memory) runs in both passes of `make test`:
# under the host-access trap and with directly host-accessible memory, the default.
pytestmark = pytest.mark.also_untrapped

warnings.filterwarnings("ignore", message="TypedStorage is deprecated")

LEGACY = {"ByteTensor": torch.uint8, "CharTensor": torch.int8, "ShortTensor": torch.int16,
          "IntTensor": torch.int32, "LongTensor": torch.int64, "HalfTensor": torch.float16,
          "FloatTensor": torch.float32, "DoubleTensor": torch.float64, "BFloat16Tensor": torch.bfloat16,
          "BoolTensor": torch.bool}
STORAGES = {name.replace("Tensor", "Storage"): dtype for name, dtype in LEGACY.items()} | {
    "ComplexFloatStorage": torch.complex64, "ComplexDoubleStorage": torch.complex128}


# --- storages -----------------------------------------------------------------------------------------

def test_untyped_storage_lifecycle_matches_the_cpu():
    results = {}
    for device in ("cpu", "mlu"):
        s = torch.UntypedStorage(8, device=device)
        assert s.device.type == device and s.nbytes() == 8
        filled = s.fill_(7).tolist()
        s.copy_(torch.tensor([1, 2, 3, 4, 5, 6, 7, 8], dtype=torch.uint8).untyped_storage())
        s.resize_(12)  # grows, keeping the first 8 bytes
        prefix = s.tolist()[:8]
        s.resize_(4)
        results[device] = (filled, prefix, s.tolist(), s.nbytes(), s.cpu().tolist(), s.element_size())
    assert results["mlu"] == results["cpu"]


def test_storage_moves_between_devices():
    host = torch.tensor([1.5, -2.0]).untyped_storage()
    device = host.mlu()
    assert device.device == torch.device("mlu", 0) and device.is_mlu
    assert device.tolist() == host.tolist()
    assert device.cpu().tolist() == host.tolist()


def test_typed_storage_ops():
    storage = torch.arange(4., device="mlu").storage()
    assert (storage.dtype, storage.device, storage.size(), len(storage)) == (torch.float32, torch.device("mlu", 0),
                                                                          4, 4)
    storage[1] = 9.0
    assert storage.tolist() == [0.0, 9.0, 2.0, 3.0] and storage[1] == 9.0
    assert storage.double().dtype == torch.float64 and storage.double().device.type == "mlu"
    assert storage.data_ptr() == storage._untyped_storage.data_ptr()
    assert storage.get_device() == 0
    built = torch.TypedStorage([1.0, 2.0], dtype=torch.float32, device="mlu")
    assert built.tolist() == [1.0, 2.0] and built.device.type == "mlu"


def test_storages_pickle_and_serialize():
    typed = torch.arange(4., device="mlu").storage()
    assert pickle.loads(pickle.dumps(typed)).tolist() == typed.tolist()
    buffer = io.BytesIO()
    base = torch.arange(6., device="mlu")
    torch.save({"base": base, "view": base[2:].view(2, 2), "storage": typed}, buffer)
    buffer.seek(0)
    loaded = torch.load(buffer, weights_only=False)
    assert loaded["view"].device.type == "mlu" and loaded["view"].tolist() == [[2.0, 3.0], [4.0, 5.0]]
    # One storage in, one storage out: the view still aliases its base.
    assert loaded["view"].untyped_storage().data_ptr() == loaded["base"].untyped_storage().data_ptr()
    loaded["base"][3] = -1
    assert loaded["view"][0, 1].item() == -1
    assert loaded["storage"].tolist() == typed.tolist() and loaded["storage"].device.type == "mlu"


def test_set_onto_a_storage():
    storage = torch.arange(6., device="mlu").untyped_storage()
    t = torch.empty(0, device="mlu").set_(storage, 1, (2, 2), (2, 1))
    assert t.tolist() == [[1.0, 2.0], [3.0, 4.0]]
    t.fill_(0)
    assert torch.empty(0, device="mlu").set_(storage).tolist() == [0, 0, 0, 0, 0, 5]
    with pytest.raises(RuntimeError, match="expected an mlu storage, got a storage on cpu"):
        torch.empty(0, device="mlu").set_(torch.arange(6.).untyped_storage())


# --- legacy types -------------------------------------------------------------------------------------

@pytest.mark.parametrize("name", LEGACY)
def test_legacy_tensor_types(name):
    cls, dtype = getattr(torch.mlu, name), LEGACY[name]
    empty = cls(2, 3)
    assert (empty.shape, empty.dtype, empty.device.type) == ((2, 3), dtype, "mlu")
    assert cls([1, 0]).tolist() == torch.tensor([1, 0], dtype=dtype).tolist()
    assert isinstance(empty, cls) and not isinstance(empty.cpu(), cls)
    assert empty.type() == f"torch.mlu.{name}"
    assert torch.zeros(2).type(f"torch.mlu.{name}").dtype == dtype
    assert torch.zeros(2).type(cls).device.type == "mlu"
    assert cls(2).type(getattr(torch, name)).device.type == "cpu"


@pytest.mark.parametrize("name", STORAGES)
def test_legacy_storage_types(name):
    cls, dtype = getattr(torch.mlu, name), STORAGES[name]
    storage = cls(3)
    assert (storage.dtype, storage.device.type, storage.size()) == (dtype, "mlu", 3)
    assert isinstance(storage, cls) and torch.is_storage(storage)
    assert cls([1, 0]).tolist() == torch.tensor([1, 0], dtype=dtype).tolist()
    assert torch.zeros(2, dtype=dtype, device="mlu").storage().type() == f"torch.mlu.{name}"
    assert pickle.loads(pickle.dumps(cls([1, 0]))).device.type == "mlu"
    with pytest.raises(RuntimeError, match="from_buffer: Not available for MLU storage"):
        cls.from_buffer(b"\0" * 8)


# --- DLPack -------------------------------------------------------------------------------------------

def test_dlpack_device_is_the_extension_device():
    from torch.utils.dlpack import DLDeviceType
    assert torch.ones(2, device="mlu").__dlpack_device__() == (DLDeviceType.kDLExtDev, 0)
    assert torch.ones(2).__dlpack_device__() == (DLDeviceType.kDLCPU, 0)  # other devices untouched


@pytest.mark.parametrize("export", ["protocol", "capsule", "versioned"])
def test_dlpack_round_trip_is_zero_copy(export):
    x = torch.arange(12., device="mlu").reshape(3, 4)
    view = x.t()[1:]  # strided, with an offset
    source = {"protocol": lambda t: t, "capsule": torch.utils.dlpack.to_dlpack,
              "versioned": lambda t: t.__dlpack__(max_version=(1, 0))}[export](view)
    y = torch.from_dlpack(source)
    assert y.device == x.device and y.dtype == x.dtype
    assert (y.shape, y.stride()) == (view.shape, view.stride()) and y.data_ptr() == view.data_ptr()
    y[0, 0] = -5  # shares memory
    assert x[0, 1].item() == -5


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.int64, torch.bool, torch.complex64])
def test_dlpack_dtypes(dtype):
    x = torch.ones(3, device="mlu", dtype=dtype)
    y = torch.from_dlpack(x)
    assert y.dtype == dtype and y.data_ptr() == x.data_ptr()


def test_dlpack_copies_across_devices():
    x = torch.arange(4., device="mlu")
    to_host = torch.from_dlpack(x, device="cpu")
    assert to_host.device.type == "cpu" and to_host.tolist() == x.tolist()
    to_device = torch.from_dlpack(torch.arange(3.), device="mlu")
    assert to_device.device.type == "mlu" and to_device.tolist() == [0.0, 1.0, 2.0]


def test_dlpack_refuses_what_pytorch_refuses():
    with pytest.raises(BufferError, match="require gradient"):
        torch.ones(2, device="mlu", requires_grad=True).__dlpack__()
    with pytest.raises(BufferError, match="conjugate bit"):
        torch.ones(2, device="mlu", dtype=torch.complex64).conj().__dlpack__()


# --- safetensors --------------------------------------------------------------------------------------

def test_safetensors_save_and_load_on_mlu(tmp_path):
    safetensors = pytest.importorskip("safetensors.torch")
    tensors = {"weight": torch.randn(4, 3, device="mlu"), "half": torch.ones(5, device="mlu", dtype=torch.bfloat16),
               "ids": torch.arange(7, device="mlu")}
    path = str(tmp_path / "model.safetensors")
    safetensors.save_file(tensors, path)
    for device in ("mlu", "mlu:0"):
        loaded = safetensors.load_file(path, device=device)
        for name, t in tensors.items():
            assert loaded[name].device == torch.device("mlu", 0) and loaded[name].dtype == t.dtype
            assert torch.equal(loaded[name].cpu(), t.cpu())
    from_bytes = safetensors.load(safetensors.save(tensors))  # in memory, to the CPU
    assert torch.equal(from_bytes["weight"], tensors["weight"].cpu())
