"""Coefficients of the table-driven AVX-512 float tanh (Note [Fast float tanh]
in kernels/src/pointwise/vector_math.h).

Interval 0 is [0, 1/8); intervals 1..25 split each binade from 1/8 to 8 in
four, plus [8, 10). On interval n, tanh(a) ~ sum_k c[k][n] t^k with
t = a - start(n), k = 0..5: a least-squares fit in relative error on
Chebyshev nodes, in float64, rounded to float. Interval 0 keeps c0 = 0 and
c1 = 1, so the result is a + a^2 (...) and exact in relative terms near 0.

Prints the C++ table and the worst error in ulp of the float evaluation
(Horner with fused multiply-adds, emulated in float64 with one rounding per
step) over a dense sample. Run: python kernels/tools/fit_tanh.py
"""
import numpy as np

DEGREE = 5
NODES = 400


def intervals():
    iv = [(0.0, 0.125)]
    for k in range(-3, 3):
        lo = 2.0 ** k
        iv += [(lo * (1 + j / 4), lo * (1 + (j + 1) / 4)) for j in range(4)]
    iv.append((8.0, 10.0))
    return iv


def fit():
    table = []
    for n, (lo, hi) in enumerate(intervals()):
        x = (lo + hi) / 2 + (hi - lo) / 2 * np.cos(np.pi * (np.arange(NODES) + 0.5) / NODES)
        y = np.tanh(x)
        if n == 0:  # tanh(a) = a + a^2 (c2 + c3 a + ...): fit (y - a) / a^2, relative to y
            basis = np.vander(x, DEGREE - 1, increasing=True) * (x * x / y)[:, None]
            c = np.linalg.lstsq(basis, (y - x) / y, rcond=None)[0]
            c = np.concatenate([[0.0, 1.0], c])
        else:
            basis = np.vander(x - lo, DEGREE + 1, increasing=True) / y[:, None]
            c = np.linalg.lstsq(basis, np.ones(NODES), rcond=None)[0]
        table.append(c.astype(np.float32))
    return np.array(table)


def evaluate(table, a):
    """The kernel's arithmetic on float32 array a >= 0 (below 10)."""
    a = a.astype(np.float32)
    bits = a.view(np.uint32)
    above = a >= np.float32(0.125)
    n = np.where(above, np.minimum((bits >> 21).astype(np.int64) - 495, 25), 0)
    start = np.where(above, (bits & np.uint32(0xFFE00000)).view(np.float32), np.float32(0))
    t = (a - start).astype(np.float32)
    r = table[n, DEGREE].astype(np.float32)
    for k in range(DEGREE - 1, -1, -1):
        r = (r.astype(np.float64) * t + table[n, k]).astype(np.float32)
    return r


def main():
    table = fit()
    rng = np.random.default_rng(0)
    a = np.concatenate([np.geomspace(1e-30, 9.5, 400000), rng.uniform(0, 9.5, 400000)]).astype(np.float32)
    exact = np.tanh(a.astype(np.float64))
    ulps = np.abs(evaluate(table, a).astype(np.float64) - exact) / np.spacing(exact.astype(np.float32)).astype(np.float64)
    print(f"// worst {ulps.max():.3f} ulp at {a[ulps.argmax()]!r} over {a.size} samples")
    print(f"alignas(64) inline constexpr float kTanhTable[{DEGREE + 1}][32] = {{")
    for k in range(DEGREE + 1):
        row = [f"{float(v)!r}f" for v in list(table[:, k]) + [0.0] * (32 - len(table))]
        lines = [", ".join(row[i:i + 4]) for i in range(0, 32, 4)]
        print("    {" + ",\n     ".join(lines) + "},")
    print("};")


if __name__ == "__main__":
    main()
