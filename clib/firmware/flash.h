/* The Flash base's rules (SPEC 8) on the unit core: the state machine of 8.2, the buzzer verdict, the
 * decisions of 8.3, the selection draw of 6.3. */
#ifndef FW_FLASH_H
#define FW_FLASH_H
#include <stdint.h>

#include "unit.h"

#define FLASH_BUTTONS 8             /* Player buttons a base may have (IDENTITY.players: 2..8) */
#define FLASH_PLAYERS 6             /* the retail base's */

/* a deadline of the base, in device time */
struct flash_timer {
    uint8_t armed;
    uint32_t at;
    uint32_t order;                 /* when it was armed: equal times run in this order (SPEC 4.8) */
};

struct flash {
    const struct unit *unit;        /* its parameters, for deadline(): set at power-on */
    uint8_t state;                  /* enum flash_state */
    /* physical: RESET new_game keeps them (FL-17) */
    uint8_t on, speed;
    uint16_t held;                  /* bit i: input i is held (FL-19) */
    /* the game */
    uint8_t registered, count;      /* bit i: button i registered */
    uint8_t current;                /* whose turn it is */
    uint16_t turn;
    uint32_t turn_start_g;          /* game time at which the turn started (FL-15) */
    uint8_t flag_reason;            /* flagged: the selection reason of the flagged player's press */
    uint32_t buzzer_us, buzzer_g;   /* BUZZER's device time and game time */
    uint8_t opponents, answered;    /* masks: who must press, who has pressed */
    int32_t reaction[FLASH_BUTTONS];
    uint8_t lights[FLASH_BUTTONS];  /* light_mode of each Player button */
    /* pause and sleep: game time stands still while frozen */
    uint8_t paused_from;            /* the state paused from; 0 (off) when not paused */
    uint8_t slept_in;               /* the state it fell asleep in (paused included) */
    uint8_t frozen;
    uint32_t frozen_since, frozen_total;   /* game time = device time - frozen_total */
    uint32_t game_remaining;        /* the frozen game timer's time left */
    /* the deadlines */
    struct flash_timer game_timer;  /* the turn timer or the buzzer window */
    struct flash_timer hold;        /* PLAY/PAUSE + BUZZER held (FL-12) */
    uint32_t last_edge;             /* the inactivity period counts from it (FL-11) */
    uint32_t sleep_waited;          /* of a period longer than a timer can wait at once, the part waited */
    uint32_t sleep_order;
    uint32_t orders;
};

extern const struct game_ops flash_ops;

#endif
