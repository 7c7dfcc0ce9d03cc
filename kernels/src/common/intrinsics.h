// <immintrin.h> for the per-ISA translation units.
//
// GCC 12's AVX-512 intrinsics (max, min, roundscale, cvtps_pd, unpack,
// shuffle_f64x2, ...) read an intentionally undefined vector and warn about
// it at -O3 -Wall, as maybe or certainly uninitialized (GCC PR 105593, fixed
// in GCC 13); the warnings are silenced for the header's own lines only, so
// they stay on for ours. Include it before anything that
// includes <immintrin.h> (sleef.h does), or the header's lines are already read.
#pragma once

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#include <immintrin.h>
#pragma GCC diagnostic pop
