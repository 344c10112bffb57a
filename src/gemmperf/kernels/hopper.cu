#define WG_M (BM / NWG)
#define MA (WG_M / 64)
#define NACC (BN / 2)
#define A_STAGE_BYTES (BM * BK * 2)
#define B_STAGE_BYTES (BN * BK * 2)
#define STAGE_BYTES (A_STAGE_BYTES + B_STAGE_BYTES)

struct alignas(64) TmapT { u64 opaque[16]; };

// wgmma shared-memory descriptor: K-major, 128-byte swizzle, 8-row groups 1024 B apart.
__device__ __forceinline__ u64 make_desc(u32 saddr) {
    u64 d = 0;
    d |= (u64)((saddr & 0x3FFFF) >> 4);
    d |= (u64)1 << 16;
    d |= (u64)(1024 >> 4) << 32;
    d |= (u64)1 << 62;
    return d;
}
__device__ __forceinline__ void wgmma_fence() { asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory"); }
__device__ __forceinline__ void wgmma_commit() { asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory"); }
template <int N> __device__ __forceinline__ void wgmma_wait() {
    asm volatile("wgmma.wait_group.sync.aligned %0;\n" :: "n"(N) : "memory");
}
__device__ __forceinline__ void fence_acc(float (&acc)[MA][NACC]) {
#pragma unroll
    for (int m = 0; m < MA; ++m)
#pragma unroll
        for (int i = 0; i < NACC; ++i) asm volatile("" : "+f"(acc[m][i]) :: "memory");
}
__device__ __forceinline__ void expect_tx(u64 *bar, u32 bytes) {
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" :: "r"(smem_u32(bar)), "r"(bytes) : "memory");
}
__device__ __forceinline__ void tma_load(void *dst, const TmapT *map, int c0, int c1, u64 *bar) {
    asm volatile(
        "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3}], [%4];"
        :: "r"(smem_u32(dst)), "l"((u64)map), "r"(c0), "r"(c1), "r"(smem_u32(bar)) : "memory");
}

extern "C" __global__ void __launch_bounds__(THREADS, 1)
gemm_kernel(const __grid_constant__ TmapT tmA, const __grid_constant__ TmapT tmB,
            u16 *__restrict__ C, int M, int N, int K)
{
#if MODE == MODE_EMPTY
    return;
#else
    extern __shared__ __align__(1024) unsigned char smem_raw[];
    unsigned char *smem = smem_raw + ((1024 - (smem_u32(smem_raw) & 1023)) & 1023);
    unsigned char *sA = smem;
    unsigned char *sB = smem + STAGES * A_STAGE_BYTES;
    u64 *full = (u64 *)(sB + STAGES * B_STAGE_BYTES);
    u64 *empty = full + STAGES;

    const int tiles_m = (M + BM - 1) / BM, tiles_n = (N + BN - 1) / BN;
    const int tiles = tiles_m * tiles_n;
    const int ktiles = (K + BK - 1) / BK;
    const int wg = threadIdx.x / 128;
    const int tid = threadIdx.x % 128;

    if (threadIdx.x == 0) {
        for (int s = 0; s < STAGES; ++s) { mbar_init(&full[s], 1); mbar_init(&empty[s], NWG); }
        asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    }
#if MODE == MODE_MATH
    // resident operands: a fixed pseudo-random pattern in [-1, 1)
    for (int i = threadIdx.x; i < STAGES * STAGE_BYTES / 4; i += THREADS) {
        u32 h = hash_u32((u32)i * 2654435761u + 12345u);
        ((u32 *)smem)[i] = pack2((float)(h & 0xffff) / 32768.0f - 1.0f, (float)(h >> 16) / 32768.0f - 1.0f);
    }
#endif
    asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
    __syncthreads();

    if (wg == 0) {
        // ---------------- producer warpgroup: one thread issues TMA
        asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" :: "n"(PROD_REGS));
#if MODE == MODE_FULL || MODE == MODE_LOAD
        if (tid == 0) {
            asm volatile("prefetch.tensormap [%0];" :: "l"((u64)&tmA) : "memory");
            asm volatile("prefetch.tensormap [%0];" :: "l"((u64)&tmB) : "memory");
            int stage = 0; u32 phase = 0;
            for (int t = blockIdx.x; t < tiles; t += gridDim.x) {
                int tm, tn; tile_coords(t, tiles_m, tiles_n, tm, tn);
                for (int kt = 0; kt < ktiles; ++kt) {
                    mbar_wait(&empty[stage], phase ^ 1);
                    expect_tx(&full[stage], STAGE_BYTES);
                    tma_load(sA + stage * A_STAGE_BYTES, &tmA, kt * BK, tm * BM, &full[stage]);
                    tma_load(sB + stage * B_STAGE_BYTES, &tmB, kt * BK, tn * BN, &full[stage]);
                    if (++stage == STAGES) { stage = 0; phase ^= 1; }
                }
            }
        }
#endif
    } else {
        // ---------------- consumer warpgroups: wgmma, then the epilogue
        asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" :: "n"(CONS_REGS));
        const int cw = wg - 1;
        float acc[MA][NACC];
        int stage = 0; u32 phase = 0;
        for (int t = blockIdx.x; t < tiles; t += gridDim.x) {
            int tm, tn; tile_coords(t, tiles_m, tiles_n, tm, tn);
#pragma unroll
            for (int m = 0; m < MA; ++m)
#pragma unroll
                for (int i = 0; i < NACC; ++i) acc[m][i] = 0.0f;
#if MODE == MODE_FULL || MODE == MODE_MATH
            int prev = 0;
            for (int kt = 0; kt < ktiles; ++kt) {
#if MODE == MODE_FULL
                mbar_wait(&full[stage], phase);
#endif
                const u32 a_base = smem_u32(sA + stage * A_STAGE_BYTES + cw * WG_M * 128);
                const u32 b_base = smem_u32(sB + stage * B_STAGE_BYTES);
                fence_acc(acc);
                wgmma_fence();
#pragma unroll
                for (int kk = 0; kk < BK / 16; ++kk) {
                    const u64 db = make_desc(b_base + kk * 32);
#pragma unroll
                    for (int m = 0; m < MA; ++m) wgmma_tile(acc[m], make_desc(a_base + m * 64 * 128 + kk * 32), db);
                }
                wgmma_commit();
                wgmma_wait<1>();
                fence_acc(acc);
#if MODE == MODE_FULL
                if (kt > 0 && tid == 0) mbar_arrive(&empty[prev]);
#endif
                prev = stage;
                if (++stage == STAGES) { stage = 0; phase ^= 1; }
            }
            wgmma_wait<0>();
            fence_acc(acc);
#if MODE == MODE_FULL
            if (ktiles > 0 && tid == 0) mbar_arrive(&empty[prev]);
#endif
#elif MODE == MODE_LOAD
            for (int kt = 0; kt < ktiles; ++kt) {
                mbar_wait(&full[stage], phase);
                if (tid == 0) mbar_arrive(&empty[stage]);
                if (++stage == STAGES) { stage = 0; phase ^= 1; }
            }
#endif
#if MODE != MODE_LOAD
            // epilogue: registers -> global, predicated for tails
            const int warp = tid / 32, lane = tid % 32;
            const int row0 = tm * BM + cw * WG_M + warp * 16 + lane / 4;
#if QUAD_EPI
            // The 4 lanes of a quad hold one row; a 4x4 transpose of packed pairs across
            // the quad gives each lane 8 consecutive columns: one 16-byte store each.
            const int j = lane % 4;
            const bool vec8 = (N & 7) == 0;
#pragma unroll
            for (int m = 0; m < MA; ++m) {
#pragma unroll
                for (int h = 0; h < 2; ++h) {
                    const int row = row0 + m * 64 + h * 8;
                    u16 *crow = C + (size_t)row * N;
#pragma unroll
                    for (int p = 0; p < BN / 32; ++p) {
                        u32 v[4], r[4];
#pragma unroll
                        for (int i = 0; i < 4; ++i)
                            v[i] = pack2(acc[m][4 * (4 * p + i) + 2 * h], acc[m][4 * (4 * p + i) + 2 * h + 1]);
#pragma unroll
                        for (int s = 0; s < 4; ++s) {
                            const int si = (j - s) & 3;
                            const u32 send = si == 0 ? v[0] : si == 1 ? v[1] : si == 2 ? v[2] : v[3];
                            const u32 got = __shfl_sync(0xffffffffu, send, (lane & ~3) | ((j + s) & 3));
                            const int ri = (j + s) & 3;
                            r[0] = ri == 0 ? got : r[0];
                            r[1] = ri == 1 ? got : r[1];
                            r[2] = ri == 2 ? got : r[2];
                            r[3] = ri == 3 ? got : r[3];
                        }
                        const int col = tn * BN + (4 * p + j) * 8;
                        if (row < M) {
                            if (vec8 && col + 7 < N) {
                                *(uint4 *)(crow + col) = make_uint4(r[0], r[1], r[2], r[3]);
                            } else {
#pragma unroll
                                for (int i = 0; i < 4; ++i) {
                                    if (col + 2 * i < N) crow[col + 2 * i] = (u16)(r[i] & 0xffffu);
                                    if (col + 2 * i + 1 < N) crow[col + 2 * i + 1] = (u16)(r[i] >> 16);
                                }
                            }
                        }
                    }
                }
            }
#else
            const int col0 = tn * BN + (lane % 4) * 2;
            const bool vec = (N & 1) == 0;
#pragma unroll
            for (int m = 0; m < MA; ++m) {
#pragma unroll
                for (int h = 0; h < 2; ++h) {
                    const int row = row0 + m * 64 + h * 8;
                    if (row < M) {
                        u16 *crow = C + (size_t)row * N;
#pragma unroll
                        for (int q = 0; q < BN / 8; ++q) {
                            const int col = col0 + q * 8;
                            const float v0 = acc[m][4 * q + 2 * h], v1 = acc[m][4 * q + 2 * h + 1];
                            if (vec && col + 1 < N) {
                                *(u32 *)(crow + col) = pack2(v0, v1);
                            } else {
                                if (col < N) crow[col] = pack1(v0);
                                if (col + 1 < N) crow[col + 1] = pack1(v1);
                            }
                        }
                    }
                }
            }
#endif
#endif
        }
    }
#endif
}
