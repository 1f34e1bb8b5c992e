/* The Showdown unit on the Cortex-M port: its game's state and the variant the boot parameters choose.
 * Each unit kind has one such file (kind_KIND.c); `make qemu` links it with firmware/KIND.c, the core and
 * the port into KIND-mps2_an385.elf. */
#include "../showdown.h"
#include "kind.h"

const char fw_kind_name[] = "showdown";

void fw_kind_start(struct unit *u, uint32_t serial, uint32_t seed, uint32_t flags)
{
    static struct showdown game;
    const struct game_ops *ops = (flags & BOOT_FLAG_NO_LANDING_SENSOR) ? &showdown_ops_no_sensor : &showdown_ops;
    game.landing_sensor = ops == &showdown_ops;
    unit_start(u, ops, &game, serial, seed);
}
