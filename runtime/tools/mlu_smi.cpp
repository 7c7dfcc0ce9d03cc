// mlu-smi: the device monitor of the software MLU (nvidia-smi / cnmon shaped).
//
// Reads the shared-memory registry every process using the runtime keeps
// (Note [Monitor registry] in mlu_runtime/monitor.h) and prints the devices
// (memory used / capacity, utilization, queues) and the processes using them,
// as a table or as JSON (one document per report). Torch-free, so it starts at
// once; the `mlu-smi` and `cnmon` console scripts of torch_mlu run it.
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "mlu_runtime/device.h"
#include "mlu_runtime/monitor.h"
#include "mlu_runtime/status.h"

namespace {

struct Options {
  bool json = false;
  double loop_seconds = 0;  // 0: one report
  long count = 0;           // reports to print in loop mode; 0: until interrupted
  std::set<int> devices;    // empty: all
};

void usage(FILE* out) {
  std::fprintf(out,
               "usage: mlu-smi [-i DEVICE[,DEVICE...]] [-l SECONDS] [-c COUNT] [--json]\n"
               "\n"
               "Shows the software MLU's devices (memory used / capacity, utilization over the last second,\n"
               "busy / live queues) and the processes using them, read from the registry each process keeps\n"
               "(%s).\n"
               "\n"
               "  -i, --id DEVICES    only these physical devices (a comma list)\n"
               "  -l, --loop SECONDS  report again every SECONDS until interrupted\n"
               "  -c, --count COUNT   with --loop: stop after COUNT reports\n"
               "      --json          JSON instead of a table (one document per line per report)\n"
               "  -h, --help          this text\n",
               mlu::mluMonitorDirectory().c_str());
}

[[noreturn]] void bad_usage(const std::string& message) {
  std::fprintf(stderr, "mlu-smi: %s\n", message.c_str());
  usage(stderr);
  std::exit(2);
}

bool parse_number(const char* text, double* value) {
  char* end = nullptr;
  *value = std::strtod(text, &end);
  return end != text && *end == '\0' && std::isfinite(*value) && *value >= 0;
}

Options parse(int argc, char** argv) {
  Options options;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    auto value = [&]() -> const char* {
      if (i + 1 >= argc) bad_usage(arg + " needs a value");
      return argv[++i];
    };
    if (arg == "-h" || arg == "--help") {
      usage(stdout);
      std::exit(0);
    } else if (arg == "--json") {
      options.json = true;
    } else if (arg == "-l" || arg == "--loop") {
      const char* text = value();
      if (!parse_number(text, &options.loop_seconds) || options.loop_seconds <= 0) {
        bad_usage(std::string("-l expects a positive number of seconds, got '") + text + "'");
      }
    } else if (arg == "-c" || arg == "--count") {
      const char* text = value();
      double count = 0;
      if (!parse_number(text, &count) || count < 1 || count != std::floor(count)) {
        bad_usage(std::string("-c expects a positive integer, got '") + text + "'");
      }
      options.count = long(count);
    } else if (arg == "-i" || arg == "--id") {
      std::string list = value();
      size_t start = 0;
      while (start <= list.size()) {
        const size_t comma = std::min(list.find(',', start), list.size());
        const std::string item = list.substr(start, comma - start);
        double device = 0;
        if (!parse_number(item.c_str(), &device) || device != std::floor(device)) {
          bad_usage("-i expects device indices separated by commas, got '" + list + "'");
        }
        options.devices.insert(int(device));
        start = comma + 1;
      }
    } else {
      bad_usage("unknown option '" + arg + "'");
    }
  }
  return options;
}

std::string json_string(const std::string& text) {
  std::string out = "\"";
  for (unsigned char c : text) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += char(c);
    } else if (c < 0x20) {
      char escaped[8];
      std::snprintf(escaped, sizeof escaped, "\\u%04x", c);
      out += escaped;
    } else {
      out += char(c);
    }
  }
  return out + "\"";
}

std::string timestamp(bool iso) {
  const std::time_t now = std::time(nullptr);
  std::tm local{};
  localtime_r(&now, &local);
  char text[64];
  std::strftime(text, sizeof text, iso ? "%Y-%m-%dT%H:%M:%S%z" : "%a %b %e %H:%M:%S %Y", &local);
  return text;
}

int percent(double share) { return int(std::lround(share * 100.0)); }

std::string mib(size_t bytes) { return std::to_string((bytes + (1 << 20) - 1) >> 20) + "MiB"; }

