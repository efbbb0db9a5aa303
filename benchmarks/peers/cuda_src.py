"""Hand-written CUDA C peers ("ninja" points, like the paper's OpenCL versions)."""

# ruff: noqa: E501
from __future__ import annotations

SOURCES: dict[str, str] = {}

SOURCES["1d-convolution"] = r"""
#define TILE 256
#define CHUNK 256
extern "C" __global__ void conv1d(const float* __restrict__ re, const float* __restrict__ im,
    const float* __restrict__ w, int n, int s, float* ore, float* oim) {
  // shared-memory window of the input: a block reads each input element ~2 times, not TILE times
  __shared__ float sr[TILE + CHUNK], si[TILE + CHUNK], sw[CHUNK];
  int t0 = blockIdx.x * TILE, t = t0 + threadIdx.x;
  float ar = 0.f, ai = 0.f;
  for (int k0 = 0; k0 < s; k0 += CHUNK) {
    for (int q = threadIdx.x; q < TILE + CHUNK; q += blockDim.x) {
      int p = t0 + k0 + q; bool ok = p < n + s;
      sr[q] = ok ? re[p] : 0.f; si[q] = ok ? im[p] : 0.f;
    }
    for (int q = threadIdx.x; q < CHUNK; q += blockDim.x) sw[q] = k0 + q < s ? w[k0 + q] : 0.f;
    __syncthreads();
    int kmax = min(CHUNK, s - k0);
    for (int k = 0; k < kmax; ++k) {
      float wk = sw[k], r = sr[threadIdx.x + k] * wk, i = si[threadIdx.x + k] * wk;
      ar += r - i; ai += r + i;
    }
    __syncthreads();
  }
  if (t < n) { ore[t] = ar; oim[t] = ai; }
}
"""

SOURCES["2d-convolution"] = r"""
extern "C" __global__ void conv2d(const float* __restrict__ src, float* dst, int h, int w) {
  int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y * blockDim.y + threadIdx.y;
  if (x >= w || y >= h) return;
  float acc = 0.f;
  #pragma unroll
  for (int a = 0; a < 5; ++a) {
    int yy = min(max(y + a - 2, 0), h - 1);
    #pragma unroll
    for (int b = 0; b < 5; ++b) {
      int xx = min(max(x + b - 2, 0), w - 1);
      float k = (a == 2 && b == 2) ? -1.f : (((a + b) & 1) ? -2.f : 2.f);  // specialised stencil
      acc += k * src[yy * w + xx];
    }
  }
  dst[y * w + x] = acc;
}
"""

SOURCES["7pt-stencil"] = r"""
extern "C" __global__ void stencil7(const float* __restrict__ a, float* b, int nz, int ny, int nx,
                                    float w1, float w2) {
  int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y * blockDim.y + threadIdx.y;
  if (x >= nx || y >= ny) return;
  long plane = (long)nx * ny;
  for (int z = 0; z < nz; ++z) {
    long c = z * plane + (long)y * nx + x;
    if (z == 0 || y == 0 || x == 0 || z == nz - 1 || y == ny - 1 || x == nx - 1) { b[c] = 0.f; continue; }
    float s = a[c - plane] + a[c + plane] + a[c - nx] + a[c + nx] + a[c - 1] + a[c + 1];
    b[c] = w1 * a[c] + w2 * s;
  }
}
"""

SOURCES["backprojection"] = r"""
extern "C" __global__ void backproject(const float* __restrict__ raw, const float* __restrict__ m,
                                       float* out, int d, int side) {
  int k = blockIdx.x * blockDim.x + threadIdx.x, j = blockIdx.y, i = blockIdx.z;
  if (k >= d) return;
  float t0 = m[0] * i + m[1] * j + m[3], t1 = m[4] * i + m[5] * j + m[7], t3 = m[12] * i + m[13] * j + m[15];
  float w = 1.f / (t3 + m[14] * k), rl = w * (t1 + m[6] * k), rm = w * (t0 + m[2] * k);
  int l = (int)rl, n = (int)rm; float wl = rl - l, wm = rm - n;
  const float* r0 = raw + l * side + n; const float* r1 = r0 + side;
  float top = (1.f - wm) * r0[0] + wm * r0[1], bot = (1.f - wm) * r1[0] + wm * r1[1];
  out[((long)i * d + j) * d + k] = w * w * ((1.f - wl) * top + wl * bot);
}
"""

