/**
 * Symbol tables of the three CANN libraries, from the prototypes in `cann-abi.md`. Handles and device
 * addresses are passed as `usize` bigints (never pointer objects per call); host out-parameters are
 * reused typed arrays (`buffer`).
 *
 * @module
 */

/**
 * `libascendcl.so` (or `libacl_rt.so`): ACL init and the runtime. Entries marked `optional` are missing
 * from some releases (older runtimes lack the context system-parameter pair, `aclrtGetSocName` and
 * `aclGetRecentErrMsg`); they load as `null` and whatever needs one fails with a `MissingSymbolError`.
 */
export const ACL_SYMBOLS = {
  /** aclError aclInit(const char *configPath) */
  aclInit: { parameters: ["pointer" /* configPath, NULL */], result: "i32" },
  /** aclError aclFinalize() */
  aclFinalize: { parameters: [], result: "i32" },
  /** const char *aclGetRecentErrMsg() */
  aclGetRecentErrMsg: { parameters: [], result: "pointer", optional: true },
  /** aclError aclrtSetDevice(int32_t deviceId) */
  aclrtSetDevice: { parameters: ["i32" /* deviceId */], result: "i32" },
  /** aclError aclrtResetDevice(int32_t deviceId) */
  aclrtResetDevice: { parameters: ["i32" /* deviceId */], result: "i32" },
  /** aclError aclrtGetDeviceCount(uint32_t *count) */
  aclrtGetDeviceCount: { parameters: ["buffer" /* uint32_t *count */], result: "i32" },
  /** aclError aclrtGetCurrentContext(aclrtContext *context) */
  aclrtGetCurrentContext: { parameters: ["buffer" /* aclrtContext *context */], result: "i32" },
  /** aclError aclrtSetCurrentContext(aclrtContext context) */
  aclrtSetCurrentContext: { parameters: ["usize" /* aclrtContext context */], result: "i32" },
  /** aclError aclrtCreateStream(aclrtStream *stream) */
  aclrtCreateStream: { parameters: ["buffer" /* aclrtStream *stream */], result: "i32" },
  /** aclError aclrtDestroyStream(aclrtStream stream) */
  aclrtDestroyStream: { parameters: ["usize" /* aclrtStream stream */], result: "i32" },
  /** aclError aclrtSynchronizeStream(aclrtStream stream) — blocking, on the calling thread */
  aclrtSynchronizeStream: { parameters: ["usize" /* aclrtStream stream */], result: "i32" },
  /** The same function, run on a worker thread so the event loop is never blocked. */
  aclrtSynchronizeStreamNonblocking: {
    name: "aclrtSynchronizeStream",
    parameters: ["usize" /* aclrtStream stream */],
    result: "i32",
    nonblocking: true,
  },
  /** aclError aclrtMalloc(void **devPtr, size_t size, aclrtMemMallocPolicy policy) */
  aclrtMalloc: {
    parameters: ["buffer", /* void **devPtr */ "usize", /* size_t size */ "i32" /* policy */],
    result: "i32",
  },
  /** aclError aclrtFree(void *devPtr) */
  aclrtFree: { parameters: ["usize" /* void *devPtr */], result: "i32" },
  /** aclrtMemcpy(void *dst, size_t destMax, const void *src, size_t count, kind), host -> device */
  aclrtMemcpyToDevice: {
    name: "aclrtMemcpy",
    parameters: [
      "usize", /* void *dst (device) */
      "usize", /* size_t destMax */
      "buffer", /* const void *src (host) */
      "usize", /* size_t count */
      "i32", /* aclrtMemcpyKind kind */
    ],
    result: "i32",
  },
  /** aclrtMemcpy(void *dst, size_t destMax, const void *src, size_t count, kind), device -> host */
  aclrtMemcpyToHost: {
    name: "aclrtMemcpy",
    parameters: [
      "buffer", /* void *dst (host) */
      "usize", /* size_t destMax */
      "usize", /* const void *src (device) */
      "usize", /* size_t count */
      "i32", /* aclrtMemcpyKind kind */
    ],
    result: "i32",
  },
  /** aclError aclrtMemset(void *devPtr, size_t maxCount, int32_t value, size_t count) */
  aclrtMemset: {
    parameters: [
      "usize", /* devPtr */
      "usize", /* maxCount */
      "i32", /* value */
      "usize", /* count */
    ],
    result: "i32",
  },
  /** aclError aclrtCtxGetSysParamOpt(aclSysParamOpt opt, int64_t *value) */
  aclrtCtxGetSysParamOpt: {
    parameters: ["i32", /* opt */ "buffer" /* int64_t *value */],
    result: "i32",
    optional: true,
  },
  /** aclError aclrtCtxSetSysParamOpt(aclSysParamOpt opt, int64_t value) */
  aclrtCtxSetSysParamOpt: {
    parameters: ["i32", /* opt */ "i64" /* int64_t value */],
    result: "i32",
    optional: true,
  },
  /** const char *aclrtGetSocName() */
  aclrtGetSocName: { parameters: [], result: "pointer", optional: true },
  /** aclError aclrtGetMemInfo(aclrtMemAttr attr, size_t *free, size_t *total) */
  aclrtGetMemInfo: {
    parameters: ["i32", /* aclrtMemAttr attr */ "buffer", /* size_t *free */ "buffer" /* total */],
    result: "i32",
    optional: true,
  },
  // Events (CANN include/external/acl/acl_rt.h), for device-side timing (events.ts); `aclrtEvent` is
  // an opaque pointer, passed as usize like streams.
  /** aclError aclrtCreateEvent(aclrtEvent *event) */
  aclrtCreateEvent: {
    parameters: ["buffer" /* aclrtEvent *event */],
    result: "i32",
    optional: true,
  },
  /** aclError aclrtDestroyEvent(aclrtEvent event) */
  aclrtDestroyEvent: { parameters: ["usize" /* event */], result: "i32", optional: true },
  /** aclError aclrtRecordEvent(aclrtEvent event, aclrtStream stream) */
  aclrtRecordEvent: {
    parameters: ["usize", /* aclrtEvent event */ "usize" /* aclrtStream stream */],
    result: "i32",
    optional: true,
  },
  /**
   * aclError aclrtQueryEventStatus(aclrtEvent event, aclrtEventRecordedStatus *status): whether the
   * stream reached the latest record (`status`: an int32 enum, 1 = COMPLETE, 0 = NOT_READY)
   */
  aclrtQueryEventStatus: {
    parameters: ["usize", /* aclrtEvent event */ "buffer" /* aclrtEventRecordedStatus *status */],
    result: "i32",
    optional: true,
  },
  /** aclError aclrtSynchronizeEvent(aclrtEvent event), on a worker thread: it blocks until recorded */
  aclrtSynchronizeEventNonblocking: {
    name: "aclrtSynchronizeEvent",
    parameters: ["usize" /* aclrtEvent event */],
    result: "i32",
    nonblocking: true,
    optional: true,
  },
  /** aclError aclrtEventElapsedTime(float *ms, aclrtEvent startEvent, aclrtEvent endEvent) */
  aclrtEventElapsedTime: {
    parameters: ["buffer", /* float *ms */ "usize", /* startEvent */ "usize" /* endEvent */],
    result: "i32",
    optional: true,
  },
} as const satisfies Deno.ForeignLibraryInterface;

