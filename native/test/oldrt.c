/*
 * build/old-runtime in a fresh process, opened the way a binding might (libnnopbase first, then
 * libascendcl, then libopapi): it loads, lacks the optional symbols, and runs a whole op. Linked with
 * libdl only. Usage: oldrt <build dir>.
 */
#include "cann_subset.h"
#include "check.h"

#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

static void *open_lib(const char *dir, const char *name)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/old-runtime/%s", dir, name);
    void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (h == NULL) {
        fprintf(stderr, "FAIL dlopen %s: %s\n", path, dlerror());
    }
    return h;
}

#define SYM(h, name) ((__typeof__(&name))dlsym(h, #name))

int main(int argc, char **argv)
{
    const char *dir = argc > 1 ? argv[1] : "build";
    void *nn = open_lib(dir, "libnnopbase.so"), *acl = open_lib(dir, "libascendcl.so"),
         *ops = open_lib(dir, "libopapi.so");
    CHECK(nn != NULL && acl != NULL && ops != NULL);
    if (nn == NULL || acl == NULL || ops == NULL) {
        return 1;
    }
    CHECK(dlsym(acl, "aclrtCtxSetSysParamOpt") == NULL && dlsym(acl, "aclrtCtxGetSysParamOpt") == NULL);
    CHECK(dlsym(acl, "aclrtGetSocName") == NULL && dlsym(acl, "aclGetRecentErrMsg") == NULL);

    CHECK(SYM(acl, aclInit)(NULL) == 0);
    CHECK(SYM(acl, aclrtSetDevice)(0) == 0);
    aclrtStream stream = NULL;
    CHECK(SYM(acl, aclrtCreateStream)(&stream) == 0);
    float grad[16], res[4] = {0};
    for (int i = 0; i < 16; i++) {
        grad[i] = 1.0f;
    }
    void *go = NULL, *out = NULL, *ws = NULL;
    CHECK(SYM(acl, aclrtMalloc)(&go, sizeof grad, ACL_MEM_MALLOC_HUGE_FIRST) == 0);
    CHECK(SYM(acl, aclrtMalloc)(&out, sizeof res, ACL_MEM_MALLOC_HUGE_FIRST) == 0);
    CHECK(SYM(acl, aclrtMemcpy)(go, sizeof grad, grad, sizeof grad, ACL_MEMCPY_HOST_TO_DEVICE) == 0);
    int64_t god[4] = {1, 1, 4, 4}, ind[4] = {1, 1, 2, 2}, osz[2] = {4, 4};
    int64_t gos[4] = {16, 16, 4, 1}, ins[4] = {4, 4, 2, 1}, gon = 16, inn = 4;
    aclTensor *tg = SYM(nn, aclCreateTensor)(god, 4, ACL_FLOAT, gos, 0, ACL_FORMAT_NCHW, &gon, 1, go);
    aclTensor *to = SYM(nn, aclCreateTensor)(ind, 4, ACL_FLOAT, ins, 0, ACL_FORMAT_NCHW, &inn, 1, out);
    aclIntArray *os = SYM(nn, aclCreateIntArray)(osz, 2), *is = SYM(nn, aclCreateIntArray)(ind, 4);
    uint64_t wsSize = 0;
    aclOpExecutor *ex = NULL;
    CHECK(SYM(ops, aclnnUpsampleNearestExact2dBackwardGetWorkspaceSize)(tg, os, is, 0, 0, to, &wsSize, &ex) == 0);
    if (wsSize > 0) {
        CHECK(SYM(acl, aclrtMalloc)(&ws, wsSize, ACL_MEM_MALLOC_HUGE_FIRST) == 0);
    }
    CHECK(SYM(ops, aclnnUpsampleNearestExact2dBackward)(ws, wsSize, ex, stream) == 0);
    CHECK(SYM(acl, aclrtSynchronizeStream)(stream) == 0);
    CHECK(SYM(acl, aclrtMemcpy)(res, sizeof res, out, sizeof res, ACL_MEMCPY_DEVICE_TO_HOST) == 0);
    CHECK(res[0] == 4.0f && res[3] == 4.0f);
    SYM(nn, aclDestroyTensor)(tg);
    SYM(nn, aclDestroyTensor)(to);
    SYM(nn, aclDestroyIntArray)(os);
    SYM(nn, aclDestroyIntArray)(is);
    if (ws != NULL) {
        CHECK(SYM(acl, aclrtFree)(ws) == 0);
    }
    CHECK(SYM(acl, aclrtFree)(go) == 0 && SYM(acl, aclrtFree)(out) == 0);
    CHECK(SYM(acl, aclrtDestroyStream)(stream) == 0);
    int64_t (*live)(void) = (int64_t(*)(void))dlsym(acl, "aclemuLiveAllocations");
    int64_t (*objects)(void) = (int64_t(*)(void))dlsym(acl, "aclemuLiveObjects");
    CHECK(live != NULL && live() == 0 && objects != NULL && objects() == 0);
    CHECK(SYM(acl, aclrtResetDevice)(0) == 0 && SYM(acl, aclFinalize)() == 0);
    return check_report("oldrt");
}