void print_json(const std::vector<mlu::mluMonitorDevice>& devices, int runtime_version) {
  std::string out = "{\"timestamp\": " + json_string(timestamp(true)) +
                    ", \"runtime_version\": " + std::to_string(runtime_version) + ", \"devices\": [";
  for (size_t i = 0; i < devices.size(); ++i) {
    const mlu::mluMonitorDevice& d = devices[i];
    out += i ? ", " : "";
    out += "{\"index\": " + std::to_string(d.physical_id) + ", \"name\": " + json_string(d.name) +
           ", \"memory_used\": " + std::to_string(d.memory_used) + ", \"memory_total\": " +
           std::to_string(d.capacity) + ", \"utilization\": " + std::to_string(percent(d.utilization)) +
           ", \"queues\": " + std::to_string(d.queues) + ", \"busy_queues\": " + std::to_string(d.busy_queues) +
           ", \"processes\": [";
    for (size_t j = 0; j < d.processes.size(); ++j) {
      const mlu::mluMonitorProcess& p = d.processes[j];
      out += j ? ", " : "";
      out += "{\"pid\": " + std::to_string(p.pid) + ", \"command\": " + json_string(p.command) +
             ", \"memory_used\": " + std::to_string(p.memory_used) + ", \"utilization\": " +
             std::to_string(percent(p.utilization)) + ", \"queues\": " + std::to_string(p.queues) +
             ", \"busy_queues\": " + std::to_string(p.busy_queues) + "}";
    }
    out += "]}";
  }
  out += "]}\n";
  std::fputs(out.c_str(), stdout);
}

void print_table(const std::vector<mlu::mluMonitorDevice>& devices, int runtime_version) {
  const char* rule = "+-----------------------------------------------------------------------------+\n";
  std::printf("%s\n%s", timestamp(false).c_str(), rule);
  char version[32];
  std::snprintf(version, sizeof version, "Runtime Version: %d.%d", runtime_version / 1000,
                runtime_version % 1000 / 10);
  std::printf("| %-50s%25s |\n", "MLU-SMI (software MLU)", version);
  std::printf("|-----+-----------------------------+------------------------+------+---------|\n");
  std::printf("| MLU | Name                        |           Memory-Usage | Util |  Queues |\n");
  std::printf("|=====+=============================+========================+======+=========|\n");
  for (const mlu::mluMonitorDevice& d : devices) {
    const std::string memory = mib(d.memory_used) + " / " + mib(d.capacity);
    const std::string queues = std::to_string(d.busy_queues) + "/" + std::to_string(d.queues);
    std::printf("| %3d | %-27.27s | %22s | %3d%% | %7s |\n", d.physical_id, d.name.c_str(), memory.c_str(),
                percent(d.utilization), queues.c_str());
  }
  std::printf("%s\n%s", rule, rule);
  std::printf("| Processes:                                                                  |\n");
  std::printf("|  MLU       PID  Command                               Queues   Memory Usage |\n");
  std::printf("|=============================================================================|\n");
  bool any = false;
  for (const mlu::mluMonitorDevice& d : devices) {
    for (const mlu::mluMonitorProcess& p : d.processes) {
      any = true;
      const std::string queues = std::to_string(p.busy_queues) + "/" + std::to_string(p.queues);
      std::printf("|  %3d  %8d  %-36.36s %7s %14s |\n", d.physical_id, p.pid, p.command.c_str(), queues.c_str(),
                  mib(p.memory_used).c_str());
    }
  }
  if (!any) std::printf("|  No running processes found                                                 |\n");
  std::printf("%s", rule);
}

}  // namespace

int main(int argc, char** argv) {
  const Options options = parse(argc, argv);
  int runtime_version = 0;
  mlu::mluRuntimeGetVersion(&runtime_version);
  for (long report = 1;; ++report) {
    std::vector<mlu::mluMonitorDevice> devices;
    if (mlu::mluMonitorSnapshot(&devices) != mlu::mluSuccess) {
      std::fprintf(stderr, "mlu-smi: %s\n", mlu::mluGetLastErrorDetail());
      return 1;
    }
    if (!options.devices.empty()) {
      std::vector<mlu::mluMonitorDevice> chosen;
      for (int id : options.devices) {
        if (id >= int(devices.size())) {
          std::fprintf(stderr, "mlu-smi: no device %d: there are %zu physical devices\n", id, devices.size());
          return 2;
        }
        chosen.push_back(devices[id]);
      }
      devices.swap(chosen);
    }
    options.json ? print_json(devices, runtime_version) : print_table(devices, runtime_version);
    std::fflush(stdout);
    if (options.loop_seconds == 0 || (options.count != 0 && report >= options.count)) return 0;
    std::this_thread::sleep_for(std::chrono::duration<double>(options.loop_seconds));
  }
}
