// Advanced indexing on mlu: aten::index (x[i, j], x[i, :, j], x[mask, i]) and
// aten::_index_put_impl_ (the same on the left of `=`, with `+=` as
// accumulate).
//
// PyTorch's own code lays the problem out: the structured meta of
// index.Tensor and at::native::_index_put_impl_ turn masks into index
// tensors (nonzero), broadcast them, move non-adjacent indexed dims to the
// front, check shapes, dtypes and overlaps with CPU's messages, and build a
// TensorIterator over [result, restrided self, indices...]. The kernels in
// mlu_kernels/advanced_index.h run that iterator on the device; index values
// are checked there, so an out-of-range index is a device-side error raised at
// the next synchronisation (Note [Errors belong to queues]).
//
// index_put_ with accumulate (and any index_put_ in deterministic mode) takes
// index_put_with_sort_stub, which leaves the layout to the backend; ours
// builds the same iterator as the other path (put_iterator) and accumulates,
// or assigns, serially: deterministic without sorting, the last of several
// writes to one position winning as after CUDA's stable sort.
#include <ATen/ExpandUtils.h>
#include <ATen/TensorIterator.h>
#include <ATen/native/DispatchStub.h>
#include <ATen/native/IndexKernel.h>
#include <ATen/native/IndexingUtils.h>
#include <ATen/native/TensorAdvancedIndexing.h>
#include <ATen/ops/_index_put_impl_native.h>
#include <ATen/ops/index_meta.h>
#include <ATen/ops/masked_fill.h>
#include <ATen/ops/masked_select.h>
#include <c10/core/DeviceGuard.h>
#include <mlu_kernels/advanced_index.h>

#include "csrc/aten/KernelArgs.h"
#include "csrc/aten/Structured.h"
#include "csrc/aten/StructuredPointwise.h"

