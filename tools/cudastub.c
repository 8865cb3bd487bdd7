/* A stand-in for the CUDA driver (libcuda.so.1) on machines without a GPU.
 *
 * Enough for nvmath-python, libmathdx, NVRTC, NVVM and nvJitLink to load and
 * generate/link code: the driver reports version 13.0 and no device.  Every
 * other entry point is "not found", so anything that would need a GPU fails
 * loudly instead of pretending.  Used only by tools/offline_codegen.py.
 *
 *   cc -shared -fPIC -O2 -Wl,-soname,libcuda.so.1 -o libcuda.so.1 cudastub.c
 */
#include <string.h>

typedef int CUresult;
enum { CUDA_SUCCESS = 0, CUDA_ERROR_NO_DEVICE = 100, CUDA_ERROR_NOT_FOUND = 500 };

CUresult cuDriverGetVersion(int *version) {
    if (version) *version = 13000;
    return CUDA_SUCCESS;
}

CUresult cuInit(unsigned int flags) {
    (void)flags;
    return CUDA_ERROR_NO_DEVICE;
}

CUresult cuDeviceGetCount(int *count) {
    if (count) *count = 0;
    return CUDA_SUCCESS;
}

static void *entry_point(const char *name) {
    if (strcmp(name, "cuDriverGetVersion") == 0) return (void *)cuDriverGetVersion;
    if (strcmp(name, "cuInit") == 0) return (void *)cuInit;
    if (strcmp(name, "cuDeviceGetCount") == 0) return (void *)cuDeviceGetCount;
    return 0;
}

CUresult cuGetProcAddress_v2(const char *name, void **fn, int version,
                             unsigned long long flags, int *status) {
    (void)version; (void)flags;
    void *found = entry_point(name);
    if (fn) *fn = found;
    if (status) *status = found ? 0 : 1;  /* CU_GET_PROC_ADDRESS_SUCCESS / SYMBOL_NOT_FOUND */
    return found ? CUDA_SUCCESS : CUDA_ERROR_NOT_FOUND;
}

CUresult cuGetProcAddress(const char *name, void **fn, int version, unsigned long long flags) {
    return cuGetProcAddress_v2(name, fn, version, flags, 0);
}
