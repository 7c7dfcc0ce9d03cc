// <immintrin.h> for the per-ISA translation units.
//
// GCC 12's AVX-512 intrinsics (max, min, roundscale, cvtps_pd, ...) read an
// intentionally undefined vector and warn about it at -O3 -Wall (GCC PR
// 105593, fixed in GCC 13); the warning is silenced for the header's own
// lines only, so it stays on for ours. Include it before anything that
// includes <immintrin.h> (sleef.h does), or the header's lines are already read.
#pragma once

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>
#pragma GCC diagnostic pop