/** `libnnopbase.so`: aclnn tensors, int arrays and executors. */
export const NNOPBASE_SYMBOLS = {
  /**
   * aclTensor* aclCreateTensor(const int64_t* viewDims, uint64_t viewDimsNum, aclDataType dataType,
   *   const int64_t* stride, int64_t offset, aclFormat format, const int64_t* storageDims,
   *   uint64_t storageDimsNum, void* tensorData)
   */
  aclCreateTensor: {
    parameters: [
      "buffer", /* const int64_t* viewDims */
      "u64", /* uint64_t viewDimsNum */
      "i32", /* aclDataType dataType */
      "buffer", /* const int64_t* stride */
      "i64", /* int64_t offset */
      "i32", /* aclFormat format */
      "buffer", /* const int64_t* storageDims */
      "u64", /* uint64_t storageDimsNum */
      "usize", /* void* tensorData */
    ],
    result: "usize", /* aclTensor* */
  },
  /** aclIntArray* aclCreateIntArray(const int64_t* value, uint64_t size) */
  aclCreateIntArray: {
    parameters: ["buffer", /* const int64_t* value */ "u64" /* uint64_t size */],
    result: "usize", /* aclIntArray* */
  },
  /** aclnnStatus aclDestroyTensor(const aclTensor* tensor) */
  aclDestroyTensor: { parameters: ["usize" /* tensor */], result: "i32" },
  /** aclnnStatus aclDestroyIntArray(const aclIntArray* array) */
  aclDestroyIntArray: { parameters: ["usize" /* array */], result: "i32" },
  /** aclnnStatus aclSetAclOpExecutorRepeatable(aclOpExecutor* executor) */
  aclSetAclOpExecutorRepeatable: { parameters: ["usize" /* executor */], result: "i32" },
  /** aclnnStatus aclDestroyAclOpExecutor(aclOpExecutor* executor) */
  aclDestroyAclOpExecutor: { parameters: ["usize" /* executor */], result: "i32" },
} as const satisfies Deno.ForeignLibraryInterface;

