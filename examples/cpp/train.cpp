// Trains a small classifier on mlu with the libtorch C++ frontend (torch::nn, torch::optim), no Python.
//
// Linking torch_mlu::torch_mlu is all a program needs for the device "mlu" to exist: libtorch_mlu
// registers it as it loads. The batches are copied to the device on a side stream, and the training
// stream waits for each copy through an event, so the next copy overlaps the current step. The same
// model is trained on the CPU from the same seed: the program fails unless both learn the task and
// agree (exit status 1).
#include <cstdio>
#include <vector>

#include <torch/torch.h>

#include <csrc/torch_mlu.h>

namespace {

constexpr int kFeatures = 16;
constexpr int kClasses = 4;
constexpr int kBatch = 64;
constexpr int kBatches = 16;
constexpr int kEpochs = 12;

struct Net : torch::nn::Module {
  Net() {
    hidden = register_module("hidden", torch::nn::Linear(kFeatures, 64));
    norm = register_module("norm", torch::nn::LayerNorm(torch::nn::LayerNormOptions({64})));
    out = register_module("out", torch::nn::Linear(64, kClasses));
  }
  torch::Tensor forward(torch::Tensor x) { return out(torch::gelu(norm(hidden(x)))); }
  torch::nn::Linear hidden{nullptr}, out{nullptr};
  torch::nn::LayerNorm norm{nullptr};
};

// A teacher's labels for random inputs: argmax of a fixed random linear map.
std::vector<std::pair<torch::Tensor, torch::Tensor>> make_data() {
  torch::manual_seed(1);
  const torch::Tensor teacher = torch::randn({kFeatures, kClasses});
  std::vector<std::pair<torch::Tensor, torch::Tensor>> batches;
  for (int i = 0; i < kBatches; ++i) {
    torch::Tensor x = torch::randn({kBatch, kFeatures});
    batches.emplace_back(x.pin_memory(), x.matmul(teacher).argmax(1).pin_memory());
  }
  return batches;
}

struct Result {
  float first_loss, last_loss, accuracy;
  torch::Tensor weight;  // of the output layer, on the CPU
};

Result train(const torch::Device& device, const std::vector<std::pair<torch::Tensor, torch::Tensor>>& data) {
  torch::manual_seed(0);  // seeds the CPU and every mlu device alike
  auto net = std::make_shared<Net>();
  net->to(device);
  torch::optim::AdamW optimizer(net->parameters(), torch::optim::AdamWOptions(3e-3).weight_decay(1e-2));
  const bool on_mlu = device.type() == c10::DeviceType::PrivateUse1;
  std::optional<torch_mlu::MLUStream> copy_stream;
  if (on_mlu) copy_stream = torch_mlu::getStreamFromPool(/*high_priority=*/true, device.index());

  // Starts the copy of batch i to the device; returns it with the event that marks its end.
  auto stage = [&](size_t i) {
    torch_mlu::MLUEvent copied;
    if (!on_mlu) return std::make_tuple(data[i].first, data[i].second, std::move(copied));
    torch_mlu::MLUStreamGuard on_copy_stream(*copy_stream);
    torch::Tensor x = data[i].first.to(device, /*non_blocking=*/true);
    torch::Tensor y = data[i].second.to(device, /*non_blocking=*/true);
    copied.record(*copy_stream);
    return std::make_tuple(x, y, std::move(copied));
  };

  Result result{};
  for (int epoch = 0; epoch < kEpochs; ++epoch) {
    float loss_sum = 0;
    auto next = stage(0);
    for (size_t i = 0; i < data.size(); ++i) {
      auto [x, y, copied] = std::move(next);
      if (on_mlu) {
        const torch_mlu::MLUStream compute = torch_mlu::getCurrentMLUStream(device.index());
        copied.block(compute);  // this step's batch has arrived
        // The batch was made on the copy stream: keep its memory until the compute stream is done with it.
        torch_mlu::MLUCachingAllocator::recordStream(x.storage().data_ptr(), compute);
        y.record_stream(compute);  // the same, through the tensor
      }
      if (i + 1 < data.size()) next = stage(i + 1);  // overlaps this step
      optimizer.zero_grad();
      torch::Tensor loss = torch::nn::functional::cross_entropy(net->forward(x), y);
      loss.backward();
      optimizer.step();
      loss_sum += loss.item<float>();
    }
    const float mean = loss_sum / float(data.size());
    if (epoch == 0) result.first_loss = mean;
    result.last_loss = mean;
  }
  torch::NoGradGuard no_grad;
  int64_t correct = 0;
  for (const auto& [x, y] : data) correct += (net->forward(x.to(device)).argmax(1).cpu() == y).sum().item<int64_t>();
  result.accuracy = float(correct) / float(kBatch * kBatches);
  result.weight = net->out->weight.cpu();
  if (on_mlu) torch_mlu::device_synchronize(device.index());
  return result;
}

}  // namespace

int main() {
  std::printf("mlu devices: %d\n", int(torch_mlu::device_count()));
  const auto data = make_data();
  const torch::Device mlu("mlu:0");  // parses: libtorch_mlu registered the name
  const Result on_mlu = train(mlu, data);
  const Result on_cpu = train(torch::kCPU, data);
  std::printf("mlu: loss %.4f -> %.4f, accuracy %.3f\n", on_mlu.first_loss, on_mlu.last_loss, on_mlu.accuracy);
  std::printf("cpu: loss %.4f -> %.4f, accuracy %.3f\n", on_cpu.first_loss, on_cpu.last_loss, on_cpu.accuracy);
  const bool learned = on_mlu.last_loss < 0.5f * on_mlu.first_loss && on_mlu.accuracy > 0.9f;
  const bool agrees = torch::allclose(on_mlu.weight, on_cpu.weight, /*rtol=*/1e-3, /*atol=*/1e-4);
  std::printf("learned: %s, agrees with the CPU: %s\n", learned ? "yes" : "no", agrees ? "yes" : "no");
  return learned && agrees ? 0 : 1;
}
