/* The card launcher's rules (SPEC 9) on the unit core: the state machine of 9.2, the decisions of
 * 9.3, the draws of 6.4 and 6.5. */
#ifndef FW_LAUNCHER_H
#define FW_LAUNCHER_H
#include <stdint.h>

#include "unit.h"

#define LAUNCHER_CAPACITY ((int)UHIL_LAUNCHER_CARD_CAPACITY)      /* the catalogue's, LA-14 */

struct launcher {
    uint8_t state;                  /* enum launcher_state */
    uint8_t on, door_open;          /* the power switch and the door: physical, RESET keeps them (LA-7) */
    uint8_t inside;                 /* cards in the magazine */
    uint16_t press;                 /* presses since boot or RESET new_game; the last one's number */
    uint16_t loaded_total, fired_total;
    uint8_t empty_streak;           /* presses that fired nothing since the streak restarted (6.4) */
    uint8_t top_flashing;
    /* the burst of the press being fired (state firing) */
    uint32_t press_us;
    uint8_t planned, to_fire, fired;   /* drawn size, min(drawn, inside), cards out so far */
    uint32_t next_card_us;
};

extern const struct game_ops launcher_ops;

#endif
