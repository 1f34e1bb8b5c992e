/* The hardware abstraction of the sample firmware: all a port provides. A microcontroller port
 * implements these on its timer, GPIO and UART/USB; port_posix.c implements them on a pty. */
#ifndef FW_HAL_H
#define FW_HAL_H
#include <stddef.h>
#include <stdint.h>

/* free-running microsecond counter; wraps at 2^32 (SPEC 3.2: from a crystal-driven timer) */
uint32_t hal_micros(void);

/* queue n bytes for the host (UART or USB endpoint); the bytes of one call stay together */
void hal_send(const uint8_t *bytes, size_t n);

/* a physical input's level: 1 pressed, 0 released. Pin i is the kind's input pin_inputs[i] (unit.h):
 * Showdown paddle A, paddle B, TIMER; Flash the Player buttons, PLAY/PAUSE, BUZZER; launcher the button */
int hal_read_pin(uint8_t pin);

/* drive a light (light id of the unit kind, light_mode, target as in SPEC 5's LIGHT) */
void hal_set_light(uint8_t light, uint8_t mode, uint8_t target);

/* a few bits of entropy for the boot id (an ADC's noise, a unique id mixed with a counter) */
uint32_t hal_entropy(void);

#endif
