/* The Flash base on the Cortex-M port: its game's state, with the retail base's six Player buttons
 * (flash_ops'). `make qemu` links it with firmware/flash.c, the core and the port into
 * flash-mps2_an385.elf. */
#include "../flash.h"
#include "kind.h"

const char fw_kind_name[] = "flash";

void fw_kind_start(struct unit *u, uint32_t serial, uint32_t seed, uint32_t flags)
{
    static struct flash game;
    (void)flags;
    unit_start(u, &flash_ops, &game, serial, seed);
}
