// oneDNN opened with RTLD_DEEPBIND, and the C API our callers use
// forwarding into it.
//
// Note [oneDNN beside PyTorch's]
// libtorch_cpu carries its own oneDNN, statically linked, and exports the
// template instantiations in it (std::call_once thunks of
// dnnl::impl::cpu::x64::gemm_info_t<float, float, float>::jit_init, ...).
// Debian's libdnnl has the same names; linked normally, its calls to them
// bound into torch's copy (LD_DEBUG=bindings), so our device threads ran
// torch's JIT initialisation under libdnnl's once-flags, and a later CPU
// convolution crashed in Xbyak (tests/test_opinfo.py conv1d, under one heap
// layout). So libdnnl is never linked: it is dlopen'ed with RTLD_DEEPBIND,
// which puts its own definitions ahead of the global scope for its own
// lookups, and the 31 C entry points dnnl.hpp calls (the only ones the
// oneDNN callers reach) are defined here, forwarding to it. A process where
// libdnnl.so.2 cannot be opened runs our own kernels (dnnl_loaded()).
//
// Invariants: the forwarding functions are called only after dnnl_loaded()
// returned true (the callers' "linked" checks go through it); the table is
// filled once and never changes.
// Compiled empty in builds without oneDNN (MLU_KERNELS_WITH_DNNL=0).
#if MLU_KERNELS_WITH_DNNL
#include <dlfcn.h>

// Hidden: the forwarding entry points serve this library's oneDNN callers
// only and must not interpose on anyone else's oneDNN.
#pragma GCC visibility push(hidden)
#include "dnnl_support.h"

