/* Live meta-object registry of libnnopbase (see registry.c). */
#ifndef ACLEMU_REGISTRY_H
#define ACLEMU_REGISTRY_H

#include "internal.h"

enum { EMU_KIND_TENSOR = 1, EMU_KIND_INTARRAY = 2, EMU_KIND_EXECUTOR = 3 };

/* Registers and counts p; 0 when out of memory. */
int emu_reg_add(const void *p, int kind);
int emu_reg_has(const void *p, int kind);
/* Unregisters and uncounts p; 0 when it was not registered as `kind`. */
int emu_reg_remove(const void *p, int kind);

#endif
