#include "lapack.h"

#include <string>

namespace mlu::kernels::vendor {
namespace {

template <class T>
constexpr char prefix() {
  if constexpr (std::is_same_v<T, float>) return 's';
  if constexpr (std::is_same_v<T, double>) return 'd';
  if constexpr (std::is_same_v<T, c32>) return 'c';
  return 'z';
}

// Binds `slot` to prefix<T>() + name + "_"; false when the process lacks it.
template <class T, class F>
bool bind(F& slot, const char* name) {
  const std::string symbol = std::string(1, prefix<T>()) + name + "_";
  slot = reinterpret_cast<F>(find_symbol(symbol.c_str()));
  return slot != nullptr;
}

template <class T>
const Lapack<T>* find_lapack() {
  static Lapack<T> t{};
  constexpr bool complex = is_complex_v<T>;
  bool found = blas() != nullptr && bind<T>(t.potrf, "potrf") && bind<T>(t.potri, "potri") && bind<T>(t.potrs, "potrs") &&
               bind<T>(t.getrf, "getrf") && bind<T>(t.getrs, "getrs") && bind<T>(t.trsm, "trsm") &&
               bind<T>(t.geqrf, "geqrf") && bind<T>(t.orgqr, complex ? "ungqr" : "orgqr") &&
               bind<T>(t.ormqr, complex ? "unmqr" : "ormqr") && bind<T>(t.sytrf, "sytrf") &&
               bind<T>(t.sytrs, "sytrs");
  if constexpr (complex) {
    found = found && bind<T>(t.heevd, "heevd") && bind<T>(t.gesdd_c, "gesdd") && bind<T>(t.geev_c, "geev") &&
            bind<T>(t.hetrf, "hetrf") && bind<T>(t.hetrs, "hetrs");
  } else {
    found = found && bind<T>(t.syevd, "syevd") && bind<T>(t.gesdd, "gesdd") && bind<T>(t.geev, "geev");
  }
  return found ? &t : nullptr;
}

}  // namespace

template <class T>
const Lapack<T>* lapack() {
  static const Lapack<T>* table = find_lapack<T>();
  return table;
}

template const Lapack<float>* lapack<float>();
template const Lapack<double>* lapack<double>();
template const Lapack<c32>* lapack<c32>();
template const Lapack<c64>* lapack<c64>();

}  // namespace mlu::kernels::vendor
