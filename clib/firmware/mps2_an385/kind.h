/* What the Cortex-M port asks of a unit kind (kind_KIND.c): its name for the console, and starting the
 * unit with the kind's game, in the variant the boot parameters' flags choose. */
#ifndef FW_MPS2_AN385_KIND_H
#define FW_MPS2_AN385_KIND_H
#include <stdint.h>

#include "../unit.h"

#define BOOT_FLAG_NO_LANDING_SENSOR 1u      /* Showdown: SD-11's unit, no landing sensor */

extern const char fw_kind_name[];
void fw_kind_start(struct unit *u, uint32_t serial, uint32_t seed, uint32_t flags);

#endif
