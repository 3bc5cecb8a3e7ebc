/*
 * build/split/libopapi.so: newer CANN releases move the vision operators out of libopapi.so into
 * libopapi_cv.so, so a libopapi.so that loads fine may lack every upsample symbol. This library is
 * that libopapi.so (it exports no aclnn upsample function); build/split/libopapi_cv.so has them. The
 * math operators stay here: the Makefile links src/opapi/cast.c (aclnnCast) into it, with the
 * check.c, launch.c and soc.c it needs; libopapi_cv.so has everything else and no aclnnCast.
 */
#include "internal.h"

/* Something to link against libnnopbase, like the real core library does. */
EMU_API int aclemu_split_core_live_tensor(const aclTensor *tensor) { return aclemu_tensor_live(tensor); }
