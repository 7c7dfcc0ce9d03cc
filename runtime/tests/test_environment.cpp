// The machine every runtime test process describes, set before main() (the
// runtime reads its configuration at the first call): two devices of 256 MiB,
// each process with a capacity of its own (Note [Shared device capacity]:
// ctest runs the processes side by side, and many tests count a device's free
// bytes exactly). A variable already set wins, so a test can be rerun by hand
// on another machine description. (Set here rather than as ctest ENVIRONMENT:
// gtest_discover_tests passes only the first variable of a list.)
#include <cstdlib>

namespace {

const bool kMachineDescribed = [] {
  setenv("TORCH_MLU_DEVICE_COUNT", "2", /*overwrite=*/0);
  setenv("TORCH_MLU_DEVICE_MEMORY", "256M", /*overwrite=*/0);
  setenv("TORCH_MLU_SHARED_CAPACITY", "0", /*overwrite=*/0);
  return true;
}();

}  // namespace
