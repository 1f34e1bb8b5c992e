/* The card launcher on the Cortex-M port: its game's state. `make qemu` links it with
 * firmware/launcher.c, the core and the port into launcher-mps2_an385.elf. */
#include "../launcher.h"
#include "kind.h"

const char fw_kind_name[] = "launcher";

void fw_kind_start(struct unit *u, uint32_t serial, uint32_t seed, uint32_t flags)
{
    static struct launcher game;
    (void)flags;
    unit_start(u, &launcher_ops, &game, serial, seed);
}
