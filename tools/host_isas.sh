#!/usr/bin/env bash
# Prints the kernels' ISA variants this host can run, as CMake's MLU_KERNELS_ISAS list (a prefix of
# baseline;avx2;avx512;avx512bf16), by the CPU flags isa.cpp's detection asks for.
flags=$(grep -m1 '^flags' /proc/cpuinfo 2>/dev/null)
has() { for flag in "$@"; do grep -qw "$flag" <<<"$flags" || return 1; done; }
isas=baseline
if has avx2 fma; then
  isas+=";avx2"
  if has avx512f avx512bw avx512vl avx512dq; then
    isas+=";avx512"
    has avx512_bf16 && isas+=";avx512bf16"
  fi
fi
echo "$isas"