// Phase 2 of every aclnn op:
// aclnnStatus f(void* workspace, uint64_t workspaceSize, aclOpExecutor* executor, aclrtStream stream)
const PHASE2 = {
  parameters: [
    "usize", /* workspace */
    "u64", /* workspaceSize */
    "usize", /* executor */
    "usize", /* stream */
  ],
  result: "i32",
  optional: true,
} as const;

// Phase 1 of the 2d ops with a bool: (gradOut, outputSize, inputSize, alignCorners, scalesH, scalesW,
// out, uint64_t* workspaceSize, aclOpExecutor** executor)
const BILINEAR_PHASE1 = {
  parameters: [
    "usize", /* const aclTensor* gradOut */
    "usize", /* const aclIntArray* outputSize */
    "usize", /* const aclIntArray* inputSize */
    "bool", /* bool alignCorners */
    "f64", /* double scalesH */
    "f64", /* double scalesW */
    "usize", /* aclTensor* out */
    "buffer", /* uint64_t* workspaceSize */
    "buffer", /* aclOpExecutor** executor */
  ],
  result: "i32",
  optional: true,
} as const;

/** `libopapi.so` (or `libopapi_cv.so`): the operators; each optional, checked before use. */
export const OPAPI_SYMBOLS = {
  /** (gradOutput, outputSize, inputSize, double scales, out, uint64_t* workspaceSize, executor**) */
  aclnnUpsampleNearestExact1dBackwardGetWorkspaceSize: {
    parameters: [
      "usize", /* const aclTensor* gradOutput */
      "usize", /* const aclIntArray* outputSize */
      "usize", /* const aclIntArray* inputSize */
      "f64", /* double scales */
      "usize", /* aclTensor* out */
      "buffer", /* uint64_t* workspaceSize */
      "buffer", /* aclOpExecutor** executor */
    ],
    result: "i32",
    optional: true,
  },
  aclnnUpsampleNearestExact1dBackward: PHASE2,
  /** (gradOutput, outputSize, inputSize, double scalesH, double scalesW, out, workspaceSize*, executor**) */
  aclnnUpsampleNearestExact2dBackwardGetWorkspaceSize: {
    parameters: [
      "usize", /* const aclTensor* gradOutput */
      "usize", /* const aclIntArray* outputSize */
      "usize", /* const aclIntArray* inputSize */
      "f64", /* double scalesH */
      "f64", /* double scalesW */
      "usize", /* aclTensor* out */
      "buffer", /* uint64_t* workspaceSize */
      "buffer", /* aclOpExecutor** executor */
    ],
    result: "i32",
    optional: true,
  },
  aclnnUpsampleNearestExact2dBackward: PHASE2,
  aclnnUpsampleBilinear2dBackwardGetWorkspaceSize: BILINEAR_PHASE1,
  aclnnUpsampleBilinear2dBackward: PHASE2,
  aclnnUpsampleBilinear2dBackwardV2GetWorkspaceSize: BILINEAR_PHASE1,
  aclnnUpsampleBilinear2dBackwardV2: PHASE2,
  // The forward ops (cann-abi: hicann/ops-cv aclnn_upsample_nearest_exact1d.h, _exact2d.h,
  // aclnn_upsample_bilinear_2d.h).
  /** (self, outputSize, double scales, out, uint64_t* workspaceSize, executor**) */
  aclnnUpsampleNearestExact1dGetWorkspaceSize: {
    parameters: ["usize", "usize", "f64", "usize", "buffer", "buffer"],
    result: "i32",
    optional: true,
  },
  aclnnUpsampleNearestExact1d: PHASE2,
  /** (self, outputSize, double scalesH, double scalesW, out, workspaceSize*, executor**) */
  aclnnUpsampleNearestExact2dGetWorkspaceSize: {
    parameters: ["usize", "usize", "f64", "f64", "usize", "buffer", "buffer"],
    result: "i32",
    optional: true,
  },
  aclnnUpsampleNearestExact2d: PHASE2,
  /** (self, outputSize, bool alignCorners, double scalesH, double scalesW, out, workspaceSize*, executor**) */
  aclnnUpsampleBilinear2dGetWorkspaceSize: {
    parameters: ["usize", "usize", "bool", "f64", "f64", "usize", "buffer", "buffer"],
    result: "i32",
    optional: true,
  },
  aclnnUpsampleBilinear2d: PHASE2,
} as const satisfies Deno.ForeignLibraryInterface;

