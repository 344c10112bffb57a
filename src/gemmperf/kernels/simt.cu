#define TM 8
#define TN 8
#define PAD 4
#define TX (BN / TN)
#define LA ((BM * BK / 4 + THREADS - 1) / THREADS)
#define LB ((BN * BK / 4 + THREADS - 1) / THREADS)

struct f4 { float x, y, z, w; };

__device__ __forceinline__ void load_tile(const float *__restrict__ P, int rows_total, int K, int ld,
                                          int r0, int k0, int nrows, f4 *v) {
#pragma unroll
    for (int i = 0; i < (nrows * BK / 4 + THREADS - 1) / THREADS; ++i) {
        const int id = threadIdx.x + i * THREADS;
        f4 x = {0.f, 0.f, 0.f, 0.f};
        if (id < nrows * BK / 4) {
            const int row = id / (BK / 4), kc = (id % (BK / 4)) * 4;
            const int gr = r0 + row, gk = k0 + kc;
            if (gr < rows_total) {
                const float *p = P + (size_t)gr * ld + gk;
                if (gk + 4 <= K) {
                    float4 t = *(const float4 *)p;
                    x.x = t.x; x.y = t.y; x.z = t.z; x.w = t.w;
                } else {
                    if (gk < K) x.x = p[0];
                    if (gk + 1 < K) x.y = p[1];
                    if (gk + 2 < K) x.z = p[2];
                }
            }
        }
        v[i] = x;
    }
}