SOURCES["blackscholes"] = r"""
__device__ __forceinline__ float cndf(float x) {
  float pos = x > 0.f ? 1.f : 0.f, sig = x > 0.f ? 1.f : -1.f, xp = sig * x;
  float tmp = 0.39894228040143270286f * __expf(-0.5f * xp * xp);
  float k = __fdividef(1.f, 1.f + 0.2316419f * xp);
  float poly = k * (0.319381530f + k * (-0.356563782f + k * (1.781477937f + k * (-1.821255978f + k * 1.330274429f))));
  return pos - sig * tmp * poly;
}
extern "C" __global__ void blackscholes(const float* __restrict__ S, const float* __restrict__ K,
    const float* __restrict__ R, const float* __restrict__ V, const float* __restrict__ T,
    const float* __restrict__ P, float* out, int n) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
    float s = S[i], k = K[i], r = R[i], v = V[i], t = T[i];
    float den = v * sqrtf(t), d1 = __fdividef((r + 0.5f * v * v) * t + __logf(s / k), den);
    float fv = k * __expf(-r * t);
    out[i] = s * cndf(d1) - fv * cndf(d1 - den) + P[i] * (fv - s);
  }
}
"""

SOURCES["matrix-mult"] = r"""
#define T 32
extern "C" __global__ void sgemm(const float* __restrict__ A, const float* __restrict__ B, float* C, int n) {
  // 32x32 shared tiles, each thread computes 4 outputs in a column (blockDim = 32 x 8)
  __shared__ float As[T][T + 1], Bs[T][T + 1];
  int tx = threadIdx.x, ty = threadIdx.y, col = blockIdx.x * T + tx, row0 = blockIdx.y * T;
  float acc[4] = {0.f, 0.f, 0.f, 0.f};
  for (int k0 = 0; k0 < n; k0 += T) {
    for (int r = ty; r < T; r += 8) {
      As[r][tx] = (row0 + r < n && k0 + tx < n) ? A[(row0 + r) * n + k0 + tx] : 0.f;
      Bs[r][tx] = (k0 + r < n && col < n) ? B[(k0 + r) * n + col] : 0.f;
    }
    __syncthreads();
    #pragma unroll
    for (int k = 0; k < T; ++k) {
      float b = Bs[k][tx];
      #pragma unroll
      for (int q = 0; q < 4; ++q) acc[q] += As[ty + 8 * q][k] * b;
    }
    __syncthreads();
  }
  for (int q = 0; q < 4; ++q) if (row0 + ty + 8 * q < n && col < n) C[(row0 + ty + 8 * q) * n + col] = acc[q];
}
"""

_NBODY = r"""
extern "C" __global__ void NAME(const float* __restrict__ px, const float* __restrict__ py,
    const float* __restrict__ pz, const float* __restrict__ pm, float* ax, float* ay, float* az,
    int n, float eps, float g) {
  __shared__ float4 tile[256];
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  float xi = i < n ? px[i] : 0.f, yi = i < n ? py[i] : 0.f, zi = i < n ? pz[i] : 0.f;
  float sx = 0.f, sy = 0.f, sz = 0.f;
  for (int j0 = 0; j0 < n; j0 += 256) {
    int j = j0 + threadIdx.x;
    tile[threadIdx.x] = j < n ? make_float4(px[j], py[j], pz[j], MASS) : make_float4(0.f, 0.f, 0.f, 0.f);
    __syncthreads();
    int jmax = min(256, n - j0);
    #pragma unroll 8
    for (int q = 0; q < jmax; ++q) {
      float4 b = tile[q];
      float dx = b.x - xi, dy = b.y - yi, dz = b.z - zi;
      float inv = rsqrtf(dx * dx + dy * dy + dz * dz + eps);
      float f = b.w * inv * inv * inv;
      sx += dx * f; sy += dy * f; sz += dz * f;
    }
    __syncthreads();
  }
  if (i < n) { ax[i] = g * sx; ay[i] = g * sy; az[i] = g * sz; }
}
"""
SOURCES["nbody"] = _NBODY.replace("NAME", "nbody").replace("MASS", "1.f")
SOURCES["nbody-accelerate"] = _NBODY.replace("NAME", "nbody").replace("MASS", "pm[j]")

