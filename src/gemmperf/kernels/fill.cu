typedef unsigned int u32;
typedef unsigned short u16;
typedef unsigned char u8;
__device__ __forceinline__ u32 mix(u32 x) {
    x ^= x >> 16; x *= 0x7feb352dU; x ^= x >> 15; x *= 0x846ca68bU; x ^= x >> 16; return x;
}
// Uniform values in [-1, 1) from (seed, element index); zero in the padding columns.
__device__ __forceinline__ float uniform(long long i, int ld, int cols, u32 seed) {
    if ((int)(i % ld) >= cols) return 0.0f;
    u32 h = mix((u32)i ^ mix(seed ^ (u32)(i >> 32) * 0x9e3779b9U));
    return (float)(h >> 8) * (1.0f / 8388608.0f) - 1.0f;
}
extern "C" __global__ void fill16(u16 *p, long long rows, int cols, int ld, u32 seed, int fp16) {
    long long total = rows * (long long)ld;
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < total; i += (long long)gridDim.x * blockDim.x) {
        float v = uniform(i, ld, cols, seed);
        unsigned short r;
        if (fp16) asm("cvt.rn.f16.f32 %0, %1;" : "=h"(r) : "f"(v));
        else asm("cvt.rn.bf16.f32 %0, %1;" : "=h"(r) : "f"(v));
        p[i] = r;
    }
}
extern "C" __global__ void fill32(float *p, long long rows, int cols, int ld, u32 seed) {
    long long total = rows * (long long)ld;
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < total; i += (long long)gridDim.x * blockDim.x)
        p[i] = uniform(i, ld, cols, seed);
}
// fp8 e4m3 (sm_89 and later): the same uniform values, rounded to the nearest e4m3.
extern "C" __global__ void fill8(u8 *p, long long rows, int cols, int ld, u32 seed) {
    long long total = rows * (long long)ld;
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < total; i += (long long)gridDim.x * blockDim.x) {
#if __CUDA_ARCH__ >= 890
        unsigned short r;
        asm("cvt.rn.satfinite.e4m3x2.f32 %0, %1, %2;" : "=h"(r) : "f"(0.0f), "f"(uniform(i, ld, cols, seed)));
        p[i] = (u8)(r & 0xff);
#else
        __trap();
#endif
    }
}