namespace mlu::kernels::detail {
namespace {

struct DnnlLibrary {
  decltype(&::dnnl_dilated_convolution_backward_data_desc_init) dilated_convolution_backward_data_desc_init;
  decltype(&::dnnl_dilated_convolution_backward_weights_desc_init) dilated_convolution_backward_weights_desc_init;
  decltype(&::dnnl_dilated_convolution_forward_desc_init) dilated_convolution_forward_desc_init;
  decltype(&::dnnl_engine_create) engine_create;
  decltype(&::dnnl_engine_destroy) engine_destroy;
  decltype(&::dnnl_matmul_desc_init) matmul_desc_init;
  decltype(&::dnnl_memory_create) memory_create;
  decltype(&::dnnl_memory_desc_equal) memory_desc_equal;
  decltype(&::dnnl_memory_desc_get_size) memory_desc_get_size;
  decltype(&::dnnl_memory_desc_init_by_strides) memory_desc_init_by_strides;
  decltype(&::dnnl_memory_desc_init_by_tag) memory_desc_init_by_tag;
  decltype(&::dnnl_memory_destroy) memory_destroy;
  decltype(&::dnnl_memory_get_data_handle) memory_get_data_handle;
  decltype(&::dnnl_memory_get_engine) memory_get_engine;
  decltype(&::dnnl_memory_get_memory_desc) memory_get_memory_desc;
  decltype(&::dnnl_primitive_attr_create) primitive_attr_create;
  decltype(&::dnnl_primitive_attr_destroy) primitive_attr_destroy;
  decltype(&::dnnl_primitive_attr_set_scratchpad_mode) primitive_attr_set_scratchpad_mode;
  decltype(&::dnnl_primitive_create) primitive_create;
  decltype(&::dnnl_primitive_desc_destroy) primitive_desc_destroy;
  decltype(&::dnnl_primitive_desc_iterator_create) primitive_desc_iterator_create;
  decltype(&::dnnl_primitive_desc_iterator_destroy) primitive_desc_iterator_destroy;
  decltype(&::dnnl_primitive_desc_iterator_fetch) primitive_desc_iterator_fetch;
  decltype(&::dnnl_primitive_desc_query) primitive_desc_query;
  decltype(&::dnnl_primitive_desc_query_md) primitive_desc_query_md;
  decltype(&::dnnl_primitive_destroy) primitive_destroy;
  decltype(&::dnnl_primitive_execute) primitive_execute;
  decltype(&::dnnl_reorder_primitive_desc_create) reorder_primitive_desc_create;
  decltype(&::dnnl_stream_create) stream_create;
  decltype(&::dnnl_stream_destroy) stream_destroy;
  decltype(&::dnnl_stream_wait) stream_wait;
};

template <class F>
bool bind_in(void* handle, F& slot, const char* name) {
  slot = reinterpret_cast<F>(dlsym(handle, name));
  return slot != nullptr;
}

const DnnlLibrary* open_library() {
  void* handle = dlopen("libdnnl.so.2", RTLD_NOW | RTLD_LOCAL | RTLD_DEEPBIND);
  if (handle == nullptr) return nullptr;
  static DnnlLibrary t;
  const bool found = bind_in(handle, t.dilated_convolution_backward_data_desc_init, "dnnl_dilated_convolution_backward_data_desc_init") &&
         bind_in(handle, t.dilated_convolution_backward_weights_desc_init, "dnnl_dilated_convolution_backward_weights_desc_init") &&
         bind_in(handle, t.dilated_convolution_forward_desc_init, "dnnl_dilated_convolution_forward_desc_init") &&
         bind_in(handle, t.engine_create, "dnnl_engine_create") &&
         bind_in(handle, t.engine_destroy, "dnnl_engine_destroy") &&
         bind_in(handle, t.matmul_desc_init, "dnnl_matmul_desc_init") &&
         bind_in(handle, t.memory_create, "dnnl_memory_create") &&
         bind_in(handle, t.memory_desc_equal, "dnnl_memory_desc_equal") &&
         bind_in(handle, t.memory_desc_get_size, "dnnl_memory_desc_get_size") &&
         bind_in(handle, t.memory_desc_init_by_strides, "dnnl_memory_desc_init_by_strides") &&
         bind_in(handle, t.memory_desc_init_by_tag, "dnnl_memory_desc_init_by_tag") &&
         bind_in(handle, t.memory_destroy, "dnnl_memory_destroy") &&
         bind_in(handle, t.memory_get_data_handle, "dnnl_memory_get_data_handle") &&
         bind_in(handle, t.memory_get_engine, "dnnl_memory_get_engine") &&
         bind_in(handle, t.memory_get_memory_desc, "dnnl_memory_get_memory_desc") &&
         bind_in(handle, t.primitive_attr_create, "dnnl_primitive_attr_create") &&
         bind_in(handle, t.primitive_attr_destroy, "dnnl_primitive_attr_destroy") &&
         bind_in(handle, t.primitive_attr_set_scratchpad_mode, "dnnl_primitive_attr_set_scratchpad_mode") &&
         bind_in(handle, t.primitive_create, "dnnl_primitive_create") &&
         bind_in(handle, t.primitive_desc_destroy, "dnnl_primitive_desc_destroy") &&
         bind_in(handle, t.primitive_desc_iterator_create, "dnnl_primitive_desc_iterator_create") &&
         bind_in(handle, t.primitive_desc_iterator_destroy, "dnnl_primitive_desc_iterator_destroy") &&
         bind_in(handle, t.primitive_desc_iterator_fetch, "dnnl_primitive_desc_iterator_fetch") &&
         bind_in(handle, t.primitive_desc_query, "dnnl_primitive_desc_query") &&
         bind_in(handle, t.primitive_desc_query_md, "dnnl_primitive_desc_query_md") &&
         bind_in(handle, t.primitive_destroy, "dnnl_primitive_destroy") &&
         bind_in(handle, t.primitive_execute, "dnnl_primitive_execute") &&
         bind_in(handle, t.reorder_primitive_desc_create, "dnnl_reorder_primitive_desc_create") &&
         bind_in(handle, t.stream_create, "dnnl_stream_create") &&
         bind_in(handle, t.stream_destroy, "dnnl_stream_destroy") &&
         bind_in(handle, t.stream_wait, "dnnl_stream_wait");
  return found ? &t : nullptr;
}

const DnnlLibrary* loaded() {
  static const DnnlLibrary* table = open_library();
  return table;
}

const DnnlLibrary& library() { return *loaded(); }

}  // namespace

bool dnnl_loaded() { return loaded() != nullptr; }

}  // namespace mlu::kernels::detail

using mlu::kernels::detail::library;

