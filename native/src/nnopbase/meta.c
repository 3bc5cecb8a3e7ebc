/*
 * aclTensor and aclIntArray: plain copies of what the caller passed (so the caller's arrays may be
 * freed right away), registered as live objects. Creation returns NULL on bad arguments, like
 * CANN; the reason goes to aclGetRecentErrMsg.
 */
#include "registry.h"

#include <stdlib.h>
#include <string.h>

static int check_dims(const char *what, const int64_t *dims, uint64_t n, int allow_negative)
{
    if (n > 0 && dims == NULL) {
        aclemu_set_error("aclCreateTensor: %s is NULL but its count is %llu", what, (unsigned long long)n);
        return 0;
    }
    if (n > EMU_MAX_DIMS) {
        aclemu_set_error("aclCreateTensor: %s has %llu entries; at most %d dimensions are supported", what,
                         (unsigned long long)n, EMU_MAX_DIMS);
        return 0;
    }
    for (uint64_t i = 0; i < n && !allow_negative; i++) {
        if (dims[i] < 0) {
            aclemu_set_error("aclCreateTensor: %s[%llu] = %lld is negative", what, (unsigned long long)i,
                             (long long)dims[i]);
            return 0;
        }
    }
    return 1;
}

aclTensor *aclCreateTensor(const int64_t *viewDims, uint64_t viewDimsNum, aclDataType dataType, const int64_t *stride,
                           int64_t offset, aclFormat format, const int64_t *storageDims, uint64_t storageDimsNum,
                           void *tensorData)
{
    if (!check_dims("viewDims", viewDims, viewDimsNum, 0) || !check_dims("stride", stride, viewDimsNum, 1) ||
        !check_dims("storageDims", storageDims, storageDimsNum, 0)) {
        return NULL;
    }
    aclTensor *t = calloc(1, sizeof *t);
    if (t == NULL) {
        aclemu_set_error("aclCreateTensor: out of host memory");
        return NULL;
    }
    t->ndim = viewDimsNum;
    for (uint64_t i = 0; i < viewDimsNum; i++) {
        t->dims[i] = viewDims[i];
        t->strides[i] = stride[i];
    }
    t->offset = offset;
    t->dtype = (int32_t)dataType;
    t->format = (int32_t)format;
    t->storage_ndim = storageDimsNum;
    for (uint64_t i = 0; i < storageDimsNum; i++) {
        t->storage_dims[i] = storageDims[i];
    }
    t->data = tensorData;
    if (!emu_reg_add(t, EMU_KIND_TENSOR)) {
        free(t);
        aclemu_set_error("aclCreateTensor: out of host memory");
        return NULL;
    }
    return t;
}

aclnnStatus aclDestroyTensor(const aclTensor *tensor)
{
    if (tensor == NULL) {
        return ACLNN_SUCCESS;
    }
    if (!emu_reg_remove(tensor, EMU_KIND_TENSOR)) {
        aclemu_set_error("aclDestroyTensor: %p is not a live aclTensor (already destroyed?)", (const void *)tensor);
        return ACLNN_ERR_PARAM_INVALID;
    }
    free((void *)tensor);
    return ACLNN_SUCCESS;
}

aclIntArray *aclCreateIntArray(const int64_t *value, uint64_t size)
{
    if (size > 0 && value == NULL) {
        aclemu_set_error("aclCreateIntArray: value is NULL but size is %llu", (unsigned long long)size);
        return NULL;
    }
    if (size > (SIZE_MAX - sizeof(aclIntArray)) / sizeof(int64_t)) {
        aclemu_set_error("aclCreateIntArray: size %llu is too large", (unsigned long long)size);
        return NULL;
    }
    aclIntArray *a = malloc(sizeof *a + size * sizeof(int64_t));
    if (a == NULL) {
        aclemu_set_error("aclCreateIntArray: out of host memory");
        return NULL;
    }
    a->size = size;
    if (size > 0) {
        memcpy(a->values, value, size * sizeof(int64_t));
    }
    if (!emu_reg_add(a, EMU_KIND_INTARRAY)) {
        free(a);
        aclemu_set_error("aclCreateIntArray: out of host memory");
        return NULL;
    }
    return a;
}

aclnnStatus aclDestroyIntArray(const aclIntArray *array)
{
    if (array == NULL) {
        return ACLNN_SUCCESS;
    }
    if (!emu_reg_remove(array, EMU_KIND_INTARRAY)) {
        aclemu_set_error("aclDestroyIntArray: %p is not a live aclIntArray (already destroyed?)",
                         (const void *)array);
        return ACLNN_ERR_PARAM_INVALID;
    }
    free((void *)array);
    return ACLNN_SUCCESS;
}

EMU_API int aclemu_tensor_live(const aclTensor *tensor) { return emu_reg_has(tensor, EMU_KIND_TENSOR); }
EMU_API int aclemu_intarray_live(const aclIntArray *array) { return emu_reg_has(array, EMU_KIND_INTARRAY); }