namespace torch_mlu {
namespace {

namespace k = mlu::kernels;

using IndexList = c10::List<std::optional<at::Tensor>>;

// The iterator's operands in the kernels' row-major form; operand 0 and 1 are
// the data operands, 2.. the index tensors.
struct IndexLaunch {
  k::Shape shape;
  k::Operand operands[2 + k::kMaxDims];
  k::IndexedDims dims;
};

IndexLaunch index_launch(const at::TensorIteratorBase& iter, at::IntArrayRef indexed_sizes,
                         at::IntArrayRef indexed_strides, const char* op) {
  IndexLaunch launch;
  const int ndim = iter.ndim();
  TORCH_CHECK(ndim <= k::kMaxDims, op, "(): mlu kernels support at most ", k::kMaxDims,
              " dimensions after coalescing, got ", ndim);
  TORCH_CHECK(static_cast<int64_t>(indexed_sizes.size()) <= k::kMaxDims, op, "(): too many index tensors");
  TORCH_INTERNAL_ASSERT(iter.ntensors() == 2 + static_cast<int>(indexed_sizes.size()));
  launch.shape.ndim = ndim;
  for (int d = 0; d < ndim; ++d) launch.shape.sizes[ndim - 1 - d] = iter.shape()[d];
  for (int i = 0; i < iter.ntensors(); ++i) {
    k::Operand& o = launch.operands[i];
    o.data = device_ptr(iter.data_ptr(i));
    o.dtype = require_kernel_dtype(iter.dtype(i), op);
    const int64_t element = static_cast<int64_t>(at::elementSize(iter.dtype(i)));
    for (int d = 0; d < ndim; ++d) o.strides.v[ndim - 1 - d] = iter.strides(i)[d] / element;
  }
  const int64_t element = static_cast<int64_t>(at::elementSize(iter.dtype(1)));
  launch.dims.count = static_cast<int>(indexed_sizes.size());
  for (size_t j = 0; j < indexed_sizes.size(); ++j) {
    launch.dims.sizes[j] = indexed_sizes[j];
    launch.dims.strides[j] = indexed_strides[j] / element;
  }
  return launch;
}

std::string bounds_message(const char* op, const k::AdvancedIndexCheck& check, const k::IndexedDims& dims) {
  return std::string(op) + "(): index " + std::to_string(check.bad_index) + " is out of bounds for dimension " +
         std::to_string(check.dim) + " with size " + std::to_string(dims.sizes[check.dim]);
}

// The index kernel on the put iterator [self restrided, values, indices...]
// (from at::native::_index_put_impl_ or put_iterator below).
// `deterministic`: assignment in iteration order (see the top of this file).
void launch_index_put(at::TensorIterator& iter, at::IntArrayRef indexed_sizes, at::IntArrayRef indexed_strides,
                      bool accumulate, bool deterministic) {
  if (iter.numel() == 0) return;
  const IndexLaunch launch = index_launch(iter, indexed_sizes, indexed_strides, "index_put_");
  c10::DeviceGuard guard(iter.device(0));
  launch_kernel(iter.device(0).index(), "index_put_", [launch, accumulate, deterministic](mlu::TaskContext& context) {
    const k::AdvancedIndexCheck check = k::index_put(launch.shape, launch.operands[0], launch.operands[1],
                                                     launch.operands + 2, launch.dims, accumulate, deterministic);
    if (!check.ok) context.fail(bounds_message("index_put_", check, launch.dims));
  });
}

void index_put_kernel_mlu(at::TensorIterator& iter, at::IntArrayRef indexed_sizes, at::IntArrayRef indexed_strides,
                          bool accumulate) {
  launch_index_put(iter, indexed_sizes, indexed_strides, accumulate, /*deterministic=*/false);
}

// PyTorch's make_info + AdvancedIndex (TensorAdvancedIndexingUtils.h,
// TensorAdvancedIndexing.cpp; libtorch does not export the latter): masks
// become index tensors, indices broadcast together, non-adjacent indexed dims
// move to the front, and `src` is self with the indexed dims replaced by the
// index shape at stride 0.
struct IndexLayout {
  at::Tensor src;
  std::vector<at::Tensor> indices;  // reshaped to broadcast against src
  at::DimVector indexed_sizes;
  at::DimVector indexed_strides;  // in bytes, as the stubs take them
};

IndexLayout index_layout(at::Tensor self, const IndexList& orig) {
  at::native::checkIndexTensorTypes(orig, /*allow_int=*/true);
  std::vector<at::Tensor> indices = at::native::expandTensors(self, orig, /*ensure_same_device=*/true);
  try {
    indices = at::expand_outplace(indices);
  } catch (std::exception&) {
    std::ostringstream shapes;
    for (const at::Tensor& t : indices) {
      if (t.defined()) shapes << (shapes.tellp() > 0 ? ", " : "") << t.sizes();
    }
    TORCH_CHECK_INDEX(false, "shape mismatch: indexing tensors could not be broadcast together with shapes ",
                      shapes.str());
  }
  while (indices.size() < static_cast<size_t>(self.dim())) indices.emplace_back();
  if (!at::native::hasContiguousSubspace(indices))
    std::tie(self, indices) = at::native::transposeToFront(self, indices);

  IndexLayout layout;
  int64_t before = 0, after = 0, indexed = 0;
  at::IntArrayRef replacement;
  for (size_t d = 0; d < indices.size(); ++d) {
    if (!indices[d].defined()) {
      (indexed == 0 ? before : after)++;
      continue;
    }
    ++indexed;
    replacement = indices[d].sizes();
    layout.indexed_sizes.push_back(self.size(static_cast<int64_t>(d)));
    layout.indexed_strides.push_back(self.stride(static_cast<int64_t>(d)) * self.element_size());
  }
  const auto has_zero = [](auto&& sizes) { return std::find(sizes.begin(), sizes.end(), 0) != sizes.end(); };
  TORCH_CHECK_INDEX(!has_zero(layout.indexed_sizes) || has_zero(replacement),
                    "index is out of bounds for dimension with size 0");
  at::DimVector shape(self.sizes()), strides(self.strides());
  shape.erase(shape.begin() + before, shape.begin() + before + indexed);
  strides.erase(strides.begin() + before, strides.begin() + before + indexed);
  shape.insert(shape.begin() + before, replacement.begin(), replacement.end());
  strides.insert(strides.begin() + before, replacement.size(), 0);
  layout.src = self.as_strided(shape, strides);
  for (at::Tensor& index : indices) {
    if (!index.defined()) continue;
    at::DimVector view(static_cast<size_t>(before), 1);
    view.append(index.sizes().begin(), index.sizes().end());
    view.append(static_cast<size_t>(after), 1);
    layout.indices.push_back(index.to(at::kLong).reshape(view));
  }
  return layout;
}

// PyTorch's make_index_put_iterator, with its checks and messages.
at::TensorIterator put_iterator(const IndexLayout& layout, const at::Tensor& value) {
  TORCH_CHECK(at::is_expandable_to(value.sizes(), layout.src.sizes()), "shape mismatch: value tensor of shape ",
              value.sizes(), " cannot be broadcast to indexing result of shape ", layout.src.sizes());
  TORCH_CHECK(value.scalar_type() == layout.src.scalar_type(),
              "Index put requires the source and destination dtypes match, got ", layout.src.scalar_type(),
              " for the destination and ", value.scalar_type(), " for the source.");
  at::TensorIteratorConfig config;
  config.set_check_mem_overlap(false);
  config.resize_outputs(false);
  config.check_all_same_dtype(false);
  config.add_output(layout.src);
  config.add_const_input(value);
  for (const at::Tensor& index : layout.indices) config.add_const_input(index);
  return config.build();
}

void index_put_with_sort_mlu(at::Tensor& self, const IndexList& indices, const at::Tensor& value, bool accumulate,
                             bool /*unsafe*/) {
  TORCH_CHECK(value.device() == self.device(), "expected device ", self.device(), " but got device ", value.device(),
              " for value tensor");
  const IndexLayout layout = index_layout(self, indices);
  at::TensorIterator iter = put_iterator(layout, value);
  launch_index_put(iter, layout.indexed_sizes, layout.indexed_strides, accumulate, /*deterministic=*/true);
}

// A single boolean mask over all of self: x[mask] is a masked_select and
// x[mask] = scalar a masked_fill, without the host round trip of nonzero.
bool is_full_mask(const at::Tensor& self, const IndexList& indices) {
  if (indices.size() != 1) return false;
  const std::optional<at::Tensor> mask = indices[0];
  return mask.has_value() && mask->defined() && mask->scalar_type() == at::kBool && mask->device() == self.device() &&
         mask->sizes() == self.sizes();
}

at::Tensor index_mlu(const at::Tensor& self, const IndexList& indices) {
  if (is_full_mask(self, indices)) return at::masked_select(self, *indices[0]);
  MLUFunctional<at::meta::structured_index_Tensor> op;
  const auto info = op.meta(self, at::IOptTensorListRef(indices));
  if (op.numel() > 0) {
    const IndexLaunch launch = index_launch(op, info.sizes, info.strides, "index");
    launch_kernel(self.device().index(), "index", [launch](mlu::TaskContext& context) {
      const k::AdvancedIndexCheck check =
          k::index_gather(launch.shape, launch.operands[0], launch.operands[1], launch.operands + 2, launch.dims);
      if (!check.ok) context.fail(bounds_message("index", check, launch.dims));
    });
  }
  return op.output();
}

at::Tensor& index_put_impl_mlu(at::Tensor& self, const IndexList& indices, const at::Tensor& values, bool accumulate,
                               bool unsafe) {
  if (!accumulate && values.numel() == 1 && values.device() == self.device() && is_full_mask(self, indices)) {
    return self.masked_fill_(*indices[0], values.reshape({}));  // no .item(): stays asynchronous
  }
  return at::native::_index_put_impl_(self, indices, values, accumulate, unsafe);
}

}  // namespace

}  // namespace torch_mlu

namespace at::native {
REGISTER_PRIVATEUSE1_DISPATCH(index_put_stub, &torch_mlu::index_put_kernel_mlu)
REGISTER_PRIVATEUSE1_DISPATCH(index_put_with_sort_stub, &torch_mlu::index_put_with_sort_mlu)
}  // namespace at::native

// The registrations: csrc/aten/mlu_functions.yaml.
#include "generated/ops/AdvancedIndexing.inc"