extern "C" {

dnnl_status_t dnnl_dilated_convolution_backward_data_desc_init(dnnl_convolution_desc_t *conv_desc, dnnl_alg_kind_t alg_kind, const dnnl_memory_desc_t *diff_src_desc, const dnnl_memory_desc_t *weights_desc, const dnnl_memory_desc_t *diff_dst_desc, const dnnl_dims_t strides, const dnnl_dims_t dilates, const dnnl_dims_t padding_l, const dnnl_dims_t padding_r) {
  return library().dilated_convolution_backward_data_desc_init(conv_desc, alg_kind, diff_src_desc, weights_desc, diff_dst_desc, strides, dilates, padding_l, padding_r);
}

dnnl_status_t dnnl_dilated_convolution_backward_weights_desc_init(dnnl_convolution_desc_t *conv_desc, dnnl_alg_kind_t alg_kind, const dnnl_memory_desc_t *src_desc, const dnnl_memory_desc_t *diff_weights_desc, const dnnl_memory_desc_t *diff_bias_desc, const dnnl_memory_desc_t *diff_dst_desc, const dnnl_dims_t strides, const dnnl_dims_t dilates, const dnnl_dims_t padding_l, const dnnl_dims_t padding_r) {
  return library().dilated_convolution_backward_weights_desc_init(conv_desc, alg_kind, src_desc, diff_weights_desc, diff_bias_desc, diff_dst_desc, strides, dilates, padding_l, padding_r);
}

dnnl_status_t dnnl_dilated_convolution_forward_desc_init(dnnl_convolution_desc_t *conv_desc, dnnl_prop_kind_t prop_kind, dnnl_alg_kind_t alg_kind, const dnnl_memory_desc_t *src_desc, const dnnl_memory_desc_t *weights_desc, const dnnl_memory_desc_t *bias_desc, const dnnl_memory_desc_t *dst_desc, const dnnl_dims_t strides, const dnnl_dims_t dilates, const dnnl_dims_t padding_l, const dnnl_dims_t padding_r) {
  return library().dilated_convolution_forward_desc_init(conv_desc, prop_kind, alg_kind, src_desc, weights_desc, bias_desc, dst_desc, strides, dilates, padding_l, padding_r);
}

dnnl_status_t dnnl_engine_create(dnnl_engine_t *engine, dnnl_engine_kind_t kind, size_t index) {
  return library().engine_create(engine, kind, index);
}

dnnl_status_t dnnl_engine_destroy(dnnl_engine_t engine) {
  return library().engine_destroy(engine);
}

dnnl_status_t dnnl_matmul_desc_init(dnnl_matmul_desc_t *matmul_desc, const dnnl_memory_desc_t *src_desc, const dnnl_memory_desc_t *weights_desc, const dnnl_memory_desc_t *bias_desc, const dnnl_memory_desc_t *dst_desc) {
  return library().matmul_desc_init(matmul_desc, src_desc, weights_desc, bias_desc, dst_desc);
}

dnnl_status_t dnnl_memory_create(dnnl_memory_t *memory, const dnnl_memory_desc_t *memory_desc, dnnl_engine_t engine, void *handle) {
  return library().memory_create(memory, memory_desc, engine, handle);
}

int dnnl_memory_desc_equal(const dnnl_memory_desc_t *lhs, const dnnl_memory_desc_t *rhs) {
  return library().memory_desc_equal(lhs, rhs);
}

size_t dnnl_memory_desc_get_size(const dnnl_memory_desc_t *memory_desc) {
  return library().memory_desc_get_size(memory_desc);
}

dnnl_status_t dnnl_memory_desc_init_by_strides(dnnl_memory_desc_t *memory_desc, int ndims, const dnnl_dims_t dims, dnnl_data_type_t data_type, const dnnl_dims_t strides) {
  return library().memory_desc_init_by_strides(memory_desc, ndims, dims, data_type, strides);
}

dnnl_status_t dnnl_memory_desc_init_by_tag(dnnl_memory_desc_t *memory_desc, int ndims, const dnnl_dims_t dims, dnnl_data_type_t data_type, dnnl_format_tag_t tag) {
  return library().memory_desc_init_by_tag(memory_desc, ndims, dims, data_type, tag);
}

dnnl_status_t dnnl_memory_destroy(dnnl_memory_t memory) {
  return library().memory_destroy(memory);
}

dnnl_status_t dnnl_memory_get_data_handle(const_dnnl_memory_t memory, void **handle) {
  return library().memory_get_data_handle(memory, handle);
}

dnnl_status_t dnnl_memory_get_engine(const_dnnl_memory_t memory, dnnl_engine_t *engine) {
  return library().memory_get_engine(memory, engine);
}

dnnl_status_t dnnl_memory_get_memory_desc(const_dnnl_memory_t memory, const dnnl_memory_desc_t **memory_desc) {
  return library().memory_get_memory_desc(memory, memory_desc);
}

dnnl_status_t dnnl_primitive_attr_create(dnnl_primitive_attr_t *attr) {
  return library().primitive_attr_create(attr);
}

dnnl_status_t dnnl_primitive_attr_destroy(dnnl_primitive_attr_t attr) {
  return library().primitive_attr_destroy(attr);
}

dnnl_status_t dnnl_primitive_attr_set_scratchpad_mode(dnnl_primitive_attr_t attr, dnnl_scratchpad_mode_t mode) {
  return library().primitive_attr_set_scratchpad_mode(attr, mode);
}

dnnl_status_t dnnl_primitive_create(dnnl_primitive_t *primitive, const_dnnl_primitive_desc_t primitive_desc) {
  return library().primitive_create(primitive, primitive_desc);
}

dnnl_status_t dnnl_primitive_desc_destroy(dnnl_primitive_desc_t primitive_desc) {
  return library().primitive_desc_destroy(primitive_desc);
}

dnnl_status_t dnnl_primitive_desc_iterator_create(dnnl_primitive_desc_iterator_t *iterator, const_dnnl_op_desc_t op_desc, const_dnnl_primitive_attr_t attr, dnnl_engine_t engine, const_dnnl_primitive_desc_t hint_forward_primitive_desc) {
  return library().primitive_desc_iterator_create(iterator, op_desc, attr, engine, hint_forward_primitive_desc);
}

dnnl_status_t dnnl_primitive_desc_iterator_destroy(dnnl_primitive_desc_iterator_t iterator) {
  return library().primitive_desc_iterator_destroy(iterator);
}

dnnl_primitive_desc_t dnnl_primitive_desc_iterator_fetch(const_dnnl_primitive_desc_iterator_t iterator) {
  return library().primitive_desc_iterator_fetch(iterator);
}

dnnl_status_t dnnl_primitive_desc_query(const_dnnl_primitive_desc_t primitive_desc, dnnl_query_t what, int index, void *result) {
  return library().primitive_desc_query(primitive_desc, what, index, result);
}

const dnnl_memory_desc_t *dnnl_primitive_desc_query_md(const_dnnl_primitive_desc_t primitive_desc, dnnl_query_t what, int index) {
  return library().primitive_desc_query_md(primitive_desc, what, index);
}

dnnl_status_t dnnl_primitive_destroy(dnnl_primitive_t primitive) {
  return library().primitive_destroy(primitive);
}

dnnl_status_t dnnl_primitive_execute(const_dnnl_primitive_t primitive, dnnl_stream_t stream, int nargs, const dnnl_exec_arg_t *args) {
  return library().primitive_execute(primitive, stream, nargs, args);
}

dnnl_status_t dnnl_reorder_primitive_desc_create(dnnl_primitive_desc_t *reorder_primitive_desc, const dnnl_memory_desc_t *src_desc, dnnl_engine_t src_engine, const dnnl_memory_desc_t *dst_desc, dnnl_engine_t dst_engine, const_dnnl_primitive_attr_t attr) {
  return library().reorder_primitive_desc_create(reorder_primitive_desc, src_desc, src_engine, dst_desc, dst_engine, attr);
}

dnnl_status_t dnnl_stream_create(dnnl_stream_t *stream, dnnl_engine_t engine, unsigned flags) {
  return library().stream_create(stream, engine, flags);
}

dnnl_status_t dnnl_stream_destroy(dnnl_stream_t stream) {
  return library().stream_destroy(stream);
}

dnnl_status_t dnnl_stream_wait(dnnl_stream_t stream) {
  return library().stream_wait(stream);
}

}  // extern "C"

#pragma GCC visibility pop
#endif  // MLU_KERNELS_WITH_DNNL