extern "C" __global__ void __launch_bounds__(THREADS)
gemm_kernel(const float *__restrict__ A, const float *__restrict__ B, float *__restrict__ C,
            int M, int N, int K, int lda, int ldb)
{
#if MODE == MODE_EMPTY
    return;
#else
    __shared__ __align__(16) float As[STAGES][BK][BM + PAD];
    __shared__ __align__(16) float Bs[STAGES][BK][BN + PAD];
    const int tid = threadIdx.x;
    const int tx = tid % TX, ty = tid / TX;
    const int tiles_m = (M + BM - 1) / BM, tiles_n = (N + BN - 1) / BN, tiles = tiles_m * tiles_n;
    const int ktiles = (K + BK - 1) / BK;
    float sink = 0.0f;
#if MODE == MODE_MATH
    for (int i = tid; i < STAGES * BK * (BM + PAD); i += THREADS) {
        u32 h = hash_u32((u32)i * 2654435761u + 1u);
        (&As[0][0][0])[i] = (float)(h & 0xffff) / 32768.0f - 1.0f;
    }
    for (int i = tid; i < STAGES * BK * (BN + PAD); i += THREADS) {
        u32 h = hash_u32((u32)i * 2654435761u + 7u);
        (&Bs[0][0][0])[i] = (float)(h & 0xffff) / 32768.0f - 1.0f;
    }
    __syncthreads();
#endif
    for (int t = blockIdx.x; t < tiles; t += gridDim.x) {
        int tm, tn; tile_coords(t, tiles_m, tiles_n, tm, tn);
        const int m0 = tm * BM, n0 = tn * BN;
        float acc[TM][TN];
#pragma unroll
        for (int i = 0; i < TM; ++i)
#pragma unroll
            for (int j = 0; j < TN; ++j) acc[i][j] = 0.0f;
#if MODE != MODE_EPI
        f4 va[LA], vb[LB];
#define STORE(buf)                                                                  \
        _Pragma("unroll") for (int i = 0; i < LA; ++i) {                            \
            const int id = tid + i * THREADS;                                       \
            if (id < BM * BK / 4) {                                                 \
                const int row = id / (BK / 4), kc = (id % (BK / 4)) * 4;            \
                As[buf][kc][row] = va[i].x; As[buf][kc + 1][row] = va[i].y;         \
                As[buf][kc + 2][row] = va[i].z; As[buf][kc + 3][row] = va[i].w;     \
            }                                                                       \
        }                                                                           \
        _Pragma("unroll") for (int i = 0; i < LB; ++i) {                            \
            const int id = tid + i * THREADS;                                       \
            if (id < BN * BK / 4) {                                                 \
                const int row = id / (BK / 4), kc = (id % (BK / 4)) * 4;            \
                Bs[buf][kc][row] = vb[i].x; Bs[buf][kc + 1][row] = vb[i].y;         \
                Bs[buf][kc + 2][row] = vb[i].z; Bs[buf][kc + 3][row] = vb[i].w;     \
            }                                                                       \
        }
#if MODE == MODE_LOAD
#define COMPUTE(buf) sink += As[buf][tid % BK][tid % BM] + Bs[buf][tid % BK][tid % BN];
#else
#define COMPUTE(buf)                                                                \
        _Pragma("unroll") for (int kk = 0; kk < BK; ++kk) {                         \
            float a[TM], b[TN];                                                     \
            const float4 a0 = *(const float4 *)&As[buf][kk][ty * TM];               \
            const float4 a1 = *(const float4 *)&As[buf][kk][ty * TM + 4];           \
            const float4 b0 = *(const float4 *)&Bs[buf][kk][tx * TN];               \
            const float4 b1 = *(const float4 *)&Bs[buf][kk][tx * TN + 4];           \
            a[0] = a0.x; a[1] = a0.y; a[2] = a0.z; a[3] = a0.w;                     \
            a[4] = a1.x; a[5] = a1.y; a[6] = a1.z; a[7] = a1.w;                     \
            b[0] = b0.x; b[1] = b0.y; b[2] = b0.z; b[3] = b0.w;                     \
            b[4] = b1.x; b[5] = b1.y; b[6] = b1.z; b[7] = b1.w;                     \
            _Pragma("unroll") for (int i = 0; i < TM; ++i)                          \
                _Pragma("unroll") for (int j = 0; j < TN; ++j)                      \
                    acc[i][j] = fmaf(a[i], b[j], acc[i][j]);                        \
        }
#endif
#if MODE == MODE_MATH
#pragma unroll 1
        for (int kt = 0; kt < ktiles; ++kt) { COMPUTE(kt % STAGES) }
#elif STAGES == 1
        for (int kt = 0; kt < ktiles; ++kt) {
            load_tile(A, M, K, lda, m0, kt * BK, BM, va);
            load_tile(B, N, K, ldb, n0, kt * BK, BN, vb);
            __syncthreads();
            STORE(0)
            __syncthreads();
            COMPUTE(0)
        }
        __syncthreads();
#else
        load_tile(A, M, K, lda, m0, 0, BM, va);
        load_tile(B, N, K, ldb, n0, 0, BN, vb);
        STORE(0)
        __syncthreads();
        for (int kt = 0; kt < ktiles; ++kt) {
            const int cur = kt % STAGES;
            if (kt + 1 < ktiles) {
                load_tile(A, M, K, lda, m0, (kt + 1) * BK, BM, va);
                load_tile(B, N, K, ldb, n0, (kt + 1) * BK, BN, vb);
            }
            COMPUTE(cur)
            if (kt + 1 < ktiles) { STORE((kt + 1) % STAGES) }
            __syncthreads();
        }
#endif
#endif
#if MODE != MODE_LOAD
        const bool vec = (N & 3) == 0;
#pragma unroll
        for (int i = 0; i < TM; ++i) {
            const int row = m0 + ty * TM + i;
            if (row >= M) continue;
            float *crow = C + (size_t)row * N;
#pragma unroll
            for (int j = 0; j < TN; j += 4) {
                const int col = n0 + tx * TN + j;
                if (vec && col + 3 < N) {
                    *(float4 *)(crow + col) = make_float4(acc[i][j], acc[i][j + 1], acc[i][j + 2], acc[i][j + 3]);
                } else {
#pragma unroll
                    for (int q = 0; q < 4; ++q) if (col + q < N) crow[col + q] = acc[i][j + q];
                }
            }
        }
#endif
    }
    if (sink == -12345.678f && M < 0) C[0] = sink;  // keeps load-only loads alive
#endif
}
