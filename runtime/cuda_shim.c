/*
 * A stand-in for the NVIDIA driver (libcuda.so.1) on machines without one.
 *
 * The native libraries of the legate and cupynumeric wheels list
 * libcuda.so.1 as a direct dependency, so they cannot be loaded where no
 * driver is installed. This library has that SONAME and answers every call
 * with "no device", which lets Legate start with CPU processors only.
 * distal builds it on demand (runtime/_shim.py) and loads it with
 * RTLD_GLOBAL before importing legate, and only when no real driver loads.
 */

#include <stddef.h>
#include <string.h>

typedef int CUresult;

#define CUDA_SUCCESS 0
#define CUDA_ERROR_INVALID_VALUE 1
#define CUDA_ERROR_NOT_INITIALIZED 3
#define CUDA_ERROR_NO_DEVICE 100
#define CUDA_ERROR_NOT_FOUND 500

/* The driver API version this stand-in claims (12.0). */
#define SHIM_DRIVER_VERSION 12000

CUresult cuInit(unsigned int flags)
{
    (void)flags;
    return CUDA_ERROR_NO_DEVICE;
}

CUresult cuDriverGetVersion(int *version)
{
    if (version == NULL) {
        return CUDA_ERROR_INVALID_VALUE;
    }
    *version = SHIM_DRIVER_VERSION;
    return CUDA_SUCCESS;
}

CUresult cuDeviceGetCount(int *count)
{
    if (count == NULL) {
        return CUDA_ERROR_INVALID_VALUE;
    }
    *count = 0;
    return CUDA_SUCCESS;
}

static const char *error_name(CUresult error)
{
    switch (error) {
    case CUDA_SUCCESS:
        return "CUDA_SUCCESS";
    case CUDA_ERROR_INVALID_VALUE:
        return "CUDA_ERROR_INVALID_VALUE";
    case CUDA_ERROR_NOT_INITIALIZED:
        return "CUDA_ERROR_NOT_INITIALIZED";
    case CUDA_ERROR_NO_DEVICE:
        return "CUDA_ERROR_NO_DEVICE";
    case CUDA_ERROR_NOT_FOUND:
        return "CUDA_ERROR_NOT_FOUND";
    default:
        return "CUDA_ERROR_UNKNOWN";
    }
}

CUresult cuGetErrorName(CUresult error, const char **name)
{
    if (name == NULL) {
        return CUDA_ERROR_INVALID_VALUE;
    }
    *name = error_name(error);
    return CUDA_SUCCESS;
}

CUresult cuGetErrorString(CUresult error, const char **text)
{
    if (text == NULL) {
        return CUDA_ERROR_INVALID_VALUE;
    }
    if (error == CUDA_ERROR_NO_DEVICE) {
        *text = "no CUDA-capable device is detected (distal driver shim)";
    } else {
        *text = error_name(error);
    }
    return CUDA_SUCCESS;
}

CUresult cuMemFree_v2(unsigned long long pointer)
{
    (void)pointer;
    return CUDA_ERROR_NO_DEVICE;
}

CUresult cuMemFreeHost(void *pointer)
{
    (void)pointer;
    return CUDA_ERROR_NO_DEVICE;
}

/* Answer for every entry point this library does not define. Callers pass
 * arguments, which the x86-64 and AArch64 calling conventions let a
 * function of no parameters ignore. */
static CUresult no_device(void)
{
    return CUDA_ERROR_NO_DEVICE;
}

typedef CUresult (*shim_fn)(void);

struct shim_entry {
    const char *name;
    shim_fn fn;
};

CUresult cuGetProcAddress(const char *symbol, void **pfn, int version,
                          unsigned long long flags);
CUresult cuGetProcAddress_v2(const char *symbol, void **pfn, int version,
                             unsigned long long flags, int *status);

static const struct shim_entry entries[] = {
    {"cuInit", (shim_fn)cuInit},
    {"cuDriverGetVersion", (shim_fn)cuDriverGetVersion},
    {"cuDeviceGetCount", (shim_fn)cuDeviceGetCount},
    {"cuGetErrorName", (shim_fn)cuGetErrorName},
    {"cuGetErrorString", (shim_fn)cuGetErrorString},
    {"cuMemFree", (shim_fn)cuMemFree_v2},
    {"cuMemFree_v2", (shim_fn)cuMemFree_v2},
    {"cuMemFreeHost", (shim_fn)cuMemFreeHost},
    {"cuGetProcAddress", (shim_fn)cuGetProcAddress},
    {"cuGetProcAddress_v2", (shim_fn)cuGetProcAddress_v2},
};

static shim_fn lookup(const char *symbol)
{
    size_t i;
    if (symbol != NULL) {
        for (i = 0; i < sizeof(entries) / sizeof(entries[0]); ++i) {
            if (strcmp(entries[i].name, symbol) == 0) {
                return entries[i].fn;
            }
        }
    }
    return no_device;
}

CUresult cuGetProcAddress(const char *symbol, void **pfn, int version,
                          unsigned long long flags)
{
    (void)version;
    (void)flags;
    if (pfn == NULL) {
        return CUDA_ERROR_INVALID_VALUE;
    }
    *pfn = (void *)lookup(symbol);
    return CUDA_SUCCESS;
}

CUresult cuGetProcAddress_v2(const char *symbol, void **pfn, int version,
                             unsigned long long flags, int *status)
{
    if (status != NULL) {
        *status = 0; /* CU_GET_PROC_ADDRESS_SUCCESS */
    }
    return cuGetProcAddress(symbol, pfn, version, flags);
}