/**
 * aclnnCast (hicann/ops-math `math/cast/op_host/op_api/aclnn_cast.h`): the deterministic bilinear
 * route's casts of 16-bit tensors to float32 and back. In `libopapi.so` (CANN 8.x) or, in the split
 * packages, the math operators' `libopapi_math.so`.
 */
export const CAST_SYMBOLS = {
  /** (const aclTensor* self, aclDataType dtype, aclTensor* out, uint64_t* workspaceSize, aclOpExecutor** executor) */
  aclnnCastGetWorkspaceSize: {
    parameters: [
      "usize", /* const aclTensor* self */
      "i32", /* aclDataType dtype */
      "usize", /* aclTensor* out */
      "buffer", /* uint64_t* workspaceSize */
      "buffer", /* aclOpExecutor** executor */
    ],
    result: "i32",
    optional: true,
  },
  aclnnCast: PHASE2,
} as const satisfies Deno.ForeignLibraryInterface;

/** The aclnnCast entry points (each null when the library lacks it). */
export type CastLib = Deno.DynamicLibrary<typeof CAST_SYMBOLS>["symbols"];

/**
 * The C library (`libc.so.6`), for one call: POSIX `int sched_yield(void)` (`<sched.h>`), which a
 * synchronize polling the stream makes between polls (`stream_poll.ts`).
 */
export const LIBC_SYMBOLS = {
  /** int sched_yield(void) */
  sched_yield: { parameters: [], result: "i32" },
} as const satisfies Deno.ForeignLibraryInterface;

/** Loaded `libascendcl` symbols. */
export type AclLib = Deno.DynamicLibrary<typeof ACL_SYMBOLS>["symbols"];
/** Loaded `libnnopbase` symbols. */
export type NnopbaseLib = Deno.DynamicLibrary<typeof NNOPBASE_SYMBOLS>["symbols"];
/** Loaded `libopapi` symbols (each may be null). */
export type OpapiLib = Deno.DynamicLibrary<typeof OPAPI_SYMBOLS>["symbols"];

/** `aclDataType` values (cann-abi.md section 4). */
export const ACL_DTYPE = { float32: 0, float16: 1, bfloat16: 27 } as const;
/** `aclFormat` values. */
export const ACL_FORMAT = { NCHW: 0, NHWC: 1, ND: 2, NCDHW: 30, NCL: 47 } as const;
/** `aclrtMemcpyKind` values. */
export const MEMCPY_KIND = {
  hostToHost: 0,
  hostToDevice: 1,
  deviceToHost: 2,
  deviceToDevice: 3,
} as const;
/** `aclrtMemMallocPolicy.ACL_MEM_MALLOC_HUGE_FIRST`. */
export const MALLOC_HUGE_FIRST = 0;
/** `aclSysParamOpt.ACL_OPT_DETERMINISTIC`. */
export const OPT_DETERMINISTIC = 0;
/**
 * `aclrtMemAttr.ACL_HBM_MEM` (RT `acl_rt.h`): the device's main memory; the runtime reads DDR instead on
 * chips without HBM (RT `docs/zh/api_ref/11-01_device_memory_malloc_and_free.md`, aclrtGetMemInfo).
 */
export const MEM_ATTR_HBM = 1;