SOURCES["treesearch"] = r"""
extern "C" __global__ void treesearch(const int* __restrict__ tree, const int* __restrict__ q,
                                      int* out, int n, int depth) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
    int key = q[i], o = 0;
    for (int s = 0; s < depth; ++s) o = 2 * o + 1 + (key > __ldg(tree + o));
    out[i] = o - ((1 << depth) - 1);
  }
}
"""

SOURCES["volume-rendering"] = r"""
extern "C" __global__ void volrender(const int* __restrict__ len_in, int* len_out,
    const int* __restrict__ vis, const float* __restrict__ op, float* res, int n, int advance) {
  // fused: colour with the current lengths, then write the next lengths
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  int L = len_in[i];
  float c = 0.f, a = 0.f;
  for (int v = i; v < i + L; ++v) {
    float o = op[v];
    if (vis[v] != 0 && o != 0.f) {
      float c2 = c + (o + 1.f) * (1.f - a), a2 = a + o * (1.f - a);
      c = c2; a = a2;
      if (a2 > 0.f) break;
    }
  }
  res[i] = c;
  if (advance) len_out[i] = (L + 1) % 40;
}
"""

SOURCES["dotp"] = r"""
extern "C" __global__ void dotp(const float* __restrict__ x, const float* __restrict__ y, float* s, int n) {
  float acc = 0.f;
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) acc += x[i] * y[i];
  for (int o = 16; o > 0; o >>= 1) acc += __shfl_down_sync(0xffffffff, acc, o);
  __shared__ float warp[32];
  if ((threadIdx.x & 31) == 0) warp[threadIdx.x >> 5] = acc;
  __syncthreads();
  if (threadIdx.x < 32) {
    acc = threadIdx.x < (blockDim.x >> 5) ? warp[threadIdx.x] : 0.f;
    for (int o = 16; o > 0; o >>= 1) acc += __shfl_down_sync(0xffffffff, acc, o);
    if (threadIdx.x == 0) atomicAdd(s, acc);
  }
}
"""

SOURCES["mandelbrot"] = r"""
extern "C" __global__ void mandelbrot(int* out, int w, int h, float x0, float dx, float y0, float dy, int limit) {
  int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y * blockDim.y + threadIdx.y;
  if (x >= w || y >= h) return;
  float cr = x0 + x * dx, ci = y0 + y * dy, zr = 0.f, zi = 0.f;
  int i = 0;
  while (i < limit) {
    float zr2 = zr * zr - zi * zi + cr, zi2 = 2.f * zr * zi + ci;
    if (zr2 * zr2 + zi2 * zi2 > 4.f) break;
    zr = zr2; zi = zi2; ++i;
  }
  out[y * w + x] = i;
}
"""

SOURCES["smvm"] = r"""
extern "C" __global__ void smvm(const int* __restrict__ rowptr, const int* __restrict__ col,
    const float* __restrict__ val, const float* __restrict__ x, float* y, int rows) {
  // CSR-vector: one warp per row, lanes stride the row, shuffle reduction
  int warp = (blockIdx.x * blockDim.x + threadIdx.x) >> 5, lane = threadIdx.x & 31;
  if (warp >= rows) return;
  float acc = 0.f;
  for (int k = rowptr[warp] + lane; k < rowptr[warp + 1]; k += 32) acc += val[k] * __ldg(x + col[k]);
  for (int o = 16; o > 0; o >>= 1) acc += __shfl_down_sync(0xffffffff, acc, o);
  if (lane == 0) y[warp] = acc;
}
"""
