// The fused LSTM / GRU cell steps on mlu. PyTorch's LSTMCell / GRUCell code
// (aten/src/ATen/native/RNN.cpp) calls _thnn_fused_lstm_cell and
// _thnn_fused_gru_cell for CUDA, XPU and PrivateUse1 inputs, so nn.LSTM,
// nn.GRU, nn.LSTMCell and nn.GRUCell need them (the CPU has no kernel to fall
// back to). They are written as CUDA's kernels (RNN.cu) compute them, over
// native element-wise ops: 16-bit inputs compute in float and round once;
// the workspace holds what the backward needs (LSTM: the activated gates
// i, f, g, o; GRU: r, z, n, hx and the hidden side of the new gate), in the
// inputs' dtype like CUDA's.
#include <ATen/OpMathType.h>
#include <ATen/TensorOperators.h>
#include <ATen/ops/cat.h>
#include <ATen/ops/sigmoid.h>
#include <ATen/ops/sum.h>
#include <ATen/ops/tanh.h>
#include <ATen/ops/zeros_like.h>
#include <torch/library.h>

#include "csrc/aten/DeviceCheck.h"

namespace torch_mlu {
namespace {

using OptTensor = std::optional<at::Tensor>;

bool has(const OptTensor& t) { return t.has_value() && t->defined(); }

void check_cell(const char* op, const at::Tensor& input_gates, const at::Tensor& hidden_gates, const at::Tensor& state,
                int64_t gates, const OptTensor& input_bias, const OptTensor& hidden_bias) {
  TORCH_CHECK(input_gates.dim() == 2 && input_gates.sizes() == hidden_gates.sizes(), op,
              ": input_gates and hidden_gates must be 2-D of one size, got ", input_gates.sizes(), " and ",
              hidden_gates.sizes());
  TORCH_CHECK(state.dim() == 2 && state.size(0) == input_gates.size(0) && input_gates.size(1) == gates * state.size(1),
              op, ": expected gates of size [", state.size(0), ", ", gates * state.size(1), "] for a state of size ",
              state.sizes(), ", got ", input_gates.sizes());
  TORCH_CHECK(has(input_bias) == has(hidden_bias), op, ": give both biases or neither");
  if (has(input_bias)) {
    TORCH_CHECK(input_bias->dim() == 1 && input_bias->size(0) == input_gates.size(1) &&
                    hidden_bias->sizes() == input_bias->sizes(),
                op, ": the biases must be 1-D of size ", input_gates.size(1));
  }
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> fused_lstm_cell(const at::Tensor& input_gates,
                                                               const at::Tensor& hidden_gates, const at::Tensor& cx,
                                                               const OptTensor& input_bias,
                                                               const OptTensor& hidden_bias) {
  check_cell("_thnn_fused_lstm_cell", input_gates, hidden_gates, cx, 4, input_bias, hidden_bias);
  const at::ScalarType type = input_gates.scalar_type(), acc = at::toOpMathType(type);
  at::Tensor gates = input_gates.to(acc) + hidden_gates.to(acc);
  if (has(input_bias)) gates = gates + input_bias->to(acc) + hidden_bias->to(acc);
  std::vector<at::Tensor> g = gates.chunk(4, 1);
  const at::Tensor i = g[0].sigmoid(), f = g[1].sigmoid(), c = g[2].tanh(), o = g[3].sigmoid();
  const at::Tensor cy = f * cx.to(acc) + i * c;
  const at::Tensor hy = o * cy.tanh();
  return {hy.to(type), cy.to(cx.scalar_type()), at::cat({i, f, c, o}, 1).to(type)};
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> fused_lstm_cell_backward(const OptTensor& grad_hy,
                                                                        const OptTensor& grad_cy, const at::Tensor& cx,
                                                                        const at::Tensor& cy,
                                                                        const at::Tensor& workspace, bool has_bias) {
  if (!has(grad_hy) && !has(grad_cy)) return {};
  const at::ScalarType type = workspace.scalar_type(), acc = at::toOpMathType(type);
  std::vector<at::Tensor> w = workspace.to(acc).chunk(4, 1);
  const at::Tensor &i = w[0], &f = w[1], &c = w[2], &o = w[3];
  const at::Tensor tanh_cy = cy.to(acc).tanh();
  const at::Tensor ghy = has(grad_hy) ? grad_hy->to(acc) : at::zeros_like(tanh_cy);
  at::Tensor gc = ghy * o * (1 - tanh_cy * tanh_cy);
  if (has(grad_cy)) gc = gc + grad_cy->to(acc);
  const at::Tensor grad_gates =
      at::cat({gc * c * i * (1 - i), gc * cx.to(acc) * f * (1 - f), gc * i * (1 - c * c), ghy * tanh_cy * o * (1 - o)},
              1)
          .to(type);
  at::Tensor grad_bias = has_bias ? grad_gates.sum(0) : at::Tensor();
  return {grad_gates, (gc * f).to(cx.scalar_type()), grad_bias};
}

std::tuple<at::Tensor, at::Tensor> fused_gru_cell(const at::Tensor& input_gates, const at::Tensor& hidden_gates,
                                                  const at::Tensor& hx, const OptTensor& input_bias,
                                                  const OptTensor& hidden_bias) {
  check_cell("_thnn_fused_gru_cell", input_gates, hidden_gates, hx, 3, input_bias, hidden_bias);
  const at::ScalarType type = input_gates.scalar_type(), acc = at::toOpMathType(type);
  at::Tensor ig = input_gates.to(acc), hg = hidden_gates.to(acc);
  if (has(input_bias)) {
    ig = ig + input_bias->to(acc);
    hg = hg + hidden_bias->to(acc);
  }
  std::vector<at::Tensor> in = ig.chunk(3, 1), hid = hg.chunk(3, 1);
  const at::Tensor r = (in[0] + hid[0]).sigmoid(), z = (in[1] + hid[1]).sigmoid();
  const at::Tensor& hn = hid[2];
  const at::Tensor n = (in[2] + r * hn).tanh();
  const at::Tensor h = hx.to(acc);
  const at::Tensor hy = n + z * (h - n);
  return {hy.to(hx.scalar_type()), at::cat({r, z, n, h, hn}, 1).to(type)};
}

std::tuple<at::Tensor, at::Tensor, at::Tensor, at::Tensor, at::Tensor> fused_gru_cell_backward(
    const at::Tensor& grad_hy, const at::Tensor& workspace, bool has_bias) {
  const at::ScalarType type = workspace.scalar_type(), acc = at::toOpMathType(type);
  std::vector<at::Tensor> w = workspace.to(acc).chunk(5, 1);
  const at::Tensor &r = w[0], &z = w[1], &n = w[2], &h = w[3], &hn = w[4];
  const at::Tensor go = grad_hy.to(acc);
  const at::Tensor gn = go * (1 - z) * (1 - n * n);
  const at::Tensor gr = gn * hn * (1 - r) * r;
  const at::Tensor gz = go * (h - n) * (1 - z) * z;
  const at::Tensor grad_input_gates = at::cat({gr, gz, gn}, 1).to(type);
  const at::Tensor grad_hidden_gates = at::cat({gr, gz, gn * r}, 1).to(type);
  at::Tensor grad_input_bias = has_bias ? grad_input_gates.sum(0) : at::Tensor();
  at::Tensor grad_hidden_bias = has_bias ? grad_hidden_gates.sum(0) : at::Tensor();
  return {grad_input_gates, grad_hidden_gates, (go * z).to(grad_hy.scalar_type()), grad_input_bias, grad_hidden_bias};
}

}  // namespace

}  // namespace torch_mlu

// The registrations: csrc/aten/mlu_functions.yaml.
#include "generated/ops/RnnCellOps.inc"
