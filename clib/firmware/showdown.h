/* The Showdown unit's game (SPEC 7) on the unit core: the state machine of 7.2, the verdicts of 7.3,
 * the decisions of 7.4. */
#ifndef FW_SHOWDOWN_H
#define FW_SHOWDOWN_H
#include <stdint.h>

#include "unit.h"

#define SHOWDOWN_CAPACITY ((int)UHIL_SHOWDOWN_CARD_CAPACITY)     /* the catalogue's, SD-10 */

struct showdown {
    uint8_t state;                  /* enum showdown_state */
    uint8_t tray, in_play;          /* cards in the tray; cards of the running showdown */
    uint32_t green_us;              /* G, scheduled */
    uint16_t beep_k;                /* index of the next beep */
    uint8_t first;                  /* side of the first valid press, UHIL_SIDE_NONE before it */
    uint8_t pressed[2];
    uint32_t press_us[2];           /* each side's first press of this showdown */
    uint8_t tie;
    uint8_t timer;                  /* the one pending deadline: enum timer in showdown.c */
    uint32_t timer_us;
    uint8_t green_mode, red_mode, red_target;      /* what the lights show, for RESET new_game */
    uint8_t landing_sensor;         /* 0: SD-11, the unit cannot see the line */
};

extern const struct game_ops showdown_ops;
/* the same unit without a landing sensor (SD-11): capability landing_sensor clear */
extern const struct game_ops showdown_ops_no_sensor;

#endif
