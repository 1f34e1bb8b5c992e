/* The protocol side of a unit (SPEC 2-4), around a game: commands and replies, NAKs, the header and
 * event sequence numbers, the 64-event ring for EVENT_RESEND, the INJECT queue, configuration, the
 * reference generator and device time. The game (showdown.c, flash.c or launcher.c: one per image)
 * only plays: it gets input edges and its deadline, and emits events through unit_event. One struct
 * unit holds all of it; nothing is global. */
#ifndef FW_UNIT_H
#define FW_UNIT_H
#include <stddef.h>
#include <stdint.h>

#include "../uhil_catalogue.h"
#include "../uhil_messages.h"
#include "../uhil_rng.h"
#include "../uhil_rx.h"

struct unit;

/* an input handler's answer: disposition (enum disposition) and, for a refusal, the error */
struct disposition { uint8_t disposition; uint8_t error; };
extern const struct disposition UNIT_ACTED, UNIT_REPORTED;
struct disposition unit_refused(uint8_t error);

/* What a game tells the core. The game's state lives in *game. */
struct game_ops {
    uint8_t kind;                  /* UHIL_UNIT_KIND_* */
    uint8_t n_inputs;              /* input ids 0 .. n_inputs - 1 */
    uint16_t valued_inputs;        /* bit i: input i takes a value (PR-3: others refuse a non-zero one) */
    uint16_t caps;                 /* capability mask for IDENTITY (reference_rng included) */
    uint8_t card_capacity, players;
    /* the inputs read from pins: pin i (hal_read_pin(i)) is input pin_inputs[i], for i < n_pins */
    const uint8_t *pin_inputs;
    uint8_t n_pins;
    /* boot: start in the power-on state (switches included), emitting nothing */
    void (*power_on)(void *game, struct unit *u);
    /* RESET new_game (SPEC 4.9): emit what closes the game, the zeroed counts, the lights off, and
     * return to the power-on game state; switches and doors stay where they are. The core then
     * emits STATE */
    void (*shutdown)(void *game, struct unit *u);
    /* one input edge at device time t */
    struct disposition (*on_input)(void *game, struct unit *u, uint32_t t, uint8_t input, uint8_t action,
                                   uint8_t value);
    /* the game's pending deadline: 1 and *at, or 0 for none */
    int (*deadline)(const void *game, uint32_t *at);
    /* run the pending deadline (due at `at`) */
    void (*run_deadline)(void *game, struct unit *u, uint32_t at);
    uint8_t (*state)(const void *game);
    uint8_t (*cards)(const void *game);
    int (*idle)(const void *game);     /* CONFIG_SET is allowed */
    /* the cross-parameter rules of the kind on the values a CONFIG_SET would leave (SPEC 4.7) */
    int (*config_ok)(const struct unit *u, uint8_t param, uint32_t value);
};

struct ring_event {
    uint16_t event_seq;
    uint8_t type, len;
    uint32_t time_us;
    uint8_t payload[UHIL_MAX_PAYLOAD];
};

struct stimulus {
    uint32_t at_us;
    uint32_t order;                /* acceptance order: equal times run in it */
    uint16_t id;                   /* 0: free slot */
    uint8_t input, action, value;
};

struct unit {
    const struct game_ops *ops;
    void *game;
    uint32_t serial, boot_seed;
    /* per boot */
    uint32_t epoch;                /* hal_micros() at boot: device time = hal_micros() - epoch */
    uint32_t boot_id, boots;
    uint16_t tx_seq, event_seq;
    uint32_t config[UHIL_N_PARAMS];
    uhil_rng rng;
    struct uhil_rx rx;
    struct ring_event ring[UHIL_EVENT_BUFFER];
    uint8_t ring_next, ring_count;
    uint8_t unsent;                /* newest ring events held back while a command is answered */
    uint8_t holding;
    uint32_t stamp;                /* header time of the events being produced */
    struct stimulus stimuli[UHIL_INJECT_QUEUE];
    uint16_t stimulus_id;
    uint32_t stimulus_order;
    uint16_t pins;                 /* last levels of the physical pins, bit i = pin i */
};

/* power on: BOOT(power_on) */
void unit_start(struct unit *u, const struct game_ops *ops, void *game, uint32_t serial, uint32_t boot_seed);
/* bytes that arrived, the last of them at device time t (a frame completes at its delimiter) */
void unit_receive(struct unit *u, const uint8_t *bytes, size_t n, uint32_t t);
/* run everything due by now: injected stimuli, the game's deadline, physical pin edges */
void unit_poll(struct unit *u);
/* the next time unit_poll has work (1 and *at), or 0 when nothing is scheduled */
int unit_next_due(const struct unit *u, uint32_t *at);

uint32_t unit_now(const struct unit *u);
uint32_t unit_param(const struct unit *u, uint8_t param);
/* param's value if CONFIG_SET(set, value) succeeded: for a kind's cross-parameter rules (SPEC 4.7) */
uint32_t unit_param_after(const struct unit *u, uint8_t param, uint8_t set, uint32_t value);
uhil_rng *unit_rng(struct unit *u);

/* for the game: emit an event (event_seq filled in) with header time u->stamp, or, for a verdict, now */
void unit_event(struct unit *u, struct uhil_msg *m);
void unit_verdict(struct unit *u, struct uhil_msg *m);
/* events from now on carry time t; returns the previous stamp (restore it after the work) */
uint32_t unit_stamp(struct unit *u, uint32_t t);
/* unit_event of a message of type `type`, and the common events (SPEC 4.5), each at u->stamp */
void unit_emit(struct unit *u, uint8_t type, struct uhil_msg *m);
void unit_light(struct unit *u, uint8_t light, uint8_t mode, uint8_t target);
void unit_sound(struct unit *u, uint8_t sound, uint16_t arg);
void unit_state(struct unit *u, uint8_t state, uint8_t previous);
/* a game's change of state: *state = next, and STATE(next, previous) when it changed */
void unit_change_state(struct unit *u, uint8_t *state, uint8_t next);
/* run the game's deadlines due at or before t, each stamped with its own time: for a kind whose
 * every deadline comes before an input at the same instant (FL-14, LA-9), called first by on_input */
void unit_deadlines_until(struct unit *u, uint32_t t);

#endif
